#!/usr/bin/env bash
# `wavepipe plan`: the CSV's exact header and rows, a readable summary on the
# DGX-2 and HGX H100 descriptions, the hybrid search (tensor groups, their
# plan file keys and devices, recomputation), the plan file read back by
# `wavepipe run --plan` on local ranks (losses equal to the same run given
# by hand; those plans keep groups of one GPU, --tensor 1x1, which the
# runtime executes today), and bad input with one clear error each.
. "$(dirname "$0")/lib.sh"
out=$(scratch_dir)
P="$WP_SRCDIR/profiles/dapple-v100"
T="$WP_SRCDIR/topology"
model="$WP_SRCDIR/jobs/models/gpt-tiny.cfg"

# --- CSV ----------------------------------------------------------------------
"$WAVEPIPE" plan --layers "$P/bert-48-pbs-2.txt" --global-batch 64 --cluster "$T/dapple-config-a.cfg" \
    --format csv > "$out/bert.csv" 2>&1
expect_status 0 $? "plan BERT-48 on DAPPLE's config A as CSV"
expect_status "stage,first_layer,last_layer,replicas,devices,predicted_iter_s" "$(head -1 "$out/bert.csv")" \
    "CSV header exactly as documented"
expect_status 3 "$(wc -l < "$out/bert.csv")" "two stages (8:8, table V), one row each"
expect_status "0:0 0:1 0:2 0:3 0:4 0:5 0:6 0:7" "$(awk -F, 'NR == 2 { print $5 }' "$out/bert.csv")" \
    "stage 0 on the eight GPUs of node 0, as node:gpu"
expect_status 52 "$(awk -F, 'NR == 3 { print $3 }' "$out/bert.csv")" "the last stage ends at layer 52 (53 layers, 0-based)"
expect_status "$(awk -F, 'NR == 2 { print $3 + 1 }' "$out/bert.csv")" "$(awk -F, 'NR == 3 { print $2 }' "$out/bert.csv")" \
    "stage 1 starts where stage 0 ends"

# --- summaries on the shipped descriptions of real machines -------------------
"$WAVEPIPE" profile --model "$model" --analytic --flops-per-s 2e10 -o "$out/tiny.layers.cfg" > /dev/null 2>&1
expect_status 0 $? "analytic layer table of gpt-tiny"
for cluster in dgx2-x4-ib-edr hgx-h100-x8-ib-ndr; do
    "$WAVEPIPE" plan --layers "$P/xlnet-36-pbs-1.txt" --global-batch 128 --cluster "$T/$cluster.cfg" \
        --compare > "$out/$cluster.txt" 2>&1
    expect_status 0 $? "plan XLNet-36 on $cluster"
    expect_contains "$out/$cluster.txt" "plan for xlnet-36-pbs-1 (43 layers, profile batch 1) on" "$cluster: what was planned"
    expect_contains "$out/$cluster.txt" "stage  layers" "$cluster: the stage table"
    expect_contains "$out/$cluster.txt" "kFkB candidates" "$cluster: Ada-Grouper's candidates"
    expect_contains "$out/$cluster.txt" "data parallel" "$cluster: compared with data parallelism"
done

# GPU memory from the recorded topology (RSMIVRAMSize of an MI250X node), no --memory needed
"$WAVEPIPE" topo --xml "$WP_SRCDIR/tests/topology/mpibind-eas-tioga.xml" --out "$out/tioga.cfg" > /dev/null 2>&1
expect_contains "$out/tioga.cfg" "memory_bytes = 68702699520.0;" "each GPU's memory recorded (64 GiB per MI250X GCD)"
"$WAVEPIPE" plan --layers "$P/bert-48-pbs-2.txt" --global-batch 64 --cluster "$out/tioga.cfg" > "$out/tioga.txt" 2>&1
expect_status 0 $? "plan on a node whose GPU model name gives no memory size"
expect_contains "$out/tioga.txt" "8 AMD INSTINCT MI200 (MCM) OAM LC MBA HPE C2, 63.98 GiB each" "the memory came from the topology"

# the DP's budget: on 4 x 16 GPUs it narrows, then gives way to uniform plans, and says so
"$WAVEPIPE" plan --layers "$out/tiny.layers.cfg" --global-batch 64 --cluster "$T/dgx2-x4-ib-edr.cfg" --tensor 1x1 \
    > "$out/narrow.txt" 2>&1
