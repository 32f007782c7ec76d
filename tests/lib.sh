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

# --- the virtual Slurm cluster (tests/cluster/vcluster.sh) ---------------------

# wait_for_points CAMPAIGN_DIR N TIMEOUT_S: waits until N point directories
# of a submitted campaign have ended (DONE or FAILED), at most TIMEOUT_S
# seconds; prints how many ended DONE.
wait_for_points() {
    local camp=$1 n=$2 deadline=$(($(date +%s) + $3)) ended
    while :; do
        ended=$(find "$camp" -mindepth 2 -maxdepth 2 \( -name DONE -o -name FAILED \) | wc -l)
        [ "$ended" -ge "$n" ] || [ "$(date +%s)" -ge "$deadline" ] && break
        sleep 2
    done
    find "$camp" -mindepth 2 -maxdepth 2 -name DONE | wc -l
}

# vcluster_require VCLUSTER_SH: skips the test (77) where network namespaces
# cannot be made; fails it where a tool or the wavepipe binary is missing.
vcluster_require() {
    local reason rc
    reason=$(bash "$1" can-run 2>&1)
    rc=$?
    if [ "$rc" -eq 1 ]; then
        echo "SKIP: no network namespaces here: $reason"
        exit 77
    elif [ "$rc" -ne 0 ]; then
        fail "vcluster.sh can-run: $reason"
        finish
        exit 1
    fi
    if [ ! -x "$WAVEPIPE" ]; then
        fail "no wavepipe binary at $WAVEPIPE"
        finish
        exit 1
    fi
}

# run_bg COMMAND...: runs a long command in the background and waits for it,
# so that a signal (make check interrupted) runs the traps at once; a trap
# can stop it by $bgpid.
bgpid=
run_bg() { "$@" & bgpid=$!; wait "$bgpid"; local st=$?; bgpid=; return "$st"; }
now_ms() { date +%s%3N; }
# sbatch_report DIR RC LIMIT_S: after `timeout LIMIT_S sbatch --wait --parsable
# ... -o DIR/job.out > DIR/sbatch.txt` ended with RC: its output shown, the
# job cancelled when the limit ran out (124), and the job's output shown
sbatch_report() {
    local dir=$1 rc=$2 limit=$3 jobid
    sed 's/^/    sbatch: /' "$dir/sbatch.txt"
    if [ "$rc" -eq 124 ]; then
        echo "    the job did not finish within $limit s: cancelling it"
        jobid=$(head -n 1 "$dir/sbatch.txt")
        [ -n "$jobid" ] && timeout 10 scancel "$jobid" 2>/dev/null
    fi
    echo "---- job output ($dir/job.out)"
    [ -r "$dir/job.out" ] && sed 's/^/    | /' "$dir/job.out"
}
secs() { echo "$(( ($2 - $1) / 1000 )).$(( ($2 - $1) % 1000 / 100 ))"; }

# vcluster_show_logs DIR: the tails of the cluster's daemon logs.
vcluster_show_logs() {
    local f
    for f in "$1"/log/slurmctld.log "$1"/log/slurmd.*.log "$1"/log/munged.log; do
        [ -r "$f" ] || continue
        echo "---- tail of $f"
        tail -n 30 "$f" | sed 's/^/    | /'
    done
    echo "---- squeue / sinfo"
    timeout 10 squeue 2>&1 | sed 's/^/    | /'
    timeout 10 sinfo -N 2>&1 | sed 's/^/    | /'
}

# vcluster_down_on_exit VCLUSTER_SH DIR: the cluster is torn down when the
# test ends, whatever happened; a signal first stops the command run_bg
# waits for.
vcluster_down_on_exit() {
    vcluster_sh_=$1
    vcluster_dir_=$2
    trap 'bash "$vcluster_sh_" down "$vcluster_dir_" >/dev/null 2>&1 || true' EXIT
    trap '[ -n "$bgpid" ] && kill "$bgpid" 2>/dev/null; exit 1' INT TERM HUP
}

# vcluster_start NAME NODES: what every test on the virtual cluster does
# first: skips (77) where network namespaces cannot be made, takes the
# cluster's lock, sets vc (vcluster.sh), builddir, dir (tests/vcluster.NAME)
# and work (tests/out/NAME, emptied), tears the cluster down on exit and
# brings NODES nodes up (VCLUSTER_MPI and VCLUSTER_CPUS pass through) with
# the binary, the build tree and the sources visible on them.
vcluster_start() {
    vc="$(cd "$(dirname "$0")" && pwd)/cluster/vcluster.sh"
    vcluster_require "$vc"
    vcluster_lock
    builddir=${WP_BUILDDIR:-$(pwd)}
    dir="$(cd "$builddir" && pwd)/tests/vcluster.$1"
    work="$(cd "$builddir" && pwd)/tests/out/$1"
    rm -rf "$work" && mkdir -p "$work"
    vcluster_down_on_exit "$vc" "$dir"
    vcluster_up "$vc" "$dir" "$2" "$(dirname "$WAVEPIPE"):$builddir:$WP_SRCDIR"
}

# vcluster_up VCLUSTER_SH DIR NODES KEEP: brings a cluster of NODES up in DIR
# (KEEP: colon-separated paths under /tmp to keep visible on the nodes) and
# sources DIR/env; ends the test when the cluster does not come up.
vcluster_up() {
    local t0 t1 rc
    t0=$(now_ms)
    VCLUSTER_KEEP=$4 run_bg bash "$1" up "$2" "$3"
    rc=$?
    t1=$(now_ms)
    expect_status 0 "$rc" "a Slurm cluster of $3 nodes comes up (vcluster.sh up, $(secs "$t0" "$t1") s)"
    if [ "$rc" -ne 0 ]; then
        vcluster_show_logs "$2"
        finish
        exit 1
    fi
    # shellcheck disable=SC1091
    . "$2/env"
}

# vcluster_teardown VCLUSTER_SH DIR: takes the cluster down and checks that
# no node namespace or bridge is left.
vcluster_teardown() {
    local t0 t1 rc
    t0=$(now_ms)
    run_bg bash "$1" down "$2"
    rc=$?
    t1=$(now_ms)
    expect_status 0 "$rc" "the cluster comes down (vcluster.sh down, $(secs "$t0" "$t1") s)"
    if ip netns list 2>/dev/null | grep -q '^wpn[0-9]' || ip link show wpbr >/dev/null 2>&1; then
        fail "no node namespace or bridge is left"
    else
        pass "no node namespace or bridge is left"
    fi
}

finish() {
    echo "$checks checks, $failures failed"
    [ "$failures" -eq 0 ]
}
