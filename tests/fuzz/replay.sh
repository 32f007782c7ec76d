#!/bin/sh
# Runs one fuzz target as a test (make check-fuzz): tests/fuzz/NAME.fuzz
# names the harness's seeds (globs under the source tree, one a line) and
# any libFuzzer options (lines starting with '-'); a line "fuzz-seconds N"
# sets how long this target fuzzes after the replay instead. The harness
# tests/fuzz/fuzz_NAME first replays every seed, the committed corpus
# tests/fuzz/corpus/NAME and what earlier runs here found
# (tests/fuzz/work/NAME), then fuzzes FUZZ_SECONDS (default 10) more. Any
# crash, leak, timeout or sanitizer report fails the test; the input that
# made it is left as tests/fuzz/work/crash-NAME-* in the build.
# usage: replay.sh SRCDIR/tests/fuzz/NAME.fuzz
set -u
spec=$1
name=$(basename "$spec" .fuzz)
src=${WP_SRCDIR:?}
build=${WP_BUILDDIR:?}
harness="$build/tests/fuzz/fuzz_$name"
seconds=${FUZZ_SECONDS:-10}
work="$build/tests/fuzz/work"
seeds="$work/seeds-$name"
grown="$work/$name"
if [ ! -x "$harness" ]; then
    echo "replay: no $harness (configure --enable-fuzzing and build first)"
    exit 99
fi
rm -rf "$seeds"
mkdir -p "$seeds" "$grown"
options=""
nseeds=0
while IFS= read -r line; do
    case $line in
        '' | '#'*) ;;
        -*) options="$options $line" ;;
        'fuzz-seconds '*) seconds=${line#fuzz-seconds } ;;
        *)
            for f in "$src"/$line; do
                [ -f "$f" ] || continue
                nseeds=$((nseeds + 1))
                cp "$f" "$seeds/$nseeds-$(basename "$f")"
            done ;;
    esac
done < "$spec"
committed="$src/tests/fuzz/corpus/$name"
[ -d "$committed" ] || committed=
if [ "$nseeds" -eq 0 ] && [ -z "$committed" ]; then
    echo "replay: $spec names no seed that exists"
    exit 99
fi
export LSAN_OPTIONS="suppressions=$src/tests/sanitizer/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
common="-timeout=20 -rss_limit_mb=2048 -malloc_limit_mb=1024 -artifact_prefix=$work/crash-$name- -print_final_stats=1"
echo "replay: $name: $nseeds seeds${committed:+, $committed}, $(ls "$grown" | wc -l) inputs grown earlier"
# shellcheck disable=SC2086 # option lists
"$harness" $common $options -runs=0 "$seeds" ${committed:+"$committed"} "$grown" || {
    echo "replay: $name: the corpus does not replay cleanly"
    exit 1
}
if [ "$seconds" -eq 0 ]; then
    echo "replay: $name: corpus replayed, nothing found (no fuzzing: fuzz-seconds 0 in $spec)"
    exit 0
fi
# shellcheck disable=SC2086
"$harness" $common $options -max_total_time="$seconds" "$grown" "$seeds" ${committed:+"$committed"} || {
    echo "replay: $name: fuzzing for $seconds s found the failure above"
    exit 1
}
echo "replay: $name: corpus replayed and $seconds s fuzzed, nothing found"
