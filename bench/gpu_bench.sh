#!/usr/bin/env bash
# GPT-2 small (12 x 768, 12 heads, T = 1024, vocabulary 50,257) trained on one
# GPU: wavepipe's CUDA build in fp32, tf32 and bf16 beside PyTorch 2.x from
# PyPI on the same GPU, model shape, batch and tokens (the shipped corpus under
# wavepipe's batch rule), eager and torch.compile: tokens/s, model FLOP
# utilisation and peak memory; then the CUDA kernels against the CPU's in fp32,
# bf16 and tf32 (tests/test_kernels_cuda) and a few training steps of the demo
# model on both (bench/cuda_check.sh's comparison) in bf16.
#
# MFU: FLOPs per token 6 N + 12 L C T (the model's matrix products forward and
# backward, attention's scores and values included: PaLM's appendix B, nanoGPT's
# estimate_mfu), N the parameters with the tied embedding counted once, over the
# GPU's dense bf16 tensor-core peak (src/plan/gpu_model.c's spec sheet figure;
# llm.c reports its MFU the same way), whatever the precision run.
# Peak memory: wavepipe's, the most nvidia-smi saw in use on the GPU while it
# ran (polled every 0.1 s, the CUDA context included); PyTorch's,
# torch.cuda.max_memory_allocated (its tensors, without the context).
#
# Usage: bench/gpu_bench.sh BUILDDIR SRCDIR   (BUILDDIR: a CUDA build, configure
# --with-cuda). Takes about 5 minutes on an H100/H200-class GPU.
# Environment: GPU_BENCH_STEPS (steps per run, default 20; the first
# GPU_BENCH_WARMUP, default 3, not timed), GPU_BENCH_BATCH (sequences per step,
# default 8), GPU_BENCH_PRECISIONS (default "fp32 tf32 bf16"), GPU_BENCH_TORCH
# (0: no PyTorch), TORCH_VENV and TORCH_SPEC (bench/torch_venv.sh),
# GPU_BENCH_DRY=1: no GPU needed, every part of the script run end to end on
# a 2-block model: wavepipe's CUDA path on the host emulation
# (BUILDDIR/tests/wavepipe_cuda_host, made by make check), PyTorch on the CPU;
# its figures say nothing of a GPU.
set -u
[ $# -eq 2 ] || { echo "usage: gpu_bench.sh BUILDDIR SRCDIR" >&2; exit 2; }
build=$1 src=$2
dry=${GPU_BENCH_DRY:-0}
wavepipe=$build/src/wavepipe
[ "$dry" = 1 ] && wavepipe=$build/tests/wavepipe_cuda_host
[ -x "$wavepipe" ] || { echo "gpu_bench: no executable $wavepipe (make builds src/wavepipe, make check tests/wavepipe_cuda_host)" >&2; exit 2; }
steps=${GPU_BENCH_STEPS:-20} warmup=${GPU_BENCH_WARMUP:-3} batch=${GPU_BENCH_BATCH:-8}
precisions=${GPU_BENCH_PRECISIONS:-fp32 tf32 bf16}
case "$steps$warmup$batch" in *[!0-9]*) echo "gpu_bench: GPU_BENCH_STEPS, _WARMUP and _BATCH are whole numbers" >&2; exit 2 ;; esac
[ "$steps" -gt "$warmup" ] || { echo "gpu_bench: GPU_BENCH_STEPS must exceed GPU_BENCH_WARMUP" >&2; exit 2; }
data=$src/jobs/data/sonnets.txt
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# the model: GPT-2 small, or a 2-block one for the dry run
L=12 C=768 H=12 T=1024 V=50257 device=cuda torch_device=cuda
if [ "$dry" = 1 ]; then
    L=2 C=32 H=4 T=16 V=256 batch=2 torch_device=cpu steps=$((warmup + 2))
fi
cat > "$out/model.cfg" << EOF
model = { layers = $L; channels = $C; heads = $H; sequence_length = $T; max_positions = $T; vocabulary = $V; };
train = { global_batch = $batch; micro_batches = 1; steps = $steps; seed = 1337L; learning_rate = 0.0003;
          beta1 = 0.9; beta2 = 0.95; eps = 1e-8; weight_decay = 0.0; };
EOF
params=$((V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C))
flops_per_token=$((6 * params + 12 * L * C * T))

if [ "$dry" = 1 ]; then
    gpu="none (GPU_BENCH_DRY: the CUDA kernels on the host emulation, PyTorch on the CPU)"
    peak_tflops=1
else
    command -v nvidia-smi > /dev/null || { echo "gpu_bench: no nvidia-smi: no GPU here (GPU_BENCH_DRY=1 runs without)" >&2; exit 1; }
    gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 | head -n 1)
    peak_tflops=$("$wavepipe" profile --model "$out/model.cfg" --analytic --gpu "$gpu" --precision bf16 2>/dev/null |
                  sed -n 's/.*matmuls at \([0-9.]*\) TFLOP\/s peak.*/\1/p' | head -n 1)
    [ -n "$peak_tflops" ] || { echo "gpu_bench: wavepipe has no model of the GPU '$gpu' (src/plan/gpu_model.c)" >&2; exit 1; }
fi
echo "# gpu_bench: $gpu; GPT-2 L=$L C=$C H=$H T=$T V=$V, $params parameters, batch $batch x $T tokens a step,"
echo "# $steps steps per run (first $warmup not timed); MFU against $peak_tflops TFLOP/s dense bf16; $(date -u +%FT%TZ)"

