#!/usr/bin/env bash
# Rank and node loss on the virtual Slurm cluster (tests/cluster/vcluster.sh,
# 4 nodes, MPICH 5 over the veth links). A campaign of two points (gpt-tiny,
# 4 ranks on 2 nodes each, 60 steps, a checkpoint every 10, watchdog_s = 2, or RANK_LOSS_WATCHDOG_S)
# is submitted; point A (1f1b) is hurt twice, point B (gpipe) runs to DONE:
#   1. after A's 13th row, its rank 3 is killed (SIGKILL on its node): the
#      job must end (FAILED written) within 10 s, `wavepipe status` must show
#      A failed naming task 3 and its host, and `sweep --submit` resubmit A
#      alone (B done, skipped);
#   2. A's resumed run: after 3 more rows, the link of its second node goes
#      down (ip link set eth0 down in the node's namespace): the watchdog
#      ends the run step, status names the silent rank and its host, and
#      the job ends within 10 s (measured; srun would wait KillWait + 2 s for
#      the cut-off node's tasks after the abort, so the job script kills it
#      1 s after the run said it is ending the job: watchdog_s + 0.5 s + at
#      most 1.5 s, about 4 s); the link comes back up and A is resubmitted
#      alone.
# A then finishes from its last checkpoint: its results.csv has whole rows
# only and every iteration 0..59, and its run.log says where it resumed.
# Each kill-to-end time is printed ("# ... ms"). Skips (77) only where network
# namespaces cannot be made; the cluster is torn down on exit.
if [ -z "${WAVEPIPE:-}" ] && [ -n "${top_builddir:-}" ]; then
    WAVEPIPE="$(cd "$top_builddir" && pwd)/src/wavepipe"
fi
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

limit_ms=10000
steps=60
down_node=
VCLUSTER_MPI=mpich5 VCLUSTER_CPUS=2 vcluster_start slurm_rank_loss 4
trap '[ -n "$down_node" ] && ip -n "$down_node" link set eth0 up; bash "$vc" down "$dir" >/dev/null 2>&1 || true' EXIT

campaign=$work/rank-loss.cfg
cat > "$campaign" <<EOF
format = "wavepipe-campaign";
version = 1;
name = "rank-loss";
template = "run-cpu";
model = "$WP_SRCDIR/jobs/models/gpt-tiny.cfg";
scaling = "strong";
global_batch = 8;
steps = $steps;
warmup = 1;
repetitions = 1;
save_every = 10;
watchdog_s = ${RANK_LOSS_WATCHDOG_S:-2};
launcher = "srun";
device = "cpu";
slurm = { partition = "wp"; time = "00:05:00"; cpus_per_task = 1; };
axes = { schedule = ["1f1b", "gpipe"]; micro_batches = [4]; nodes = [2]; ranks_per_node = [2]; };
EOF
results=$work/results
camp=$results/rank-loss
sweep() {
    "$WAVEPIPE" sweep "$campaign" --submit --results "$results" --templates "$WP_SRCDIR/templates" \
        --wavepipe "$WAVEPIPE" > "$work/sweep.$1.log" 2>&1
    expect_status 0 $? "wavepipe sweep --submit ($1)"
}
status() { "$WAVEPIPE" status "$campaign" --results "$results" > "$work/status.$1.txt" 2>&1; }
rows() { [ -f "$1" ] && echo $(( $(wc -l < "$1") - 1 )) || echo 0; }
# wait_rows FILE N TIMEOUT_S: until FILE has N data rows
wait_rows() {
    local deadline=$(( $(date +%s) + $3 ))
    while [ "$(rows "$1")" -lt "$2" ] && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.1; done
    [ "$(rows "$1")" -ge "$2" ]
}
# wait_failed POINT_DIR T0_MS: until FAILED appears (at most 60 s); sets took_ms
wait_failed() {
    while [ ! -f "$1/FAILED" ] && [ $(( $(now_ms) - $2 )) -lt 60000 ]; do sleep 0.02; done
    took_ms=$(( $(now_ms) - $2 ))
}
show() { sed 's/^/    | /' "$@" | grep -v '^    | step ' | tail -n 25; }

