#!/usr/bin/env bash
# adaptive.sh -- does `wavepipe run --adapt k` (Ada-Grouper's online tuning of
# the kFkB group size) pay when the cluster changes under a running job? On
# the virtual Slurm cluster (tests/cluster/vcluster.sh: 2 nodes that are
# network namespaces of this machine, MPICH 5 over TCP on tc-shaped veth
# links), 4 ranks (2 a node), compute emulated from a layer table, every
# scenario runs twice with the same settings and the same timed changes:
#   static    1F1B all the way,
#   adaptive  the same start with --adapt k (candidates of the same
#             micro-batch size: with emulated compute a pass lasts linearly
#             in its size, so a smaller micro-batch would always win and hide
#             the k trade-off),
# each appending a row per iteration (--results). The run itself makes the
# scenario's changes (wavepipe run --changes) at the iteration boundaries
# named, before the iteration begins on any rank: a slowed rank directly,
# the links' rate and the competing flow through tests/cluster/
# scenario-hook.sh (--changes-hook), which rank 0 runs and waits for. Writes per
# scenario OUTDIR/SCENARIO.csv (both runs, every iteration, the changes and
# the switches), OUTDIR/SCENARIO.{svg,png} (samples/s over iterations, the
# changes marked; PNG and SVG when gnuplot is installed) and a summary line
# in OUTDIR/adaptive.txt: adaptive / static mean samples/s from the first
# change on, and the reaction (iterations from a change to the first
# iteration run on a switched plan). The goals are reported, not enforced.
#
# Usage: bench/adaptive.sh WAVEPIPE SRCDIR OUTDIR [SCENARIO[:RUN+RUN...]...]
# (a scenario's own runs after a colon, e.g. shaped-steady:static+k2+k4;
# else ADAPT_RUNS)
# Scenarios (default all):
#   bandwidth-steps       links 100 -> 250 -> 400 -> 1000 Mbit/s at iterations
#                         20, 40, 60 (AutoPipe's 10 -> 25 -> 40 -> 100 Gbit/s,
#                         scaled to what a veth carries here); 80 iterations
#   bandwidth-steps-down  the reverse: 1000 -> 400 -> 250 -> 100 Mbit/s
#   preempted-network     links at ADAPT_PREEMPT_RATE; competing TCP flows
#                         each way between the nodes (scenario-hook.sh flow:
#                         bash /dev/tcp writers, python3 readers, in the node
#                         namespaces) from iteration 20 to 40; 60 iterations
#   contended-gpu         rank 1's passes twice as long ('slow 1 2')
#                         from iteration 20, three times from 40 (AutoPipe
#                         5.3: slowed at 20 and again at 40); links
#                         unshaped; 60 iterations
#   contended-gpu-bursts  rank 1 twice as slow from 20 to 30 and from 40 to
#                         50 only: conditions that last 10 iterations
#   nothing-changes       links unshaped, no change; 40 iterations
#   rate-drop             (not in the default list: tests/slurm_adapt.sh's)
#                         links unshaped, 100 Mbit/s from iteration 12; 24
#                         iterations
#   shaped-steady         (not in the default list: Ada-Grouper's k grid)
#                         links at ADAPT_PREEMPT_RATE, nothing else; 20
#                         iterations
#   preempted-steady      (not in the default list) the same with the
#                         competing flow from iteration 1 to the end
# The iterations above are for ADAPT_PERIOD=20 (the default): every
# scenario but rate-drop scales with it (changes at PERIOD, 2 PERIOD, ...;
# the bursts last PERIOD / 2).
# Environment:
#   ADAPT_EVERY         --adapt-every (default 5)
#   ADAPT_CANDIDATES    --adapt-candidates (default 2:1,4:1)
#   ADAPT_PREEMPT_RATE  the preempted network's shaping (default 3000mbit: at
#                       2000mbit 1F1B was predicted 9-12 % slower than kFkB
#                       before any flow, at the 10 % threshold; unshaped, the
#                       flows slowed nothing)
#   ADAPT_FLOWS         competing TCP streams each way (default 4)
#   ADAPT_MICRO_BATCHES micro-batches of one sequence (default 16)
#   ADAPT_FLOPS         the analytic table's FLOP/s (default 2e12: passes
#                       of 15 and 30 ms a stage)
#   ADAPT_CLUSTER       where the cluster lives (default OUTDIR/vcluster)
#   ADAPT_RUNS          the runs made (default "static adaptive"); kN: static
#                       kFkB with k = N at the same micro-batch size (the
#                       summary and the plot compare static and adaptive only)
#   ADAPT_PERIOD        iterations between a scenario's changes (default 20)
#   ADAPT_DILATION      F: every run dilated F times (--dilate F; default 1),
#                       the links' rates and the competing flow's divided
#                       by F x S alike (scenario-hook.sh reads the run's
#                       WAVEPIPE_DILATION); times reported undilated
#   ADAPT_BYTE_SCALE    S: messages of 1/S of the model's bytes (--scale-bytes
#                       S; default 1)
#   ADAPT_REPLOT        set: no runs, no cluster; the CSVs, plots and summary
#                       again from the runs under OUTDIR/runs
# Needs root (namespaces, tc).
set -u
if [ $# -lt 3 ]; then
    echo "usage: $0 WAVEPIPE SRCDIR OUTDIR [SCENARIO...]" >&2
    exit 2
fi
# shellcheck source=bench/vcluster_jobs.sh
. "$(dirname "$0")/vcluster_jobs.sh"
vcj_args "$0" "$1" "$2" "$3"
shift 3
ALL_SCENARIOS="bandwidth-steps bandwidth-steps-down preempted-network contended-gpu contended-gpu-bursts nothing-changes"
SCENARIOS=${*:-$ALL_SCENARIOS}
log() { printf 'adaptive: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
EVERY=${ADAPT_EVERY:-5}
MODE=${ADAPT_MODE:-both}
CANDIDATES=${ADAPT_CANDIDATES:-2:1,4:1}
PREEMPT_RATE=${ADAPT_PREEMPT_RATE:-3000mbit}
M=${ADAPT_MICRO_BATCHES:-16}
FLOPS=${ADAPT_FLOPS:-2e12}
CLDIR=${ADAPT_CLUSTER:-$OUT/vcluster}
RUNS=${ADAPT_RUNS:-static adaptive}
FLOWS=${ADAPT_FLOWS:-4}
F=${ADAPT_DILATION:-1} S=${ADAPT_BYTE_SCALE:-1}
DILATE_ARGS=""
[ "$F:$S" = 1:1 ] || DILATE_ARGS="--dilate $F --scale-bytes $S"
DILATED_TEXT=""
[ "$F:$S" = 1:1 ] || DILATED_TEXT=", dilated ${F}x, messages of 1/$S of the bytes"
PERIOD=${ADAPT_PERIOD:-20}
case $PERIOD in '' | *[!0-9]*) die "ADAPT_PERIOD must be a whole number of iterations, not '$PERIOD'" ;; esac
[ "$PERIOD" -ge 2 ] || die "ADAPT_PERIOD must be at least 2 iterations"
P1=$PERIOD P2=$((2 * PERIOD)) P3=$((3 * PERIOD))
HOOK=$SRCDIR/tests/cluster/scenario-hook.sh

# --- the scenarios: a start and changes at iteration numbers ---------------------------
# scenario_iterations NAME: how many iterations a run of NAME lasts
scenario_iterations() {
    case $1 in
    bandwidth-steps | bandwidth-steps-down) echo $((4 * PERIOD)) ;;
    preempted-network | contended-gpu | contended-gpu-bursts) echo $((3 * PERIOD)) ;;
    nothing-changes) echo $((2 * PERIOD)) ;;
    shaped-steady | preempted-steady) echo "$PERIOD" ;;
    rate-drop) echo 24 ;;
    *) die "unknown scenario $1 ($ALL_SCENARIOS shaped-steady preempted-steady rate-drop)" ;;
    esac
}
# scenario_changes NAME: its --changes file (wavepipe run --help), the start as iteration 0
scenario_changes() {
    case $1 in
    bandwidth-steps) printf '0 rate 100mbit\n%d rate 250mbit\n%d rate 400mbit\n%d rate 1000mbit\n' $P1 $P2 $P3 ;;
    bandwidth-steps-down) printf '0 rate 1000mbit\n%d rate 400mbit\n%d rate 250mbit\n%d rate 100mbit\n' $P1 $P2 $P3 ;;
    preempted-network) printf '0 rate %s\n%d flow on %d\n%d flow off\n' "$PREEMPT_RATE" $P1 "$FLOWS" $P2 ;;
    contended-gpu) printf '0 rate none\n%d slow 1 2\n%d slow 1 3\n' $P1 $P2 ;;
    contended-gpu-bursts) printf '0 rate none\n%d slow 1 2\n%d slow 1 1\n%d slow 1 2\n%d slow 1 1\n' \
        $P1 $((P1 + PERIOD / 2)) $P2 $((P2 + PERIOD / 2)) ;;
    nothing-changes) printf '0 rate none\n' ;;
    shaped-steady) printf '0 rate %s\n' "$PREEMPT_RATE" ;;
    preempted-steady) printf '0 rate %s\n1 flow on %d\n' "$PREEMPT_RATE" "$FLOWS" ;;
    rate-drop) printf '0 rate none\n12 rate 100mbit\n' ;;
    esac
}

