#!/usr/bin/env bash
# `wavepipe harvest` on synthetic campaign directories: a weak-scaling
# campaign over nodes 1,2,3 x two schedules, with a requeued point
# (iterations written twice: the last row wins), a point with a corrupt and a
# torn row, a point still running (no DONE), and points that must be skipped
# and named (no results.csv, empty results.csv, corrupt point.cfg); a
# strong-scaling campaign with two repetitions at the baseline; adaptive
# runs against their static twins (two scenarios, pauses, k and partition
# changes, a run without a twin). Efficiencies, mean throughputs and
# adapt_vs_static are checked against values computed by hand; plots and a
# second harvest must give identical files.
. "$(dirname "$0")/lib.sh"
out=$(scratch_dir)

HEADER="timestamp,schedule,ranks,nodes,stages,replicas,waves,k,chunks,micro_batches,micro_batch_size,global_batch,iteration,iter_time_s,samples_per_s,tokens_per_s,bubble_ratio,peak_activation_bytes,loss"

# point_cfg DIR ID SCALING REP AXES...: DIR/point.cfg (campaign: DIR's
# parent's name; warm-up 1), each axis NAME=VALUE
point_cfg() {
    local dir=$1 id=$2 scaling=$3 rep=$4 ax axes=""
    shift 4
    for ax in "$@"; do axes="$axes${axes:+, }{ name = \"${ax%%=*}\"; value = \"${ax#*=}\"; }"; done
    mkdir -p "$dir"
    cat > "$dir/point.cfg" <<EOF
# wavepipe campaign point (written by hand for tests/harvest.sh)
format = "wavepipe-point";
version = 1;
campaign = "$(basename "$(dirname "$dir")")";
point = "$id";
scaling = "$scaling";
repetition = $rep;
warmup = 1;
axes = ( $axes );
EOF
}

# point DIR ID SCALING REP SCHEDULE NODES
point() {
    point_cfg "$1" "$2" "$3" "$4" "schedule=$5" "nodes=$6" "micro_batches=8"
}

# row SCHEDULE NODES ITERATION SAMPLES_PER_S BUBBLE: one results.csv row (global batch 8 per node)
row() {
    awk -v s="$1" -v n="$2" -v it="$3" -v sps="$4" -v b="$5" 'BEGIN {
        gb = 8 * n; r = 4 * n
        printf "2026-01-0%dT10:00:%02dZ,%s,%d,%d,%d,1:1:1:1,1,1,1,8,1,%d,%d,%.6f,%.3f,%.1f,%.4f,11572224,%.8f\n",
               n, it, s, r, n, r, gb, it, gb / sps, sps, sps * 64, b, 5.5 - 0.1 * it
    }'
}

# summary SCHEDULE NODES PREDICTED_BUBBLE PREDICTED_ITER_S [EXTRA]: the run.log summary line
summary() {
    echo "step 0: loss 5.50000000, 0.100 s, bubble 0.500"
    echo "summary: schedule $1, ranks $((4 * $2)), stages $((4 * $2)), micro-batches 8: 100.000 samples/s, bubble ratio measured 0.300 simulated $3, iteration measured 0.0800 s simulated $4 s (overhead 1.07${5:-}), peak activation memory 11.04 MiB, loss 5.100000"
}

# good_point DIR ID SCHEDULE NODES "S0 S1 S2 S3 S4" PRED_BUBBLE PRED_ITER
good_point() {
    point "$1" "$2" weak 0 "$3" "$4"
    {
        echo "$HEADER"
        it=0
        for s in $5; do row "$3" "$4" $it "$s" 0.3$it; it=$((it + 1)); done
    } > "$1/results.csv"
    summary "$3" "$4" "$6" "$7" ", simulated on the node's shared cores" > "$1/run.log"
    echo 0 > "$1/DONE"
}

c="$out/results/weak"
mkdir -p "$c"
# 1f1b: medians after warm-up 100, 190, 270 -> weak efficiency 1, 0.95, 0.9
good_point "$c/p00" p00 1f1b 1 "20 98 100 102 100" 0.250 0.0800
good_point "$c/p01" p01 1f1b 2 "40 188 190 192 190" 0.300 0.0900
good_point "$c/p02" p02 1f1b 3 "60 268 270 272 270" 0.350 0.1000
# p02's twin with a corrupt row (12 fields) in the middle and a torn last line
good_point "$c/p03" p03 gpipe 1 "16 78 80 82 80" 0.400 0.1250
{ head -n 3 "$c/p03/results.csv"; echo "2026-01-01T10:00:09Z,gpipe,4,1,4,1:1:1:1,1,1,1,8,1,8"; tail -n +4 "$c/p03/results.csv"
  row gpipe 1 5 999 0.3 | head -c 60; } > "$c/p03/results.csv.new" && mv "$c/p03/results.csv.new" "$c/p03/results.csv"
