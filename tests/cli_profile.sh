#!/usr/bin/env bash
# `wavepipe profile`: GPT-2 layers timed with the runtime kernels (table
# shape, parameter bytes as the runtime holds them; no timing assertions:
# CI runs tests side by side on 2 cores), analytic tables against the FLOP count worked by hand,
# profile files converted and read back, and bad input.
. "$(dirname "$0")/lib.sh"
out=$(scratch_dir)
model="$WP_SRCDIR/jobs/models/gpt-tiny.cfg"

# --- measured ----------------------------------------------------------------
"$WAVEPIPE" profile --model "$model" --repeat 3 -o "$out/tiny.cfg" > "$out/tiny.txt" 2>&1
expect_status 0 $? "profile --model measures gpt-tiny"
expect_contains "$out/tiny.txt" "gpt-tiny: 18 layers, profile batch 2" "16 blocks + embedding + head; micro-batch 8/4 = 2"
expect_contains "$out/tiny.txt" "measured with wavepipe's cpu kernels" "the source says how it was made"
expect_contains "$out/tiny.cfg" 'format = "wavepipe-layers";' "table written in wavepipe's format"
block_ms=$(awk '$2 == "block7" { print $3 }' "$out/tiny.txt")
if awk -v t="$block_ms" 'BEGIN { exit !(t > 0) }'; then pass "block forward measured ($block_ms ms)"; else fail "block forward '$block_ms'"; fi
"$WAVEPIPE" profile --convert "$out/tiny.cfg" > "$out/back.txt" 2>&1
expect_status 0 $? "the written table reads back"
expect_contains "$out/back.txt" "gpt-tiny: 18 layers, profile batch 2" "same layers read back"
expect_contains "$out/back.txt" "parameters 3281408 bytes" "4 x 820,352 parameters (V*C + T*C + 16*(12C^2+13C) + 2C)"
expect_contains "$out/back.txt" "optimizer state 6562816 bytes" "AdamW's m and v: twice the parameter bytes"

# several micro-batch sizes: one table each, and the per-sequence summary
"$WAVEPIPE" profile --model "$model" --micro-batch 1,4 --repeat 1 -o "$out/sizes.cfg" > "$out/sizes.txt" 2>&1
expect_status 0 $? "profile --micro-batch 1,4"
expect_contains "$out/sizes.b1.cfg" "profile_batch = 1;" "OUT.b1.cfg for micro-batch 1"
expect_contains "$out/sizes.b4.cfg" "profile_batch = 4;" "OUT.b4.cfg for micro-batch 4"
expect_contains "$out/sizes.b4.cfg" "activation_bytes = 65536.0;" "boundary 4 x 64 x 64 x 4 bytes"
expect_contains "$out/sizes.txt" "per_sequence_ms" "summary of time per sequence"
"$WAVEPIPE" profile --model "$model" --micro-batch 1,0 > /dev/null 2>&1
expect_status 2 $? "micro-batch size 0 refused"

# the embedding holds every row of wpe: max_positions 128 -> (256 + 128) * 64 floats
sed 's/max_positions = 64;/max_positions = 128;/' "$model" > "$out/pos128.cfg"
"$WAVEPIPE" profile --model "$out/pos128.cfg" --repeat 1 > "$out/pos128.txt" 2>&1
expect_status 98304 "$(awk '$2 == "embedding" { print $6 }' "$out/pos128.txt")" "embedding parameter bytes 4*(V+max_positions)*C"

# --- analytic ----------------------------------------------------------------
# block forward FLOPs, b=2 T=64 C=64: 2*2*64*12*64^2 + 4*2*64^2*64 = 14,680,064
"$WAVEPIPE" profile --model "$model" --analytic --flops-per-s 1e9 > "$out/an.txt" 2>&1
expect_status 0 $? "profile --analytic"
expect_contains "$out/an.txt" "14.6801      29.3601" "block: 14.68 ms forward, twice that backward at 1 GFLOP/s"

# modelled for a GPU: 16-bit, the GPU named in the table, every block alike,
# the planner saying so and refusing a cluster of other GPUs
"$WAVEPIPE" profile --model "$model" --analytic --gpu "NVIDIA A100-SXM4-80GB" --attention flash -o "$out/gpu.cfg" \
    > "$out/gpu.txt" 2>&1
