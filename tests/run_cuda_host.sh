#!/usr/bin/env bash
# wavepipe's CUDA path end to end without a GPU: tests/wavepipe_cuda_host is
# wavepipe built with its CUDA kernels on the host emulation and NCCL over
# MPI (tests/cuda_host); it trains a small GPT-2 on one rank with --device
# cuda in fp32, tf32 and bf16, each against the CPU build's run of the same
# model and precision: losses within the kernels' tolerance. Then pipelines
# on 2 and 4 ranks (NCCL's point-to-point messages and sums over MPI) in
# fp32 and bf16 against the CPU build's same run: the losses equal within
# the same tolerance. (These found the kernels' synchronize waiting for the
# whole device, NCCL's pending receives included: two ranks deadlocked in
# their first iteration, as they would on GPUs.)
. "$(dirname "$0")/lib.sh"
out=$(scratch_dir)
host="${WP_BUILDDIR:-$(cd "$(dirname "$0")/.." && pwd)}/tests/wavepipe_cuda_host"
if [ ! -x "$host" ]; then
    echo "1..0 # SKIP $host not built (make check builds it)"
    exit 77
fi
cat > "$out/small.cfg" << 'EOF'
model = { layers = 4; channels = 32; heads = 4; sequence_length = 16; max_positions = 16; vocabulary = 256; };
train = { global_batch = 4; micro_batches = 2; steps = 3; seed = 1337L; learning_rate = 0.001; beta1 = 0.9;
          beta2 = 0.95; eps = 1e-8; weight_decay = 0.0; };
EOF
# fp32 and tf32: a few float roundings apart per kernel (tests/test_kernels_cuda.c's
# RTOL 1e-5 on the emulation) over 3 steps; bf16: a bfloat16 rounding that one
# side makes and the other does not moves an activation 2^-8, a loss ~1e-3
tolerance() { case $1 in bf16) echo 5e-3 ;; *) echo 1e-4 ;; esac; }
for p in fp32 tf32 bf16; do
    args=(run --config "$out/small.cfg" --data "$WP_SRCDIR/jobs/data/sonnets.txt" --schedule 1f1b --precision "$p")
    timeout 600 "$MPIEXEC" -n 1 "$WAVEPIPE" "${args[@]}" > "$out/cpu-$p.log" 2>&1
    expect_status 0 $? "$p: the CPU build trains the small model"
    timeout 600 "$MPIEXEC" -n 1 "$host" "${args[@]}" --device cuda > "$out/cuda-$p.log" 2>&1
    expect_status 0 $? "$p: the CUDA kernels on the host emulation train it"
    tol=$(tolerance "$p")
    worst=$(paste <(grep '^step' "$out/cpu-$p.log" | awk '{print $4}') <(grep '^step' "$out/cuda-$p.log" | awk '{print $4}') |
            awk '{ d = $1 - $2; if (d < 0) d = -d; if (d / $1 > m) m = d / $1; n++ } END { printf "%.3g %d", m, n }')
    if [ "${worst#* }" = 3 ] && awk -v w="${worst% *}" -v t="$tol" 'BEGIN { exit !(w <= t) }'; then
        pass "$p: 3 losses of the CUDA path within $tol of the CPU's (largest relative difference ${worst% *})"
    else
        fail "$p: CUDA path's losses against the CPU's: largest relative difference ${worst% *} over ${worst#* } steps (tolerance $tol)"
        tail -n 3 "$out/cuda-$p.log" | sed 's/^/    | /'
    fi
    expect_contains "$out/cuda-$p.log" "compute=real in $p" "$p: the summary names it"
done

# the largest relative difference of two runs' step losses, and their count
compare_losses() {
    paste <(grep '^step' "$1" | awk '{print $4}') <(grep '^step' "$2" | awk '{print $4}') |
        awk '{ d = $1 - $2; if (d < 0) d = -d; if (d / $1 > m) m = d / $1; n++ } END { printf "%.3g %d", m, n }'
}
for shape in "2 1f1b" "2 zb-v" "4 1f1b"; do
    n=${shape%% *} kind=${shape#* }
    for p in fp32 bf16; do
        args=(run --config "$out/small.cfg" --data "$WP_SRCDIR/jobs/data/sonnets.txt" --schedule "$kind" --precision "$p")
        name="$kind-$n-$p"
        timeout 600 "$MPIEXEC" -n "$n" "$WAVEPIPE" "${args[@]}" > "$out/cpu-$name.log" 2>&1
        rc_cpu=$?
        WP_CUDA_HOST_STALL_S=60 timeout 600 "$MPIEXEC" -n "$n" "$host" "${args[@]}" --device cuda \
            > "$out/cuda-$name.log" 2>&1
        rc_cuda=$?
        tol=$(tolerance "$p")
        worst=$(compare_losses "$out/cpu-$name.log" "$out/cuda-$name.log")
        if [ "$rc_cpu" = 0 ] && [ "$rc_cuda" = 0 ] && [ "${worst#* }" = 3 ] &&
           awk -v w="${worst% *}" -v t="$tol" 'BEGIN { exit !(w <= t) }'; then
            pass "$kind on $n ranks in $p over NCCL: 3 losses within $tol of the CPU build's (largest ${worst% *})"
        else
            fail "$kind on $n ranks in $p over NCCL: exit $rc_cuda (CPU $rc_cpu), largest difference ${worst% *} over ${worst#* } steps"
            tail -n 3 "$out/cuda-$name.log" | sed 's/^/    | /'
        fi
    done
done
finish