# --- the table and the cluster --------------------------------------------------------------
mkdir -p "$OUT/tables"
TABLE=$OUT/tables/gpt2-small-deep.cfg
"$WAVEPIPE" profile --model "$SRCDIR/bench/models/gpt2-small-deep.cfg" --analytic --flops-per-s "$FLOPS" \
    --micro-batch 2 -o "$TABLE" > "$OUT/tables/gpt2-small-deep.txt" || die "wavepipe profile --analytic failed"
# rate-drop's table: 16 equal layers, layer 8's output half the others'
MIXED=$SRCDIR/jobs/tables/mixed-16.cfg
for s in $SCENARIOS; do scenario_iterations "${s%%:*}" > /dev/null; done
if [ -z "${ADAPT_REPLOT:-}" ]; then
    vcj_up "$CLDIR" 2 2
    trap 'bash "$HOOK" flow off >/dev/null 2>&1; bash "$VC" down "$VCJ_DIR" >/dev/null 2>&1' EXIT
else
    MPI_LINE=$(sed -n -e 's/^MPI: //p' -e 's/^\(MPICH Version: [0-9.]*, ofi eager threshold [0-9a-z]*\) .*/\1/p' \
        "$OUT/adaptive.txt" 2>/dev/null | head -n 1)
fi

