#!/usr/bin/env bash
# AutoDDL's communication claim, measured (issue 13, item 6): the MLP of
# AutoDDL 4.6 (widths 32768, 16384, 4096, 2048, 512) on 8 ranks as 2 nodes
# x 4 GPUs; for the chosen 3D meshes (the SBP search), Megatron's 1D split
# (column- then row-parallel over all 8), data parallelism, and Megatron
# inside a node with data parallelism across the two (Megatron-LM's own
# multi-node layout), the communication of one training step executed by
# `wavepipe sbp --measure` (real collectives, compute emulated: nothing is
# computed) beside the cost model's prediction from the same links.
#
# Usage: bench/sbp_measure.sh WAVEPIPE SRCDIR [LAUNCHER...]
#   LAUNCHER  runs 8 ranks (default: $MPIEXEC -n 8, i.e. mpiexec -n 8); on
#             the test cluster: srun -N 2 -n 8 --mpi=pmi2 (rank d on node
#             d / 4, which the report checks)
# Environment:
#   CLUSTER        cluster description whose calibrated links the model uses
#                  (intra_node_network, network), e.g. from 2 nodes x 2 ranks
#                  as bench/vcluster_jobs.sh calibrates (8 ranks on 2 cores
#                  spin in MPI's waits and inflate alpha); default: calibrate
#                  first with CALIBRATE_LAUNCHER (on one machine with
#                  --emulate-nodes 2: the "inter-node" link is then local)
#   CALIBRATE_LAUNCHER  launcher of that calibration, split on spaces
#                  (default: LAUNCHER)
#   BATCH          rows per step (default 256: AutoDDL's batch is not given
#                  for this MLP; bench/bench_sbp.c uses 8192; 256 keeps a run
#                  to seconds on 2 cores and 200 Mbit/s links; the widths are
#                  AutoDDL's)
#   ELEMENT_BYTES  bytes per element (default 2: half precision; the sums run
#                  on 16-bit integers, the same bytes)
#   REPEATS        timed rounds and steps per strategy (default 3)
#   BUDGET_S       a strategy whose run would take longer (its predicted
#                  step x (1 + 2 REPEATS) x 2) runs with REPEATS 1, and is
#                  left out when even that is longer (default 600; data
#                  parallelism all-reduces 2 x 7/8 of 1.2 GB per device per
#                  step: at 25 MB/s about 86 s predicted, so it runs once)
#   OUT            directory for the raw outputs and the calibration; on the
#                  test cluster a path the nodes see (their /tmp is their own;
#                  default: ./sbp_measure-DATE)
set -u
if [ $# -lt 2 ]; then
    echo "usage: $0 WAVEPIPE SRCDIR [LAUNCHER...]" >&2
    exit 2
fi
wavepipe=$1 srcdir=$2
shift 2
if [ $# -gt 0 ]; then launcher=("$@"); else launcher=("${MPIEXEC:-mpiexec}" -n 8); fi
widths=32768,16384,4096,2048,512
batch=${BATCH:-256} element=${ELEMENT_BYTES:-2} repeats=${REPEATS:-3} budget=${BUDGET_S:-600}
out=${OUT:-$(pwd)/sbp_measure-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out" || exit 1
[ -x "$wavepipe" ] || { echo "$0: no wavepipe at $wavepipe" >&2; exit 2; }
: "$srcdir" # the sources are not needed: the widths are AutoDDL's, written above

# --- the links the model uses ----------------------------------------------------
cluster=${CLUSTER:-}
if [ -z "$cluster" ]; then
    cluster=$out/calibrated.cfg
    cal=(calibrate --min-bytes 64KiB --max-bytes 4MiB --size-factor 4 --repeat 5 --out "$cluster")
    # shellcheck disable=SC2206
    if [ -n "${CALIBRATE_LAUNCHER:-}" ]; then cal_launcher=($CALIBRATE_LAUNCHER); else cal_launcher=("${launcher[@]}"); fi
    echo "calibrating: ${cal_launcher[*]} wavepipe ${cal[*]}"
    if ! "${cal_launcher[@]}" "$wavepipe" "${cal[@]}" > "$out/calibrate.txt" 2>&1; then
        if grep -q "are on one node" "$out/calibrate.txt"; then
            echo "note: the job is on one machine: calibrating with --emulate-nodes 2 (the inter-node link is local)"
            "${cal_launcher[@]}" "$wavepipe" "${cal[@]}" --emulate-nodes 2 > "$out/calibrate.txt" 2>&1 ||
                { cat "$out/calibrate.txt" >&2; exit 1; }
        else
            cat "$out/calibrate.txt" >&2
            exit 1
        fi
    fi
    grep '^fit ' "$out/calibrate.txt"
fi

problem=(--widths "$widths" --batch "$batch" --devices 8 --gpus-per-node 4 --element-bytes "$element"
         --cluster "$cluster")
strategies=(chosen megatron dp 2x4x1@2x1x1,2x1x4@2x1x1)
names=(chosen megatron-1d data-parallel megatron-tp4xdp2)

echo "AutoDDL's MLP (widths $widths), batch $batch, $element-byte elements, 8 ranks as 2 nodes x 4 GPUs;"
echo "launcher: ${launcher[*]}; links: $cluster; $repeats repetitions; compute emulated (not run):"
echo "communication only, measured = sum of each collective's median (after a barrier, slowest rank)"
printf '%-17s %-54s %11s %11s %7s %11s %14s %14s %s\n' strategy meshes "pred_s" "meas_s" ratio "step_s" \
    "model_B/dev" "counted_B/dev" "ranks_exact"
value() { sed -n "s/^summary:.* $2=\([^ ]*\).*/\1/p" "$1"; }
for i in "${!strategies[@]}"; do
    s=${strategies[$i]} name=${names[$i]} f=$out/${names[$i]}.txt
    plain=$("$wavepipe" sbp "${problem[@]}" --strategy "$s" 2>&1)
    pred_ms=$(sed -n 's/^total: communication \([0-9.]*\) ms per step.*/\1/p' <<< "$plain")
    if [ -z "$pred_ms" ]; then
        printf '%-17s %s\n' "$name" "$plain"
        continue
    fi
    r=$repeats
    fits() { awk -v p="$pred_ms" -v r="$1" -v b="$budget" 'BEGIN { exit !(p / 1e3 * (1 + 2 * r) * 2 <= b) }'; }
    if ! fits "$r"; then r=1; fi
    if ! fits "$r"; then
        printf '%-17s %-54s %11.4f %11s   not measured: predicted %.1f s per step, over BUDGET_S=%s\n' "$name" "$s" \
            "$(awk -v p="$pred_ms" 'BEGIN { print p / 1e3 }')" - "$(awk -v p="$pred_ms" 'BEGIN { print p / 1e3 }')" "$budget"
        continue
    fi
    limit=$(awk -v p="$pred_ms" -v r="$r" -v b="$budget" 'BEGIN { t = 4 * p / 1e3 * (1 + 2 * r); if (t < 120) t = 120;
                                                              if (t < b) t = b; printf "%d", t }')
    timeout -k 10 "$limit" "${launcher[@]}" "$wavepipe" sbp "${problem[@]}" --strategy "$s" --measure --repeats "$r" \
        > "$f" 2>&1
    st=$?
    if [ "$st" -ne 0 ] || ! grep -q '^summary:' "$f"; then
        printf '%-17s %-54s failed (exit %s%s): see %s\n' "$name" "$s" "$st" \
            "$([ "$st" -eq 124 ] && echo ", stopped after $limit s")" "$f"
        tail -n 5 "$f" | sed 's/^/    | /'
        continue
    fi
    [ "$i" -eq 0 ] && grep '^job:' "$f"
    pred=$(value "$f" predicted_s) meas=$(value "$f" measured_s) step=$(value "$f" step_s)
    printf '%-17s %-54s %11.4f %11.4f %7.2f %11.4f %14s %14s %s%s\n' "$name" "$(value "$f" meshes)" "$pred" "$meas" \
        "$(awk -v m="$meas" -v p="$pred" 'BEGIN { print (p > 0 ? m / p : 0) }')" "$step" "$(value "$f" model_bytes)" \
        "$(value "$f" counted_max_bytes)" "$(value "$f" ranks_exact)" "$([ "$r" != "$repeats" ] && echo " (1 repetition)")"
done
echo "raw outputs (per layer and term): $out"
