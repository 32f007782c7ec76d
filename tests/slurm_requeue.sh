#!/usr/bin/env bash
# A run job stopped and requeued on the virtual Slurm cluster loses nothing
# (tests/cluster/vcluster.sh, 2 nodes of 2 CPUs, MPICH 5 over the veth
# links). One point of a campaign (gpt-tiny, 1F1B on 4 ranks across the 2
# nodes, 40 steps, a checkpoint every 10, keep_checkpoints = 2) goes through
# `wavepipe sweep --submit` and is interrupted twice:
#   1. `scancel --signal=USR1 --batch` (what Slurm sends at
#      #SBATCH --signal=B:USR1@S before the time limit): the job script
#      passes it to srun, the ranks end their iteration, checkpoint and exit
#      75, and the script requeues its own job (scontrol requeue);
#   2. `scontrol requeue` from outside (an operator, a node drain): Slurm
#      sends SIGTERM to the job's processes, the run checkpoints the same
#      way and Slurm puts the job back;
# then the job runs to the end. It must end DONE with results.csv holding
# each of the 40 iterations once and the losses of an uninterrupted run of
# the same point (`srun` on the same allocation shape, bit for bit), the
# run log showing both resumes, the checkpoint directory pruned to 2 step
# directories with `latest` on step 40, and `wavepipe harvest` counting the
# 39 iterations after the warm-up once. Then a point with a real time limit
# of one minute and the warning 55 s before it, which needs more than a
# minute: stopped by the warning, requeued, DONE with every iteration once.
# About 2.5 minutes. Skips (77) only where network namespaces
# cannot be made.
if [ -z "${WAVEPIPE:-}" ] && [ -n "${top_builddir:-}" ]; then
    WAVEPIPE="$(cd "$top_builddir" && pwd)/src/wavepipe"
fi
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

steps=40
VCLUSTER_MPI=mpich5 VCLUSTER_CPUS=2 vcluster_start slurm_requeue 2

# submit NAME STEPS SAVE_EVERY KEEP TIME WARNING_S: a one-point campaign of
# gpt-tiny, 1F1B on 2 nodes x 2 ranks, through sweep --submit; sets p (its
# point directory) and job (its run job)
submit() {
    cat > "$work/$1.cfg" <<EOF
format = "wavepipe-campaign"; version = 1;
name = "$1"; template = "run-cpu"; model = "$WP_SRCDIR/jobs/models/gpt-tiny.cfg";
scaling = "strong"; global_batch = 8; steps = $2; warmup = 1; save_every = $3; keep_checkpoints = $4;
slurm = { partition = "wp"; time = "$5"; signal_warning_s = $6; };
axes = { schedule = ["1f1b"]; nodes = [2]; ranks_per_node = [2]; };
EOF
    "$WAVEPIPE" sweep "$work/$1.cfg" --submit --results "$work/results" --templates "$WP_SRCDIR/templates" \
        --wavepipe "$WAVEPIPE" > "$work/sweep-$1.log" 2>&1
    expect_status 0 $? "wavepipe sweep --submit $1 (one point, 4 ranks on 2 nodes, time limit $5)"
    p=$(find "$work/results/$1" -mindepth 1 -maxdepth 1 -type d | head -n 1)
    job=$(awk '$1 == "run" { print $2 }' "$p/jobids" 2>/dev/null)
}
submit requeue-test $steps 10 2 00:10:00 60
expect_contains "$p/job.sbatch" "#SBATCH --signal=B:USR1@60" "the job asks for the warning 60 s before its limit"

rows() { awk 'END { print NR - 1 }' "$p/results.csv" 2>/dev/null || echo 0; }
# wait_rows N TIMEOUT_S: until results.csv has at least N rows
wait_rows() {
    local deadline=$(($(date +%s) + $2))
    while [ "$(rows)" -lt "$1" ] && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.2; done
    [ "$(rows)" -ge "$1" ]
}
# release: a requeued job waits for its begin time (Slurm sets it CredExpire +
# 1 s ahead, 121 s by default); once it has been pending 5 s (the nodes' last
# steps of its previous run gone: a slurmd that still has them refuses the
# new batch script, "Job N already killed"), it is let go at once
pending_since=
release() {
    if [ "$(squeue -h -j "$job" -o %T 2>/dev/null)" != PENDING ]; then
        pending_since=
        return
    fi
    [ -n "$pending_since" ] || pending_since=$(date +%s)
    [ $(($(date +%s) - pending_since)) -ge 5 ] && scontrol update jobid="$job" starttime=now > /dev/null 2>&1
}
# wait_restart N TIMEOUT_S: until the job has started for the Nth time (restart N-1) and run one iteration more
wait_restart() {
    local deadline=$(($(date +%s) + $2)) before
    before=$(rows)
    while [ "$(date +%s)" -lt "$deadline" ]; do
        [ "$(grep -c '^resumed from' "$p/run.log" 2>/dev/null)" -ge "$1" ] && [ "$(rows)" -gt "$before" ] && return 0
        release
        sleep 0.5
    done
    return 1
}

