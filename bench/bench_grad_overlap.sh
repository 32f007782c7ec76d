#!/usr/bin/env bash
# Gradient buckets overlapped with the backward (wavepipe run --grad-overlap,
# src/run/core/grad_reduce.h) against one sum at the ALLREDUCE, measured and
# predicted, by hand (not a timed test): data-parallel-heavy plans with
# compute emulated from a layer table (each pass sleeps the table's time,
# as a GPU rank's host waits; the gradients are real buffers of the table's
# sizes, summed by real MPI), run with --grad-overlap off and on in turn,
# REPEATS times each, beside `wavepipe simulate --layers TABLE --cluster
# CALIBRATED --grad-overlap off|on` for both. The default table is ResNet-50's
# PipeDream profile (102 MB of gradients; a sequence's F 0.20 s, B 0.26 s):
# on local ranks the sum of its gradients is about as long as its backward.
#
# The links the simulator times are calibrated first with the same launcher
# (wavepipe calibrate, allreduce and p2p). On one node every rank poses as a
# node of its own (--emulate-nodes RANKS), so that the simulator's sum is the
# flat allreduce the runs make over shared memory; across nodes (set
# RANKS_PER_NODE) the calibration is the job's, and the runs' sums are
# node-aware as the simulator's.
#
# Usage: bench_grad_overlap.sh WAVEPIPE SRCDIR [RANKS] [STEPS] [REPEATS]
# Environment:
#   LAUNCH           launcher prefix, e.g. "srun --mpi=pmi2 -N 2 -n 4" (default: $MPIEXEC -n RANKS)
#   RANKS_PER_NODE   ranks per node as LAUNCH places them (default RANKS: one node)
#   CLUSTER          a calibrated cluster file to predict with instead of calibrating here
#   TABLE            the layer table (default SRCDIR/profiles/pipedream/resnet50.txt)
#   BUCKET_MB        --grad-bucket-mb (default 25)
#   CASES            "NAME:REPLICAS:MICRO_BATCHES:GLOBAL_BATCH ..." (default: pure data
#                    parallelism with one micro-batch of one sequence a replica (dp), and
#                    with two (dp-m2: only the last one's backward hides the sum), and two
#                    stages of RANKS/2 replicas, 1F1B over two micro-batches (pipe2))
set -u
wavepipe=$1 srcdir=$2 ranks=${3:-4} steps=${4:-6} repeats=${5:-3}
launch=${LAUNCH:-${MPIEXEC:-mpiexec} -n $ranks}
per_node=${RANKS_PER_NODE:-$ranks}
table=${TABLE:-$srcdir/profiles/pipedream/resnet50.txt}
bucket_mb=${BUCKET_MB:-25}
half=$((ranks / 2))
cases=${CASES:-"dp:$ranks:1:$ranks dp-m2:$ranks:2:$((2 * ranks)) pipe2:$half,$half:2:$ranks"}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cluster=${CLUSTER:-}
if [ -z "$cluster" ]; then
    cluster=$work/calibrated.cfg
    cal=(--collectives p2p,allreduce --min-bytes 64KiB --max-bytes 64MiB --repeat 3 --out "$work/cal.cfg")
    [ "$per_node" -ge "$ranks" ] && cal+=(--emulate-nodes "$ranks")
    # shellcheck disable=SC2086
    $launch "$wavepipe" calibrate "${cal[@]}" > "$work/calibrate.log" 2>&1 ||
        { echo "calibrating failed:"; tail -5 "$work/calibrate.log"; exit 1; }
    if [ "$per_node" -ge "$ranks" ]; then # one node posing as RANKS nodes of one rank
        "$wavepipe" topo --cluster "$work/cal.cfg" --nodes "$ranks" --out "$cluster" > /dev/null || exit 1
        per_node=1
    else
        cp "$work/cal.cfg" "$cluster"
    fi
    fit=$(grep '^fit inter-node' "$work/calibrate.log" | sed 's/ (.*measurements)//; s/; residuals.*//')
else
    fit="from $cluster"
fi

echo "wavepipe gradient buckets ($bucket_mb MiB) overlapped with the backward against one sum at the ALLREDUCE:"
echo "compute emulated from $table; $ranks ranks ($launch) on $(nproc) cores here; $steps steps a run (median"
echo "iteration of the steps after the first), $repeats runs each way, alternating; predictions by"
echo "wavepipe simulate --layers --cluster on the calibrated links ($fit)"
printf '%-8s %-12s %4s %10s\n' case grad-overlap run "iter s"
summary=()
for spec in $cases; do
    IFS=: read -r name replicas micro batch <<< "$spec"
    plan=(--schedule 1f1b --replicas "$replicas" --micro-batches "$micro" --global-batch "$batch")
    for mode in off on; do : > "$work/$name.$mode"; done
    for run in $(seq "$repeats"); do
        for mode in off on; do
            # shellcheck disable=SC2086
            out=$($launch "$wavepipe" run --compute emulated --layers "$table" "${plan[@]}" --steps "$steps" \
                  --grad-overlap "$mode" --grad-bucket-mb "$bucket_mb" 2>&1)
            it=$(echo "$out" | sed -n 's/^summary: .*iteration measured \([0-9.]*\) s.*/\1/p')
            [ -z "$it" ] && { echo "$name, --grad-overlap $mode: the run failed:"; echo "$out"; exit 1; }
            echo "$it" >> "$work/$name.$mode"
            printf '%-8s %-12s %4d %10s\n' "$name" "$mode" "$run" "$it"
        done
    done
    line=$(printf '%-8s' "$name")
    for mode in off on; do
        measured=$(sort -g "$work/$name.$mode" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
        predicted=$("$wavepipe" simulate --kind 1f1b --ranks "$ranks" --micro-batches "$micro" --replicas "$replicas" \
                    --layers "$table" --global-batch "$batch" --cluster "$cluster" --ranks-per-node "$per_node" \
                    --grad-overlap "$mode" --grad-bucket-mb "$bucket_mb" --format csv | awk -F, 'NR == 2 { print $7 }')
        eval "m_$mode=$measured p_$mode=$predicted"
        line+=$(printf ' %12.4f %12.4f' "$measured" "$predicted")
    done
    # shellcheck disable=SC2154
    line+=$(awk -v mo="$m_off" -v mn="$m_on" -v po="$p_off" -v pn="$p_on" \
            'BEGIN { printf " %10.1f %10.1f", 100 * (1 - mn / mo), 100 * (1 - pn / po) }')
    summary+=("$line")
done
echo
printf '%-8s %12s %12s %12s %12s %10s %10s\n' case "off meas. s" "off sim. s" "on meas. s" "on sim. s" \
    "saved %" "sim. %"
printf '%s\n' "${summary[@]}"
echo "(measured: the median run; saved: 1 - on / off)"
