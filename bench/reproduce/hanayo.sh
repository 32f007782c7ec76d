#!/usr/bin/env bash
# bench/reproduce/hanayo.sh WAVEPIPE SRCDIR [OUTDIR] -- Hanayo (Liu et al., SC23)
# reproduced: the bubble ratios of its figure 2 table (section 3.4) against
# wavepipe's generated schedules, the throughput against the number of waves
# on its four machines (figure 9, section 5.2), its search of pipeline and
# data-parallel sizes on 32 GPUs (figure 10, 5.3), and its weak and strong
# scaling on 8 to 32 GPUs of Lonestar6 (figures 11 and 12, 5.4-5.5), all
# simulated at the paper's scale (its machines as topology/ descriptions,
# its BERT- and GPT-style models as analytic layer tables); then, where the
# virtual test cluster can run here, the campaigns jobs/campaigns/
# hanayo-{weak,strong}-vcluster.cfg measured on it (bench/reproduce/
# hanayo_measured.sh). Writes results/hanayo/.
set -euo pipefail
shopt -s inherit_errexit # a failure inside $(...) ends the script too
. "$(dirname "$0")/lib.sh"
[ $# -eq 2 ] || [ $# -eq 3 ] || { echo "usage: $0 WAVEPIPE SRCDIR [OUTDIR]" >&2; exit 2; }
rp_init hanayo "$1" "$2" "${3:-}" # OUTDIR: elsewhere than results/hanayo (to compare two runs)
WP=$RP_WP
W=$RP_WORK

# ---- the paper's setting, and what is assumed where it says nothing ---------
LONESTAR=$RP_SRC/topology/lonestar6-a100-x16-hdr100.cfg # 2 GPUs a node
CLUSTERS="PC:$RP_SRC/topology/a100-nvlink-pairs-x8.cfg:8 FC:$RP_SRC/topology/a100-nvlink-full-x8.cfg:8 TACC:$LONESTAR:2 TC:$RP_SRC/topology/tencent-gn10xp-v100-x8.cfg:8"
# The paper states no precision; wavepipe's analytic tables hold fp32
# activations and weights, so they are timed at fp32 rates (PyTorch 1.13,
# the paper's, leaves TF32 matmuls off): 70 % of the A100's 19.5 and the
# V100 SXM2's 15.7 TFLOP/s. The rate moves compute against communication,
# not the bubbles.
A100_FLOPS=1.365e13
V100_FLOPS=1.099e13
TC_OVER_TF=0.1 # the bubble table's second setting: T_C = 0.1 T_F

sim() { # sim ARGS...: "makespan bubble" of one simulate run, or "" when it fails (why: $W/sim.err)
    "$WP" simulate --format csv "$@" 2> "$W/sim.err" | awk -F, 'NR == 2 { print $7, $8 }' || true
}
sim_must() { # sim_must ARGS...: as sim, a failure fatal
    local r
    r=$(sim "$@")
    [ -n "$r" ] || rp_die "wavepipe simulate $*: $(cat "$W/sim.err")"
    echo "$r"
}

table() { # table MODEL FLOPS B: path of the analytic layer table (made once)
    local t="$W/tables/$1-$2.b$3.cfg"
    if [ ! -s "$t" ]; then
        mkdir -p "$W/tables"
        "$WP" profile --model "$RP_SRC/bench/models/hanayo-$1.cfg" --analytic --flops-per-s "$2" \
            --micro-batch "$3" -o "$t" > /dev/null || rp_die "profile of $1 at b = $3 failed"
    fi
    echo "$t"
}

# ---- figure 2 / section 3.4: bubble ratio, closed form against generated ----
# The closed forms as printed in figure 2 (T_B = 2 T_F, T_F = 1, M = B = P
# micro-batches: the setting the table is derived for); K = P^2/2 - P.
closed_form() { # closed_form KIND P W TC
    awk -v k="$1" -v P="$2" -v W="$3" -v C="$4" 'BEGIN { F = 1; B = 2; K = P * P / 2 - P
        if (k == "gpipe")   r = ((P-1)*(B+F) + (2*P-2)*C) / ((2*P-1)*(B+F) + (2*P-2)*C)
        if (k == "1f1b")    r = ((P*P-P)*(B+F) + (3*P*P-5*P+2)*C) / ((2*P*P-P)*(B+F) + (4*P-6)*C)
        if (k == "gems")    r = ((P*P-P)*B + (P-1)*F + (P*P-1)*C) / (P*P*B + (2*P-1)*F + (P*P-1)*C)
        if (k == "chimera") r = ((3*K + 6*P - 2*K/P - 8)*C + 2*K*B) / ((3*P*P - 2*P)*C + (2*P*P - 2*P)*B + P*P*F)
        if (k == "hanayo")  r = (B/W + (1 + 2*W + 2/P + (P-2)/3)*C) / (P/(P-1)*F + (1/(2*W) + P/(P-1))*B + ((P-2)/2 + 4*W)*C)
        printf "%.4f", r }'
}
rp_log "figure 2: bubble ratios at P = 8, 16, 32, W = 1, 2, 4"
{
    echo "P,micro_batches,kind,waves,tc,makespan,bubble_wavepipe,bubble_paper"
    for tc in 0 $TC_OVER_TF; do
        for P in 8 16 32; do
            for kw in gpipe:1 1f1b:1 gems:1 chimera:1 hanayo:1 hanayo:2 hanayo:4 zb-v:1; do
                k=${kw%:*} w=${kw#*:}
                case $k in
                    gems) r="" ;; # wavepipe has no GEMS generator: the closed form alone
                    zb-v) r=$(sim_must --kind zb-v --ranks "$P" --micro-batches "$P" --tf 1 --tb 1 --tw 1 --tc "$tc") ;;
                    *) r=$(sim_must --kind "$k" --ranks "$P" --micro-batches "$P" --waves "$w" --tf 1 --tb 2 --tc "$tc") ;;
                esac
                [ "$k" = zb-v ] && cf="" || cf=$(closed_form "$k" "$P" "$w" "$tc")
                set -- ${r:-"" ""}
                echo "$P,$P,$k,$w,$tc,${1:-},${2:-},$cf"
            done
        done
    done
    # beyond figure 2's setting: M = 4P micro-batches, where waves gain least
    for kw in 1f1b:1 chimera:1 hanayo:1 hanayo:2 hanayo:4 zb-v:1; do
        k=${kw%:*} w=${kw#*:}
        if [ "$k" = zb-v ]; then r=$(sim_must --kind zb-v --ranks 8 --micro-batches 32 --tf 1 --tb 1 --tw 1)
        else r=$(sim_must --kind "$k" --ranks 8 --micro-batches 32 --waves "$w" --tf 1 --tb 2); fi
        set -- $r
        echo "8,32,$k,$w,0,$1,$2,"
    done
} > "$W/bubble.csv"
rp_publish "$W/bubble.csv" bubble.csv

