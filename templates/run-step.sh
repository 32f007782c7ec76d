# ---- run step (templates/run-step.sh, put here by `wavepipe sweep` for @@RUN_STEP@@) ----
# run_step CMD...: runs the step's command in the background, its output
# appended to run.log, and passes signals on to it: Slurm's warning before
# the time limit (#SBATCH --signal=B:USR1@S reaches only this shell) and
# SIGTERM (time limit, scancel, scontrol requeue). `wavepipe run` then ends
# the iteration in flight on every rank, appends its CSV row, checkpoints
# and exits 75. Returns the command's exit status.
stop_signal=
run_step() {
    "$@" >> run.log 2>&1 &
    local pid=$! status
    trap 'stop_signal=USR1; kill -USR1 '"$pid"' 2>/dev/null' USR1
    trap 'stop_signal=${stop_signal:-TERM}; kill -TERM '"$pid"' 2>/dev/null' TERM
    while :; do
        wait "$pid"
        status=$?
        kill -0 "$pid" 2>/dev/null || break # a trapped signal interrupted the wait: wait again
    done
    trap - USR1 TERM
    return "$status"
}

# finish_step STATUS: DONE when the run ended with its summary; after a
# stop (exit 75) on the time-limit warning, the job requeues itself (when
# the campaign says requeue) and resumes from its checkpoint when it runs
# again; otherwise FAILED with the exit status and what to do.
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
    if [ "$status" -eq 75 ]; then
        echo "exit status 75 (job ${SLURM_JOB_ID:-?}): stopped by SIG${stop_signal:-TERM} after a checkpoint;" \
             "a requeued job resumes, or wavepipe sweep --submit" > FAILED
    else
        echo "exit status $status (job ${SLURM_JOB_ID:-?})" > FAILED
    fi
    exit "$status"
}
# ---- end of the run step ----