wait_rows 6 120
expect_status 0 $? "the job runs (6 iterations written)"
t0=$(now_ms)
scancel --signal=USR1 --batch "$job"
wait_restart 1 120
expect_status 0 $? "after scancel --signal=USR1 --batch: stopped, requeued and resumed ($(secs "$t0" "$(now_ms)") s)"
expect_contains "$p/run.log" "stopped by signal 10 after" "the run stopped on the warning, after its iteration"
expect_contains "$p/run.log" "requeueing job $job" "the job script requeued its own job"
first=$(grep -m 1 '^stopped by signal' "$p/run.log" | sed 's/.*after \([0-9]*\) of.*/\1/')

wait_rows $((first + 5)) 120
t0=$(now_ms)
scontrol requeue "$job"
wait_restart 2 120
expect_status 0 $? "after scontrol requeue: stopped on SIGTERM, requeued by Slurm, resumed ($(secs "$t0" "$(now_ms)") s)"
expect_status 2 "$(grep -c '^stopped by signal' "$p/run.log")" "two stops in run.log"
expect_contains "$p/run.log" "stopped by signal 15 after" "the second on SIGTERM"

ended=$(wait_for_points "$work/results/requeue-test" 1 180)
expect_status 1 "$ended" "the point ends DONE"
[ -f "$p/DONE" ] || { tail -n 30 "$p/run.log"; cat "$p"/run-*.err; } 2>/dev/null | sed 's/^/    | /'
expect_contains "$p/env.txt" "restart_count: 2" "on its third start (restart count 2)"
iters=$(awk -F, 'NR > 1 { print $13 }' "$p/results.csv" | sort -n | uniq | wc -l)
expect_status "$steps $steps" "$iters $(rows)" "results.csv: each of the $steps iterations once"
expect_status "step-00000040" "$(readlink "$p/ckpt/latest")" "ckpt/latest is the last step"
expect_status 2 "$(find "$p/ckpt" -mindepth 1 -maxdepth 1 -name 'step-*' | wc -l)" "keep_checkpoints = 2: two step directories"

# the uninterrupted run of the same point, for its losses
(cd "$work" && timeout 300 srun -p wp -N 2 --ntasks-per-node=2 --mpi=pmi2 "$WAVEPIPE" run --config "$p/model.cfg" \
    --schedule 1f1b --micro-batches "$(sed -n "s/.*--micro-batches '\([0-9]*\)'.*/\1/p" "$p/job.sbatch")" \
    --global-batch 8 --steps $steps --device cpu --results "$work/whole.csv" > "$work/whole.log" 2>&1)
expect_status 0 $? "the uninterrupted run (srun, 4 ranks on 2 nodes)"
if [ -s "$work/whole.csv" ] && [ "$(awk -F, 'NR > 1 { print $13, $19 }' "$work/whole.csv")" = \
     "$(awk -F, 'NR > 1 { print $13, $19 }' "$p/results.csv" | sort -n)" ]; then
    pass "stopped twice and resumed: the $steps losses of the uninterrupted run, bit for bit"
else
    fail "the interrupted point's losses differ from the uninterrupted run's"
    paste -d' ' <(awk -F, 'NR > 1 { print $13, $19 }' "$work/whole.csv") \
        <(awk -F, 'NR > 1 { print $13, $19 }' "$p/results.csv" | sort -n) | head -n 5 | sed 's/^/    | /'
fi

"$WAVEPIPE" harvest "$work/results/requeue-test" --out "$work/harvest.csv" > "$work/harvest.txt" 2>&1
expect_status 0 $? "wavepipe harvest"
n=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } { print $c["iterations"], $c["duplicate_rows"] }' \
    "$work/harvest.csv")
expect_status "$((steps - 1)) 0" "${n:-none}" "harvest counts each of the $((steps - 1)) iterations after the warm-up once"
# a real time limit: 1 minute, the warning 55 s before it (slurmctld sends
# it from its periodic check, up to about 30 s late, so 5 to 35 s into the
# job); 1000 steps need more than a minute (60-70 ms each here; 250 steps
# once finished in 16.5 s, before a late warning came), so the job is
# stopped by the warning and requeued (as often as it takes) and ends DONE
# with every iteration once
submit limit-test 1000 100 1 00:01:00 55
deadline=$(($(date +%s) + 300))
while [ ! -f "$p/DONE" ] && [ ! -f "$p/FAILED" ] && [ "$(date +%s)" -lt "$deadline" ]; do
    release
    sleep 0.5
done
[ -f "$p/DONE" ] && pass "the time-limited point ends DONE" || {
    fail "the time-limited point ends DONE"; tail -n 20 "$p/run.log" 2>/dev/null | sed 's/^/    | /'; }
stops=$(grep -c '^stopped by signal 10 after' "$p/run.log" 2>/dev/null)
if [ "${stops:-0}" -ge 1 ] && grep -q "requeueing job $job" "$p/run.log"; then
    pass "stopped by the time-limit warning and requeued $stops time(s)"
else
    fail "a stop on the time-limit warning and a requeue"
fi
if grep -q "DUE TO TIME LIMIT" "$p"/run-*.err "$p/run.log" 2>/dev/null; then
    fail "a job step was killed at the time limit"
else
    pass "no step reached the time limit itself"
fi
iters=$(awk -F, 'NR > 1 { print $13 }' "$p/results.csv" | sort -n | uniq | wc -l)
expect_status "1000 1000" "$iters $(rows)" "results.csv: each of the 1000 iterations once"
vcluster_teardown "$vc" "$dir"
finish
