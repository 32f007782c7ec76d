#!/usr/bin/env bash
# Real inter-node MPI on the virtual Slurm cluster (tests/cluster/vcluster.sh,
# VCLUSTER_MPI=mpich5: MPICH 5 over libfabric's tcp provider, see "MPI
# transport" there). On 3 nodes, one sbatch job of 8 ranks (3+3+2, block
# distribution) runs
#     srun --mpi=pmi2 wavepipe run --config jobs/models/gpt-tiny.cfg \
#         --schedule 1f1b --steps 3
# (8 stages, one per rank, so two stage boundaries lie between nodes) and
# must end 0 within its time limit, on MPICH 5 (--version's loaded library),
# with its CSV rows; the bytes the nodes sent into the bridge (rx_bytes of
# its ports wpv1..wpv3, counted around the job) must be at least the payload
# the runtime sent between nodes: every SEND of `wavepipe schedule` whose
# peer is on another node (by the job's own rank -> host map), times
# sequence_length x channels x 4 bytes x sequences per micro-batch, times
# iterations. The control: the same job on Debian's MPICH (LD_LIBRARY_PATH
# removed) keeps MPI in shared memory, so the counters grow by less than
# that; it also trains to the same losses. Then the stage gradient sum across
# nodes: 6 ranks (2+2+2) train one stage replicated 6 ways (data
# parallelism), a group with the same number of ranks on every node, which
# the runtime sums node-aware (reduce-scatter inside each node, allreduce
# across nodes by column, allgather: src/run/comm/comm_mpi.c); its losses must
# equal a single rank's within float rounding. Every step runs under a timeout.
# Skips (77) only where network namespaces cannot be made; the cluster lives
# in the build tree (tests/vcluster.slurm_internode), torn down on exit.
if [ -z "${WAVEPIPE:-}" ] && [ -n "${top_builddir:-}" ]; then
    WAVEPIPE="$(cd "$top_builddir" && pwd)/src/wavepipe"
fi
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

config=$WP_SRCDIR/jobs/models/gpt-tiny.cfg
nodes=3
ranks=8
steps=3
schedule=1f1b
micro_batches=4
step_timeout=${SLURM_INTERNODE_STEP_TIMEOUT:-60}   # seconds per srun step
job_timeout=${SLURM_INTERNODE_JOB_TIMEOUT:-120}    # seconds for sbatch --wait

# --- the cluster: 3 CPUs a node, so that 8 ranks land 3+3+2 ------------------------
VCLUSTER_MPI=mpich5 VCLUSTER_CPUS=3 vcluster_start slurm_internode "$nodes"
rundir="$dir/job"
rm -rf "$rundir" && mkdir -p "$rundir"
cat > "$rundir/job.sh" <<'EOF'
#!/bin/bash
# sbatch job of tests/slurm_internode.sh; WAVEPIPE, CONFIG, OUT, SCHEDULE,
# MICRO_BATCHES, STEPS, STEP_TIMEOUT and RUN_ARGS (more options of wavepipe
# run, word-split) come from the submitting environment.
# Every step is bounded so that the job always ends.
echo "job $SLURM_JOB_ID on $SLURM_JOB_NODELIST ($SLURM_NTASKS tasks), batch host $(hostname)"
timeout "$STEP_TIMEOUT" srun -l hostname | sort -n > "$OUT/ranks.txt"
timeout "$STEP_TIMEOUT" srun -N 1 -n 1 "$WAVEPIPE" --version | grep '^  MPI'
timeout -k 5 "$STEP_TIMEOUT" srun --mpi=pmi2 "$WAVEPIPE" run --config "$CONFIG" \
    --schedule "$SCHEDULE" --micro-batches "$MICRO_BATCHES" --steps "$STEPS" $RUN_ARGS --results "$OUT/run.csv"
st=$?
[ "$st" -eq 124 ] && echo "run step did not finish within $STEP_TIMEOUT s: stopped"
echo "run step exit status $st"
exit "$st"
EOF

# Bytes the nodes sent into the bridge (every frame: headers and Slurm's own
# traffic included).
link_rx_bytes() { timeout 10 bash "$vc" rx-bytes "$dir"; }

