#!/usr/bin/env bash
# bench/reproduce/hanayo_measured.sh WAVEPIPE SRCDIR OUTDIR [WAIT_FILE] -- the measured
# half of Hanayo's scaling (sections 5.4-5.5), called by hanayo.sh: brings
# the project's test cluster up with 4 nodes (holding its lock throughout),
# submits jobs/campaigns/hanayo-{weak,strong}-vcluster.cfg with
# `wavepipe sweep --submit` (one point at a time), waits for them, and
# `wavepipe harvest`s each; OUTDIR gets weak.csv and strong.csv (harvest's
# rows; hanayo.sh draws them). Compute is emulated (each pass sleeps
# what the layer table says), messages are real MPI between the nodes'
# network namespaces, Slurm is real. Scratch: BUILDDIR/tests/out/. WAIT_FILE
# gets the seconds spent waiting for the cluster's lock and bringing it up.
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

log "waiting for the test cluster's lock, then bringing up 4 nodes"
t0=$(date +%s)
vcj_up "$build/tests/vcluster.reproduce-hanayo" 4 2
echo $(($(date +%s) - t0)) > "$wait_file"
cd "$SRCDIR" # the campaigns name their layer table relative to the source tree
for mode in weak strong; do
    name=hanayo-$mode-vcluster
    log "$name: sweep --submit, one point at a time"
    "$WAVEPIPE" sweep "jobs/campaigns/$name.cfg" --submit --max-concurrent 1 --results "$OUT/results" \
        --templates "$SRCDIR/templates" --wavepipe "$WAVEPIPE" > "$OUT/logs/sweep-$mode.log" 2>&1 ||
        die "sweep --submit of $name failed ($OUT/logs/sweep-$mode.log)"
    camp=$OUT/results/$name
    n=$(find "$camp" -mindepth 1 -maxdepth 1 -type d | wc -l)
    ok=$(wait_for_points "$camp" "$n" "${HANAYO_MEASURED_TIMEOUT_S:-400}")
    [ "$ok" -eq "$n" ] || die "$name: $ok of $n points finished ($("$WAVEPIPE" status "jobs/campaigns/$name.cfg" --results "$OUT/results" 2>&1 | tail -n 1))"
    "$WAVEPIPE" harvest "$camp" > "$OUT/logs/harvest-$mode.txt" 2>&1 || die "harvest of $name failed"
    cp "$camp/harvest.csv" "$final/$mode.csv.tmp" && mv -f "$final/$mode.csv.tmp" "$final/$mode.csv"
done
echo "$MPI_LINE" > "$final/mpi.txt.tmp" && mv -f "$final/mpi.txt.tmp" "$final/mpi.txt"
log "done: $final"
