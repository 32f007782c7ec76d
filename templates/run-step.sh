# ---- run step (templates/run-step.sh, put here by `wavepipe sweep` for @@RUN_STEP@@) ----
# run_step CMD...: runs the step's command in the background, its output
# appended to run.log, and passes signals on to it: Slurm's warning before
# the time limit (#SBATCH --signal=B:USR1@S reaches only this shell) and
# SIGTERM (time limit, scancel, scontrol requeue). `wavepipe run` then ends
# the iteration in flight on every rank, appends its CSV row, checkpoints
# and exits 75. When a rank says it is ending the job (a lost rank or node:
# its watchdog or MPI's error), the launcher gets 1 s to end the step and is
# then killed: srun would otherwise wait KillWait + 2 s more for the tasks of
# a node it can no longer reach. Returns the command's exit status.
stop_signal=
run_step() {
    local start seen size status ending=0
    start=$(stat -c %s run.log 2>/dev/null || echo 0) # this run's lines only: earlier runs' stay in run.log
    seen=$start
    "$@" >> run.log 2>&1 &
    local pid=$!
    trap 'stop_signal=USR1; kill -USR1 '"$pid"' 2>/dev/null' USR1
    trap 'stop_signal=${stop_signal:-TERM}; kill -TERM '"$pid"' 2>/dev/null' TERM
    while kill -0 "$pid" 2>/dev/null; do
        sleep 0.5
        if [ "$ending" -gt 0 ]; then
            ending=$((ending + 1))
            [ "$ending" -gt 2 ] && kill -KILL "$pid" 2>/dev/null
            continue
        fi
        size=$(stat -c %s run.log 2>/dev/null || echo 0)
        [ "$size" -gt "$seen" ] || continue
        tail -c "+$((seen + 1))" run.log | head -c "$((size - seen))" |
            grep -q '; ending the job (a rank or its node lost?)$' && ending=1
        seen=$((size - 300 > start ? size - 300 : start)) # a line cut at the end is read again
    done
    wait "$pid"
    status=$?
    [ "$ending" -gt 2 ] && echo "the launcher did not end 1 s after a rank ended the job: killed" >> run.log
    trap - USR1 TERM
    return "$status"
}

# replan_step: in a job of a recovered point (recover = "replan") that has
# other nodes than the point had, a plan for the nodes it has, whose file
# replaces the point's schedule options in run_args (an array the template
# made of @@RUN_ARGS@@): the allocation described (CPU ranks: `wavepipe
# calibrate` across its nodes, each rank an emulated GPU of `wavepipe topo
# --gpus-per-node`; GPUs: `wavepipe probe`), the layer table (the point's
# table where compute is emulated, else `wavepipe profile` on this node's
# kernels, kept as layers.cfg), then `wavepipe plan` with the point's global
# batch on every device. The run resumes the newest checkpoint on that
# plan; where a step fails, run.log says so and the run keeps the point's
# options (the checkpoint's blocks split evenly over its stages).
replan_step() {
    local now=${SLURM_JOB_NUM_NODES:-} was=@NODES@ per_node=@RANKS_PER_NODE@ table=@LAYER_TABLE@ tag
    [ @RECOVER@ = 1 ] && [ -s recoveries.txt ] && [ -n "$now" ] && [ "$now" -ne "$was" ] || return 0
    tag=n$now
    echo "replan: $now nodes instead of $was: a plan for them" >> run.log
    if [ @DEVICE@ = cuda ]; then
        srun --mpi=pmix --ntasks-per-node=1 "$wavepipe" probe --quiet --out "cluster-$tag.cfg" >> run.log 2>&1
    else
        srun --mpi=pmi2 "$wavepipe" calibrate --min-bytes 4KiB --max-bytes 1MiB --repeat 3 \
            --out "calibrated-$tag.cfg" > "calibrate-$tag.log" 2>&1 &&
            "$wavepipe" topo --cluster "calibrated-$tag.cfg" --gpus-per-node "$per_node" --quiet \
                --out "cluster-$tag.cfg" >> run.log 2>&1
    fi || { echo "replan: describing the allocation failed; the point's own options instead" >> run.log; return 0; }
    if [ -z "$table" ]; then
        table=layers.cfg
        [ -s "$table" ] || "$wavepipe" profile --model @MODEL@ --device @DEVICE@ -o "$table" > profile.log 2>&1 ||
            { echo "replan: profiling failed (profile.log); the point's own options instead" >> run.log; return 0; }
    fi
    if "$wavepipe" plan --layers "$table" --cluster "cluster-$tag.cfg" --global-batch @GLOBAL_BATCH@ \
           --devices $((now * per_node)) --tensor 1x1 --out "plan-$tag.cfg" > "plan-$tag.txt" 2>&1; then
        run_args=(--plan "plan-$tag.cfg" @RUN_ARGS_BASE@)
        echo "replan: plan-$tag.cfg ($(grep -m 1 -E '^(stage|plan)' "plan-$tag.txt" | cut -c1-120))" >> run.log
    else
        echo "replan: wavepipe plan failed (plan-$tag.txt); the point's own options instead" >> run.log
    fi
}

# finish_step STATUS: DONE when the run ended with its summary; after a
# stop (exit 75) on the time-limit warning, the job requeues itself (when
# the campaign says requeue) and resumes from its checkpoint when it runs
# again; after a failure, where the campaign says recover = "replan",
# `wavepipe recover` submits the point again without a lost node (it says
# why or why not in run.log; nothing for the run's own fault); otherwise
# FAILED with the exit status and what to do.
finish_step() {
    local status=$1
    if [ "$status" -eq 0 ] && grep -q '^summary:' run.log; then
        echo "exit status 0" > DONE
        exit 0
    fi
    if [ "$status" -eq 75 ] && [ "$stop_signal" = USR1 ] && [ @REQUEUE@ = 1 ] && [ -n "${SLURM_JOB_ID:-}" ]; then
        echo "stopped before the time limit (restart ${SLURM_RESTART_COUNT:-0}): requeueing job $SLURM_JOB_ID" >> run.log
        if scontrol requeue "$SLURM_JOB_ID" >> run.log 2>&1; then
            exit 0
        fi
        echo "scontrol requeue failed" >> run.log
    fi
    [ "$status" -ne 0 ] || status=1
    local point_nodes=@NODES@
    if [ @RECOVER@ = 1 ] && [ "$status" -ne 75 ] && [ -n "${SLURM_JOB_ID:-}" ] &&
       "$wavepipe" recover . --nodes "${SLURM_JOB_NUM_NODES:-$point_nodes}" --job "$SLURM_JOB_ID" \
           --min-nodes @MIN_NODES@ --max-recoveries @MAX_RECOVERIES@ --partition @PARTITION@ >> run.log 2>&1; then
        exit "$status" # a new job of the point is queued: neither DONE nor FAILED
    fi
    if [ "$status" -eq 75 ]; then
        echo "exit status 75 (job ${SLURM_JOB_ID:-?}): stopped by SIG${stop_signal:-TERM} after a checkpoint;" \
             "a requeued job resumes, or wavepipe sweep --submit" > FAILED
    else
        echo "exit status $status (job ${SLURM_JOB_ID:-?})" > FAILED
    fi
    exit "$status"
}
# ---- end of the run step ----