expect_status 0 $? "gpt-tiny on 64 DGX-2 GPUs"
expect_contains "$out/narrow.txt" "with stages of a divisor of a node's GPUs or whole nodes" "the DP narrowed is said"
"$WAVEPIPE" plan --layers "$out/tiny.layers.cfg" --global-batch 64 --cluster "$T/dgx2-x4-ib-edr.cfg" --tensor 1x1 \
    --format csv > "$out/narrow.csv" 2>&1
if awk -F, 'NR > 1 && !($4 == 1 || $4 == 2 || $4 == 4 || $4 == 8 || $4 % 16 == 0) { bad = 1 } END { exit bad }' \
    "$out/narrow.csv"; then pass "every stage a divisor of 16 GPUs or whole nodes"
else fail "a stage outside the narrowed sizes"; sed 's/^/    | /' "$out/narrow.csv"; fi
"$WAVEPIPE" plan --layers "$P/bert-48-pbs-2.txt" --global-batch 64 --cluster "$T/dgx2-x4-ib-edr.cfg" \
    > "$out/uniform.txt" 2>&1
expect_status 0 $? "BERT-48 on 64 DGX-2 GPUs"
expect_contains "$out/uniform.txt" "search: uniform plans only (the DP's state space is too large here)" \
    "uniform plans only is said"

# --- the hybrid search ---------------------------------------------------------
# 6 MB per GPU: no plan of single-GPU replicas fits without recomputation;
# the search finds one with tensor groups, in Megatron-LM's terms
"$WAVEPIPE" plan --layers "$out/tiny.layers.cfg" --global-batch 8 --cluster "$T/dgx2-x4-ib-edr.cfg" --devices 4 \
    --memory 6MB --tensor 1x1 --recompute never > "$out/tp-none.txt" 2>&1
expect_status 1 $? "gpt-tiny in 6 MB per GPU: no plan of single GPUs without recomputation"
"$WAVEPIPE" plan --layers "$out/tiny.layers.cfg" --global-batch 8 --cluster "$T/dgx2-x4-ib-edr.cfg" --devices 4 \
    --memory 6MB --out "$out/tp.plan.cfg" > "$out/tp.txt" 2>&1
expect_status 0 $? "the hybrid search plans it"
expect_contains "$out/tp.txt" "Megatron-LM's terms: TP " "the degrees of parallelism in Megatron-LM's terms"
expect_contains "$out/tp.txt" "TFLOP/s per GPU of model FLOPs" "and TFLOP/s per GPU"
p1=$(sed -n 's/^tensor = \[ *\([0-9]*\), *\([0-9]*\) *\];/\1/p' "$out/tp.plan.cfg")
p2=$(sed -n 's/^tensor = \[ *\([0-9]*\), *\([0-9]*\) *\];/\2/p' "$out/tp.plan.cfg")
if [ -n "$p1" ] && [ $((p1 * p2)) -gt 1 ]; then pass "a tensor group of $p1 x $p2 GPUs in the plan file"
else fail "no tensor group in the plan file: tensor [$p1, $p2]"; fi
expect_contains "$out/tp.txt" "Megatron-LM's terms: TP $((p1 * p2)) (tensor group $p1 x $p2" "the summary says the same group"
for key in pipeline_stages data_parallel recompute; do
    expect_contains "$out/tp.plan.cfg" "$key = " "the plan file records $key"
done
devs=$(sed -n '0,/^ *devices = "\(.*\)";/s//\1/p' "$out/tp.plan.cfg" | wc -w)
reps=$(sed -n '0,/^ *replicas = \([0-9]*\);/s//\1/p' "$out/tp.plan.cfg")
expect_status $((reps * p1 * p2)) "$devs" "stage 0 lists replicas x $((p1 * p2)) GPUs"
# a group shape given
"$WAVEPIPE" plan --layers "$out/tiny.layers.cfg" --global-batch 8 --cluster "$T/dgx2-x4-ib-edr.cfg" --devices 4 \
    --tensor 2x2 --format csv > "$out/tp22.csv" 2>&1
expect_status 0 $? "--tensor 2x2"
expect_status "0:0 0:1 0:2 0:3" "$(awk -F, 'NR == 2 { print $5 }' "$out/tp22.csv")" \
    "one group of 2 x 2 consecutive GPUs runs the one replica"
