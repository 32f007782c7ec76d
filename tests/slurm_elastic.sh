#!/usr/bin/env bash
# Losing a node without a person (issue 34) on the virtual Slurm cluster
# (tests/cluster/vcluster.sh, 3 nodes, MPICH 5 over the veth links): a
# campaign point with recover = "replan" (gpt-tiny, 3 nodes x 2 ranks, 40
# steps, a checkpoint every 5, watchdog_s = 2) is submitted; after its 8th
# row the link of its third node goes down and stays down. Unattended, the
# job must end, `wavepipe recover` (run by the job script) must submit the
# point again on the 2 nodes left without the lost one, and the new job must
# resume from the newest checkpoint and finish (DONE). Measured and printed:
# the time from the cut to the first iteration of the new job, and the
# iterations run twice (at most one checkpoint interval). Checked: the
# chain (recoveries.txt) names the node, `wavepipe status` shows the
# recovery, results.csv holds every iteration 0..39 in whole rows; and a
# point whose run fails on its own input is not submitted again. Skips (77)
# only where network namespaces cannot be made; the cluster is torn down on
# exit.
if [ -z "${WAVEPIPE:-}" ] && [ -n "${top_builddir:-}" ]; then
    WAVEPIPE="$(cd "$top_builddir" && pwd)/src/wavepipe"
fi
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

steps=40
down_node=
VCLUSTER_MPI=mpich5 VCLUSTER_CPUS=2 vcluster_start slurm_elastic 3
trap '[ -n "$down_node" ] && ip -n "$down_node" link set eth0 up; bash "$vc" down "$dir" >/dev/null 2>&1 || true' EXIT

campaign=$work/elastic.cfg
cat > "$campaign" <<EOF
format = "wavepipe-campaign";
version = 1;
name = "elastic";
template = "run-cpu";
model = "$WP_SRCDIR/jobs/models/gpt-tiny.cfg";
scaling = "strong";
global_batch = 8;
steps = $steps;
warmup = 1;
repetitions = 1;
save_every = 5;
watchdog_s = 2;
launcher = "srun";
device = "cpu";
recover = "replan";
min_nodes = 2;
max_recoveries = 2;
slurm = { partition = "wp"; time = "00:08:00"; cpus_per_task = 1; };
axes = { schedule = ["1f1b"]; micro_batches = [4]; nodes = [3]; ranks_per_node = [2]; };
EOF
results=$work/results
camp=$results/elastic
"$WAVEPIPE" sweep "$campaign" --submit --results "$results" --templates "$WP_SRCDIR/templates" \
    --wavepipe "$WAVEPIPE" > "$work/sweep.log" 2>&1
expect_status 0 $? "wavepipe sweep --submit"
a=$(find "$camp" -mindepth 1 -maxdepth 1 -type d | head -n 1)
[ -n "$a" ] || { fail "the point rendered"; finish; exit 1; }
expect_contains "$a/job.sbatch" "recover . --nodes" "the job script calls wavepipe recover after a failure"
rows() { [ -f "$1" ] && echo $(( $(wc -l < "$1") - 1 )) || echo 0; }
show() { sed 's/^/    | /' "$@" | grep -v '^    | step ' | tail -n 30; }
deadline=$(( $(date +%s) + 180 ))
while [ "$(rows "$a/results.csv")" -lt 8 ] && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.1; done
[ "$(rows "$a/results.csv")" -ge 8 ] || { fail "the point runs 8 steps"; show "$a/run.log"; finish; exit 1; }

# --- the third node's link goes down, and stays down ---------------------------------
node=$(grep '^ranks on ' "$a/run.log" | tail -n 1 | cut -d' ' -f3)
down_node=$node
t0=$(now_ms)
ip -n "$node" link set eth0 down
rows_at_cut=$(rows "$a/results.csv")
echo "# link of $node down after $rows_at_cut rows"
# the new job's first row: a row after the run that resumed (its "resumed from" line)
deadline=$(( $(date +%s) + 240 ))
first_ms=
while [ ! -f "$a/DONE" ] && [ ! -f "$a/FAILED" ] && [ "$(date +%s)" -lt "$deadline" ]; do
    if [ -z "$first_ms" ] && grep -q '^resumed from ckpt' "$a/run.log" 2>/dev/null &&
       [ "$(rows "$a/results.csv")" -gt "$rows_at_cut" ]; then
        first_ms=$(( $(now_ms) - t0 ))
    fi
    sleep 0.2
done
[ -f "$a/DONE" ] && pass "the point finished (DONE) unattended" ||
    { fail "the point finished unattended"; show "$a/run.log"; [ -f "$a/FAILED" ] && cat "$a/FAILED"; }
echo "# from the cut to the new job's first iteration: ${first_ms:-?} ms"
grep -q "^recover: job [0-9]*: a new job on 2 nodes without $node" "$a/run.log" &&
    pass "recover: a new job on the 2 nodes left, without $node" ||
    { fail "recover's decision in run.log"; show "$a/run.log"; }
grep -q "lost=$node nodes=2 exclude=$node next=[0-9]" "$a/recoveries.txt" 2>/dev/null &&
    pass "the chain names $node and the new job" || { fail "recoveries.txt"; cat "$a/recoveries.txt" 2>/dev/null; }