sweep first
a=$(find "$camp" -mindepth 1 -maxdepth 1 -type d -name '*1f1b*' | head -n 1)
b=$(find "$camp" -mindepth 1 -maxdepth 1 -type d -name '*gpipe*' | head -n 1)
[ -n "$a" ] && [ -n "$b" ] && pass "two points rendered" || { fail "two points rendered"; finish; exit 1; }
expect_contains "$a/job.sbatch" "--kill-on-bad-exit=1" "the run step ends when a task dies (srun -K)"
expect_contains "$a/job.sbatch" "--watchdog-s '${RANK_LOSS_WATCHDOG_S:-2}'" "the campaign's watchdog_s reaches the run"

# names_task FILE PREFIX SUFFIX N: whether FILE has a line PREFIX "task(s) LIST" SUFFIX
# (extended regular expressions) whose LIST holds task N: srun names a node's
# tasks together ("tasks 2-3", "tasks 0,2-3") when they end at once, as the
# killed rank and the one srun kills beside it can
names_task() {
    local list
    list=$(grep -oE -- "$2tasks? [0-9,-]+$3" "$1" | head -n 1 | sed -E 's/^.*tasks? ([0-9,-]+).*$/\1/')
    [ -n "$list" ] && awk -v list="$list" -v n="$4" 'BEGIN {
        k = split(list, parts, ",")
        for (i = 1; i <= k; i++)
            if (split(parts[i], ab, "-") == 2 ? (n >= ab[1] + 0 && n <= ab[2] + 0) : parts[i] == n) exit 0
        exit 1 }'
}

# --- 1. a rank killed -----------------------------------------------------------
if ! wait_rows "$a/results.csv" 13 150; then
    fail "point A runs 13 steps"; show "$a/run.log"; finish; exit 1
