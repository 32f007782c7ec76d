#!/usr/bin/env bash
# fidelity.sh -- how right is the simulator? On the virtual Slurm cluster
# (tests/cluster/vcluster.sh: nodes are network namespaces of this machine,
# MPI between them is MPICH 5 over TCP on the veth links, shaped by tc),
# for every case of a grid -- link rate x layer table x ranks on nodes x
# schedule kind -- it
#   1. calibrates the network at that rate with `wavepipe calibrate` (one
#      sbatch job, 2 ranks on each of 2 nodes: the intra- and inter-node
#      fits),
#   2. predicts the iteration with `wavepipe simulate --layers TABLE
#      --cluster CALIBRATED.cfg --ranks-per-node R` (before running it),
#   3. measures it with `srun wavepipe run --compute emulated --layers TABLE`
#      (each pass sleeps the table's time; messages are real MPI over the
#      links): the median iteration over the steps after the first,
# and writes one CSV row per case and a table: case, predicted, measured,
# error = measured / predicted - 1; mean |error| and max |error| close it.
# Compute is emulated and the cluster is namespaces on one 2-core machine:
# every output says so.
#
# Usage: bench/fidelity.sh WAVEPIPE SRCDIR OUTDIR
# Grid (environment; defaults are the full grid of `make fidelity`):
#   FIDELITY_RATES    tc rates per node link, "none" for unshaped
#                     (default "none 1gbit 100mbit")
#   FIDELITY_SHAPES   ranks:nodes[:F[:S]] (default "8:2 16:4:4:4 32:4:8:4");
#                     ranks that do not fill the nodes evenly lie in blocks of
#                     ceil(ranks / nodes) (8:3 is 3+3+2, as srun places them).
#                     F and S dilate the case (default 1): wavepipe run
#                     --dilate F --scale-bytes S, the links shaped to the rate
#                     / (F x S) and the network calibrated so (calibrate
#                     --dilate F --scale-bytes S: the undilated fit), so that
#                     the host's own costs shrink F-fold beside what is
#                     measured (time-warped emulation); each case records the
#                     host's busy share over its measured iterations
#   FIDELITY_TABLES   names of tables made here: gpt2-small-deep (analytic,
#                     GPT-2 small's width, 62 blocks, T = 128, 1 TFLOP/s) and
#                     bert-48 (DAPPLE's V100 profile) (default both)
#   FIDELITY_KINDS    schedule kinds (default all seven: gpipe 1f1b kfkb
#                     interleaved chimera hanayo zb-h1); kfkb k = 2,
#                     interleaved 2 chunks, hanayo 1 wave; M = ranks
#   FIDELITY_STEPS    steps per run (default 4; the first is warm-up)
#   FIDELITY_MAX_RUN_S  a run predicted to take longer than this many
#                     seconds of wall time (F x STEPS x the predicted
#                     iteration) is not run and is listed as skipped with
#                     its cost (default 1200: Chimera at 100 Mbit/s, whose
#                     iteration is 100-220 s of model time; 0: no limit)
#   FIDELITY_CLUSTER  where the cluster lives (default OUTDIR/vcluster)
#   FIDELITY_REUSE    1: no cluster and no runs; every case of the grid
#                     above that OUTDIR holds from an earlier run (its
#                     calibrations, its runs' rows and logs) is predicted
#                     again by WAVEPIPE and its row and the table made anew:
#                     a simulator changed since is judged on the same
#                     measurements (fidelity.txt says the rows were reused)
# A case whose schedule the table cannot fill (fewer layers than stages) is
# listed as skipped. Exits 0 when every case ran; the goal (mean <= 3 %, max
# <= 8 %) is reported, not enforced: tests/slurm_fidelity.sh enforces a
# loose tolerance on a small grid. Needs root (namespaces, tc).
set -u
# shellcheck source=bench/vcluster_jobs.sh
. "$(dirname "$0")/vcluster_jobs.sh"
vcj_args "$0" "$@"
RATES=${FIDELITY_RATES:-none 1gbit 100mbit}
SHAPES=${FIDELITY_SHAPES:-8:2 16:4:4:4 32:4:8:4}
TABLES=${FIDELITY_TABLES:-gpt2-small-deep bert-48}
KINDS=${FIDELITY_KINDS:-gpipe 1f1b kfkb interleaved chimera hanayo zb-h1}
STEPS=${FIDELITY_STEPS:-4}
MAX_RUN_S=${FIDELITY_MAX_RUN_S:-1200}
CLDIR=${FIDELITY_CLUSTER:-$OUT/vcluster}
REUSE=${FIDELITY_REUSE:-0}
case $MAX_RUN_S in '' | *[!0-9]*) echo "fidelity: FIDELITY_MAX_RUN_S='$MAX_RUN_S': a whole number of seconds (0: no limit)" >&2; exit 2 ;; esac
case $REUSE in 0 | 1) ;; *) echo "fidelity: FIDELITY_REUSE='$REUSE': 0 or 1" >&2; exit 2 ;; esac
log() { printf 'fidelity: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# shape_fields SHAPE: "P N F S" of ranks:nodes[:F[:S]]
shape_fields() {
    local IFS=:
    # shellcheck disable=SC2086
    set -- $1
    [ $# -ge 2 ] && [ $# -le 4 ] || die "shape '$*': ranks:nodes[:F[:S]]"
    echo "$1 $2 ${3:-1} ${4:-1}"
}

max_nodes=0
for shape in $SHAPES; do
    read -r p n f s <<< "$(shape_fields "$shape")"
    [ "$n" -gt "$max_nodes" ] && max_nodes=$n
done
[ "$max_nodes" -ge 2 ] || max_nodes=2 # calibration runs on 2 nodes
max_per_node=2 # calibration runs 2 ranks a node
for shape in $SHAPES; do
    read -r p n f s <<< "$(shape_fields "$shape")"
    per=$(((p + n - 1) / n))
    [ $((per * (n - 1))) -lt "$p" ] || die "shape $shape: $p ranks in blocks of $per leave a node empty"
    [ "$per" -gt "$max_per_node" ] && max_per_node=$per
done

# --- the layer tables ---------------------------------------------------------------
table_path() {
    case $1 in
    gpt2-small-deep) echo "$OUT/tables/gpt2-small-deep.cfg" ;;
    bert-48) echo "$SRCDIR/profiles/dapple-v100/bert-48-pbs-2.txt" ;;
    *) die "unknown table $1 (gpt2-small-deep, bert-48)" ;;
    esac
}
mkdir -p "$OUT/tables"
"$WAVEPIPE" profile --model "$SRCDIR/bench/models/gpt2-small-deep.cfg" --analytic --flops-per-s 1e12 \
    --micro-batch 2 -o "$OUT/tables/gpt2-small-deep.cfg" > "$OUT/tables/gpt2-small-deep.txt" ||
    die "wavepipe profile --analytic failed"