expect_status 0 $? "profile --analytic --gpu"
expect_contains "$out/gpu.txt" "per-operation model of the A100-SXM4-80GB" "the source names the modelled GPU"
expect_contains "$out/gpu.txt" "not measured here" "and says the times are modelled"
expect_contains "$out/gpu.cfg" 'gpu = "A100-SXM4-80GB";' "the table records the GPU"
expect_contains "$out/gpu.cfg" 'attention = "flash";' "and the attention kernel"
expect_contains "$out/gpu.cfg" "block_element_bytes = 2.0;" "16-bit activations"
expect_status 1 "$(awk '$2 ~ /^block/ { print $3 }' "$out/gpu.txt" | sort -u | wc -l)" "every block timed alike"
"$WAVEPIPE" plan --layers "$out/gpu.cfg" --cluster "$WP_SRCDIR/topology/a100-nvlink-full-x8.cfg" --global-batch 16 \
    > "$out/gpu-plan.txt" 2>&1
expect_status 0 $? "a modelled table planned on A100s"
expect_contains "$out/gpu-plan.txt" "layer times modelled for the A100-SXM4-80GB" "the plan says its times are modelled"
"$WAVEPIPE" plan --layers "$out/gpu.cfg" --cluster "$WP_SRCDIR/topology/hgx-h100-x8-ib-ndr.cfg" --global-batch 16 \
    > /dev/null 2> "$out/gpu-h100.err"
expect_status 1 $? "a table modelled for A100s refused on H100s"
expect_contains "$out/gpu-h100.err" 'profile --analytic --gpu "NVIDIA H100 80GB HBM3"' "with the command that fits"
sed 's/^gpu = .*/gpu = "B9000";/' "$out/gpu.cfg" > "$out/gpu-bad.cfg"
"$WAVEPIPE" plan --layers "$out/gpu-bad.cfg" --cluster "$WP_SRCDIR/topology/a100-nvlink-full-x8.cfg" \
    --global-batch 16 > /dev/null 2> "$out/gpu-bad.err"
expect_status 1 $? "an unknown GPU in a layer file refused"
expect_contains "$out/gpu-bad.err" "gpu-bad.cfg:$(grep -n '^gpu = ' "$out/gpu-bad.cfg" | cut -d: -f1): no model of the GPU 'B9000'" \
    "the error names file:line"
expect_contains "$out/gpu.cfg" 'precision = "bf16";' "and the precision, bf16 by default on a GPU"

# precisions: fp32 keeps 4-byte elements and runs its matmuls on the FP32
# units (16x slower than bf16's tensor cores on an A100), tf32 on the TF32
# tensor cores; the table says so and keeps it
"$WAVEPIPE" profile --model "$model" --analytic --gpu A100-SXM4-80GB --precision fp32 -o "$out/gpu-fp32.cfg" \
    > "$out/gpu-fp32.txt" 2>&1
expect_status 0 $? "profile --analytic --gpu --precision fp32"
expect_contains "$out/gpu-fp32.cfg" 'precision = "fp32";' "the table records fp32"
expect_contains "$out/gpu-fp32.cfg" "block_element_bytes = 4.0;" "with 4-byte activations"
expect_contains "$out/gpu-fp32.txt" "fp32: 4 bytes/activation, 4 bytes/parameter" "the source says so"
expect_contains "$out/gpu-fp32.txt" "matmuls at 19.5 TFLOP/s peak" "at the A100's FP32 peak"
medium="$WP_SRCDIR/bench/models/adagrouper-gpt-medium.cfg" # C = 1024: products large enough to be compute-bound
"$WAVEPIPE" profile --model "$medium" --analytic --gpu A100-SXM4-80GB > "$out/medium-bf16.txt" 2>&1
"$WAVEPIPE" profile --model "$medium" --analytic --gpu A100-SXM4-80GB --precision fp32 > "$out/medium-fp32.txt" 2>&1
bf16_ms=$(awk '$2 == "block3" { print $3 }' "$out/medium-bf16.txt")
fp32_ms=$(awk '$2 == "block3" { print $3 }' "$out/medium-fp32.txt")
if awk -v a="$fp32_ms" -v b="$bf16_ms" 'BEGIN { exit !(a > 8 * b) }'; then
    pass "a GPT-medium block in fp32 ($fp32_ms ms) takes over 8x its bf16 time ($bf16_ms ms) on an A100"
