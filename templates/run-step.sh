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
