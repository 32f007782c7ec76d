# Helpers for the shell tests (sourced): checks that count and report, and
# the paths the automake harness exports (WAVEPIPE, WP_SRCDIR, WP_FIXTURES).
set -u
: "${WAVEPIPE:=$(cd "$(dirname "$0")/.." && pwd)/src/wavepipe}"
: "${WP_SRCDIR:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${WP_FIXTURES:=$WP_SRCDIR/tests/topology}"
: "${MPIEXEC:=mpiexec}"
checks=0
failures=0

pass() { checks=$((checks + 1)); echo "PASS: $*"; }
fail() { checks=$((checks + 1)); failures=$((failures + 1)); echo "FAIL: $*"; }

# expect_contains FILE TEXT DESCRIPTION
expect_contains() {
    if grep -qF -- "$2" "$1"; then pass "$3"; else fail "$3 (no '$2' in $1)"; sed 's/^/    | /' "$1" | head -40; fi
}

# expect_status WANT GOT DESCRIPTION
expect_status() {
    if [ "$1" = "$2" ]; then pass "$3"; else fail "$3 (exit status $2, expected $1)"; fi
}

# A fresh scratch directory under the build tree, removed on exit.
scratch_dir() {
    local d
    d="$(pwd)/tests/out/$(basename "$0" .sh).$$"
    rm -rf "$d" && mkdir -p "$d"
    echo "$d"
}

# Holds the machine's one virtual Slurm cluster for the rest of the test:
# its names (wpn1.., wpbr, the ports) are fixed, so tests that build it
# (slurm_probe.sh, campaign_e2e.sh) must not run at once under make -j.
vcluster_lock() {
    mkdir -p /run/lock
    exec 9> /run/lock/wavepipe-vcluster.lock
    flock 9
}

finish() {
    echo "$checks checks, $failures failed"
    [ "$failures" -eq 0 ]
}