# ---- throughput: D data-parallel pipelines simulated whole ------------------
# wavepipe simulate --data-parallel D runs D copies of the kind's pipeline
# (a stage's copies side by side, Megatron-LM's order) and sums each stage's
# gradients over the cluster's links, overlapped with the last backward
# passes as the kind's order allows. pipeline_s is one pipeline's makespan
# (D = 1), allreduce_s what the D copies add to it (the exposed sum and the
# copies' messages sharing links), iteration_s the D copies' makespan.
throughput() {
    local fig=$1 cname=$2 c=$3 rpn=$4 model=$5 flops=$6 gpus=$7 P=$8 b=$9 D M t kw k w one many
    D=$((gpus / P)) M=$P
    t=$(table "$model" "$flops" "$b")
    for kw in gpipe:1 1f1b:1 chimera:1 zb-v:1 hanayo:1 hanayo:2 hanayo:4 hanayo:8; do
        k=${kw%:*} w=${kw#*:}
        one=$(sim --kind "$k" --ranks "$P" --micro-batches "$M" --waves "$w" --layers "$t" --cluster "$c" --ranks-per-node "$rpn")
        if [ -z "$one" ]; then # more waves than the model has layers for, and nothing else
            grep -q "too few for" "$W/sim.err" || rp_die "wavepipe simulate of $k W = $w: $(cat "$W/sim.err")"
            continue
        fi
        many=$one
        [ "$D" -eq 1 ] || many=$(sim_must --kind "$k" --ranks "$gpus" --data-parallel "$D" --micro-batches "$M" --waves "$w" \
            --global-batch $((D * M * b)) --layers "$t" --cluster "$c" --ranks-per-node "$rpn")
        set -- $one
        awk -v f="$fig" -v cn="$cname" -v m="$model" -v g="$gpus" -v P="$P" -v D="$D" -v b="$b" -v M="$M" \
            -v k="$k" -v w="$w" -v pipe="$1" -v it="${many%% *}" -v bub="$2" 'BEGIN {
                ar = it - pipe; printf "%s,%s,%s,%d,%d,%d,%d,%d,%s,%d,%.6f,%.6f,%.6f,%.4f,%.4f\n",
                f, cn, m, g, P, D, b, M, k, w, pipe, ar, it, bub, D * M * b / it }'
    done
}
TP_HEAD="figure,cluster,model,gpus,P,D,micro_batch,micro_batches,kind,waves,pipeline_s,allreduce_s,iteration_s,bubble,samples_per_s"

rp_log "figure 9: BERT-style model on 8 GPUs of four machines, PP 8 and PP 4 x DP 2"
{
    echo "$TP_HEAD"
    for cl in $CLUSTERS; do
        IFS=: read -r cname c rpn <<< "$cl"
        [ "$cname" = TC ] && flops=$V100_FLOPS || flops=$A100_FLOPS
        for P in 8 4; do throughput fig9 "$cname" "$c" "$rpn" bert-64 "$flops" 8 "$P" 2; done
    done
    rp_log "figure 10: (P, D) = (8, 4), (16, 2), (32, 1) on 32 GPUs of Lonestar6"
    for P in 8 16 32; do
        throughput fig10 TACC "$LONESTAR" 2 bert-64 "$A100_FLOPS" 32 "$P" 4
        throughput fig10 TACC "$LONESTAR" 2 gpt-128 "$A100_FLOPS" 32 "$P" 8
    done
    rp_log "figures 11 and 12: weak (2 sequences a pipeline) and strong (4 in all) scaling, P = 8"
    for D in 1 2 4; do
        throughput fig11 TACC "$LONESTAR" 2 bert-64 "$A100_FLOPS" $((8 * D)) 8 2
        throughput fig12 TACC "$LONESTAR" 2 bert-64 "$A100_FLOPS" $((8 * D)) 8 $((4 / D))
    done
} > "$W/throughput.csv"
rp_publish "$W/throughput.csv" throughput.csv