"$WAVEPIPE" plan --layers "$out/tiny.layers.cfg" --global-batch 8 --cluster "$T/dgx2-x4-ib-edr.cfg" --devices 4 \
    --tensor 3x1 > "$out/tp31.txt" 2>&1
expect_status 1 $? "--tensor 3x1 on 4 GPUs is refused"
expect_contains "$out/tp31.txt" "does not divide a node's GPUs" "and says why"
"$WAVEPIPE" plan --layers "$P/bert-48-pbs-2.txt" --global-batch 64 --cluster "$T/dapple-config-a.cfg" \
    --tensor 2x1 > "$out/tp-profile.txt" 2>&1
expect_status 1 $? "--tensor 2x1 for a profile is refused"
expect_contains "$out/tp-profile.txt" "marks no layer as a transformer block" "and says why"
"$WAVEPIPE" plan --layers "$out/tiny.layers.cfg" --global-batch 8 --cluster "$T/dgx2-x4-ib-edr.cfg" --tensor 2 \
    > "$out/tp-bad.txt" 2>&1
expect_status 2 $? "--tensor 2 is a usage error"
# recomputation: forced on every stage, and marked in the plan file
"$WAVEPIPE" plan --layers "$out/tiny.layers.cfg" --global-batch 8 --cluster "$T/dgx2-x4-ib-edr.cfg" --devices 4 \
    --tensor 1x1 --recompute always --out "$out/rc.plan.cfg" > "$out/rc.txt" 2>&1
expect_status 0 $? "--recompute always"
stages=$(sed -n 's/^pipeline_stages = \([0-9]*\);/\1/p' "$out/rc.plan.cfg")
expect_status "$stages" "$(grep -c '^ *recompute = true;' "$out/rc.plan.cfg" | awk '{ print $1 - 1 }')" \
    "every stage marked recompute = true (and the plan's own key)"
expect_contains "$out/rc.txt" "activation recomputation on $stages of $stages stage" "the summary says so"

# interleaving (--chunks): 12 MB per GPU holds Megatron's deeper warm-up
"$WAVEPIPE" plan --layers "$out/tiny.layers.cfg" --global-batch 8 --cluster "$T/dgx2-x4-ib-edr.cfg" --devices 4 \
    --memory 12MB --tensor 1x1 --recompute never --chunks 4 --out "$out/il.plan.cfg" > "$out/il.txt" 2>&1
expect_status 0 $? "--chunks 4"
expect_contains "$out/il.txt" "interleaved chunks)" "the summary says the plan is interleaved"
expect_contains "$out/il.plan.cfg" 'kind = "interleaved";' "and so does the plan file's schedule"
# ... and run --plan runs it as the interleaved schedule, with the losses of the run given by hand
timeout 120 "$MPIEXEC" -n 4 "$WAVEPIPE" run --config "$model" --plan "$out/il.plan.cfg" --steps 2 > "$out/run-il.txt" 2>&1
expect_status 0 $? "run --plan trains the interleaved plan on 4 local ranks"
expect_contains "$out/run-il.txt" "summary: schedule interleaved, ranks 4, stages 16" "as Megatron-LM's interleaved schedule"
blocks=$(sed -n 's/.*blocks per stage \([0-9,]*\),.*/\1/p' "$out/run-il.txt")
nmicro=$(sed -n 's/^micro_batches = \([0-9]*\);/\1/p' "$out/il.plan.cfg" | head -1)
timeout 120 "$MPIEXEC" -n 4 "$WAVEPIPE" run --config "$model" --schedule interleaved --chunks 4 --partition "$blocks" \
    --micro-batches "$nmicro" --steps 2 > "$out/run-il-hand.txt" 2>&1
loss_plan=$(sed -n 's/^step 1: loss \([0-9.]*\).*/\1/p' "$out/run-il.txt")
loss_hand=$(sed -n 's/^step 1: loss \([0-9.]*\).*/\1/p' "$out/run-il-hand.txt")
if [ -n "$loss_plan" ] && [ "$loss_plan" = "$loss_hand" ]; then pass "interleaved: same loss as given by hand ($loss_plan)"
else fail "interleaved losses differ: plan '$loss_plan', by hand '$loss_hand'"; fi
"$WAVEPIPE" plan --layers "$out/tiny.layers.cfg" --global-batch 8 --cluster "$T/dgx2-x4-ib-edr.cfg" --chunks 0 \
    > "$out/il-bad.txt" 2>&1