grep -Eq "^resumed from ckpt after (5|10|15|20|25|30|35) steps" "$a/run.log" &&
    pass "the new job resumed from a checkpoint" || { fail "resumed from a checkpoint"; show "$a/run.log"; }
grep -q "^replan: plan-n2.cfg (plan for model (18 layers, profile batch [0-9]*) on [a-z0-9]*: 2 nodes x 2 emulated GPU" \
    "$a/run.log" && grep -q "^plan plan-n2.cfg: " "$a/run.log" &&
    pass "the new job planned for its 2 nodes x 2 ranks (wavepipe plan) and ran that plan" ||
    { fail "a new plan for the nodes left"; show "$a/run.log"; }
# the loss trajectory continues: the last loss against one rank's uninterrupted run
"$MPIEXEC" -n 1 "$WAVEPIPE" run --config "$WP_SRCDIR/jobs/models/gpt-tiny.cfg" --schedule 1f1b --micro-batches 4 \
    --global-batch 8 --steps "$steps" > "$work/reference.log" 2>&1
ref=$(grep '^step' "$work/reference.log" | tail -n 1 | awk '{print $4}' | tr -d ,)
got=$(awk -F, -v last=$((steps - 1)) 'NR == 1 { for (i = 1; i <= NF; i++) { if ($i == "loss") c = i; if ($i == "iteration") it = i }; next }
    $it == last { l = $c } END { print l }' "$a/results.csv" 2>/dev/null)
echo "# last loss: $got, one rank uninterrupted: $ref"
awk -v a="$got" -v b="$ref" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b > 0 && d <= 1e-4 * b) }' &&
    pass "the last loss equals one rank's uninterrupted run within 1e-4 ($got, $ref)" ||
    fail "the last loss against one rank's uninterrupted run: $got, $ref"

"$WAVEPIPE" status "$campaign" --results "$results" --no-slurm > "$work/status.txt" 2>&1
grep -q "recovered 1 time: job [0-9]* lost $node, again on 2 nodes without $node as job [0-9]" "$work/status.txt" &&
    pass "status shows the recovery" || { fail "status shows the recovery"; show "$work/status.txt"; }
if python3 - "$a/results.csv" "$steps" > "$work/iterations.txt" <<'EOF'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline='')))
header, body = rows[0], rows[1:]
assert all(len(r) == len(header) for r in body), "a row without all its fields"
its = [int(r[header.index('iteration')]) for r in body]
assert set(its) == set(range(int(sys.argv[2]))), "iterations missing: %s" % sorted(set(range(int(sys.argv[2]))) - set(its))
print(len(its) - len(set(its)))
EOF
then
    again=$(cat "$work/iterations.txt")
    echo "# iterations run twice: $again (a checkpoint every 5)"
    [ "$again" -le 5 ] && pass "results.csv: every iteration 0..$((steps - 1)), $again run twice (at most 5)" ||
        fail "results.csv: $again iterations run twice (more than a checkpoint interval)"
else
    fail "results.csv whole with every iteration"
fi
"$WAVEPIPE" harvest "$camp" > "$work/harvest.out" 2>&1
shape=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) { if ($i == "shape_changes") c = i; if ($i == "shape_last") l = i }; next }
    { print $c "|" $l }' "$camp/harvest.csv" 2>/dev/null)
case $shape in "1|4 ranks on 2 nodes in "*) true ;; *) false ;; esac && [ -s "$camp/plots/shape_$(basename "$a").dat" ] &&
    pass "harvest: one change of shape (the plan in force: $shape), marked on plots/shape_$(basename "$a")" ||
    { fail "harvest shows the change of shape ($shape)"; tail -n 5 "$work/harvest.out"; }
ip -n "$node" link set eth0 up
down_node=

# --- a run's own fault is not recovered ------------------------------------------------
# the same point rendered under another name, its model file then broken:
# the run fails on its input (file:line), and recover must not submit it
own=$work/own.cfg
sed -e 's/^name = .*/name = "elastic-own";/' -e 's/nodes = \[3\]/nodes = [2]/' "$campaign" > "$own"
"$WAVEPIPE" sweep "$own" --dry-run --results "$results" --templates "$WP_SRCDIR/templates" \
    --wavepipe "$WAVEPIPE" > "$work/sweep.own.log" 2>&1
o=$(find "$results/elastic-own" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | head -n 1)
if [ -n "$o" ]; then
    echo "model = { layers = 0; };" > "$o/model.cfg"
    sbatch --parsable --chdir="$o" "$o/job.sbatch" > "$work/own.job" 2>&1
fi
deadline=$(( $(date +%s) + 120 ))
while [ -n "$o" ] && [ ! -f "$o/DONE" ] && [ ! -f "$o/FAILED" ] && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.5; done
[ -n "$o" ] && [ -f "$o/FAILED" ] && grep -q "^recover: job [0-9]*: no new job: the run failed by its own fault" "$o/run.log" &&
    [ ! -f "$o/recoveries.txt" ] && pass "a run failing on its input: FAILED, not submitted again" ||
    { fail "a run's own fault is not recovered"; [ -n "$o" ] && show "$o/run.log"; }
finish