# submit NAME [ENV-ARGS...]: the job, under `env ENV-ARGS`, writing into
# $rundir/NAME; sets job_rc and job_bytes (link_rx_bytes grown over the job).
# JOB_RANKS (default $ranks), JOB_PER_NODE (ranks on each node; default as
# Slurm fills them) and RUN_ARGS change the job's ranks and run options.
submit() {
    local name=$1 out=$rundir/$1 t0 t1 rx0 job_ranks=${JOB_RANKS:-$ranks} per_node=()
    [ -n "${JOB_PER_NODE:-}" ] && per_node=(--ntasks-per-node="$JOB_PER_NODE")
    shift
    mkdir -p "$out"
    rx0=$(link_rx_bytes)
    t0=$(now_ms)
    WAVEPIPE="$WAVEPIPE" CONFIG="$config" OUT="$out" SCHEDULE="$schedule" MICRO_BATCHES="$micro_batches" \
        STEPS="$steps" STEP_TIMEOUT="$step_timeout" RUN_ARGS="${RUN_ARGS:-}" \
        run_bg timeout "$job_timeout" env "$@" sbatch --wait --parsable -J "internode-$name" -p wp \
        -N "$nodes" -n "$job_ranks" "${per_node[@]}" -t 2 -D "$out" -o "$out/job.out" "$rundir/job.sh" > "$out/sbatch.txt" 2>&1
    job_rc=$?
    t1=$(now_ms)
    job_bytes=$(($(link_rx_bytes) - rx0))
    sbatch_report "$out" "$job_rc" "$job_timeout"
    expect_status 0 "$job_rc" "the $name job ($job_ranks ranks on $nodes nodes) ends 0 within its limit ($(secs "$t0" "$t1") s)"
    expect_contains "$out/job.out" "run step exit status 0" "$name: srun --mpi=pmi2 wavepipe run exits 0"
}

# csv_column FILE NAME: the values of column NAME, one a line.
csv_column() {
    awk -F, -v name="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i; next } c { print $c }' "$1"
}

# --- on MPICH 5 ------------------------------------------------------------------------
submit mpich5
mine=$rundir/mpich5
bytes_mpich5=$job_bytes
expect_contains "$mine/job.out" "MPI loaded: MPICH Version: 5." "the ranks run on MPICH 5 (wavepipe --version)"

# which node each rank ran on ("0: wpn1")
nranks=$(grep -c '^[0-9]*: wpn[0-9]$' "$mine/ranks.txt" 2>/dev/null)
nhosts=$(sed -n 's/^[0-9]*: //p' "$mine/ranks.txt" 2>/dev/null | sort -u | wc -l)
expect_status "$ranks:$nodes" "$nranks:$nhosts" "the job's $ranks ranks are spread over $nodes nodes"
echo "    rank:node $(sed 's/: /:/' "$mine/ranks.txt" | paste -sd ' ')"

csv=$mine/run.csv
rows=$(csv_column "$csv" iteration 2>/dev/null | paste -sd ' ')
expect_status "0 1 2" "$rows" "run.csv has a row for each of the $steps iterations"
expect_status "$ranks $nodes" "$(csv_column "$csv" ranks | head -n 1) $(csv_column "$csv" nodes | head -n 1)" \
    "run.csv says $ranks ranks on $nodes nodes"

# --- the payload between nodes: a lower bound on the bytes on the links ----------------
"$WAVEPIPE" schedule --kind "$schedule" --ranks "$ranks" --micro-batches "$micro_batches" --format csv \
    > "$rundir/schedule.csv"