# run_one SCENARIO RUN: one run (static or adaptive) with its changes; its
# rows in OUT/runs/SCENARIO/RUN.csv, the changes it made in RUN.changes
# (iteration,rows_seen,action,arg: from the run's lines "change before
# iteration I: ...", rows_seen = I, as the run makes them at the boundary)
run_one() {
    local scen=$1 run=$2 dir=$OUT/runs/$1 iters
    iters=$(scenario_iterations "$scen")
    local rows_csv=$dir/$run.csv changes=$dir/$run.changes log=$OUT/logs/adaptive-$scen-$run.out
    rm -f "$rows_csv" "$dir/$run.adapt.csv" "$changes"
    scenario_changes "$scen" > "$dir/changes.txt"
    local adapt_args="" sched="--schedule 1f1b"
    case $run in
    static | adaptive) ;;
    k[1-9] | k[1-9][0-9]) sched="--schedule kfkb --k ${run#k}" ;;
    *) die "unknown run $run (static, adaptive or kN)" ;;
    esac
    [ "$run" = adaptive ] && adapt_args="--adapt $MODE --adapt-every $EVERY --adapt-candidates $CANDIDATES --adapt-log \"$dir/$run.adapt.csv\""
    local table=$TABLE
    [ "$scen" = rate-drop ] && table=$MIXED
    cat > "$dir/$run.sh" <<EOS
#!/bin/bash
srun --mpi=pmi2 "$WAVEPIPE" run --compute emulated --layers "$table" $sched --micro-batches $M \\
    --global-batch $M --steps $iters --changes "$dir/changes.txt" --changes-hook "$HOOK" \\
    --results "$rows_csv" $DILATE_ARGS $adapt_args
EOS
    log "$scen: $run run, $iters iterations"
    vcj_job "adaptive-$scen-$run" 2 4 2 "$dir/$run.sh" $((900 * ${F%.*})) || log "$scen/$run: the job failed ($log)"
    bash "$HOOK" flow off > /dev/null 2>&1 # a run that failed half way
    # the moves and the pause each made (iteration,partition,pause_s), from the job's output
    awk '/^adapt partition after iteration [0-9]*: move to/ { it = $5; sub(":", "", it); part = $8 }
         /^adapt partition: moved/ && it != "" { printf "%d,%s,%s\n", it, part, $(NF - 1); it = "" }' \
        "$log" > "$dir/$run.moves" 2>/dev/null
}

