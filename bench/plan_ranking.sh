#!/usr/bin/env bash
# plan_ranking.sh -- does the planner rank its plans as they really run? On
# the virtual Slurm cluster (4 nodes, links shaped to RATE, MPICH 5 over
# them) standing in for 4 nodes x 4 GPUs, for each of three layer tables
# (analytic GPT tables of bench/models: gpt2-mini, gpt-narrow-deep,
# gpt-wide, at 1 TFLOP/s), it
#   1. calibrates the network (2 nodes x 2 ranks) and makes that over into
#      a cluster of 4 nodes x 4 emulated GPUs (wavepipe topo --cluster
#      --nodes 4 --gpus-per-node 4),
#   2. plans (wavepipe plan --tensor 1x1 --compare-dir: emulated compute
#      runs no tensor groups yet): the planner's choice, data
#      parallelism, 2, 4 and 8 even stages and the straight pipeline, each
#      with the simulator's predicted iteration,
#   3. runs every distinct plan with srun -n 16 wavepipe run --compute
#      emulated --plan (each pass sleeps its table's time; activations,
#      gradients and allreduces are real messages over the links): the
#      median iteration after the first step,
# and reports per table Kendall's tau between the predicted and the
# measured order (goal >= 0.8) and how far the chosen plan is from the
# fastest measured (goal within 3 %). Writes OUT/ranking.csv and
# OUT/ranking.txt. Compute is emulated and the cluster is namespaces on one
# 2-core machine: the outputs say so. Needs root.
#
# Usage: bench/plan_ranking.sh WAVEPIPE SRCDIR OUTDIR
# Environment: RANKING_RATE (default 1gbit), RANKING_TABLES (default the
# three), RANKING_STEPS (default 5), RANKING_GLOBAL_BATCH (default 64),
# RANKING_DILATION F and RANKING_BYTE_SCALE S (default 4 and 4: the runs
# --dilate F --scale-bytes S on links shaped RATE / (F x S), calibrated
# alike, so that 16 ranks' polls and copies leave the 2 cores to what is
# measured; 1 and 1 run undilated). Each plan's row records the host's busy
# share over its measured iterations.
set -u
# shellcheck source=bench/vcluster_jobs.sh
. "$(dirname "$0")/vcluster_jobs.sh"
vcj_args "$0" "$@"
RATE=${RANKING_RATE:-1gbit}
TABLES=${RANKING_TABLES:-gpt2-mini gpt-narrow-deep gpt-wide}
STEPS=${RANKING_STEPS:-5}
G=${RANKING_GLOBAL_BATCH:-64}
F=${RANKING_DILATION:-4}
S=${RANKING_BYTE_SCALE:-4}
NODES=4
PER_NODE=4
log() { printf 'plan_ranking: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

mkdir -p "$OUT/tables"
for table in $TABLES; do
    "$WAVEPIPE" profile --model "$SRCDIR/bench/models/$table.cfg" --analytic --flops-per-s 1e12 --micro-batch 2 \
        -o "$OUT/tables/$table.cfg" > "$OUT/tables/$table.txt" || die "wavepipe profile --analytic $table failed"
done

vcj_up "$OUT/vcluster" "$NODES" "$PER_NODE"
vcj_shape "$RATE" "$F" "$S"
cal=$(vcj_calibrate "$RATE" "$F" "$S") || exit 1
cluster=$OUT/runs/emulated-gpus-$RATE.cfg
"$WAVEPIPE" topo --cluster "$cal" --gpus-per-node "$PER_NODE" --quiet --out "$cluster" ||
    die "cannot make $cal into a cluster of emulated GPUs"

csv=$OUT/ranking.csv
echo "table,plan,shape,predicted_s,measured_s,chosen,compute,rate,dilation,byte_scale,host_busy" > "$csv.tmp"
for table in $TABLES; do
    tpath=$OUT/tables/$table.cfg
    dir=$OUT/runs/$table
    rm -rf "$dir"
    # tensor groups of one GPU: emulated compute does not split blocks over tensor groups yet
    "$WAVEPIPE" plan --layers "$tpath" --global-batch "$G" --cluster "$cluster" --tensor 1x1 --compare-dir "$dir" \
        > "$OUT/runs/$table.plan.txt" 2>&1 || die "wavepipe plan on $table failed ($OUT/runs/$table.plan.txt)"
    chosen_shape=$(awk -F, '$1 == "chosen" { print $3 }' "$dir/compared.csv")
    # distinct plans: the chosen one stands for a compared plan of its very split
    script=$dir/job.sh
    echo '#!/bin/bash' > "$script"
    plans=""
    while IFS=, read -r name file shape _ _ _; do
        [ "$name" = plan ] && continue
        if [ "$name" != chosen ] && cmp -s <(grep -v '^#' "$file" | grep -v predicted) \
            <(grep -v '^#' "$dir/chosen.cfg" | grep -v predicted); then
            continue # the very plan chosen
        fi
        plans="$plans $name"
        # as many ranks as the plan has devices (a straight plan of 13 stages
        # takes 13 of the 16), on as few nodes as hold them: the plan fills
        # nodes of PER_NODE GPUs in order (12 devices: 3 nodes of 4, not 4 of 3)
        devices=$(awk '$1 == "replicas" { s += $3 } END { print s }' "$file")
        echo "srun --mpi=pmi2 -N $(( (devices + PER_NODE - 1) / PER_NODE )) -n $devices \"$WAVEPIPE\" run --compute emulated --layers \"$tpath\" --plan \"$file\"" \
            "--steps $STEPS --dilate $F --scale-bytes $S --results \"$dir/$name.csv\" > \"$dir/$name.log\" 2>&1" \
            "|| echo \"$name failed: \$?\"" \
            >> "$script"
    done < "$dir/compared.csv"
    log "$table: chosen $chosen_shape; running$plans on $NODES nodes x $PER_NODE ranks"
    vcj_job "rank-$table" "$NODES" $((NODES * PER_NODE)) "$PER_NODE" "$script" 3600 || log "job for $table failed"
    for name in $plans; do
        row=$(awk -F, -v n="$name" '$1 == n' "$dir/compared.csv")
        IFS=, read -r _ _ shape _ predicted _ <<< "$row"
        measured=$(vcj_median_iteration "$dir/$name.csv")
        [ -n "$measured" ] || { log "$table/$name: no measurement ($dir/$name.log)"; continue; }
        busy=$(sed -n 's/^summary:.*, host busy \([0-9.]*\) %$/\1/p' "$dir/$name.log" | awk '{ printf "%.3f", $1 / 100 }')
        echo "$table,$name,$shape,$predicted,$measured,$([ "$name" = chosen ] && echo 1 || echo 0),emulated,$RATE,$F,$S,$busy" \
            >> "$csv.tmp"
    done
done
mv "$csv.tmp" "$csv"

{
    echo "The planner's ranking against measurement: $NODES nodes x $PER_NODE emulated GPUs (ranks of a virtual"
    echo "Slurm cluster on one 2-core machine, compute emulated from analytic layer tables at 1 TFLOP/s),"
    echo "links shaped to $RATE, network calibrated there, MPI: $MPI_LINE."
    [ "$F:$S" = 1:1 ] || echo "Dilated: run --dilate $F --scale-bytes $S on links shaped to $RATE / $((F * S)) (times and bytes reported undilated)."
    awk -F, 'NR > 1 && $11 != "" { n++; s += $11; if ($11 > m) m = $11 }
        END { if (n) printf "Host busy over the measured iterations: mean %.1f %%, most %.1f %% of %d runs.\n", 100 * s / n, 100 * m, n }' "$csv"
    for table in $TABLES; do
        echo
        printf '%-16s %-18s %12s %12s %6s\n' "$table" shape predicted_s measured_s host
        awk -F, -v t="$table" '$1 == t { printf "  %-14s %-18s %12.4f %12.4f %5.1f%%%s\n", $2, $3, $4, $5, 100 * $11,
            $6 ? "   <- chosen" : "" }' "$csv"
        # Kendall's tau (tau-b: ties count as neither order) and the chosen plan against the fastest
        awk -F, -v t="$table" '
            $1 == t { n++; p[n] = $4; m[n] = $5; if ($6) c = $5; if (!f || $5 < f) { f = $5; fn = $2 } }
            END {
                if (n < 2) { print "  too few measured plans"; exit }
                for (i = 1; i < n; i++) for (j = i + 1; j <= n; j++) {
                    dp = p[i] - p[j]; dm = m[i] - m[j]; s = dp * dm
                    if (dp != 0) np++; if (dm != 0) nm++
                    if (s > 0) con++; else if (s < 0) dis++
                }
                tau = (np && nm) ? (con - dis) / sqrt(np * nm) : 0
                printf "  %d plans: Kendall tau %.3f (goal >= 0.8); chosen %.4f s, fastest %s %.4f s: %+.1f %% (goal <= 3 %%)\n",
                       n, tau, c, fn, f, 100 * (c / f - 1)
            }' "$csv"
    done
} | tee "$OUT/ranking.txt"