# mem_poll PIDFILE OUTFILE: the most GPU memory in use (MiB) while the process runs
mem_poll() {
    local most=0 used
    while kill -0 "$(cat "$1")" 2> /dev/null; do
        used=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 2> /dev/null | head -n 1)
        [ -n "$used" ] && [ "$used" -gt "$most" ] && most=$used
        sleep 0.1
    done
    echo "$most" > "$2"
}

rows=()
row() { rows+=("$(printf '| %-24s | %10s | %6s | %10s | %s |' "$@")"); }
mfu() { awk -v t="$1" -v f="$flops_per_token" -v p="$peak_tflops" 'BEGIN { printf "%.1f %%", 100 * t * f / (p * 1e12) }'; }

# --- wavepipe ---------------------------------------------------------------------------
for p in $precisions; do
    ("$wavepipe" run --config "$out/model.cfg" --data "$data" --device "$device" --precision "$p" \
        --results "$out/wp-$p.csv" > "$out/wp-$p.log" 2>&1 & echo $! > "$out/pid"; wait $!; echo $? > "$out/rc") &
    runner=$!
    sleep 0.2
    if [ "$dry" = 1 ]; then echo 0 > "$out/mem"; else mem_poll "$out/pid" "$out/mem"; fi
    wait "$runner"
    if [ "$(cat "$out/rc")" != 0 ]; then
        row "wavepipe $p" failed - - "$(tail -n 1 "$out/wp-$p.log")"
        continue
    fi
    tps=$(awk -F, -v w="$warmup" 'NR > 1 && $13 >= w { print $16 }' "$out/wp-$p.csv" | sort -g |
          awk '{ a[NR] = $1 } END { print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }')
    loss=$(awk -F, 'END { print $19 }' "$out/wp-$p.csv")
    row "wavepipe $p" "$tps" "$(mfu "$tps")" "$(cat "$out/mem") MiB" "loss after $steps steps $loss"
done

# --- PyTorch ----------------------------------------------------------------------------
if [ "${GPU_BENCH_TORCH:-1}" != 0 ]; then
    # shellcheck source=bench/torch_venv.sh
    . "$(dirname "$0")/torch_venv.sh"
    if torch_venv_ready gpu_bench; then
        for mode in eager compile; do
            for p in $precisions; do
                line=$("$py" "$src/bench/gpu_bench_torch.py" --data "$data" --layers "$L" --channels "$C" --heads "$H" \
                       --seq "$T" --vocab "$V" --batch "$batch" --steps "$steps" --warmup "$warmup" --precision "$p" \
                       --mode "$mode" --device "$torch_device" 2>&1 | grep '^torch ' | tail -n 1)
                if [ -z "$line" ] || [ "${line#*failed}" != "$line" ]; then
                    row "PyTorch $mode $p" failed - - "${line:-no output}"
                    continue
                fi
                tps=$(echo "$line" | awk '{ for (i = 1; i < NF; i++) if ($i == "tokens_per_s") print $(i + 1) }')
                mib=$(echo "$line" | awk '{ for (i = 1; i < NF; i++) if ($i == "peak_bytes") printf "%.0f", $(i + 1) / 1048576 }')
                ver=$(echo "$line" | awk '{ print $NF }')
                row "PyTorch $ver $mode $p" "$tps" "$(mfu "$tps")" "$mib MiB" "$(echo "$line" | sed 's/.*loss_last \([^ ]*\).*/loss after '"$steps"' steps \1/')"
            done
        done
    else
        row "PyTorch" failed - - "no torch (bench/torch_venv.sh)"
    fi
fi

echo
echo "| run                      |   tokens/s |    MFU |   peak mem | note |"
echo "|--------------------------|-----------:|-------:|-----------:|------|"
printf '%s\n' "${rows[@]}"

# --- correctness on the device: item 2's checks -----------------------------------------
echo
if [ "$dry" = 1 ]; then
    tap=$build/tests/test_kernels_cuda_host
    echo "# the CUDA kernels against the CPU's on the host emulation (no GPU): $tap"
else
    tap=$build/tests/test_kernels_cuda
    echo "# the CUDA kernels against the CPU's on the GPU: $tap"
fi
if [ -x "$tap" ]; then
    "$tap" > "$out/kernels.tap" 2>&1
    echo "kernels: $(grep -c '^ok' "$out/kernels.tap") ok, $(grep -c '^not ok' "$out/kernels.tap") not ok"
    grep '^# every kernel in' "$out/kernels.tap"
    grep -A3 '^not ok' "$out/kernels.tap" | head -n 20
else
    echo "kernels: $tap not built (make check builds it)"
fi
if [ "$dry" != 1 ]; then
    demo=("$wavepipe" run --config "$src/jobs/models/gpt-tiny.cfg" --data "$data" --steps 20 --precision bf16)
    "${demo[@]}" > "$out/cpu-bf16.log" 2>&1 && "${demo[@]}" --device cuda > "$out/cuda-bf16.log" 2>&1 &&
        paste <(grep '^step' "$out/cpu-bf16.log" | awk '{print $4}') <(grep '^step' "$out/cuda-bf16.log" | awk '{print $4}') |
        awk '{ d = $1 - $2; if (d < 0) d = -d; if (d / $1 > m) m = d / $1 }
             END { printf "the demo model in bf16, 20 steps on the CPU and the GPU: largest relative loss difference %.2g\n", m }' ||
        echo "the demo model's bf16 runs failed: $(tail -n 1 "$out/cpu-bf16.log" "$out/cuda-bf16.log" | tr '\n' ' ')"
fi