kind_args() {
    case $1 in
    kfkb) echo "--k 2" ;;
    interleaved) echo "--chunks 2" ;;
    hanayo) echo "--waves 1" ;;
    *) echo "" ;;
    esac
}

# --- the cluster (or, reusing, what it measured before) ----------------------------------
if [ "$REUSE" = 1 ]; then
    [ -s "$OUT/mpi.txt" ] || die "FIDELITY_REUSE: no $OUT/mpi.txt (the MPI line an earlier run of this grid wrote)"
    MPI_LINE=$(cat "$OUT/mpi.txt")
    log "reusing the measurements in $OUT (no cluster, no runs): predicting them again"
else
    vcj_up "$CLDIR" "$max_nodes" "$max_per_node"
    echo "$MPI_LINE" > "$OUT/mpi.txt"
fi

csv=$OUT/fidelity.csv
echo "case,rate,table,ranks,nodes,kind,micro_batches,predicted_s,measured_s,error,compute,mpi,dilation,byte_scale,host_busy" > "$csv.tmp"
skipped=""
rerun=""
missing=0
dilations=$(for shape in $SHAPES; do read -r _ _ f s <<< "$(shape_fields "$shape")"; echo "$f:$s"; done | sort -u -t: -k1,1g -k2,2g)

for rate in $RATES; do
  for fs in $dilations; do
    F=${fs%:*} S=${fs#*:}
    if [ "$REUSE" = 1 ]; then
        cal=$OUT/runs/calibrated-$(vcj_calibration_name "$rate" "$F" "$S").cfg
        [ -f "$cal" ] || { log "reusing: no $cal, rate $rate at F $F, S $S skipped"; continue; }
    else
        vcj_shape "$rate" "$F" "$S"
        cal=$(vcj_calibrate "$rate" "$F" "$S") || exit 1
    fi
    for table in $TABLES; do
        tpath=$(table_path "$table")
        for shape in $SHAPES; do
            read -r P N f s <<< "$(shape_fields "$shape")"
            [ "$f:$s" = "$F:$S" ] || continue
            per=$(((P + N - 1) / N))
            dilated=""
            [ "$F:$S" = 1:1 ] || dilated="-F${F}S${S}"
            case_dir=$OUT/runs/$rate-$table-${P}r${N}n$dilated
            [ "$REUSE" = 1 ] && [ ! -d "$case_dir" ] && continue # not measured before
            mkdir -p "$case_dir"
            # predictions first, and the kinds the table can fill
            runnable=""
            for kind in $KINDS; do
                # shellcheck disable=SC2046
                if "$WAVEPIPE" simulate --kind "$kind" --ranks "$P" --micro-batches "$P" $(kind_args "$kind") \
                    --layers "$tpath" --cluster "$cal" --ranks-per-node "$per" --format csv \
                    > "$case_dir/$kind.predicted" 2> "$case_dir/$kind.predicted.err"; then
                    run_s=$(awk -F, -v f="$F" -v n="$STEPS" 'NR == 2 { printf "%.0f", f * n * $7 }' "$case_dir/$kind.predicted")
                    if [ "$REUSE" != 1 ] && [ "$MAX_RUN_S" -gt 0 ] && [ "${run_s:-0}" -gt "$MAX_RUN_S" ]; then
                        skipped="$skipped$rate/$table/${P}r${N}n$dilated/$kind: predicted to run $((run_s / 60)) min (F $F x $STEPS steps), over FIDELITY_MAX_RUN_S=$MAX_RUN_S"$'\n'
                        continue
                    fi
                    runnable="$runnable $kind"
                else
                    skipped="$skipped$rate/$table/${P}r${N}n/$kind: $(head -n 1 "$case_dir/$kind.predicted.err" | cut -c 1-100)"$'\n'
                fi
            done
            [ -n "$runnable" ] || continue
            # write_job SCRIPT KIND...: one srun per kind, its rows, measurements and log
            write_job() {
                local script=$1 kind
                shift
                {
                    echo '#!/bin/bash'
                    for kind in "$@"; do
                        # the watchdog's limit: at least the predicted iteration (Chimera's
                        # sums at 100 Mbit/s wait 100 s), at least its default 6 s
                        wd=$(awk -F, 'NR == 2 { w = 2 * $7; printf "%d", (w > 6 ? w + 1 : 6) }' "$case_dir/$kind.predicted")
                        echo "srun --mpi=pmi2 \"$WAVEPIPE\" run --compute emulated --layers \"$tpath\" --schedule $kind" \
                             "$(kind_args "$kind") --micro-batches $P --steps $STEPS --results \"$case_dir/$kind.csv\"" \
                             "--dilate $F --scale-bytes $S --watchdog-s ${wd:-6}" \
                             "--measure \"$case_dir/$kind.measure.csv\"" \
                             "> \"$case_dir/$kind.log\" 2>&1 || echo \"$kind failed: \$?\""
                    done
                } > "$script"
            }
            # measure_case KINDS: the case's runs, one job, and once more for a run that ended badly
            measure_case() {
                # shellcheck disable=SC2086
                write_job "$case_dir/job.sh" $1
                rm -f "$case_dir"/*.csv
                vcj_job "fid-$rate-$table-${P}r${N}n$dilated" "$N" "$P" "$per" "$case_dir/job.sh" 3600 ||
                    log "job for $case_dir failed"
                # a run that ended without its summary (the watchdog ended a stalled job, a rank lost) runs
                # once more, said here and in the table's notes; its first log is kept as KIND.failed.log
                again=""
                for kind in $1; do
                    grep -q '^summary:' "$case_dir/$kind.log" 2>/dev/null && continue
                    why=$(grep -m 1 -E 'watchdog|error|Abort' "$case_dir/$kind.log" 2>/dev/null | cut -c 1-160)
                    log "$kind ended without its summary (${why:-no message}): once more"
                    rerun="$rerun$rate/$table/${P}r${N}n$dilated/$kind: run again after ${why:-an end without its summary}"$'\n'
                    mv "$case_dir/$kind.log" "$case_dir/$kind.failed.log" 2>/dev/null
                    rm -f "$case_dir/$kind.csv" "$case_dir/$kind.measure.csv"
                    again="$again $kind"
                done
                if [ -n "$again" ]; then
                    # shellcheck disable=SC2086
                    write_job "$case_dir/job-again.sh" $again
                    vcj_job "fid-$rate-$table-${P}r${N}n$dilated-again" "$N" "$P" "$per" "$case_dir/job-again.sh" 3600 ||
                        log "job for $case_dir (again) failed"
                fi
            }
            log "rate $rate, $table, $P ranks on $N nodes (blocks of $per), dilation $F, byte scale $S:$runnable"
            [ "$REUSE" = 1 ] || measure_case "$runnable"
            for kind in $runnable; do
                [ -f "$case_dir/$kind.csv" ] || [ "$REUSE" != 1 ] || continue # not run before
                predicted=$(awk -F, 'NR == 2 { print $7 }' "$case_dir/$kind.predicted")
                # the median iteration over the steps after the first (row 2 is step 0)
                measured=$(vcj_median_iteration "$case_dir/$kind.csv")
                if [ -z "$measured" ] || [ -z "$predicted" ]; then
                    skipped="$skipped$rate/$table/${P}r${N}n/$kind: no measurement ($case_dir/$kind.log)"$'\n'
                    missing=1
                    continue
                fi
                err=$(awk -v m="$measured" -v p="$predicted" 'BEGIN { printf "%.4f", m / p - 1 }')
                # the host's busy share over the measured iterations (the summary's, from /proc/stat)
                busy=$(sed -n 's/^summary:.*, host busy \([0-9.]*\) %$/\1/p' "$case_dir/$kind.log" |
                    awk '{ printf "%.3f", $1 / 100 }')
                echo "$rate/$table/${P}r${N}n$dilated/$kind,$rate,$table,$P,$N,$kind,$P,$predicted,$measured,$err,emulated,mpich5-ofi-tcp,$F,$S,$busy" \
                    >> "$csv.tmp"
            done
        done
    done
  done
done
mv "$csv.tmp" "$csv"

# --- the table and the plot ------------------------------------------------------------
"$(dirname "$0")/fidelity_report.sh" "$csv" "$OUT" "$MPI_LINE"
printf '%s' "$skipped" | sed 's/^/skipped: /' | tee -a "$OUT/fidelity.txt"
printf '%s' "$rerun" | sed 's/^/rerun: /' | tee -a "$OUT/fidelity.txt"
[ "$REUSE" = 1 ] && echo "reused: the measurements of an earlier run of this grid, predicted again on $(date -u +%Y-%m-%d) by $("$WAVEPIPE" --version 2>&1 | head -n 1)" |
    tee -a "$OUT/fidelity.txt"
[ "$missing" -eq 0 ] || { log "some cases ran without a measurement (skipped: lines above)"; exit 1; }
exit 0