# gpipe at 2 nodes, requeued: the first job wrote iterations 0-2 (1 and 2 at
# 999 samples/s) and was killed while writing 3 (a torn row, no newline); the
# second resumed from the checkpoint at iteration 1 and appended 1-4, its
# first row on the torn row's line; the last rows win: median 150 ->
# efficiency (150/2)/80 = 0.9375
point "$c/p04" p04 weak 0 gpipe 2
{ echo "$HEADER"; row gpipe 2 0 30 0.3; row gpipe 2 1 999 0.3; row gpipe 2 2 999 0.3; row gpipe 2 3 999 0.3 | head -c 70
  for i in 1 2 3 4; do row gpipe 2 $i $(echo "x 148 150 152 150" | cut -d' ' -f$((i + 1))) 0.3; done; } > "$c/p04/results.csv"
summary gpipe 2 0.450 0.1000 > "$c/p04/run.log"
printf '101 weak\n102 weak\n' > "$c/p04/jobids"
echo 0 > "$c/p04/DONE"
# gpipe at 3 nodes, still running (no DONE): harvested, state incomplete; 216 -> 0.9
good_point "$c/p05" p05 gpipe 3 "24 214 216 218 216" 0.500 0.1100
rm "$c/p05/DONE"
# skipped: no results.csv (the job failed before running), an empty one, a corrupt point.cfg
point "$c/p06" p06 weak 0 1f1b 4
echo 1 > "$c/p06/FAILED"
point "$c/p07" p07 weak 0 gpipe 4
: > "$c/p07/results.csv"
mkdir -p "$c/p08" && echo 'format = "wavepipe-point"; version = ' > "$c/p08/point.cfg"

"$WAVEPIPE" harvest "$c" > "$out/h1.out" 2> "$out/h1.err"
expect_status 0 $? "harvest of a campaign with good and bad points"
csv="$c/harvest.csv"
expect_status 7 "$(wc -l < "$csv")" "harvest.csv: header and one row per good point (6), none dropped or duplicated"
expect_status "schedule,nodes,micro_batches,repetition,point,state,scaling,iterations,duplicate_rows" \
    "$(head -n 1 "$csv" | cut -d, -f1-9)" "columns: the axes in point.cfg order, then repetition, point, state"
expect_contains "$csv" "weak_efficiency,strong_speedup,strong_efficiency" "scaling columns in the header"
expect_contains "$csv" "samples_per_s_median,samples_per_s_min,samples_per_s_max" "median and spread columns"
expect_status "p00 p01 p02 p03 p04 p05" "$(tail -n +2 "$csv" | cut -d, -f5 | tr '\n' ' ' | sed 's/ $//')" \
    "rows in point order, each once"

# col POINT COLUMN: a cell of harvest.csv by point id and column name
col() {
    awk -F, -v p="$1" -v c="$2" 'NR == 1 { for (i = 1; i <= NF; i++) { if ($i == c) k = i; if ($i == "point") at = i }; next }
                                 $at == p { print $k }' "$csv"
}
for spec in p00:1.0000 p01:0.9500 p02:0.9000 p03:1.0000 p04:0.9375 p05:0.9000; do
    expect_status "${spec#*:}" "$(col "${spec%%:*}" weak_efficiency)" "weak efficiency of ${spec%%:*} computed by hand"
done
expect_status "100.0000 98.0000 102.0000 4" \
    "$(col p00 samples_per_s_median) $(col p00 samples_per_s_min) $(col p00 samples_per_s_max) $(col p00 iterations)" \
    "p00: median, min, max over the 4 iterations after warm-up"
expect_status "150.0000 148.0000 152.0000 4 2" \
    "$(col p04 samples_per_s_median) $(col p04 samples_per_s_min) $(col p04 samples_per_s_max) $(col p04 iterations) $(col p04 duplicate_rows)" \
    "requeued p04: iterations 1 and 2 counted once, the last-written rows kept"
expect_status "80.0000 4 done" "$(col p03 samples_per_s_median) $(col p03 iterations) $(col p03 state)" \
    "p03: the corrupt and torn rows skipped, the good ones kept"
expect_status incomplete "$(col p05 state)" "p05 without DONE is harvested as incomplete"
expect_status "100.0000 0.2500 0.080000" \
    "$(col p00 predicted_samples_per_s) $(col p00 predicted_bubble_ratio) $(col p00 predicted_iter_time_s)" \
    "prediction from run.log: global_batch 8 / 0.08 s"
expect_status "160.0000 0.4500" "$(col p04 predicted_samples_per_s) $(col p04 predicted_bubble_ratio)" \
    "prediction from a summary line without the shared-cores note"
expect_status "" "$(col p00 strong_speedup)" "strong columns empty for weak scaling"
bad=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) { if ($i == "samples_per_s_median") t = i; if ($i == "weak_efficiency") e = i }; next }
               !($t > 0 && $e > 0 && $e <= 1.5) { print $5 }' "$csv")