# changes_of LOG: the changes a run made, from its lines "change before
# iteration I: ACTION ARG... (...)" (the flow's streams from the hook's line
# "scenario-hook: flow on: N of M streams running"), as
# iteration,rows_seen,action,arg with rows_seen = I
changes_of() {
    echo "iteration,rows_seen,action,arg"
    awk '/^scenario-hook: flow on: / { streams = $4 " of " $6 " streams running" }
         /^change before iteration [0-9]*: / {
             it = $4; sub(":", "", it); arg = $6
             for (i = 7; i <= NF && substr($i, 1, 1) != "("; i++) arg = arg " " $i
             if ($5 == "flow" && $6 == "on") pending = NR
             rows[NR] = it "," it "," $5 "," arg }
         END { for (i = 1; i <= NR; i++) if (i in rows) {
                   r = rows[i]; if (i == pending && streams != "") sub(/,on [0-9]*$/, ",on (" streams ")", r); print r } }' \
        "$1" 2>/dev/null
}

# combine SCENARIO: OUT/SCENARIO.csv from both runs' rows, changes, decisions
# (a switch of k, a move of layers) and the pause each move made
combine() {
    local scen=$1 dir=$OUT/runs/$1 run
    echo "scenario,run,iteration,iter_time_s,samples_per_s,schedule,k,micro_batches,micro_batch_size,change,decision,pause_s"
    for run in $RUNS; do
        touch "$dir/$run.moves"
        changes_of "$OUT/logs/adaptive-$scen-$run.out" > "$dir/$run.changes"
        awk -F, -v scen="$scen" -v run="$run" '
            FILENAME ~ /changes$/ { if (FNR > 1) change[$1] = $3 " " $4; next }
            FILENAME ~ /moves$/ { pause[$1 + 1] = $3; next }
            FILENAME ~ /adapt.csv$/ {
                if (FNR == 1 || $11 != 1) next
                d = $2 == "k" ? "switch to k=" $6 " b=" $7 : "move to " $8
                decision[$1 + 1] = decision[$1 + 1] (decision[$1 + 1] != "" ? " and " : "") d
                next }
            FNR > 1 { printf "%s,%s,%d,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", scen, run, $13, $14, $15, $2, $8, $10, $11,
                             change[$13], decision[$13], pause[$13] != "" ? pause[$13] : 0 }' \
            "$dir/$run.changes" "$dir/$run.moves" $([ -f "$dir/$run.adapt.csv" ] && echo "$dir/$run.adapt.csv") \
            "$dir/$run.csv"
    done
}

# summary SCENARIO: ratio of mean samples/s from the first change on (from
# iteration 1 when nothing changes) and each change's reaction: the first
# switch that takes effect after the change's iteration (a switch taking
# effect at it was decided on the iteration before, without seeing it)
summary() {
    local scen=$1 csv=$OUT/$1.csv first
    first=$(scenario_changes "$scen" | awk '$1 > 0 { print $1; exit }')
    [ -n "$first" ] || first=1
    awk -F, -v first="$first" -v scen="$scen" -v every="$EVERY" '
        NR == 1 { next }
        $3 >= first { g[$2] += $5 * $4; t[$2] += $4 + $12; n[$2]++ } # samples over time, the moves'' pauses in
        $2 == "adaptive" && $10 != "" && $3 > 0 { ch[++nc] = $3; what[nc] = $10 }
        $2 == "adaptive" && $11 != "" { sw[++ns] = $3; swwhat[ns] = $11 }
        END {
            st = t["static"] ? g["static"] / t["static"] : 0; ad = t["adaptive"] ? g["adaptive"] / t["adaptive"] : 0
            printf "%s: from iteration %d, mean samples/s static %.3f, adaptive %.3f, adaptive/static %s\n",
                   scen, first, st, ad, st && ad ? sprintf("%.3f", ad / st) : "-"
            for (i = 1; i <= ns; i++) if (!nc || sw[i] <= ch[1])
                printf "  %s from iteration %d (decided after iteration %d, before any change)\n", swwhat[i], sw[i], sw[i] - 1
            for (c = 1; c <= nc; c++) {
                end = c < nc ? ch[c + 1] : 1e9; r = ""
                for (i = 1; i <= ns; i++) if (sw[i] > ch[c] && sw[i] <= end && r == "") r = i
                if (r != "") printf "  change %s at iteration %d: %s from iteration %d, reaction %d iterations (goal <= %d)\n",
                                    what[c], ch[c], swwhat[r], sw[r], sw[r] - ch[c], every + 1
                else printf "  change %s at iteration %d: no switch before the next change or the end\n", what[c], ch[c]
            }
        }' "$csv"
}