# ---- the measured half, on the test cluster where it can run here -----------
MEASURED=$RP_OUT/measured
# the measured campaigns' layer table (TABLE_NAME, relative to the source
# tree), and its LM head's passes in blocks' passes
. "$RP_SRC/bench/vcluster_jobs.sh" # vcj_campaign_string
TABLE_NAME=$(vcj_campaign_string "$RP_SRC/jobs/campaigns/hanayo-weak-vcluster.cfg" layer_table)
TABLE=$RP_SRC/$TABLE_NAME
[ -f "$TABLE" ] || rp_die "jobs/campaigns/hanayo-weak-vcluster.cfg names no layer_table that exists ($TABLE)"
head_blocks=$(awk '/name = "/ { n = $3 } /^ *(forward|backward)_s =/ { v = $3 + 0; if (n == "\"head\";") h += v; if (n == "\"block0\";") b += v }
    END { if (b > 0) printf "%.1f", h / b }' "$TABLE")
MEASURED_SPENT="" # what the measurement cost, or where its files came from
if [ "${HANAYO_MEASURED:-1}" = 0 ]; then
    MEASURED_WHY="not run: HANAYO_MEASURED=0 was set"
elif [ "${HANAYO_MEASURED:-1}" = reuse ] && [ -s "$MEASURED/weak-network.csv" ] && [ -s "$MEASURED/strong-network.csv" ]; then
    MEASURED_WHY="" # the tables made again from the files of the run that measured them
    MEASURED_SPENT="The measured files are those of the run that ended $(date -u -r "$MEASURED/strong-network.csv" +%Y-%m-%dT%H:%MZ) (HANAYO_MEASURED=reuse: tables and plots made again from them)."
elif ! why=$(bash "$RP_SRC/tests/cluster/vcluster.sh" can-run 2>&1); then
    MEASURED_WHY="not run: the test cluster cannot run here ($why)"
elif "$RP_SRC/bench/reproduce/hanayo_measured.sh" "$WP" "$RP_SRC" "$MEASURED" "$W/lock-wait-s"; then
    MEASURED_WHY=""
    MEASURED_SPENT="Of the time above, $(cat "$W/lock-wait-s") s went to waiting for the test cluster's lock (other users) and bringing it up."
else
    rp_die "the measured campaigns failed (HANAYO_MEASURED=0 runs the simulated part alone)"
fi

# ---- comparisons --------------------------------------------------------------
TPUT=$RP_OUT/throughput.csv
thr() { # thr FIG CLUSTER MODEL GPUS P KIND W: samples/s, or empty
    awk -F, -v f="$1" -v c="$2" -v m="$3" -v g="$4" -v P="$5" -v k="$6" -v w="$7" \
        '$1 == f && $2 == c && $3 == m && $4 == g && $5 == P && $9 == k && $10 == w { print $15 }' "$TPUT"
}
best_w() { # best_w FIG CLUSTER MODEL GPUS P: the wave count of Hanayo's highest throughput
    awk -F, -v f="$1" -v c="$2" -v m="$3" -v g="$4" -v P="$5" \
        '$1 == f && $2 == c && $3 == m && $4 == g && $5 == P && $9 == "hanayo" && $15 > t { t = $15; w = $10 } END { print w }' "$TPUT"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
text_row() { printf '| %s | %s | %s | %s | %s |\n' "$@"; } # a row whose figures are not numbers
{
    echo "figure,quantity,paper,wavepipe,evidence"
    # figure 2: every (P, kind, W, T_C) the closed form covers
    awk -F, -v e="$RP_SIMULATED" 'NR > 1 && $8 != "" && $7 != "" {
        printf "fig2,bubble %s W=%s P=%s tc=%s,%s,%.4f,%s\n", $3, $4, $1, $5, $8, $7, e }' "$RP_OUT/bubble.csv"
} > "$W/hanayo.csv"
EVIDENCE=$RP_SIMULATED
cmp_row() { # cmp_row FIG QUANTITY PAPER OURS LIMIT WHY: a README row, and the CSV row (evidence EVIDENCE)
    echo "$1,$2,$3,$4,$EVIDENCE" >> "$W/hanayo.csv"
    rp_row "$2" "$3" "$4" "$5" "$6"
}

# ---- plots --------------------------------------------------------------------
for P in 8 16 32; do
    awk -F, -v P="$P" 'NR > 1 && $1 == P && $2 == P && $5 == 0 && $3 == "hanayo" { print $4, $7, $8 }' "$RP_OUT/bubble.csv" > "$W/bubble-h$P.dat"
done
ref() { awk -F, -v k="$1" 'NR > 1 && $1 == 8 && $2 == 8 && $5 == 0 && $3 == k { print $7 }' "$RP_OUT/bubble.csv"; }
rp_plot bubble "set title \"Bubble ratio against waves, M = P, T_B = 2 T_F, T_C = 0 ($RP_SIMULATED)\" noenhanced
set xlabel 'waves W'; set ylabel 'bubble ratio'; set logscale x 2; set xtics (1, 2, 4); set key outside right
set yrange [0:0.55]
plot '$W/bubble-h8.dat' u 1:2 w lp lw 2 pt 7 lc 1 t 'Hanayo P=8, wavepipe', '' u 1:3 w lp dt 2 pt 6 lc 1 t 'P=8, formula (1)', \
     '$W/bubble-h16.dat' u 1:2 w lp lw 2 pt 7 lc 2 t 'Hanayo P=16, wavepipe', '' u 1:3 w lp dt 2 pt 6 lc 2 t 'P=16, formula (1)', \
     '$W/bubble-h32.dat' u 1:2 w lp lw 2 pt 7 lc 3 t 'Hanayo P=32, wavepipe', '' u 1:3 w lp dt 2 pt 6 lc 3 t 'P=32, formula (1)', \
     $(ref 1f1b) w l lc rgb 'gray' t 'DAPPLE (1F1B) P=8', $(ref chimera) w l dt 3 lc rgb 'black' t 'Chimera P=8', \
     $(ref zb-v) w l dt 4 lc rgb 'brown' t 'ZB-V P=8'" 900 480

n=0 plotcmd=""
for cl in $CLUSTERS; do
    cname=${cl%%:*}
    for P in 8 4; do
        n=$((n + 1))
        awk -F, -v c="$cname" -v P="$P" 'NR > 1 && $1 == "fig9" && $2 == c && $5 == P && $9 == "1f1b" { d = $15 }
            NR > 1 && $1 == "fig9" && $2 == c && $5 == P && $9 == "hanayo" { w[++n] = $10; t[n] = $15 }
            END { for (i = 1; i <= n; i++) print w[i], t[i] / d }' "$TPUT" > "$W/fig9-$n.dat"
        plotcmd="$plotcmd${plotcmd:+, }'$W/fig9-$n.dat' u 1:2 w lp lw 2 pt $((n % 2 ? 7 : 5)) lc $(((n + 1) / 2)) dt $((n % 2 ? 1 : 2)) t '$cname PP$P x DP$((8 / P))'"
    done
done
rp_plot fig9-waves "set title \"BERT-style model on 8 GPUs: Hanayo's throughput over DAPPLE's against waves\\n($RP_SIMULATED; W = 1 is Chimera-wave)\" noenhanced
set xlabel 'waves W'; set ylabel 'throughput / DAPPLE (1F1B)'; set logscale x 2; set xrange [0.9:9]; set xtics (1, 2, 4, 8); set key outside right
plot $plotcmd" 1000 480

for fig in fig11 fig12; do
    for kw in 1f1b:1 chimera:1 hanayo:1 hanayo:2 hanayo:4 zb-v:1; do
        awk -F, -v f="$fig" -v k="${kw%:*}" -v w="${kw#*:}" 'NR > 1 && $1 == f && $9 == k && $10 == w { print $4, $15 }' "$TPUT" > "$W/$fig-${kw%:*}-${kw#*:}.dat"
    done
done
scaling_plot() { # scaling_plot FIG NAME TITLE
    rp_plot "$2" "set title \"$3 ($RP_SIMULATED)\" noenhanced
set xlabel 'GPUs (Lonestar6, pipelines of 8)'; set ylabel 'samples/s'; set logscale xy 2; set xrange [7:36]; set xtics (8, 16, 32); set key left top
plot '$W/$1-1f1b-1.dat' w lp lw 2 pt 7 t 'DAPPLE (1F1B)', '$W/$1-chimera-1.dat' w lp lw 2 pt 5 t 'Chimera (2 weight copies)', \
     '$W/$1-hanayo-1.dat' w lp lw 2 pt 9 t 'Chimera-wave (Hanayo W=1)', '$W/$1-hanayo-2.dat' w lp lw 2 pt 11 t 'Hanayo W=2', \
     '$W/$1-hanayo-4.dat' w lp lw 2 pt 13 t 'Hanayo W=4', '$W/$1-zb-v-1.dat' w lp dt 2 pt 6 t 'ZB-V'" 820 480
}
scaling_plot fig11 weak-scaling "Weak scaling, BERT-style model, 8 micro-batches of 2 sequences a pipeline"
scaling_plot fig12 strong-scaling "Strong scaling, BERT-style model, 32 sequences a step (8 micro-batches of 4 / D a pipeline)"

# ---- README -------------------------------------------------------------------
bubble_why() { # bubble_why KIND W TC OURS PAPER: why wavepipe's bubble differs from figure 2's
    local below
    below=$(awk -v a="$4" -v b="$5" 'BEGIN { print (a < b) ? 1 : 0 }')
    case "$1:$below" in
        hanayo:1) [ "$2" = 1 ] &&
            echo "wavepipe's one-wave order (the V-shaped 1F1B, searched) idles less than the zones of figure 7 add up to: formula (1) at W = 1 lies above Chimera's own, although section 3.2 makes the one-wave form Chimera transformed; wavepipe's one-wave bubble at P is exactly Chimera's at 2P (this table), as that transformation says" ||
            echo "below the closed form: wavepipe's order (searched under the same memory bound) overlaps more of zone B than figure 7 counts" ;;
        hanayo:0) echo "each hop of a micro-batch's path pays T_C in the simulator, and a W-wave pipeline has 2WP - 1 hops each way, most of them on the critical path at M = P; formula (1) grows by only (1 + 2W) T_C, so more waves cost more here than the paper counts" ;;
        chimera:*) echo "the simulator pays each of Chimera's messages on the critical path (its cross-communication as two messages); the closed form's T_C terms are the paper's count" ;;
        *) echo "the closed form's T_C terms count the messages differently from the simulator, which pays each one on the critical path" ;;
    esac
}
bubble_table() { # bubble_table TC
    echo "| P, scheme | paper (figure 2) | wavepipe | difference | note |"
    echo "|---|---|---|---|---|"
    awk -F, -v tc="$1" 'NR > 1 && $5 == tc && $1 == $2 { print $1, $3, $4, $7 == "" ? "-" : $7, $8 == "" ? "-" : $8 }' "$RP_OUT/bubble.csv" |
    while read -r P k w ours paper; do
        name=$k
        case $k in 1f1b) name="DAPPLE (1F1B)" ;; gpipe) name=GPipe ;; gems) name=GEMS ;; chimera) name="Chimera (2 weight copies)" ;;
            hanayo) name="Hanayo W = $w" ;; zb-v) name="ZB-V (zero-bubble V, Qi et al. 2023)" ;; esac
        if [ "$k" = gems ]; then
            text_row "P = $P, $name" "$(printf %.4f "$paper")" "not generated" "n/a" "wavepipe has no GEMS generator; the closed form alone"
        elif [ "$k" = zb-v ]; then
            text_row "P = $P, $name" "not in figure 2" "$(printf %.4f "$ours")" "n/a" "later than Hanayo: beside it for scale (T_B split into B and W, each T_F)"
        else
            rp_row "P = $P, $name" "$(printf %.4f "$paper")" "$(printf %.4f "$ours")" 5 "$(bubble_why "$k" "$w" "$1" "$ours" "$paper")"
        fi
    done
}