else fail "GPT-medium block in fp32 '$fp32_ms' ms against bf16 '$bf16_ms' ms"; fi
"$WAVEPIPE" profile --model "$model" --analytic --gpu A100-SXM4-80GB --precision tf32 > "$out/gpu-tf32.txt" 2>&1
expect_contains "$out/gpu-tf32.txt" "matmuls at 156 TFLOP/s peak" "tf32 at the TF32 tensor cores' peak"
"$WAVEPIPE" profile --convert "$out/gpu-fp32.cfg" > "$out/gpu-fp32-back.txt" 2>&1
expect_status 0 $? "an fp32 table reads back"
"$WAVEPIPE" profile --model "$model" --analytic --flops-per-s 1e9 --precision bf16 -o "$out/an-bf16.cfg" > /dev/null 2>&1
expect_status 0 $? "--precision bf16 with --flops-per-s"
expect_contains "$out/an-bf16.cfg" "activation_bytes = 16384.0;" "2-byte boundaries: 2 x 64 x 64 x 2 bytes"
"$WAVEPIPE" profile --model "$model" --analytic --gpu A100-SXM4-80GB --precision fp16 > /dev/null 2> "$out/fp16.err"
expect_status 2 $? "an unknown precision refused"
expect_contains "$out/fp16.err" "expected one of fp32, tf32, bf16" "naming the precisions"
"$WAVEPIPE" profile --convert "$WP_SRCDIR/profiles/dapple-v100/bert-48-pbs-2.txt" --precision bf16 \
    > /dev/null 2> "$out/prec-convert.err"
expect_status 2 $? "--precision with --convert refused"
# measured in bf16: the kernels timed as a bf16 run runs them, 2-byte boundaries
"$WAVEPIPE" profile --model "$model" --repeat 1 --precision bf16 -o "$out/tiny-bf16.cfg" > "$out/tiny-bf16.txt" 2>&1
expect_status 0 $? "profile --model --precision bf16 measures"
expect_contains "$out/tiny-bf16.txt" "measured with wavepipe's cpu kernels in bf16" "the source says bf16"
expect_contains "$out/tiny-bf16.cfg" "activation_bytes = 16384.0;" "2-byte boundaries: 2 x 64 x 64 x 2 bytes"
"$WAVEPIPE" profile --model "$model" --analytic --gpu A100-SXM4-80GB --precision fp32 --attention flash \
    > /dev/null 2> "$out/fp32-flash.err"
expect_status 1 $? "FlashAttention in fp32 refused"
expect_contains "$out/fp32-flash.err" "FlashAttention runs on 16-bit operands" "and why"
"$WAVEPIPE" profile --model "$model" --analytic --gpu V100-SXM2-32GB --attention flash > /dev/null 2> "$out/v100.err"
expect_status 1 $? "flash attention on a V100 refused"
expect_contains "$out/v100.err" "has no FlashAttention kernel" "and why"
"$WAVEPIPE" profile --model "$model" --analytic --gpu B9000 > /dev/null 2> "$out/b9000.err"
expect_status 1 $? "an unknown GPU refused"
expect_contains "$out/b9000.err" "known: V100-SXM2-32GB, A100-SXM4-40GB" "with the GPUs there are"
"$WAVEPIPE" profile --model "$model" --gpu H100-SXM5-80GB > /dev/null 2>&1
expect_status 2 $? "--gpu without --analytic refused"
"$WAVEPIPE" profile --model "$model" --analytic --flops-per-s 1e9 --attention flash > /dev/null 2>&1
expect_status 2 $? "--attention without --gpu refused"
"$WAVEPIPE" profile --model "$model" --analytic --flops-per-s 1e9 --gpu H100-SXM5-80GB > /dev/null 2>&1
expect_status 2 $? "--flops-per-s and --gpu together refused"