# plot SCENARIO: samples/s over iterations, both runs, changes as vertical
# lines, the adaptive run's k on the right axis
plot() {
    local scen=$1 csv=$OUT/$1.csv arrows term ext
    command -v gnuplot > /dev/null || { log "gnuplot not installed: no plot of $scen"; return; }
    arrows=$(awk -F, 'NR > 1 && $2 == "adaptive" && $10 != "" && $3 > 0 {
        printf "set arrow from %d, graph 0 to %d, graph 1 nohead dt 2 lc rgb \"gray40\"\n", $3, $3
        printf "set label \"%s\" at %d, graph 0.97 left offset 0.3,0 font \",9\"\n", $10, $3 }' "$csv")
    for term in "svg size 900,480 noenhanced font \"sans,12\" background rgb \"white\"" "pngcairo size 900,480 noenhanced"; do
        ext=svg
        case $term in pngcairo*) ext=png ;; esac
        gnuplot 2> "$OUT/runs/$scen/plot.$ext.err" <<GNUPLOT && rm -f "$OUT/runs/$scen/plot.$ext.err"
set terminal $term
set output "$OUT/$scen.$ext"
set datafile separator ","
set title "$scen: static 1F1B vs --adapt $MODE (emulated compute$DILATED_TEXT, 4 ranks, 2 namespace nodes)" font ",11"
set xlabel "iteration"
set ylabel "samples/s"
set y2label "k of the adaptive run"
set y2range [0:5]
set y2tics 1
set ytics nomirror
set key bottom right
set grid
$arrows
plot "$csv" using (strcol(2) eq "static" ? \$3 : NaN):5 with linespoints pt 7 ps 0.4 lc rgb "#1f77b4" title "static 1F1B", \
     "$csv" using (strcol(2) eq "adaptive" ? \$3 : NaN):5 with linespoints pt 5 ps 0.4 lc rgb "#d62728" title "adaptive", \
     "$csv" using (strcol(2) eq "adaptive" ? \$3 : NaN):7 axes x1y2 with steps lw 1 lc rgb "#2ca02c" title "adaptive k"
GNUPLOT
    done
}

{
    echo "Adaptive (wavepipe run --adapt $MODE --adapt-every $EVERY --adapt-candidates $CANDIDATES) against static"
    echo "1F1B; 4 ranks on 2 nodes of a virtual Slurm cluster (network namespaces of one 2-core machine, MPI"
    echo "over tc-shaped veth links); compute emulated from $(basename "$TABLE") (analytic, $FLOPS FLOP/s),"
    echo "$M micro-batches of 1 sequence (rate-drop: the synthetic $(basename "$MIXED")). Samples/s: samples over"
    echo "time, the pauses of moves included."
    [ "$F:$S" = 1:1 ] || echo "Dilated: every run --dilate $F --scale-bytes $S on links (and the competing flow) $F x $S times slower; every time undilated."
    echo "MPI: $MPI_LINE"
} > "$OUT/adaptive.txt.new"
ALL_RUNS=$RUNS
for arg in $SCENARIOS; do
    scen=${arg%%:*}
    RUNS=$ALL_RUNS
    [ "$arg" = "$scen" ] || RUNS=${arg#*:} RUNS=${RUNS//+/ }
    mkdir -p "$OUT/runs/$scen"
    [ -n "${ADAPT_REPLOT:-}" ] || for run in $RUNS; do run_one "$scen" "$run"; done
    combine "$scen" > "$OUT/$scen.csv"
    summary "$scen" | tee -a "$OUT/adaptive.txt.new"
    plot "$scen"
done
# a partial run keeps the other scenarios' lines of the last summary
if [ -f "$OUT/adaptive.txt" ]; then
    for scen in $ALL_SCENARIOS; do
        case " $SCENARIOS " in *" $scen "* | *" $scen:"*) continue ;; esac
        awk -v s="$scen" '$1 == s ":" { on = 1; print; next } /^[a-z]/ { on = 0 } on && /^  / { print }' \
            "$OUT/adaptive.txt" >> "$OUT/adaptive.txt.new"
    done
fi
mv "$OUT/adaptive.txt.new" "$OUT/adaptive.txt"
exit 0