fi
map=$(grep '^ranks on ' "$a/run.log" | tr ' ' '\n' | grep '^3:')
node=$(grep '^ranks on ' "$a/run.log" | grep " $map" | cut -d' ' -f3)
pid=${map#3:}
t0=$(now_ms)
kill -9 "$pid"
wait_failed "$a" "$t0"
echo "# rank 3 (pid $pid on $node) killed: FAILED after $took_ms ms"
[ -f "$a/FAILED" ] && [ "$took_ms" -le "$limit_ms" ] && pass "killed rank: the job ends $took_ms ms after the kill" ||
    { fail "killed rank: the job ends within $limit_ms ms (took $took_ms)"; show "$a/run.log"; }
names_task "$a/run.log" "srun: error: $node: " ": Killed" 3 && pass "killed rank: srun names task 3 and $node" ||
    { fail "killed rank: srun names task 3 and $node"; show "$a/run.log"; }

expect_status 1 "$(wait_for_points "$camp" 2 200)" "point B finishes (DONE) beside it"
status killed
expect_contains "$work/status.killed.txt" "failed   exit status" "status: A failed, with its exit status"
names_task "$work/status.killed.txt" "" " on $node: Killed \\(srun\\)" 3 && pass "status: the lost task and its host" ||
    { fail "status: the lost task and its host"; show "$work/status.killed.txt"; }
expect_contains "$work/status.killed.txt" "1 done, 1 failed" "status: B done"
sweep again
expect_contains "$work/sweep.again.log" "$(basename "$b")" "sweep lists B"
grep -q "^$(basename "$b") *done, skipped" "$work/sweep.again.log" && pass "sweep: B done, skipped" ||
    { fail "sweep: B done, skipped"; show "$work/sweep.again.log"; }
grep -q "^$(basename "$a") *failed, rendered again, submitted" "$work/sweep.again.log" &&
    pass "sweep: A failed, submitted again" || { fail "sweep: A resubmitted"; show "$work/sweep.again.log"; }
names_task "$work/sweep.again.log" "^$(basename "$a") +failed: " " on $node: Killed \\(srun\\)" 3 &&
    pass "sweep: says why A failed" || { fail "sweep: says why A failed"; show "$work/sweep.again.log"; }
expect_contains "$work/sweep.again.log" ", 1 submitted now" "sweep: only A submitted"

# --- 2. a node's link down ------------------------------------------------------------
runs_before=$(grep -c '^ranks on .*(rank:pid): 0:' "$a/run.log")
deadline=$(( $(date +%s) + 150 ))
while [ "$(grep -c '^ranks on .*(rank:pid): 0:' "$a/run.log")" -le "$runs_before" ] && [ "$(date +%s)" -lt "$deadline" ]; do
    sleep 0.2
done
base=$(rows "$a/results.csv")
if ! wait_rows "$a/results.csv" $((base + 3)) 60; then
    fail "point A's second run runs 3 steps"; show "$a/run.log"; finish; exit 1
fi
node=$(grep '^ranks on ' "$a/run.log" | tail -n 1 | cut -d' ' -f3) # the second node of the latest run
down_node=$node
t0=$(now_ms)
ip -n "$node" link set eth0 down
wait_failed "$a" "$t0"
ip -n "$node" link set eth0 up
down_node=
echo "# link of $node down: FAILED after $took_ms ms"
[ -f "$a/FAILED" ] && [ "$took_ms" -le "$limit_ms" ] && pass "link down: the job ends $took_ms ms after it" ||
    { fail "link down: the job ends within $limit_ms ms (took $took_ms)"; show "$a/run.log"; }
# the ranks on the other node say what they waited on (a message from a rank
# on $node, or a sum); status below names $node or its rank
awk '/^ranks on .*\(rank:pid\): 0:/ { run = "" } { run = run $0 "\n" } END { printf "%s", run }' "$a/run.log" \
    > "$work/run.link.log"
grep -Eq "^wavepipe run: rank [0-9]+ on [a-z0-9]+: no progress for [0-9.]+ s waiting on " "$work/run.link.log" &&
    ! grep -Eq "^wavepipe run: rank [0-9]+ on $node: " "$work/run.link.log" &&
    pass "link down: the watchdog of the ranks on the other node speaks (none from $node reaches the log)" ||
    { fail "link down: the watchdog's messages"; show "$work/run.link.log"; }
status link
grep -Eq "failed .*(rank [23] on $node silent|$node silent \\(ranks 2 3\\))" "$work/status.link.txt" &&
    pass "status: A failed, a rank on $node or $node silent" ||
    { fail "status: A failed naming the silent rank on $node"; show "$work/status.link.txt"; }
sweep third
expect_contains "$work/sweep.third.log" ", 1 submitted now" "sweep: A alone submitted again"
grep -Eq "^$(basename "$a") +failed: (rank [23] on $node|$node) silent" "$work/sweep.third.log" &&
    pass "sweep: says which rank went silent" || { fail "sweep: says which rank went silent"; show "$work/sweep.third.log"; }

# --- A finishes from its last checkpoint ---------------------------------------------
deadline=$(( $(date +%s) + 200 ))
while [ ! -f "$a/DONE" ] && [ "$(date +%s)" -lt "$deadline" ]; do sleep 1; done
[ -f "$a/DONE" ] && pass "A finishes (DONE)" || { fail "A finishes"; show "$a/run.log"; }
grep -Eq "^resumed from ckpt after (10|20|30|40|50) steps" "$a/run.log" && pass "A resumed from its last checkpoint" ||
    { fail "A resumed from a checkpoint"; show "$a/run.log"; }
if python3 - "$a/results.csv" "$steps" <<'EOF'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline='')))
header, body = rows[0], rows[1:]
assert all(len(r) == len(header) for r in body), "a row without all its fields"
its = {int(r[header.index('iteration')]) for r in body}
assert its == set(range(int(sys.argv[2]))), "iterations missing: %s" % sorted(set(range(int(sys.argv[2]))) - its)
EOF
then pass "A's results.csv: $(rows "$a/results.csv") whole rows, every iteration 0..$((steps - 1))"
else fail "A's results.csv whole with every iteration"; fi
status final
expect_contains "$work/status.final.txt" "2 points: 0 pending, 0 running, 2 done, 0 failed" "status: both done"
finish