expect_status 0 $? "wavepipe schedule writes the same schedule as CSV"
cross=$(awk -F, 'NR == FNR { split($0, a, ": "); node[a[1]] = a[2]; next }
    FNR > 1 && $3 ~ /^SEND_/ && (node[$1] == "" || node[$1] != node[$6]) { n++ }
    END { print n + 0 }' "$mine/ranks.txt" "$rundir/schedule.csv")
seq_len=$(sed -n 's/^ *sequence_length *= *\([0-9]*\);.*/\1/p' "$config")
channels=$(sed -n 's/^ *channels *= *\([0-9]*\);.*/\1/p' "$config")
mb_seqs=$(csv_column "$csv" micro_batch_size | head -n 1)
replicas=$(csv_column "$csv" replicas | head -n 1)
iters=$(csv_column "$csv" iteration | wc -l)
# One stage a rank (replicas all 1): a message carries the whole micro-batch's
# activations (or their gradients), as message_buffer in src/run/core/interpreter.c.
expect_status "1:1:1:1:1:1:1:1" "$replicas" "one rank per stage, so each message carries a whole micro-batch"
msg_bytes=$((seq_len * channels * 4 * ${mb_seqs:-0}))
bound=$((cross * msg_bytes * iters))
echo "    $cross sends a step between nodes x $msg_bytes B ($seq_len x $channels x 4 B x $mb_seqs sequences) x $iters steps = $bound B"
if [ "$cross" -gt 0 ] && [ "$msg_bytes" -gt 0 ]; then
    pass "stages talk across nodes ($cross of $(grep -c ',SEND_' "$rundir/schedule.csv") sends a step)"
else
    fail "stages talk across nodes ($cross sends a step, $msg_bytes B each)"
fi
if [ "$bound" -gt 0 ] && [ "$bytes_mpich5" -ge "$bound" ]; then
    pass "MPICH 5: the nodes sent $bytes_mpich5 B into the bridge, >= the $bound B of payload between nodes"
else
    fail "MPICH 5: the nodes sent $bytes_mpich5 B into the bridge, not >= the $bound B of payload between nodes"
fi

# --- the control: Debian's MPICH keeps MPI off the links --------------------------------
submit debian -u LD_LIBRARY_PATH
theirs=$rundir/debian
expect_contains "$theirs/job.out" "MPI loaded: MPICH Version: 4." "the control runs on Debian's MPICH 4"
if [ "$bound" -gt 0 ] && [ "$job_bytes" -lt "$bound" ]; then
    pass "Debian's MPICH: the nodes sent only $job_bytes B into the bridge, < $bound B (MPI in shared memory)"
else
    fail "Debian's MPICH: the nodes sent $job_bytes B into the bridge, expected < $bound B"
fi
losses_mpich5=$(csv_column "$csv" loss | paste -sd ' ')
losses_debian=$(csv_column "$theirs/run.csv" loss 2>/dev/null | paste -sd ' ')
if [ -n "$losses_mpich5" ] && [ "$losses_mpich5" = "$losses_debian" ]; then
    pass "both MPI libraries train to the same losses ($losses_mpich5)"
else
    fail "both MPI libraries train to the same losses (MPICH 5: '$losses_mpich5', Debian: '$losses_debian')"
fi

# --- a stage summed across nodes, node-aware ---------------------------------------------
# one stage on 6 ranks, 2 on each node; 2 micro-batches of 6 sequences (one a rank)
dp_args="--replicas 6 --global-batch 12"
JOB_RANKS=6 JOB_PER_NODE=2 RUN_ARGS="$dp_args" micro_batches=2 submit data-parallel
"$WAVEPIPE" run --config "$config" --schedule "$schedule" --replicas 1 --global-batch 12 --micro-batches 2 \
    --steps "$steps" --results "$rundir/single.csv" > "$rundir/single.log" 2>&1
expect_status 0 $? "the same training on a single rank, for reference"
dp_hosts=$(sed -n 's/^[0-9]*: //p' "$rundir/data-parallel/ranks.txt" 2>/dev/null | sort | uniq -c | awk '{print $1}' | paste -sd ' ')
expect_status "2 2 2" "$dp_hosts" "the data-parallel job has 2 ranks on each of the 3 nodes (the node-aware sum's case)"
if awk -F, 'NR == FNR { if (FNR > 1) ref[FNR] = $0; next } FNR == 1 { for (i = 1; i <= NF; i++) if ($i == "loss") c = i; next }
        { split(ref[FNR], r, ","); d = $c - r[c]; if (d < 0) d = -d; if (!(d <= 1e-6 * r[c])) bad = 1; n++ }
        END { exit bad || n != '"$steps"' }' "$rundir/single.csv" "$rundir/data-parallel/run.csv"; then
    pass "a stage summed node-aware across 3 nodes trains to a single rank's losses within 1e-6 ($(csv_column "$rundir/data-parallel/run.csv" loss | paste -sd ' '))"
else
    fail "node-aware sum: losses $(csv_column "$rundir/data-parallel/run.csv" loss 2>/dev/null | paste -sd ' ') against a single rank's $(csv_column "$rundir/single.csv" loss | paste -sd ' ')"
fi

[ "$failures" -eq 0 ] || vcluster_show_logs "$dir"

# --- teardown (the EXIT trap does it again, harmlessly) ----------------------------------
vcluster_teardown "$vc" "$dir"
finish