expect_status "" "$bad" "every throughput positive, every efficiency in (0, 1.5]"

expect_contains "$out/h1.err" "p03/results.csv:4: 12 fields, expected 19 — row skipped" "the corrupt row is named with its line"
expect_contains "$out/h1.err" "p03/results.csv:8: last line has no newline" "the torn last row is named"
expect_contains "$out/h1.err" "p04/results.csv:5: a torn row glued to the next row" "a torn row followed by the requeued job's row is named"
expect_contains "$out/h1.err" "p06: no results.csv — point skipped" "the point without results.csv is named"
expect_contains "$out/h1.err" "p07/results.csv: empty" "the empty results.csv is named"
expect_contains "$out/h1.err" "p08/point.cfg" "the corrupt point.cfg is named"
expect_contains "$out/h1.err" "p05: no DONE" "the point without DONE is noted"
expect_contains "$out/h1.out" "harvested 6 runs" "summary line"
expect_contains "$out/h1.out" "(3 points skipped, 3 rows skipped)" "skips counted"
expect_contains "$out/h1.out" "0.938" "the summary table shows the efficiencies"

if command -v "${WP_GNUPLOT:-gnuplot}" > /dev/null; then
    for p in throughput bubble predicted; do
        for e in svg png gp; do
            if [ -s "$c/plots/$p.$e" ]; then pass "plot $p.$e written"; else fail "plot $p.$e missing"; fi
        done
    done
    expect_contains "$c/plots/throughput.svg" "<svg" "throughput.svg is SVG"
    expect_contains "$c/plots/throughput.gp" "ideal (1f1b)" "throughput plot has the ideal line per schedule"
    expect_contains "$c/plots/predicted.gp" "y = x" "predicted plot has the y = x line"
    if [ "$(head -c 4 "$c/plots/bubble.png" | od -An -c | tr -d ' ')" = "211PNG" ]; then
        pass "bubble.png is PNG"
    else
        fail "bubble.png is not PNG"
    fi
else
    pass "gnuplot not installed: plot checks skipped"
fi

