#!/usr/bin/env bash
# bench/reproduce/hanayo_measured.sh WAVEPIPE SRCDIR OUTDIR [WAIT_FILE] -- the measured
# half of Hanayo's scaling (sections 5.4-5.5), called by hanayo.sh: brings
# the project's test cluster up with 4 nodes of 8 ranks (holding its lock
# throughout), shapes every node's link to HANAYO_RATE (10gbit) dilated
# HANAYO_DILATION (8) times with messages of 1/HANAYO_BYTE_SCALE (16) of the
# bytes, as the campaigns' dilation and byte_scale say, calibrates the links
# (`wavepipe calibrate --dilate`: the undilated network), submits
# jobs/campaigns/hanayo-{weak,strong}-vcluster.cfg with `wavepipe sweep
# --submit` (one point at a time), waits for them, and `wavepipe harvest`s
# each. OUTDIR gets weak.csv and strong.csv (harvest's rows), weak-network.csv
# and strong-network.csv (each point predicted by `wavepipe simulate` on the
# calibrated cluster: the copies' messages and gradient sums priced on its
# links), weak-host.csv and strong-host.csv (the host's busy share over each
# point's measured iterations) and cluster.cfg (the calibration); hanayo.sh
# draws them. Compute is
# emulated (each pass sleeps what the layer table says), messages are real
# MPI between the nodes' network namespaces, Slurm is real. Scratch:
# BUILDDIR/tests/out/. WAIT_FILE gets the seconds spent waiting for the
# cluster's lock and bringing it up.
set -euo pipefail
[ $# -eq 3 ] || [ $# -eq 4 ] || { echo "usage: $0 WAVEPIPE SRCDIR OUTDIR [WAIT_FILE]" >&2; exit 2; }
wait_file=${4:-/dev/null}
log() { echo "reproduce[hanayo, measured]: $*" >&2; }
die() { log "error: $*"; exit 1; }
WAVEPIPE=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
. "$2/bench/vcluster_jobs.sh"
. "$2/tests/lib.sh" # wait_for_points
final=$(mkdir -p "$3" && cd "$3" && pwd)
build=$(cd "$(dirname "$WAVEPIPE")/.." && pwd)
work=$build/tests/out/reproduce-hanayo
rm -rf "$work"
vcj_args "$0" "$WAVEPIPE" "$2" "$work" # WAVEPIPE, SRCDIR, OUT (= work), VC

RATE=${HANAYO_RATE:-10gbit} F=${HANAYO_DILATION:-8} S=${HANAYO_BYTE_SCALE:-16}
for name in weak strong; do # the campaigns' dilation must be the links'
    grep -Eq "^dilation = $F;" "$2/jobs/campaigns/hanayo-$name-vcluster.cfg" &&
        grep -Eq "^byte_scale = $S;" "$2/jobs/campaigns/hanayo-$name-vcluster.cfg" ||
        die "jobs/campaigns/hanayo-$name-vcluster.cfg does not say dilation = $F and byte_scale = $S"
done
log "waiting for the test cluster's lock, then bringing up 4 nodes of 8 ranks"
t0=$(date +%s)
vcj_up "$build/tests/vcluster.reproduce-hanayo" 4 8
echo $(($(date +%s) - t0)) > "$wait_file"
vcj_shape "$RATE" "$F" "$S"
cal=$(vcj_calibrate "$RATE" "$F" "$S") || exit 1
# the layer table the campaigns train on (both name the same), for the predictions
TABLE=$2/$(vcj_campaign_string "$2/jobs/campaigns/hanayo-weak-vcluster.cfg" layer_table)
[ -f "$TABLE" ] || die "jobs/campaigns/hanayo-weak-vcluster.cfg names no layer_table that exists ($TABLE)"
cp "$cal" "$final/cluster.cfg.tmp" && mv -f "$final/cluster.cfg.tmp" "$final/cluster.cfg"
# network_predictions HARVEST CLUSTER: per harvested point, its iteration
# and samples/s as `wavepipe simulate` predicts them on the calibrated
# cluster (8 ranks a node, the copies' sums and messages on its links)
network_predictions() {
    echo "schedule,waves,nodes,data_parallel,micro_batches,global_batch,predicted_network_iter_s,predicted_network_samples_per_s"
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
        { print $h["schedule"], $h["waves"], $h["nodes"], $h["data_parallel"], $h["micro_batches"], $h["global_batch"], $h["ranks_per_node"] }' "$1" |
        while read -r k w n d m g per; do
            r=$("$WAVEPIPE" simulate --kind "$k" --waves "$w" --ranks $((n * per)) --data-parallel "$d" --micro-batches "$m" \
                --global-batch "$g" --layers "$TABLE" --cluster "$2" \
                --ranks-per-node "$per" --format csv | awk -F, 'NR == 2 { print $7 }') && [ -n "$r" ] || return 1
            awk -v k="$k" -v w="$w" -v n="$n" -v d="$d" -v m="$m" -v g="$g" -v t="$r" \
                'BEGIN { printf "%s,%s,%s,%s,%s,%s,%.6f,%.4f\n", k, w, n, d, m, g, t, g / t }'
        done
}

# host_busy HARVEST CAMPAIGN_DIR: per harvested point, the host's busy share
# over its measured iterations (the run's rows' host_busy, after step 0)
host_busy() {
    echo "schedule,waves,nodes,host_busy"
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
        { print $h["schedule"], $h["waves"], $h["nodes"], $h["point"] }' "$1" |
        while read -r k w n point; do
            awk -F, -v k="$k" -v w="$w" -v n="$n" 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
                NR > 2 { s += $h["host_busy"]; c++ } END { if (c) printf "%s,%s,%s,%.3f\n", k, w, n, s / c }' \
                "$2/$point/results.csv"
        done
}

cd "$SRCDIR" # the campaigns name their layer table relative to the source tree
for mode in weak strong; do
    name=hanayo-$mode-vcluster
    log "$name: sweep --submit, one point at a time"
    "$WAVEPIPE" sweep "jobs/campaigns/$name.cfg" --submit --max-concurrent 1 --results "$OUT/results" \
        --templates "$SRCDIR/templates" --wavepipe "$WAVEPIPE" > "$OUT/logs/sweep-$mode.log" 2>&1 ||
        die "sweep --submit of $name failed ($OUT/logs/sweep-$mode.log)"
    camp=$OUT/results/$name
    n=$(find "$camp" -mindepth 1 -maxdepth 1 -type d | wc -l)
    ok=$(wait_for_points "$camp" "$n" "${HANAYO_MEASURED_TIMEOUT_S:-1500}")
    [ "$ok" -eq "$n" ] || die "$name: $ok of $n points finished ($("$WAVEPIPE" status "jobs/campaigns/$name.cfg" --results "$OUT/results" 2>&1 | tail -n 1))"
    "$WAVEPIPE" harvest "$camp" > "$OUT/logs/harvest-$mode.txt" 2>&1 || die "harvest of $name failed"
    cp "$camp/harvest.csv" "$final/$mode.csv.tmp" && mv -f "$final/$mode.csv.tmp" "$final/$mode.csv"
    host_busy "$final/$mode.csv" "$camp" > "$final/$mode-host.csv.tmp" && mv -f "$final/$mode-host.csv.tmp" "$final/$mode-host.csv"
    network_predictions "$final/$mode.csv" "$cal" > "$final/$mode-network.csv.tmp" &&
        mv -f "$final/$mode-network.csv.tmp" "$final/$mode-network.csv" || die "$name: the network predictions failed"
done
echo "$MPI_LINE" > "$final/mpi.txt.tmp" && mv -f "$final/mpi.txt.tmp" "$final/mpi.txt"
log "done: $final"
