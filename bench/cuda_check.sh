#!/usr/bin/env bash
# The CUDA build on a machine with a GPU: every CUDA kernel against the CPU's
# (tests/test_kernels_cuda) and 20 training steps of the demo model on the
# CPU and with --device cuda, their losses side by side with the largest
# relative difference. Usage: bench/cuda_check.sh BUILDDIR SRCDIR
# (BUILDDIR holds src/wavepipe and tests/test_kernels_cuda of a CUDA build).
set -u
build=${1:?BUILDDIR}
src=${2:?SRCDIR}
out=$(mktemp -d)
"$build/tests/test_kernels_cuda" > "$out/kernels.tap" 2>&1
echo "kernels: $(grep -c '^ok' "$out/kernels.tap") ok, $(grep -c '^not ok' "$out/kernels.tap") not ok ($(head -1 "$out/kernels.tap"))"
grep -A3 '^not ok' "$out/kernels.tap"
run=("$build/src/wavepipe" run --config "$src/jobs/models/gpt-tiny.cfg" --data "$src/jobs/data/sonnets.txt"
     --steps 20 --micro-batches 4 --global-batch 8)
"${run[@]}" > "$out/cpu.log" 2>&1 || { echo "the CPU run failed"; tail -3 "$out/cpu.log"; exit 1; }
"${run[@]}" --device cuda > "$out/cuda.log" 2>&1 || { echo "the CUDA run failed"; tail -3 "$out/cuda.log"; exit 1; }
paste <(grep '^step' "$out/cpu.log" | awk '{print $4}' | tr -d ,) <(grep '^step' "$out/cuda.log" | awk '{print $4}' | tr -d ,) |
    awk '{ d = $1 - $2; if (d < 0) d = -d; r = d / $1; if (r > m) m = r; print "step " NR - 1 ": cpu " $1 " cuda " $2 }
         END { printf "largest relative difference of the losses: %.2g\n", m }'
grep -h '^summary' "$out/cpu.log" "$out/cuda.log" | sed 's/, bubble ratio.*iteration measured/: iteration/; s/ simulated.*//'
rm -rf "$out"