# harvest_again DIR COPY OUT: copies DIR's harvest.csv and plots to COPY,
# harvests DIR again (its summary in OUT) and checks the files are the same
harvest_again() {
    local dir=$1 copy=$2 f rel same=1
    mkdir -p "$copy" && cp -r "$dir/harvest.csv" "$dir/plots" "$copy/"
    "$WAVEPIPE" harvest "$dir" > "$3" 2> "$3.err"
    expect_status 0 $? "second harvest of $(basename "$dir")"
    for f in "$copy"/harvest.csv "$copy"/plots/*; do
        rel=${f#"$copy"/}
        cmp -s "$f" "$dir/$rel" || { same=0; fail "second harvest changed $rel"; }
    done
    [ "$same" = 1 ] && pass "a second harvest gives identical files ($(ls "$copy"/plots | wc -l) plot files and the CSV)"
}
harvest_again "$c/" "$out/first" "$out/h2.out" # (a trailing slash too)
expect_status "$(cat "$out/h1.out")" "$(cat "$out/h2.out")" "and the same summary"
ls "$c" "$c/plots" | grep -q '\.tmp' && fail "temporary files left behind" || pass "no temporary files left"

WP_GNUPLOT=/nonexistent/gnuplot "$WAVEPIPE" harvest "$c" --warmup 0 --out "$out/w0.csv" > "$out/h3.out" 2> "$out/h3.err"
expect_status 0 $? "harvest without gnuplot still succeeds"
expect_contains "$out/h3.err" "gnuplot is not installed" "and says gnuplot is missing"
expect_status 1 "$(grep -c "gnuplot is not installed" "$out/h3.err")" "once"
csv="$out/w0.csv"
expect_status "5 100.0000 20.0000" "$(col p00 iterations) $(col p00 samples_per_s_median) $(col p00 samples_per_s_min)" \
    "--warmup 0 keeps iteration 0; --out writes elsewhere"

# strong scaling with two repetitions at the baseline: T0 = (100 + 110) / 2 = 105
s="$out/results/strong"
sp() { # ID REP NODES SAMPLES
    point "$s/$1" "$1" strong "$2" 1f1b "$3"
    { echo "$HEADER"; row 1f1b "$3" 0 1 0.3; row 1f1b "$3" 1 "$4" 0.3; row 1f1b "$3" 2 "$4" 0.3; } > "$s/$1/results.csv"
    summary 1f1b "$3" 0.3 0.05 > "$s/$1/run.log"
    echo 0 > "$s/$1/DONE"
}
sp s0-r0 0 1 100; sp s0-r1 1 1 110; sp s1-r0 0 2 189; sp s2-r0 0 4 336
"$WAVEPIPE" harvest "$s" --no-plots > "$out/s.out" 2> "$out/s.err"
expect_status 0 $? "harvest of a strong-scaling campaign"
csv="$s/harvest.csv"
for spec in s0-r0:0.9524:0.9524 s0-r1:1.0476:1.0476 s1-r0:1.8000:0.9000 s2-r0:3.2000:0.8000; do
    IFS=: read -r id su ef <<< "$spec"
    expect_status "$su $ef" "$(col "$id" strong_speedup) $(col "$id" strong_efficiency)" \
        "strong speedup and efficiency of $id against the mean of the repetitions at 1 node"
done
expect_status "" "$(col s1-r0 weak_efficiency)" "weak column empty for strong scaling"
[ -e "$s/plots" ] && fail "--no-plots drew plots" || pass "--no-plots draws nothing"

# micro-batches set by the node count (M = 4P, as hanayo-weak.cfg): they move
# with the nodes, so each schedule is one group (efficiency against its 1-node
# point) and one series, not a group per point
m="$out/results/weak-m"
mp() { # ID SCHEDULE NODES SAMPLES
    point_cfg "$m/$1" "$1" weak 0 "schedule=$2" "micro_batches=$((4 * $3))" "nodes=$3"
    { echo "$HEADER"; row "$2" "$3" 0 1 0.3; row "$2" "$3" 1 "$4" 0.3; row "$2" "$3" 2 "$4" 0.3; } > "$m/$1/results.csv"
    summary "$2" "$3" 0.3 0.05 > "$m/$1/run.log"
    echo 0 > "$m/$1/DONE"
}
mp m0 1f1b 1 100; mp m1 1f1b 2 180; mp m2 1f1b 4 320; mp m3 hanayo 1 110; mp m4 hanayo 2 187
"$WAVEPIPE" harvest "$m" --no-plots > "$out/m.out" 2> "$out/m.err"
expect_status 0 $? "harvest of a weak campaign whose micro-batches follow the nodes"
csv="$m/harvest.csv"
expect_status "1.0000 0.9000 0.8000 1.0000 0.8500" \
    "$(for id in m0 m1 m2 m3 m4; do col "$id" weak_efficiency; done | tr '\n' ' ' | sed 's/ $//')" \
    "weak efficiency of each schedule against its own 1-node point"
expect_status 3 "$(grep -c '^1f1b ' "$out/m.out")" "one series per schedule, micro_batches not in its name"

# data-parallel copies added with the nodes (axis data_parallel zipped with
# nodes, as Hanayo's weak scaling with data-parallel pipelines): they move
# with the nodes too, so each schedule is one group and one series; where
# the copies are swept at a fixed node count they are groups of their own
d="$out/results/weak-dp"
dpp() { # ID SCHEDULE NODES COPIES SAMPLES
    point_cfg "$d/$1" "$1" weak 0 "schedule=$2" "nodes=$3" "data_parallel=$4"
    { echo "$HEADER"; row "$2" "$3" 0 1 0.3; row "$2" "$3" 1 "$5" 0.3; row "$2" "$3" 2 "$5" 0.3; } > "$d/$1/results.csv"
    summary "$2" "$3" 0.3 0.05 > "$d/$1/run.log"
    echo 0 > "$d/$1/DONE"
}
# weak_efficiencies DIR NAME "IDS" "EFFICIENCIES" WHAT: harvests DIR into
# $out/NAME.out and checks the weak efficiency of each point id
weak_efficiencies() {
    "$WAVEPIPE" harvest "$1" --no-plots > "$out/$2.out" 2> "$out/$2.err"
    expect_status 0 $? "harvest of $1"
    csv="$1/harvest.csv"
    expect_status "$4" "$(for id in $3; do col "$id" weak_efficiency; done | tr '\n' ' ' | sed 's/ $//')" "$5"
}
dpp d0 zb-v 1 1 100; dpp d1 zb-v 2 2 190; dpp d2 zb-v 4 4 360; dpp d3 hanayo 1 1 110; dpp d4 hanayo 2 2 198
weak_efficiencies "$d" d "d0 d1 d2 d3 d4" "1.0000 0.9500 0.9000 1.0000 0.9000" \
    "copies following the nodes: weak efficiency of each schedule against its own 1-node point"
expect_status "3 0" "$(grep -c '^zb-v ' "$out/d.out") $(grep -c 'data_parallel=' "$out/d.out")" \
    "one series per schedule, data_parallel not in its name"
d="$out/results/weak-dp-swept"
dpp e0 zb-v 1 1 100; dpp e1 zb-v 2 1 180; dpp e2 zb-v 1 2 120; dpp e3 zb-v 2 2 228
weak_efficiencies "$d" e "e0 e1 e2 e3" "1.0000 0.9000 1.0000 0.9500" \
    "copies swept at each node count: each copy count its own group"
expect_status "2 2" "$(grep -c '^data_parallel=1 ' "$out/e.out") $(grep -c '^data_parallel=2 ' "$out/e.out")" \
    "and its own series, named by the copies"

# series labels name only the axes a schedule takes (issue 29): k for kfkb,
# waves for hanayo (the test campaign's axes), not "1f1b k=1 waves=1"
l="$out/results/labels"
lp() { # ID SCHEDULE K WAVES NODES
    point_cfg "$l/$1" "$1" weak 0 "schedule=$2" "k=$3" "waves=$4" "nodes=$5"
    { echo "$HEADER"; row "$2" "$5" 0 1 0.3; row "$2" "$5" 1 100 0.3; row "$2" "$5" 2 100 0.3; } > "$l/$1/results.csv"
    summary "$2" "$5" 0.3 0.05 > "$l/$1/run.log"
    echo 0 > "$l/$1/DONE"
}
lp l0 1f1b 1 1 1; lp l1 1f1b 1 1 2; lp l2 kfkb 2 1 1; lp l3 kfkb 2 1 2; lp l4 hanayo 1 2 1; lp l5 hanayo 1 2 2
"$WAVEPIPE" harvest "$l" > "$out/l.out" 2> "$out/l.err"
expect_status 0 $? "harvest of a campaign over schedule, k and waves"
expect_status "1f1b|hanayo waves=2|kfkb k=2" "$(grep -oE '^(1f1b|kfkb|hanayo)( [a-z]+=[0-9]+)?' "$out/l.out" | sort -u | paste -sd'|' -)" \
    "the series are 1f1b, kfkb k=2 and hanayo waves=2"
expect_contains "$l/plots/throughput.gp" '"hanayo waves=2"' "and so are the plots' lines"

# axis adapt and the adapt columns: columns found by name in each file's
# header (new real, new emulated with compute,layer_table, and an old file
# without the adapt columns in one campaign); an adaptive and a static
# point of otherwise equal settings are separate groups and series
NEW=",adapt,partition,pause_s,stage_compute_s,link_bandwidth_Bps"
a="$out/results/adapt"
ap() { # ID ADAPT NODES HEADER "SAMPLES..." "PAUSES..." "PARTITIONS..." [EMULATED]
    point_cfg "$a/$1" "$1" strong 0 schedule=1f1b "adapt=$2" "nodes=$3"
    {
        echo "$4"
        set -- $5 "|" $6 "|" $7 "|" "${8:-}"
        local sps=() pause=() part=() emu
        while [ "$1" != "|" ]; do sps+=("$1"); shift; done; shift
        while [ "$1" != "|" ]; do pause+=("$1"); shift; done; shift
        while [ "$1" != "|" ]; do part+=("$1"); shift; done; shift
        emu=${1:-}
        for it in "${!sps[@]}"; do
            row 1f1b 1 "$it" "${sps[$it]}" 0.3 | tr -d '\n'
            [ -n "$emu" ] && printf ',emulated,bert.txt'
            [ -n "${pause[$it]:-}" ] && printf ',x,%s,%s,0.01:0.02,1e+09' "${part[$it]}" "${pause[$it]}"
            echo
        done
    } | sed 's/,x,/,'"$2"',/' > "$a/$1/results.csv"
    echo 0 > "$a/$1/DONE"
}
ap a0 none 1 "$HEADER$NEW" "50 100 100 100" "0 0 0 0" "8:8 8:8 8:8 8:8"
ap a1 partition 1 "$HEADER,compute,layer_table$NEW" "50 120 120 120" "0 0.5 0 0.25" "8:8 8:8 6:10 6:10" emulated
ap a2 none 2 "$HEADER" "90 180 180 180" "" ""
ap a3 partition 2 "$HEADER$NEW" "90 240 240 240" "0.125 0 0 0" "8:8 7:9 7:9 7:9"
# a row whose partition is not counts joined by ':'
sed -i '3s/,7:9,/,7;9,/' "$a/a3/results.csv"
"$WAVEPIPE" harvest "$a" --no-plots > "$out/a.out" 2> "$out/a.err"
expect_status 0 $? "harvest of results.csv files with the adapt columns and without"
csv="$a/harvest.csv"
expect_status "4 0" "$(tail -n +2 "$csv" | wc -l) $(grep -c "fields, expected" "$out/a.err")" \
    "every point harvested, no row refused for its field count (19, 24 and 26 fields)"
expect_contains "$out/a.err" "a3/results.csv:3: partition '7;9' is not counts joined by ':' — row skipped" \
    "a bad partition is named and its row skipped"
for spec in a0:1.0000:0.000000:8:8 a1:1.0000:0.750000:6:10 a2:1.8000::: a3:2.0000:0.000000:7:9; do
    IFS=: read -r id su pause p0 p1 <<< "$spec"
    part=${p0:+$p0:$p1}
    expect_status "$su|$pause|$part" "$(col "$id" strong_speedup)|$(col "$id" pause_s_total)|$(col "$id" partition_last)" \
        "$id: speedup against its own adapt group's baseline, pauses after warm-up, last partition${pause:- (old file: empty)}"
done
expect_status "adapt=none adapt=partition adapt=none adapt=partition" \
    "$(tail -n +2 "$out/a.out" | grep -o '^adapt=[a-z]*' | tr '\n' ' ' | sed 's/ $//')" \
    "the summary table's series are named by adapt"

# the old file without pause_s: its pauses count 0 in samples_per_s_mean
expect_status "$(awk -F, 'NR > 2 { b += $12; t += $14 } END { printf "%.4f", b / t }' "$a/a2/results.csv")" \
    "$(col a2 samples_per_s_mean)" "a2 (no pause_s column): samples_per_s_mean = sum(global_batch) / sum(iter_time_s)"
expect_status "|1" "$(col a0 adapt_vs_static)|$(col a1 adapt_vs_static | grep -c '^[0-9]')" \
    "a static run has no adapt_vs_static, its adaptive twin at the same node count has one"

# adaptive runs against their static twins: axes schedule, adapt, scenario
# (a name like any other axis; one with characters unsafe in file names),
# nodes; strong scaling, warm-up 1, global batch 16. A row is
# "ITERATION:ITER_TIME_S:K:PARTITION:PAUSE_S" (pause_s: the move after it).
w="$out/results/twins"
tp() { # ID REP ADAPT SCENARIO NODES ROW...
    local id=$1 rep=$2 adapt=$3 scenario=$4 nodes=$5
    shift 5
    point_cfg "$w/$id" "$id" strong "$rep" schedule=1f1b "adapt=$adapt" "scenario=$scenario" "nodes=$nodes"
    {
        echo "$HEADER$NEW"
        for spec in "$@"; do
            IFS=: read -r it t k p0 p1 p2 p3 pause <<< "$spec"
            awk -v it="$it" -v t="$t" -v k="$k" -v part="$p0:$p1:$p2:$p3" -v pause="$pause" -v a="$adapt" -v n="$nodes" 'BEGIN {
                printf "2026-02-01T10:00:%02dZ,1f1b,4,%d,4,1:1:1:1,1,%d,1,8,2,16,%d,%.6f,%.3f,0.0,0.3000,1000,5.0,%s,%s,%.6f,0.01:0.01:0.01:0.01,1e+09\n",
                       it, n, k, it, t, 16 / t, a, part, pause }'
        done
    } > "$w/$id/results.csv"
    echo 0 > "$w/$id/DONE"
}
U=4:4:4:4
tp t00 0 none steady 2 0:0.5:1:$U:0 1:0.1:1:$U:0 2:0.1:1:$U:0 3:0.1:1:$U:0 4:0.1:1:$U:0 5:0.1:1:$U:0
tp t01 1 none steady 2 0:0.5:1:$U:0 1:0.125:1:$U:0 2:0.125:1:$U:0 3:0.125:1:$U:0 4:0.125:1:$U:0 5:0.125:1:$U:0
# the warm-up row ran another partition (a change at the first kept
# iteration, 1); k 1 -> 2 at iteration 3
tp t02 0 both steady 2 0:0.5:1:5:3:4:4:0 1:0.1:1:$U:0 2:0.1:1:$U:0 3:0.08:2:$U:0 4:0.08:2:$U:0 5:0.08:2:$U:0
tp t03 0 none 'slow:r1@20' 2 0:0.5:1:$U:0 1:0.1:1:$U:0 2:0.2:1:$U:0 3:0.2:1:$U:0 4:0.2:1:$U:0 5:0.2:1:$U:0
# a move after iteration 2 (0.3 s) to 3:5:4:4 from iteration 3, k 1 -> 2 at 4, another pause after 5
tp t04 0 both 'slow:r1@20' 2 0:0.5:1:$U:0 1:0.1:1:$U:0 2:0.2:1:$U:0.3 3:0.12:1:3:5:4:4:0 4:0.12:2:3:5:4:4:0 5:0.11:2:3:5:4:4:0.05
# no static run at 4 nodes: no twin
tp t05 0 both 'slow:r1@20' 4 0:0.5:1:$U:0 1:0.05:1:$U:0 2:0.05:1:$U:0 3:0.05:1:$U:0 4:0.05:1:$U:0 5:0.05:1:$U:0
# the slowed twins' scenario (the sweep writes it beside point.cfg): its
# change at 2 marked in their plot, the start's not; a bad changes.txt is
# named and its point kept
printf '# scenario slow\n0 slow * 1\n2 slow 1 2\n' > "$w/t03/changes.txt"
cp "$w/t03/changes.txt" "$w/t04/changes.txt"
printf '3 slow 1 fast\n' > "$w/t00/changes.txt"
"$WAVEPIPE" harvest "$w" > "$out/w1.out" 2> "$out/w1.err"
expect_status 0 $? "harvest of a campaign of adaptive runs and their static twins"
csv="$w/harvest.csv"
expect_status "schedule,adapt,scenario,nodes,repetition" "$(head -n 1 "$csv" | cut -d, -f1-5)" \
    "the scenario axis is a column like any other"
expect_status "partition_last,samples_per_s_mean,adapt_vs_static,shape_changes,shape_last" \
    "$(head -n 1 "$csv" | awk -F, '{ print $(NF-4) "," $(NF-3) "," $(NF-2) "," $(NF-1) "," $NF }')" \
    "the new columns come last, after the older ones"
# by hand, from the rows above (iterations 1-5): samples / (times + pauses)
mean() { echo "$@" | awk '{ t = 0; for (i = 1; i <= NF; i++) t += $i; printf "%.4f", 16 * 5 / t }'; }
m00=$(mean 0.1 0.1 0.1 0.1 0.1) m01=$(mean 0.125 0.125 0.125 0.125 0.125) m02=$(mean 0.1 0.1 0.08 0.08 0.08)
m03=$(mean 0.1 0.2 0.2 0.2 0.2) m04=$(mean 0.1 0.2 0.3 0.12 0.12 0.11 0.05) m05=$(mean 0.05 0.05 0.05 0.05 0.05)
for spec in t00:$m00 t01:$m01 t02:$m02 t03:$m03 t04:$m04 t05:$m05; do
    expect_status "${spec#*:}" "$(col "${spec%%:*}" samples_per_s_mean)" "samples_per_s_mean of ${spec%%:*}, pauses included, computed by hand"
done
expect_status "80.0000 133.3330" "$(col t04 samples_per_s_mean) $(col t04 samples_per_s_median)" \
    "t04: 80 samples/s delivered while its median says 133"
vs02=$(awk -v a="$m02" -v s0="$m00" -v s1="$m01" 'BEGIN { printf "%.4f", a / ((s0 + s1) / 2) }')
vs04=$(awk -v a="$m04" -v s="$m03" 'BEGIN { printf "%.4f", a / s }')
expect_status "1.2626 $vs02" "$(col t02 adapt_vs_static) $vs02" "t02 against the mean of its static twin's two repetitions"
expect_status "0.9000 $vs04" "$(col t04 adapt_vs_static) $vs04" "t04 against its static twin of the same scenario"
expect_status "|||" "$(col t00 adapt_vs_static)|$(col t01 adapt_vs_static)|$(col t03 adapt_vs_static)|$(col t05 adapt_vs_static)" \
    "adapt_vs_static empty for static runs and for t05 (no static run at 4 nodes)"
expect_contains "$out/w1.out" "vs static" "the summary table has the vs static column"
expect_contains "$out/w1.out" "mean s/s" "and the mean samples/s"
expect_status "1.263 0.900" "$(awk '/^adapt=both/ && $(NF-14) == 2 { printf "%s%s", n++ ? " " : "", $(NF-6) }' "$out/w1.out")" \
    "the table's vs static of t02 and t04"

pl="$w/plots"
steady="$pl/adapt_scenario-steady_nodes-2" slow="$pl/adapt_scenario-slow_r1_20_nodes-2"
for f in "$steady.dat" "$steady.gp" "$slow.dat" "$slow.gp"; do
    if [ -s "$f" ]; then pass "per-iteration plot file ${f#"$pl"/} written"; else fail "per-iteration plot file ${f#"$pl"/} missing"; fi
done
expect_status "" "$(ls "$pl" | grep 'nodes-4')" "no per-iteration plot for t05, which has no twin"
expect_status 4 "$(ls "$pl" | grep -c '^adapt_.*\.\(dat\|gp\)$')" "one data file and one script per set of twins"
# blk FILE HEADER: the rows of the data block after a header line
blk() { awk -v h="$2" '$0 == h { on = 1; next } on && /^#/ { next } on && NF == 0 { exit } on { print }' "$1" | tr '\n' ' ' | sed 's/ $//'; }
expect_status "# series adapt=none (point t00)|# series adapt=both (point t02)|# plan changes of adapt=both (point t02)" \
    "$(grep -E '^# (series|plan)' "$steady.dat" | tr '\n' '|' | sed 's/|$//')" \
    "steady: the static run first, then the adaptive one (repetition 1 left out), then its marks"
expect_status "1 160.000000 1 2 160.000000 0 3 200.000000 1 4 200.000000 0 5 200.000000 0" \
    "$(blk "$steady.dat" "# series adapt=both (point t02)")" \
    "t02: samples/s per kept iteration, changed at 1 (after the warm-up row's partition) and 3 (k)"
expect_status "1 216.000000 3 216.000000" "$(blk "$steady.dat" "# plan changes of adapt=both (point t02)")" \
    "t02's marks at iterations 1 and 3, 1.08 x the set's highest samples/s"
expect_status "3 4" "$(blk "$slow.dat" "# plan changes of adapt=both (point t04)" | awk '{ print $1, $3 }')" \
    "t04's marks at iteration 3 (partition) and 4 (k)"
expect_status 0 "$(blk "$slow.dat" "# series adapt=none (point t03)" | awk '{ for (i = 3; i <= NF; i += 3) s += $i } END { print s + 0 }')" \
    "the static twin changed nothing"
expect_contains "$slow.gp" "index 0 using 1:2 with linespoints lc 1 lw 2 pt 7 ps 0.6 title \"adapt=none\"" "script: the static series"
expect_contains "$slow.gp" "index 1 using 1:2 with linespoints lc 2 lw 2 pt 7 ps 0.6 title \"adapt=both\"" "script: the adaptive series"
expect_contains "$slow.gp" "index 2 using 1:2 with impulses lc 2 lw 1.5 dt 3 title \"adapt=both: plan changed\"" \
    "script: the adaptive run's plan changes as dotted marks in its colour"
expect_contains "$slow.gp" "scenario=slow:r1@20 nodes=2" "the title names the twins' axis values"
expect_contains "$slow.gp" 'set arrow from 2, graph 0 to 2, graph 1 nohead dt 2 lc rgb "gray40"' \
    "the scenario's change at iteration 2 is a dashed line"
expect_contains "$slow.gp" 'set label "slow 1 2" at 2,' "named by the change"
if grep -q "set arrow" "$steady.gp" || grep -q "arrow from 0," "$slow.gp"; then
    fail "no line for twins without a scenario, nor for the start's change"
else
    pass "no line for twins without a scenario, nor for the start's change"
fi
expect_contains "$out/w1.err" "t00/changes.txt:1: the factor 'fast' must be a number" "a bad changes.txt is named (file:line)"
if command -v "${WP_GNUPLOT:-gnuplot}" > /dev/null; then
    for e in svg png; do
        if [ -s "$slow.$e" ] && [ -s "$steady.$e" ]; then pass "per-iteration plots drawn as $e"; else fail "per-iteration $e missing"; fi
    done
fi
harvest_again "$w" "$out/wfirst" "$out/w2.out"
rm -rf "$pl"
WP_GNUPLOT=/nonexistent/gnuplot "$WAVEPIPE" harvest "$w" > /dev/null 2> "$out/w3.err"
expect_status 0 $? "harvest of the twins without gnuplot"
same=1
for f in "$steady.dat" "$steady.gp" "$slow.dat" "$slow.gp"; do
    cmp -s "$f" "$out/wfirst/plots/${f#"$pl"/}" || { same=0; fail "without gnuplot ${f#"$pl"/} differs or is missing"; }
done
[ "$same" = 1 ] && pass "without gnuplot the per-iteration data and scripts are still written, the same"

# a point recovered on fewer nodes (issue 34): the first job's rows 0-4 on 3
# nodes, the second job's 3-7 (resumed from step 3) on 2; harvest counts the
# change of shape, names the last one and marks it on a per-iteration plot
r="$out/results/recovered"
point "$r/p00" p00 weak 0 1f1b 3
{ echo "$HEADER"; for i in 0 1 2 3 4; do row 1f1b 3 $i 250 0.3; done; for i in 3 4 5 6 7; do row 1f1b 2 $i 170 0.3; done; } \
    > "$r/p00/results.csv"
summary 1f1b 2 0.300 0.1000 > "$r/p00/run.log"
echo 0 > "$r/p00/DONE"
"$WAVEPIPE" harvest "$r" > "$out/r.out" 2> "$out/r.err"
expect_status 0 $? "harvest of a recovered point"
csv="$r/harvest.csv"
expect_status "1|8 ranks on 2 nodes in 8 stages (replicas 1:1:1:1)" "$(col p00 shape_changes)|$(col p00 shape_last)" \
    "one change of shape, the last shape named"
expect_contains "$r/plots/shape_p00.dat" "# shape changes" "the per-iteration data marks the change"
expect_contains "$r/plots/shape_p00.gp" "8 ranks on 2 nodes" "and the plot names the new shape"

mkdir -p "$out/results/empty/p0"
"$WAVEPIPE" harvest "$out/results/empty" > /dev/null 2> "$out/e.err"
expect_status 1 $? "a campaign with no harvestable point exits 1"
expect_contains "$out/e.err" "no point.cfg" "and names what it found"
"$WAVEPIPE" harvest > /dev/null 2>&1
expect_status 2 $? "no directory is a usage error"
"$WAVEPIPE" harvest "$c" --warmup x > /dev/null 2>&1
expect_status 2 $? "a bad --warmup is a usage error"
mkdir -p "$out/nothing"
"$WAVEPIPE" harvest "$out/nothing" > "$out/nothing.txt" 2>&1
expect_status 1 $? "harvest of a folder with no point fails"
expect_contains "$out/nothing.txt" "give a campaign's folder, results/<campaign>/ as \`wavepipe sweep\` rendered it, whose point directories" \
    "and says what a campaign's folder and its point directories are"
"$WAVEPIPE" harvest --help > "$out/help.txt"
expect_contains "$out/help.txt" "weak_efficiency" "--help explains the columns"

finish