# figure 9: per machine and setting
FIG9_ROWS=$W/fig9-rows
: > "$FIG9_ROWS"
for cl in $CLUSTERS; do
    cname=${cl%%:*}
    for P in 8 4; do
        bw=$(best_w fig9 "$cname" bert-64 8 "$P")
        h=$(thr fig9 "$cname" bert-64 8 "$P" hanayo "$bw")
        echo "$cname $P $bw $(ratio "$h" "$(thr fig9 "$cname" bert-64 8 "$P" hanayo 1)") $(ratio "$h" "$(thr fig9 "$cname" bert-64 8 "$P" chimera 1)") $(ratio "$(thr fig9 "$cname" bert-64 8 "$P" hanayo 1)" "$(thr fig9 "$cname" bert-64 8 "$P" 1f1b 1)")" >> "$FIG9_ROWS"
    done
done
stat9() { awk -v c="$1" -v s="$2" '{ v = $c; n++; sum += v; if (n == 1 || v < lo) lo = v; if (n == 1 || v > hi) hi = v }
    END { printf "%.3f", s == "mean" ? sum / n : s == "min" ? lo : hi }' "$FIG9_ROWS"; }

# figure 10: each kind's best (P, D) on 32 GPUs
best_config() { # best_config MODEL KIND: "P D W samples/s" of the kind's fastest configuration
    awk -F, -v m="$1" -v k="$2" '$1 == "fig10" && $3 == m && $9 == k && $15 > t { t = $15; c = $5 " " $6 " " $10 " " $15 } END { print c }' "$TPUT"
}

# figures 11 and 12 at P = 8 with the paper's W = 2, and the best W
sc() { thr "$1" TACC bert-64 "$2" 8 "$3" "$4"; }

{
    echo "# Hanayo (Liu et al., SC23) reproduced"
    echo
    echo "Hanayo's wave-like pipelines against GPipe, DAPPLE's 1F1B, Chimera and, for scale, the"
    echo "later zero-bubble V schedule: bubble ratios against the paper's closed forms, throughput"
    echo "against the number of waves on its four machines, and its weak and strong scaling."
    echo
    rp_provenance "$RP_SIMULATED (figures 2, 9, 10, 11, 12)" \
        "The paper's machines as cluster descriptions: \`topology/lonestar6-a100-x16-hdr100.cfg\` (TACC), \`topology/tencent-gn10xp-v100-x8.cfg\` (TC), \`topology/a100-nvlink-pairs-x8.cfg\` (PC), \`topology/a100-nvlink-full-x8.cfg\` (FC), written by hand from its section 5 (links and rates in each file's header)." \
        "Its models as analytic layer tables (\`wavepipe profile --analytic\`): the BERT-style model (64 layers, 64 heads, hidden 2560: \`bench/models/hanayo-bert-64.cfg\`) and the GPT-style one (128 layers, 16 heads, hidden 1024: \`bench/models/hanayo-gpt-128.cfg\`), fp32, at $A100_FLOPS FLOP/s on an A100 and $V100_FLOPS on a V100 (70 % of the fp32 peak; the paper states no precision, and PyTorch 1.13 leaves TF32 off)." \
        "Assumed where the paper says nothing: sequence length 512 (BERT) and 1024 (GPT); M = P micro-batches a pipeline (the setting of figure 2's formulas); \"batch size\" read as sequences a micro-batch summed over the data-parallel pipelines (weak scaling: 2 a pipeline, 2 to 8 in all; strong: 4 in all, 4 / D a pipeline; figure 9: 2; figure 10: 4 for BERT, 8 for GPT)." \
        "Chimera-wave, the paper's \"C\", is Chimera turned into one-wave pipelines (section 3.2, figure 5): wavepipe's \`hanayo --waves 1\` (its bubble at P is Chimera's at 2P, table below). wavepipe's \`chimera\` (two weight copies per GPU) is shown beside it." \
        "D pipelines of P GPUs: simulated whole (\`wavepipe simulate --data-parallel D --layers --cluster --ranks-per-node\`): a stage's D copies side by side (Megatron-LM's order; the paper does not say its placement), each kind's gradient sums over the cluster's links overlapped with its last backward passes as its order allows; \`throughput.csv\` keeps one pipeline's makespan (\`pipeline_s\`) and what the D copies add (\`allreduce_s\`)."
    if [ -z "$MEASURED_WHY" ]; then
        echo "- **Evidence: $RP_MEASURED** (the last section): emulated compute, real MPI ($(cat "$MEASURED/mpi.txt")) between network namespaces of one 2-core machine, real Slurm; 8 to 32 emulated GPUs as 1 to 4 data-parallel pipelines of 8, dilated 8 times (times reported undilated). $MEASURED_SPENT"
    else
        echo "- **Evidence: $RP_MEASURED**: $MEASURED_WHY; \`results/hanayo/measured/\` holds what an earlier run measured, if any."
    fi
    echo
    echo "Files: \`bubble.csv\` (figure 2), \`throughput.csv\` (figures 9-12: one row per machine, model, GPUs, P, D, kind and waves), \`hanayo.csv\` (every comparison below, tidy), plots \`bubble\`, \`fig9-waves\`, \`weak-scaling\`, \`strong-scaling\` (SVG and PNG), \`measured/\` (the test cluster's harvests)."
    echo
    echo "## Figure 2 (section 3.4): bubble ratio, closed form against wavepipe's schedules"
    echo
    echo "M = P micro-batches, T_F = 1, T_B = 2 (ZB-V: B = W = 1), T_C = 0: \`wavepipe simulate --kind K --ranks P --micro-batches P --tf 1 --tb 2 [--waves W]\`. The paper's figure 1 (the same closed forms drawn) is missing from the text; \`bubble.svg\` draws formula (1) beside wavepipe's."
    echo
    bubble_table 0
    echo
    echo "![bubble ratio against waves](bubble.svg)"
    echo
    echo "The same with T_C = $TC_OVER_TF T_F per message (\`--tc $TC_OVER_TF\`), figure 2's full formulas:"
    echo
    bubble_table "$TC_OVER_TF"
    echo
    echo "Beyond figure 2's setting, M = 4P = 32 micro-batches at P = 8 (T_C = 0; no closed form in the paper): within the memory bound of P micro-batches a rank no order can beat M (T_F + T_B) + (P - 1) T_B / W (96 + 14 / W here: 110, 103, 99.5 for W = 1, 2, 4; the project README's \"Comparing schedules\"), so the waves gain less than at M = P; wavepipe's orders for two and four waves (laps of a V in groups of P micro-batches) meet that bound:"
    echo
    echo "| scheme | makespan | bubble |"
    echo "|---|---|---|"
    awk -F, 'NR > 1 && $2 == 4 * $1 { n = $3 == "hanayo" ? "Hanayo W = " $4 : $3 == "1f1b" ? "DAPPLE (1F1B)" : $3 == "chimera" ? "Chimera (2 weight copies)" : "ZB-V"
        printf "| %s | %s | %.4f |\n", n, $6, $7 }' "$RP_OUT/bubble.csv"
    echo
    echo "## Figure 9 (section 5.2): throughput against waves on four machines, 8 GPUs"
    echo
    echo "BERT-style model, 2 sequences a micro-batch, pipeline only (PP 8) and PP 4 x DP 2; Hanayo at every W the 66 layers allow (1, 2, 4; 8 at P = 4), its best taken as the paper did. The paper's eight figures (Hanayo over Chimera-wave: 15.7, 30.4, 23.2, 29.9, 8.2, 17.1, 24.6, 28.0 %) come without saying which setting each is, and figure 9 itself is missing from the text, so they are compared as a set."
    echo
    echo "| machine | setting | Hanayo's best W | Hanayo / Chimera-wave | Hanayo / Chimera (2 copies) | Chimera-wave / DAPPLE |"
    echo "|---|---|---|---|---|---|"
    while read -r cname P bw hc hch cd; do
        echo "| $cname | PP $P x DP $((8 / P)) | $bw | $hc | $hch | $cd |"
    done < "$FIG9_ROWS"
    echo
    echo "| quantity | paper | wavepipe | difference | note |"
    echo "|---|---|---|---|---|"
    cmp_row fig9 "Hanayo / Chimera-wave, mean of the eight settings" 1.221 "$(stat9 4 mean)" 5 \
        "wavepipe's waves gain more than the paper's runs did: the simulator hides behind compute every message that prefetching can, where section 5.2 says the paper's runs left some uncovered, the more so with more waves"
    cmp_row fig9 "Hanayo / Chimera-wave, smallest of the eight" 1.082 "$(stat9 4 min)" 5 \
        "the simulator's waves gain at least this on every setting; the paper's 8.2 % is one it does not name, where its runs lost more to the waves' messages than the simulator charges (see the best-W row below)"
    cmp_row fig9 "Hanayo / Chimera-wave, largest of the eight" 1.304 "$(stat9 4 max)" 5 \
        "at P = 4 the model allows 8 waves, which the simulator prices with little communication cost"
    cmp_row fig9 "Chimera-wave / DAPPLE, mean (\"approximately 20 %\")" 1.20 "$(stat9 6 mean)" 5 \
        "the paper gives this one only roughly"
    tacc=$(awk '$1 == "TACC" { s += $3; n++ } END { printf "%.1f", s / n }' "$FIG9_ROWS")
    nvl=$(awk '$1 != "TACC" { s += $3; n++ } END { printf "%.1f", s / n }' "$FIG9_ROWS")
    text_row "best W on TACC against the NVLink machines" "lower on TACC (extra communication costs more)" "mean best W: TACC $tacc, others $nvl" "n/a" \
        "$(awk -v t="$tacc" -v o="$nvl" 'BEGIN { print (t < o) ? "reproduces: fewer waves pay on the slow links" : "does not reproduce: the simulator hides the extra messages of more waves behind compute even over HDR100 at this model size, so the most waves win everywhere" }')"
    echo
    echo "![throughput against waves](fig9-waves.svg)"
    echo
    echo "## Figure 10 (section 5.3): the best pipeline and data-parallel sizes on 32 GPUs of Lonestar6"
    echo
    echo "(P, D) in (8, 4), (16, 2), (32, 1); BERT-style with 4 sequences a micro-batch, GPT-style with 8; memory is not checked (the paper's empty cells are out-of-memory runs)."
    echo
    echo "| model, scheme | paper's choice | wavepipe's best (samples/s) | difference | note |"
    echo "|---|---|---|---|---|"
    for m in bert-64 gpt-128; do
        for k in gpipe 1f1b chimera hanayo zb-v; do
            read -r bP bD bW bT <<< "$(best_config "$m" "$k")"
            case $k in hanayo) paper="P 8, D 4, W 2"; ours="P $bP, D $bD, W $bW ($bT)" ;;
                zb-v) paper="not in the paper"; ours="P $bP, D $bD ($bT)" ;;
                *) paper="P 8, D 4"; ours="P $bP, D $bD ($bT)" ;; esac
            if [ "$k" = zb-v ]; then note="beside it for scale"
            elif [ "$bP" = 8 ] && { [ "$k" != hanayo ] || [ "$bW" = 2 ]; }; then note="reproduces"
            elif [ "$bP" = 8 ]; then note="same (P, D); more waves win here: the simulator charges the extra messages of W = $bW little against halved bubbles"
            else note="differs"; fi
            text_row "$m, $k" "$paper" "$ours" "n/a" "$note"
        done
    done
    echo
    echo "## Figure 11 (section 5.4): weak scaling, 8 to 32 GPUs of Lonestar6"
    echo
    echo "Pipelines of P = 8 GPUs (4 nodes of 2), D = 1, 2, 4 of them, 2 sequences a micro-batch, M = 8; Hanayo with W = 2 as the paper chose in section 5.3."
    echo
    echo "| quantity | paper | wavepipe | difference | note |"
    echo "|---|---|---|---|---|"
    i=0
    for g in 8 16 32; do
        i=$((i + 1))
        h=$(sc fig11 "$g" hanayo 2)
        cmp_row fig11 "Hanayo / Chimera-wave, $g GPUs" "$(echo 1.0819 1.0811 1.0813 | cut -d' ' -f$i)" "$(ratio "$h" "$(sc fig11 "$g" hanayo 1)")" 5 \
            "the simulator's two waves gain more over one than the paper measured: its messages over HDR100 are hidden behind compute by prefetching, which the paper's section 5.2 says its runs could not do fully on Lonestar6"
        cmp_row fig11 "Hanayo / DAPPLE, $g GPUs" "$(echo 1.337 1.332 1.331 | cut -d' ' -f$i)" "$(ratio "$h" "$(sc fig11 "$g" 1f1b 1)")" 5 \
            "as the bubble table: at M = P the simulated 1F1B idles (P-1)/(2P-1) of the time"
        cmp_row fig11 "Hanayo / GPipe, $g GPUs" "$(echo 1.334 1.333 1.333 | cut -d' ' -f$i)" "$(ratio "$h" "$(sc fig11 "$g" gpipe 1)")" 5 \
            "GPipe's and 1F1B's iterations are equal at M = P in the simulator (they differ only in memory)"
    done
    h8=$(sc fig11 8 hanayo 2)
    cmp_row fig11 "Hanayo's weak-scaling efficiency, 16 GPUs" 1.001 "$(awk -v a="$(sc fig11 16 hanayo 2)" -v b="$h8" 'BEGIN { printf "%.3f", a / (2 * b) }')" 2 \
        "part of the gradient sum between pipelines is exposed in the simulator (the copies of a stage sum over HDR100 after their last backward); the paper measured it hidden, and above 100 % from larger batches running faster, which an analytic table (linear in the batch) cannot show"
    cmp_row fig11 "Hanayo's weak-scaling efficiency, 32 GPUs" 0.998 "$(awk -v a="$(sc fig11 32 hanayo 2)" -v b="$h8" 'BEGIN { printf "%.3f", a / (4 * b) }')" 2 \
        "the gradient sums of 4 pipelines cross HDR100 and are partly exposed after the last backward passes in the simulator"
    bw=$(best_w fig11 TACC bert-64 32 8)
    text_row "Hanayo's best W, 32 GPUs" "2" "$bw ($(ratio "$(sc fig11 32 hanayo "$bw")" "$(sc fig11 32 hanayo 2)") x W = 2)" "n/a" \
        "$([ "$bw" = 2 ] && echo reproduces || echo "the simulator prices the messages of more waves below what they save on Lonestar6; the paper found W = 2 best there")"
    echo
    echo "![weak scaling](weak-scaling.svg)"
    echo
    echo "## Figure 12 (section 5.5): strong scaling, 8 to 32 GPUs of Lonestar6"
    echo
    echo "32 sequences a step (M = 8 micro-batches of 4 sequences summed over the D pipelines: 4, 2, 1 a pipeline), P = 8, D = 1, 2, 4; Hanayo with W = 2. The paper's \"33.3 % and 33.8 %\" over GPipe and DAPPLE are read as at 16 and 32 GPUs (at 8 they ran out of memory)."
    echo
    echo "| quantity | paper | wavepipe | difference | note |"
    echo "|---|---|---|---|---|"
    text_row "GPipe and DAPPLE at 8 GPUs" "out of memory (40 GB)" "not checked" "n/a" "the simulator counts activations in micro-batches (every kind holds P = 8 on its first rank at M = P here), not bytes against the GPU's memory"
    i=0
    for g in 8 16 32; do
        i=$((i + 1))
        h=$(sc fig12 "$g" hanayo 2)
        cmp_row fig12 "Hanayo / Chimera-wave, $g GPUs" "$(echo 1.088 1.081 1.087 | cut -d' ' -f$i)" "$(ratio "$h" "$(sc fig12 "$g" hanayo 1)")" 5 \
            "as in weak scaling: the simulator hides more of the waves' messages than the paper's runs did"
        [ "$g" = 8 ] && continue
        cmp_row fig12 "Hanayo / DAPPLE, $g GPUs" "$(echo x 1.333 1.338 | cut -d' ' -f$i)" "$(ratio "$h" "$(sc fig12 "$g" 1f1b 1)")" 5 \
            "as the bubble table: at M = P the simulated 1F1B idles (P-1)/(2P-1) of the time"
    done
    h8=$(sc fig12 8 hanayo 2)
    cmp_row fig12 "Hanayo's speed-up, 16 GPUs" 1.884 "$(ratio "$(sc fig12 16 hanayo 2)" "$h8")" 3 \
        "an analytic table prices a micro-batch of 2 sequences at half the time of 4 (a GPU's loss of efficiency on smaller batches is not in it), so only the exposed gradient sum keeps the speed-up under 2"
    cmp_row fig12 "Hanayo's speed-up, 32 GPUs" 3.375 "$(ratio "$(sc fig12 32 hanayo 2)" "$h8")" 3 \
        "as at 16 GPUs: one sequence a micro-batch is priced at a quarter of four, so the speed-up stays near 4 less the exposed gradient sum"
    echo
    echo "![strong scaling](strong-scaling.svg)"
    echo
} > "$W/README.md"