expect_status 2 $? "--chunks 0 is a usage error"

# --- run --plan on local ranks ------------------------------------------------
"$WAVEPIPE" plan --layers "$out/tiny.layers.cfg" --global-batch 8 --cluster "$T/dgx2-x4-ib-edr.cfg" --devices 4 \
    --memory 10MB --tensor 1x1 --recompute never --out "$out/tiny.plan.cfg" > "$out/tiny.plan.txt" 2>&1
expect_status 0 $? "plan gpt-tiny on 4 single GPUs of a DGX-2 with 10 MB each (forces a pipeline)"
expect_contains "$out/tiny.plan.cfg" 'format = "wavepipe-plan";' "plan file written"
partition=$(sed -n 's/.*blocks per stage \([0-9,]*\),.*/\1/p' "$out/tiny.plan.txt")
timeout 120 "$MPIEXEC" -n 4 "$WAVEPIPE" run --config "$model" --plan "$out/tiny.plan.cfg" --steps 2 \
    > "$out/run-plan.txt" 2>&1
expect_status 0 $? "run --plan trains on 4 local ranks"
expect_contains "$out/run-plan.txt" "plan $out/tiny.plan.cfg: straight, 4 stages" "run says which plan it runs"
blocks=$(sed -n 's/.*blocks per stage \([0-9,]*\),.*/\1/p' "$out/run-plan.txt")
nmicro=$(sed -n 's/^micro_batches = \([0-9]*\);/\1/p' "$out/tiny.plan.cfg")
timeout 120 "$MPIEXEC" -n 4 "$WAVEPIPE" run --config "$model" --schedule 1f1b --partition "$blocks" \
    --micro-batches "$nmicro" --steps 2 > "$out/run-hand.txt" 2>&1
expect_status 0 $? "the same run given by hand (--partition $blocks)"
loss_plan=$(sed -n 's/^step 1: loss \([0-9.]*\).*/\1/p' "$out/run-plan.txt")
loss_hand=$(sed -n 's/^step 1: loss \([0-9.]*\).*/\1/p' "$out/run-hand.txt")
if [ -n "$loss_plan" ] && [ "$loss_plan" = "$loss_hand" ]; then pass "same loss either way ($loss_plan)"
else fail "losses differ: plan '$loss_plan', by hand '$loss_hand'"; fi
# with 17 MB each the plan replicates its stages (2:2, DAPPLE's split and concat between them)
"$WAVEPIPE" plan --layers "$out/tiny.layers.cfg" --global-batch 8 --cluster "$T/dgx2-x4-ib-edr.cfg" --devices 4 \
    --memory 17MB --tensor 1x1 --recompute never --out "$out/tiny22.plan.cfg" > "$out/tiny22.plan.txt" 2>&1
expect_contains "$out/tiny22.plan.txt" "plan 2:2: 2 stages on 4 GPUs" "17 MB per GPU: two stages of two replicas"
timeout 120 "$MPIEXEC" -n 4 "$WAVEPIPE" run --config "$model" --plan "$out/tiny22.plan.cfg" --steps 2 \
    > "$out/run22-plan.txt" 2>&1
expect_status 0 $? "run --plan with replicated stages"
blocks=$(sed -n 's/.*blocks per stage \([0-9,]*\),.*/\1/p' "$out/run22-plan.txt")
nmicro=$(sed -n 's/^micro_batches = \([0-9]*\);/\1/p' "$out/tiny22.plan.cfg")
timeout 120 "$MPIEXEC" -n 4 "$WAVEPIPE" run --config "$model" --schedule 1f1b --partition "$blocks" --replicas 2,2 \
    --micro-batches "$nmicro" --steps 2 > "$out/run22-hand.txt" 2>&1
loss_plan=$(sed -n 's/^step 1: loss \([0-9.]*\).*/\1/p' "$out/run22-plan.txt")
loss_hand=$(sed -n 's/^step 1: loss \([0-9.]*\).*/\1/p' "$out/run22-hand.txt")
if [ -n "$loss_plan" ] && [ "$loss_plan" = "$loss_hand" ]; then pass "2:2: same loss as --partition $blocks --replicas 2,2 ($loss_plan)"
else fail "2:2 losses differ: plan '$loss_plan', by hand '$loss_hand'"; fi

