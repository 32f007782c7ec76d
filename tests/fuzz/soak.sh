#!/bin/sh
# The long fuzzing run by hand (tests/fuzz/README.md): each named target
# runs RUNS inputs from its corpus (seeds, committed corpus and what earlier
# runs grew, in BUILD/tests/fuzz/work), leak detection off for speed, then
# the whole corpus grown is replayed once with leak detection on, so a leak
# in any input kept still fails. Prints a row per target: executions, seconds,
# result. BUILD is a tree configured with --enable-fuzzing and built, whose
# `make check-TESTS TESTS=tests/fuzz/NAME.fuzz` has made the seed folders.
# usage: soak.sh SRCDIR BUILD RUNS TARGET... (extra libFuzzer options in
# SOAK_OPTIONS, e.g. -max_len=16384)
set -u
src=$1 build=$2 runs=$3
shift 3
work="$build/tests/fuzz/work"
export LSAN_OPTIONS="suppressions=$src/tests/sanitizer/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
status=0
for name in "$@"; do
    harness="$build/tests/fuzz/fuzz_$name"
    committed="$src/tests/fuzz/corpus/$name"
    [ -d "$committed" ] || committed=
    mkdir -p "$work/$name" "$work/seeds-$name"
    log="$work/soak-$name.log"
    start=$(date +%s)
    # shellcheck disable=SC2086 # option list
    "$harness" -detect_leaks=0 -timeout=20 -rss_limit_mb=2048 -malloc_limit_mb=1024 -print_final_stats=1 \
        -artifact_prefix="$work/crash-$name-" ${SOAK_OPTIONS:-} -runs="$runs" \
        "$work/$name" "$work/seeds-$name" ${committed:+"$committed"} > "$log" 2>&1
    rc=$?
    seconds=$(( $(date +%s) - start ))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    result=ok
    if [ "$rc" -ne 0 ]; then
        result="FAILED (fuzzing, $log)"
    elif ! "$harness" -detect_leaks=1 -runs=0 "$work/$name" "$work/seeds-$name" ${committed:+"$committed"} \
            > "$log.leaks" 2>&1; then
        result="FAILED (leak replay, $log.leaks)"
    fi
    [ "$result" = ok ] || status=1
    echo "$name ${execs:-0} ${seconds}s $(ls "$work/$name" | wc -l) $result"
done
exit $status
