#!/usr/bin/env bash
# One training step on one rank, wavepipe against PyTorch on the CPU, same
# GPT-2 size and batch, one thread each, run back to back so that both see
# the same machine (goal: wavepipe faster). Sizes: the demo model, and a
# wider one where the matrix products dominate.
# Usage: bench_vs_pytorch.sh WAVEPIPE SRCDIR [PYTHON]
set -u
wavepipe=$1 srcdir=$2 py=${3:-}
if [ -z "$py" ]; then
    for p in "${TORCH_PYTHON:-}" python3 /usr/bin/python3; do
        [ -n "$p" ] && "$p" -c 'import torch' 2>/dev/null && { py=$p; break; }
    done
fi
[ -n "$py" ] || { echo "no python with torch (install python3-torch)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%-34s %12s %12s %8s\n' "model (L C H T V, batch)" "wavepipe s" "pytorch s" "ratio"
for size in "16 64 4 64 256 8" "4 256 8 128 256 8"; do
    set -- $size
    cat > "$tmp/m.cfg" <<CFG
model = { layers = $1; channels = $2; heads = $3; sequence_length = $4; max_positions = $4; vocabulary = $5; };
train = { global_batch = $6; micro_batches = 1; steps = 10; learning_rate = 0.001; };
CFG
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$wavepipe" run --config "$tmp/m.cfg" --results "$tmp/r.csv" \
        --data "$srcdir/jobs/data/sonnets.txt" > /dev/null
    ours=$(tail -n +4 "$tmp/r.csv" | cut -d, -f14 | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
    rm -f "$tmp/r.csv"
    theirs=$("$py" "$srcdir/bench/pytorch_step.py" "$@" 1 8 | sed -E 's/.*median step ([0-9.]+) s.*/\1/')
    printf '%-34s %12s %12s %8.2f\n' "$* " "$ours" "$theirs" "$(echo "$theirs / $ours" | bc -l)"
done
echo "ratio = PyTorch time / wavepipe time (above 1: wavepipe faster); medians after warm-up, 1 thread each"