timeout 60 "$MPIEXEC" -n 2 "$WAVEPIPE" run --config "$model" --plan "$out/tiny.plan.cfg" --steps 1 > "$out/wrong-n.txt" 2>&1
expect_status 1 $? "run --plan with fewer ranks than devices fails"
expect_contains "$out/wrong-n.txt" "launch 4 ranks (mpiexec -n 4), not 2" "and says how many to launch"
sed 's/layers = 16;/layers = 8;/' "$model" > "$out/tiny8.cfg"
timeout 60 "$MPIEXEC" -n 4 "$WAVEPIPE" run --config "$out/tiny8.cfg" --plan "$out/tiny.plan.cfg" --steps 1 > "$out/wrong-model.txt" 2>&1
expect_status 1 $? "a plan for another model is refused"
expect_contains "$out/wrong-model.txt" "a table of 18 layers" "and the error says which table the plan is for"
timeout 60 "$MPIEXEC" -n 4 "$WAVEPIPE" run --config "$model" --plan "$out/tiny.plan.cfg" --schedule gpipe > "$out/both.txt" 2>&1
expect_status 2 $? "--plan with --schedule is a usage error"

# SBP meshes for the replicated stage's MLP matmuls, recorded in the plan file and read back by run
"$WAVEPIPE" plan --layers "$out/tiny.layers.cfg" --global-batch 8 --cluster "$T/dgx2-x4-ib-edr.cfg" --devices 4 \
    --tensor 1x1 --model "$model" --out "$out/tiny.dp.cfg" > "$out/tiny.dp.txt" 2>&1
expect_status 0 $? "plan gpt-tiny on 4 GPUs with --model (data parallel: one stage on 4)"
expect_contains "$out/tiny.dp.txt" "stage 0 on 4 GPUs: fc mesh" "the stage's SBP mesh is shown"
expect_status 32 "$(grep -c 'mesh = ' "$out/tiny.dp.cfg")" "one mesh per MLP matmul of the 16 blocks in the plan file"
timeout 120 "$MPIEXEC" -n 4 "$WAVEPIPE" run --config "$model" --plan "$out/tiny.dp.cfg" --steps 1 > "$out/run-dp.txt" 2>&1
expect_status 0 $? "run --plan reads a plan file with SBP groups"
"$WAVEPIPE" plan --layers "$out/tiny.layers.cfg" --global-batch 8 --cluster "$T/dgx2-x4-ib-edr.cfg" --devices 4 \
    --tensor 1x1 --model "$out/tiny8.cfg" > "$out/tiny.wrongmodel.txt" 2>&1
expect_status 1 $? "--model with another block count is refused"
expect_contains "$out/tiny.wrongmodel.txt" "has 8 blocks (a table of 10 layers)" "and the error says why"

# a damaged plan file: one error with file:line
sed 's/^\( *devices = "0:0\)[^"]*";/\1 zz";/' "$out/tiny22.plan.cfg" > "$out/bad.plan.cfg"
timeout 60 "$MPIEXEC" -n 4 "$WAVEPIPE" run --config "$model" --plan "$out/bad.plan.cfg" --steps 1 > "$out/badplan.txt" 2>&1
expect_status 1 $? "a plan file with a bad device list is refused"
expect_contains "$out/badplan.txt" "bad.plan.cfg:" "with file:line"
expect_contains "$out/badplan.txt" "expected node:gpu pairs" "and what a device list looks like"

# one table per micro-batch size: one plan each, the fastest kept
"$WAVEPIPE" profile --model "$model" --analytic --flops-per-s 2e10 --micro-batch 1,4 -o "$out/tt.cfg" > /dev/null 2>&1
"$WAVEPIPE" plan --layers "$out/tt.b1.cfg" --layers "$out/tt.b4.cfg" --global-batch 8 --cluster "$T/dgx2-x4-ib-edr.cfg" \
    --devices 4 --memory 10MB > "$out/tables.txt" 2>&1