# --- converted ---------------------------------------------------------------
cat > "$out/toy-pbs-4.txt" <<'PROFILE'
node1 -- input -- forward_compute_time=0.000, backward_compute_time=0.000, activation_size=100.0, parameter_size=0.000
node2 -- Linear(a) -- forward_compute_time=2.000, backward_compute_time=4.000, activation_size=50.0, parameter_size=400.0
node3 -- Linear(b) -- forward_compute_time=1.000, backward_compute_time=3.000, activation_size=10.0, parameter_size=200.0
	node1 -- node2
	node2 -- node3
PROFILE
"$WAVEPIPE" profile --convert "$out/toy-pbs-4.txt" -o "$out/toy.cfg" > "$out/toy.txt" 2>&1
expect_status 0 $? "profile --convert of a chain"
expect_contains "$out/toy.txt" "toy-pbs-4: 3 layers, profile batch 4" "batch from pbs-4 in the name"
expect_contains "$out/toy.txt" "total: forward 3.0000 ms, backward 7.0000 ms, parameters 600 bytes" "sums kept"
expect_contains "$out/toy.cfg" 'forward_s = 0.002;' "milliseconds stored as seconds"

# node lines out of order (PipeDream's files): auto contracts at cuts instead
printf '%s\n' "$(sed -n 2p "$out/toy-pbs-4.txt")" "$(sed -n 1p "$out/toy-pbs-4.txt")" \
    "$(sed -n 3,5p "$out/toy-pbs-4.txt")" > "$out/shuffled-pbs-4.txt"
"$WAVEPIPE" profile --convert "$out/shuffled-pbs-4.txt" > "$out/shuffled.txt" 2>&1
expect_status 0 $? "profile --convert of lines out of order"
expect_contains "$out/shuffled.txt" "(contracted at cut nodes)" "auto chose cuts"
expect_contains "$out/shuffled.txt" "total: forward 3.0000 ms, backward 7.0000 ms" "same sums"
"$WAVEPIPE" profile --convert "$out/shuffled-pbs-4.txt" --contract lines > /dev/null 2> "$out/shuffled.err"
expect_status 1 $? "--contract lines refuses them"
expect_contains "$out/shuffled.err" "points backwards" "and says why"

# a bad line: file:line, exit 1, the earlier output untouched
cp "$out/toy.cfg" "$out/toy.before"
sed '3s/forward_compute_time=1.000/forward_compute_time=x/' "$out/toy-pbs-4.txt" > "$out/bad.txt"
"$WAVEPIPE" profile --convert "$out/bad.txt" -o "$out/toy.cfg" > /dev/null 2> "$out/bad.err"
expect_status 1 $? "bad profile refused"
expect_contains "$out/bad.err" "bad.txt:3:" "error names file:line"
if cmp -s "$out/toy.cfg" "$out/toy.before"; then pass "existing output kept"; else fail "existing output changed"; fi

# --- usage -------------------------------------------------------------------
"$WAVEPIPE" profile --model "$model" --convert "$out/toy-pbs-4.txt" > /dev/null 2>&1
expect_status 2 $? "--model and --convert together refused"
"$WAVEPIPE" profile --model "$model" --analytic > /dev/null 2>&1
expect_status 2 $? "--analytic without --flops-per-s refused"
"$WAVEPIPE" profile --model "$model" --contract sideways > /dev/null 2>&1
expect_status 2 $? "unknown --contract refused"
"$WAVEPIPE" profile --model "$model" --analytic --flops-per-s 1e9 --repeat 3 > /dev/null 2> "$out/mix.err"
expect_status 2 $? "--repeat with --analytic refused"
expect_contains "$out/mix.err" "--repeat is for measuring" "and says what it is for"
"$WAVEPIPE" profile --model "$model" --batch 4 > /dev/null 2>&1
expect_status 2 $? "--batch without --convert refused"
"$WAVEPIPE" profile --convert "$out/toy-pbs-4.txt" --device cpu > /dev/null 2>&1
expect_status 2 $? "--device with --convert refused"
"$WAVEPIPE" profile --model "$out/missing.cfg" > /dev/null 2> "$out/missing.err"
expect_status 1 $? "missing model file"
expect_contains "$out/missing.err" "missing.cfg" "error names the file"
finish
