#!/bin/sh
# Runs one test of a sanitized build (configure --enable-sanitizers) so that
# any AddressSanitizer, LeakSanitizer or UBSan report fails it, whatever exit
# status the test expected of the program that made it: every process (MPI
# ranks too: mpiexec passes the environment on) writes its reports to files
# of its own under a directory for this test, and a test that left any fails
# with them printed. Leak suppressions: lsan.supp beside this script.
# usage: check_reports.sh TEST [ARGS...]
here=$(cd "$(dirname "$0")" && pwd)
for test in "$@"; do :; done # the test is the last argument (after its interpreter)
name=$(basename "$test")
reports="${WP_BUILDDIR:-.}/tests/sanitizer-reports/$name"
rm -rf "$reports"
mkdir -p "$reports"
ASAN_OPTIONS="log_path=$reports/asan:detect_leaks=1:abort_on_error=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
UBSAN_OPTIONS="log_path=$reports/ubsan:print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
LSAN_OPTIONS="suppressions=$here/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS
"$@"
status=$?
# clang's ASan warns once that it does not fully support swapcontext (the
# CUDA host emulation's fibers, which tell ASan of every switch): a notice,
# not a report; a file holding only that line is dropped
for f in $(find "$reports" -type f); do
    grep -qv "WARNING: ASan doesn't fully support makecontext/swapcontext" "$f" || rm -f "$f"
done
found=$(find "$reports" -type f | sort)
if [ -n "$found" ]; then
    for f in $found; do
        echo "== sanitizer report $f"
        cat "$f"
    done
    echo "check_reports: $name: sanitizer reports above (status was $status)"
    exit 1
fi
rmdir "$reports" 2>/dev/null
exit $status