expect_status 0 $? "plan from tables at micro-batch 1 and 4"
expect_contains "$out/tables.txt" "one plan per layer table (micro-batch size), the fastest kept:" "one plan per table"
expect_status 1 "$(grep -c '<- chosen' "$out/tables.txt")" "one of them chosen"
"$WAVEPIPE" profile --model "$out/tiny8.cfg" --analytic --flops-per-s 2e10 -o "$out/t8.cfg" > /dev/null 2>&1
"$WAVEPIPE" plan --layers "$out/tt.b1.cfg" --layers "$out/t8.cfg" --global-batch 8 --cluster "$T/dgx2-x4-ib-edr.cfg" \
    --devices 4 > "$out/mixed.txt" 2>&1
expect_status 1 $? "tables of two models are refused"
expect_contains "$out/mixed.txt" "has 10 layers but" "and the error says which differ"

# --- --place: one of DAPPLE's placement policies only (IV-B) -----------------
"$WAVEPIPE" plan --layers "$P/amoeba-36-pbs-1.txt" --global-batch 128 --cluster "$T/dapple-config-a.cfg" \
    --uneven-slices --place scatter > "$out/scatter.txt" 2>&1
expect_status 0 $? "AmoebaNet-36 on config A placed scatter first only"
expect_status 0 "$(awk '/^stage  layers/ { t = 1; next } t && NF == 0 { t = 0 } t && !/ (scatter|rest) /' \
    "$out/scatter.txt" | wc -l)" "every stage but the last (the rest) placed scatter first"
expect_contains "$out/scatter.txt" "scatter " "and the table says so"
"$WAVEPIPE" plan --layers "$P/amoeba-36-pbs-1.txt" --global-batch 128 --cluster "$T/dapple-config-a.cfg" \
    --place nowhere > "$out/place.txt" 2>&1
expect_status 2 $? "--place nowhere refused"
expect_contains "$out/place.txt" "expected all, fresh, append or scatter" "and says what would do"

# --- bad input ----------------------------------------------------------------
"$WAVEPIPE" plan --layers "$P/amoeba-36-pbs-1.txt" --global-batch 128 --cluster "$T/dapple-config-b.cfg" \
    --memory 512MB > "$out/small.txt" 2>&1
expect_status 1 $? "AmoebaNet-36 in 512 MB per GPU: no plan"
expect_contains "$out/small.txt" "so it needs at least" "the error says how many devices would do"
"$WAVEPIPE" plan --layers "$P/bert-48-pbs-2.txt" --global-batch 64 --cluster "$T/dapple-config-b.cfg" \
    --memory 700MB > "$out/tight.txt" 2>&1
expect_status 1 $? "BERT-48 in 700 MB per GPU on 16 GPUs: no plan"
expect_contains "$out/tight.txt" "the least any plan needs is" "the error says the memory that would do"
"$WAVEPIPE" plan --layers "$P/bert-48-pbs-2.txt" --global-batch 64 --cluster "$T/dgx2-x4-ib-edr.cfg" --devices 20 \
    > "$out/devices.txt" 2>&1
expect_status 1 $? "--devices 20 on 16-GPU nodes refused"
expect_contains "$out/devices.txt" "whole nodes (a multiple of 16)" "and says what would do"
printf 'node1 -- a -- forward_compute_time=1, backward_compute_time=x, activation_size=1, parameter_size=1\n' > "$out/bad.txt"
"$WAVEPIPE" plan --layers "$out/bad.txt" --global-batch 8 --cluster "$T/dapple-config-a.cfg" > "$out/bad.out" 2>&1
expect_status 1 $? "a malformed layer table is refused"
expect_contains "$out/bad.out" "bad.txt:1:" "with file:line"
"$WAVEPIPE" plan --layers "$P/bert-48-pbs-2.txt" --global-batch 64 > "$out/nocluster.txt" 2>&1
expect_status 2 $? "--cluster is required"
"$WAVEPIPE" plan --layers "$P/bert-48-pbs-2.txt" --profile-batch 4 --global-batch 64 \
    --cluster "$T/dapple-config-a.cfg" > "$out/pbs.txt" 2>&1
expect_status 1 $? "--profile-batch that contradicts the file name is refused"
expect_contains "$out/pbs.txt" "the table is for micro-batch 2, not --profile-batch 4" "and says why"
# --- --compare-dir: every compared plan as a file that run --plan reads, and their times ---
"$WAVEPIPE" plan --layers "$P/bert-48-pbs-2.txt" --global-batch 64 --cluster "$T/dapple-config-a.cfg" \
    --compare-dir "$out/compared" > "$out/cmpdir.txt" 2>&1