# the measured campaigns' harvests: column by name
mcol() { # mcol CSV COLUMN SCHEDULE WAVES NODES: the value of COLUMN in that row
    awk -F, -v c="$2" -v s="$3" -v w="$4" -v n="$5" 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
        $h["schedule"] == s && $h["waves"] == w && $h["nodes"] == n { print $h[c] }' "$1"
}
# measured_cell MODE COLUMN SCHEDULE WAVES NODES: harvest's column, or the
# network prediction's (predicted_network_*) from MODE-network.csv
measured_cell() {
    case $2 in
    predicted_network_*) mcol "$MEASURED/$1-network.csv" "$2" "$3" "$4" "$5" ;;
    host_busy) [ -s "$MEASURED/$1-host.csv" ] && mcol "$MEASURED/$1-host.csv" "$2" "$3" "$4" "$5" ;;
    *) mcol "$MEASURED/$1.csv" "$2" "$3" "$4" "$5" ;;
    esac
}
scheme_name() {
    case $1 in 1f1b:1) echo "DAPPLE (1F1B)" ;; hanayo:1) echo "Chimera-wave (Hanayo W = 1)" ;; *) echo "Hanayo W = ${1#*:}" ;; esac
}
measured_table() { # measured_table MODE
    local col m p q base n kw k w
    [ "$1" = weak ] && col=weak_efficiency || col=strong_speedup
    echo "| GPUs (nodes, copies) | scheme | M a copy | samples/s measured | predicted (links priced) | measured / predicted | $col measured | $col predicted | host busy |"
    echo "|---|---|---|---|---|---|---|---|---|"
    for n in 1 2 4; do
        for kw in 1f1b:1 hanayo:1 hanayo:2; do
            k=${kw%:*} w=${kw#*:}
            m=$(measured_cell "$1" samples_per_s_median "$k" "$w" "$n")
            p=$(measured_cell "$1" predicted_network_samples_per_s "$k" "$w" "$n")
            base=$(measured_cell "$1" predicted_network_samples_per_s "$k" "$w" 1)
            [ "$1" = weak ] && q=$(awk -v a="$p" -v b="$base" -v n="$n" 'BEGIN { printf "%.3f", a / (n * b) }') ||
                q=$(ratio "$p" "$base")
            echo "| $((8 * n)) ($n, $n) | $(scheme_name "$kw") | $(measured_cell "$1" micro_batches "$k" "$w" "$n") | $(printf %.3f "$m") | $(printf %.3f "$p") | $(ratio "$m" "$p") | $(printf %.3f "$(measured_cell "$1" "$col" "$k" "$w" "$n")") | $q | $(awk -v b="$(measured_cell "$1" host_busy "$k" "$w" "$n")" 'BEGIN { if (b == "") print "-"; else printf "%.0f %%", 100 * b }') |"
        done
    done
}
if [ -s "$MEASURED/weak.csv" ] && [ -s "$MEASURED/strong.csv" ] && [ -s "$MEASURED/weak-network.csv" ] && [ -s "$MEASURED/strong-network.csv" ]; then
    mkdir -p "$W/measured" # rp_plot draws NAME under the scratch directory first
    for mode in weak strong; do
        for kw in 1f1b:1 hanayo:1 hanayo:2; do
            for n in 1 2 4; do
                echo "$((8 * n)) $(measured_cell "$mode" samples_per_s_median "${kw%:*}" "${kw#*:}" "$n") $(measured_cell "$mode" predicted_network_samples_per_s "${kw%:*}" "${kw#*:}" "$n")"
            done > "$W/m-$mode-${kw%:*}-${kw#*:}.dat"
        done
        rp_plot "measured/$mode-scaling" "set title \"Hanayo's $mode scaling, 8 to 32 emulated GPUs (1 to 4 pipelines of 8): $RP_MEASURED\\n(compute emulated, dilated 8x, real MPI and Slurm, 4 nodes on one 2-core machine; dashed: predicted)\" noenhanced
set xlabel 'emulated GPUs (8 a node, one pipeline a node)'; set ylabel 'samples/s (median)'; set logscale xy 2; set xrange [7:36]; set xtics (8, 16, 32); set key left top
plot '$W/m-$mode-1f1b-1.dat' u 1:2 w lp lw 2 pt 7 lc 1 t 'DAPPLE (1F1B)', '' u 1:3 w l dt 2 lc 1 notitle, \
     '$W/m-$mode-hanayo-1.dat' u 1:2 w lp lw 2 pt 9 lc 2 t 'Chimera-wave (Hanayo W=1)', '' u 1:3 w l dt 2 lc 2 notitle, \
     '$W/m-$mode-hanayo-2.dat' u 1:2 w lp lw 2 pt 11 lc 3 t 'Hanayo W=2', '' u 1:3 w l dt 2 lc 3 notitle" 820 480
    done
    EVIDENCE=$RP_MEASURED
    net=$(awk '/^network/ { n = 1 } n && /bandwidth_Bps/ { b = $3 } n && /latency_s/ { l = $3; exit } END { printf "%.2f GB/s, %.1f us", b / 1e9, l * 1e6 }' "$MEASURED/cluster.cfg" | tr -d ';')
    wk=$MEASURED/weak.csv st=$MEASURED/strong.csv
    {
        echo "## Weak and strong scaling $RP_MEASURED"
        echo
        if [ -n "$MEASURED_WHY" ]; then echo "**Not rerun by this run ($MEASURED_WHY): the tables below are the files an earlier run left in \`measured/\`.**"; echo; fi
        echo "The campaigns \`jobs/campaigns/hanayo-weak-vcluster.cfg\` and \`hanayo-strong-vcluster.cfg\`, submitted with \`wavepipe sweep --submit --max-concurrent 1\` to the project's test cluster brought up with 4 nodes of 8 ranks (\`bench/reproduce/hanayo_measured.sh\`) and harvested with \`wavepipe harvest\`. As in the paper, the GPUs grow by adding data-parallel copies of a pipeline of P = 8 stages (\`run --data-parallel D\`): 8, 16 and 32 emulated GPUs on 1, 2 and 4 nodes run D = 1, 2 and 4 copies, each stage's copies side by side (Megatron-LM's order), so a copy's pipeline crosses the nodes and its gradient sums stay in a node. Compute is emulated from \`$TABLE_NAME\` ($(grep -c "^ \{4\}name = " "$TABLE") layers at 2 TFLOP/s; each pass sleeps its table time), every message and sum is real MPI between the nodes' network namespaces on one 2-core machine, Slurm is real. Each node's link is shaped to 10 Gbit/s, and the whole system runs **dilated 8 times** with messages of **1/16 of the model's bytes** (links at 10 Gbit/s / 128, every reported time divided by 8; the README's section on emulated compute says how), so the 32 ranks' copies and sums leave the host's 2 cores free enough to time them. Weak: 2 sequences a micro-batch, M = 8 a copy (the paper's figure 11 setting); strong: 64 sequences in all, M = 32, 16 and 8 a copy. The host column is the machine's busy share over each point's measured iterations (the rows' \`host_busy\`, /proc/stat; this project holds dilated measurements to under 50 %). The predicted columns are \`wavepipe simulate\` of each point on the links as \`wavepipe calibrate --dilate 8 --scale-bytes 16\` measured them (\`measured/cluster.cfg\`: $net between nodes, undilated)."
        echo
        echo "Weak scaling (\`measured/weak.csv\`, predictions \`measured/weak-network.csv\`):"
        echo
        measured_table weak
        echo
        echo "Strong scaling (\`measured/strong.csv\`, predictions \`measured/strong-network.csv\`):"
        echo
        measured_table strong
        echo
        echo "The two campaigns' 32-GPU points run the same settings (64 sequences, 4 copies, M = 8 micro-batches of 2 each), so their pairs show the spread between runs here: 1F1B $(printf %.3f "$(mcol "$wk" samples_per_s_median 1f1b 1 4)") and $(printf %.3f "$(mcol "$st" samples_per_s_median 1f1b 1 4)"), Chimera-wave $(printf %.3f "$(mcol "$wk" samples_per_s_median hanayo 1 4)") and $(printf %.3f "$(mcol "$st" samples_per_s_median hanayo 1 4)"), Hanayo W = 2 $(printf %.3f "$(mcol "$wk" samples_per_s_median hanayo 2 4)") and $(printf %.3f "$(mcol "$st" samples_per_s_median hanayo 2 4)") samples/s."
        echo
        echo "| quantity | paper | measured here | difference | note |"
        echo "|---|---|---|---|---|"
        # the same points on links 10 times faster: how much of the shortfall is the links'
        awk '/^network/ { n = 1 } n && !d && /bandwidth_Bps/ { sub(/= [0-9.e+]+/, "= " $3 * 10); d = 1 } { print }' \
            "$MEASURED/cluster.cfg" > "$W/cluster-x10.cfg"
        fast() { # fast RANKS D M G: Hanayo W = 2's iteration on the faster links
            sim_must --kind hanayo --waves 2 --ranks "$1" --data-parallel "$2" --micro-batches "$3" --global-batch "$4" \
                --layers "$TABLE" --cluster "$W/cluster-x10.cfg" --ranks-per-node 8 | cut -d' ' -f1
        }
        # the same table without the LM head's compute: how much of Hanayo's gain it takes
        awk '/name = "head"/ { h = 1 } h && /^ *(forward|backward)_s =/ { sub(/= [0-9.e+-]+/, "= 0.0") } /^ *}/ { h = 0 } { print }' \
            "$TABLE" > "$W/no-head.cfg"
        nohead=$(awk -v a="$(sim_must --kind 1f1b --ranks 8 --micro-batches 8 --layers "$W/no-head.cfg" | cut -d' ' -f1)" \
            -v b="$(sim_must --kind hanayo --waves 2 --ranks 8 --micro-batches 8 --layers "$W/no-head.cfg" | cut -d' ' -f1)" \
            'BEGIN { printf "%.3f", a / b }')
        pw10=$(awk -v a="$(fast 8 1 8 16)" -v b="$(fast 32 4 8 64)" 'BEGIN { printf "%.3f", a / b }')
        ps10=$(awk -v a="$(fast 8 1 32 64)" -v b="$(fast 32 4 8 64)" 'BEGIN { printf "%.3f", a / b }')
        pw=$(awk -v a="$(measured_cell weak predicted_network_samples_per_s hanayo 2 4)" -v b="$(measured_cell weak predicted_network_samples_per_s hanayo 2 1)" 'BEGIN { printf "%.3f", a / (4 * b) }')
        ps=$(ratio "$(measured_cell strong predicted_network_samples_per_s hanayo 2 4)" "$(measured_cell strong predicted_network_samples_per_s hanayo 2 1)")
        cmp_row measured "Hanayo W = 2 / Chimera-wave, weak, 32 GPUs" 1.0813 \
            "$(ratio "$(mcol "$wk" samples_per_s_median hanayo 2 4)" "$(mcol "$wk" samples_per_s_median hanayo 1 4)")" 5 \
            "the prediction on these links is $(ratio "$(measured_cell weak predicted_network_samples_per_s hanayo 2 4)" "$(measured_cell weak predicted_network_samples_per_s hanayo 1 4)"): the 64-layer table at 2 TFLOP/s, not the paper's model on A100s"
        cmp_row measured "Hanayo W = 2 / DAPPLE, weak, 32 GPUs" 1.331 \
            "$(ratio "$(mcol "$wk" samples_per_s_median hanayo 2 4)" "$(mcol "$wk" samples_per_s_median 1f1b 1 4)")" 5 \
            "predicted $(ratio "$(measured_cell weak predicted_network_samples_per_s hanayo 2 4)" "$(measured_cell weak predicted_network_samples_per_s 1f1b 1 4)") on these links, $(ratio "$(measured_cell weak predicted_network_samples_per_s hanayo 2 1)" "$(measured_cell weak predicted_network_samples_per_s 1f1b 1 1)") at 8 GPUs: this table's last layer, the LM head, costs $head_blocks blocks, so two waves' 16 chunks are less even than one wave's 8; without the head's compute the simulator gives $nohead at 8 GPUs (messages free)"
        cmp_row measured "Hanayo W = 2 weak-scaling efficiency, 32 GPUs" 0.998 "$(printf %.3f "$(mcol "$wk" weak_efficiency hanayo 2 4)")" 5 \
            "predicted $pw on these links and $pw10 on links 10 times faster: the copies' messages share each node's 10 Gbit/s link (8 ranks a link here; the paper's HDR100 serves 2 GPUs)"
        cmp_row measured "Hanayo W = 2 strong speed-up, 32 GPUs" 3.375 "$(printf %.3f "$(mcol "$st" strong_speedup hanayo 2 4)")" 5 \
            "predicted $ps on these links and $ps10 on links 10 times faster: four copies of M = 8 have a larger bubble than one of M = 32, and their messages share each node's link"
        echo
        echo "![weak scaling measured](measured/weak-scaling.svg) ![strong scaling measured](measured/strong-scaling.svg)"
        echo
    } >> "$W/README.md"
else
    echo "## Weak and strong scaling $RP_MEASURED" >> "$W/README.md"
    echo >> "$W/README.md"
    echo "${MEASURED_WHY:-not run}; no earlier measurement is in \`measured/\`." >> "$W/README.md"
fi
rp_publish "$W/hanayo.csv" hanayo.csv
rp_publish "$W/README.md" README.md
rp_log "wrote $RP_OUT in $(( $(date +%s) - RP_START_S )) s"