expect_status 0 $? "--compare-dir writes the compared plans"
expect_contains "$out/cmpdir.txt" "wrote the compared plans and $out/compared/compared.csv" "and says where"
head -n 1 "$out/compared/compared.csv" | grep -qx 'plan,file,shape,latency_s,simulated_s,fits'
expect_status 0 $? "compared.csv has its header"
for name in chosen data-parallel stages-2 stages-4 stages-8 straight; do
    if grep -q "^$name,$out/compared/$name.cfg," "$out/compared/compared.csv" &&
        grep -q 'format = "wavepipe-plan"' "$out/compared/$name.cfg"; then
        pass "$name: a row and a plan file"
    else
        fail "$name: a row and a plan file"
    fi
done
# the rows carry the very times --compare prints
dp_printed=$(awk '$1 == "data" && $2 == "parallel" { print $(NF - 1) }' "$out/cmpdir.txt")
dp_row=$(awk -F, '$1 == "data-parallel" { printf "%.4f", $5 }' "$out/compared/compared.csv")
expect_status 0 "$([ -n "$dp_row" ] && [ "$dp_printed" = "$dp_row" ]; echo $?)" \
    "data parallelism's simulated time: printed $dp_printed, row $dp_row"
"$WAVEPIPE" plan --layers "$P/bert-48-pbs-2.txt" --global-batch 64 --cluster "$T/dapple-config-a.cfg" \
    --compare-dir "$out/compared" --format csv > "$out/cmpcsv.txt" 2>&1
expect_status 2 $? "--compare-dir with --format csv is refused"
expect_contains "$out/cmpcsv.txt" "leave out --format csv" "and says why"
# tight memory: a table whose times make the DP keep, per state, ways that do not fit 6 MB; its second pass
# keeps the ways of least memory and finds the 4-stage pipeline that recomputes (5.5 MiB per GPU)
"$WAVEPIPE" plan --layers "$WP_SRCDIR/tests/config/gpt-tiny-layers-tight.cfg" --global-batch 8 \
    --cluster "$T/dgx2-x4-ib-edr.cfg" --devices 4 --memory 6MB --tensor 1x1 --recompute always > "$out/tight.txt" 2>&1
expect_status 0 $? "6 MB per GPU: a plan that fits is found"
expect_contains "$out/tight.txt" "plan straight: 4 stages on 4 GPUs" "the 4-stage pipeline"
# a cluster of several nodes without a network: the error names the file (issue 29)
"$WAVEPIPE" topo --xml "$WP_FIXTURES/hwloc-nvidiaDGX2.xml:2" --quiet --out "$out/nonet.cfg" > /dev/null 2>&1
"$WAVEPIPE" plan --layers "$WP_SRCDIR/jobs/tables/mixed-16.cfg" --global-batch 16 --cluster "$out/nonet.cfg" > "$out/nonet.txt" 2>&1
expect_status 1 $? "a cluster without a network between its nodes cannot be planned on"
expect_contains "$out/nonet.txt" "$out/nonet.cfg: the cluster 'hwloc-nvidiaDGX2' has no network model between its 2 nodes" \
    "the error names the cluster file, not only the cluster"
# interleaved plans at micro-batch 1 (issue 30): the kFkB candidates skip
# micro-batch counts Megatron's order cannot run instead of ending the plan
printf 'model = { layers = 96; channels = 12288; heads = 96; sequence_length = 2048; max_positions = 2048; vocabulary = 51200; };\ntrain = { global_batch = 64; micro_batches = 64; steps = 1; };\n' > "$out/t175.model.cfg"
"$WAVEPIPE" profile --model "$out/t175.model.cfg" --analytic --flops-per-s 1.65e14 --micro-batch 1 -o "$out/T175.cfg" > /dev/null 2>&1
"$WAVEPIPE" plan --layers "$out/T175.cfg" --global-batch 64 --devices 64 --tensor 8x1 --recompute never --chunks 3 \
    --memory 1000GiB --cluster "$T/dgx-a100-x384-ib-hdr.cfg" > "$out/t175.txt" 2>&1
expect_status 0 $? "an interleaved search over a 175B table at micro-batch 1 plans"
if grep -q "interleaved needs" "$out/t175.txt"; then fail "no generator error about interleaved micro-batches"; else pass "no generator error about interleaved micro-batches"; fi
finish
