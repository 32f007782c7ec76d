#!/usr/bin/env bash
# Training steps on one rank, wavepipe against a current PyTorch from PyPI on the
# CPU, made comparable: the same model, initial weights (wavepipe's, saved with
# `run --steps 0 --save` and loaded by bench/pytorch_step.py), batch, tokens
# (wavepipe's data rule over the same corpus), AdamW settings and steps;
# denormals flushed on both sides (wavepipe's runtime sets FTZ/DAZ, PyTorch
# set_flush_denormal); at one thread and at all the cores. Per size and thread
# count the two sides run in turn, BENCH_REPEATS times; each run trains
# BENCH_STEPS steps; step 0 is warm-up, the medians are over the other steps
# of all repeats; the losses of every step must agree (LOSS_TOL, relative).
# The PyTorch side lives in a virtual environment made on the first run
# (bench/torch_venv.sh: TORCH_VENV, default ~/.cache/wavepipe/torch-venv,
# `pip install torch` from PyPI, about 5.4 GiB, minutes; bench/README.md).
# Usage: bench_vs_pytorch.sh WAVEPIPE SRCDIR
# Environment: TORCH_VENV, TORCH_SPEC (pip requirement, default torch),
# BENCH_SIZES (names below, default all), BENCH_THREADS (default "1 NPROC"),
# BENCH_REPEATS (default 1), BENCH_STEPS (default 5), LOSS_TOL (default 1e-4),
# BENCH_PROFILE (sizes whose one-thread runs also print where the time goes:
# wavepipe's `run --kernel-times`, torch.profiler on one more step; default
# gpt2-small-T256). The header names the CBLAS wavepipe loaded and
# OMP_WAIT_POLICY, which both sides' libgomp read.
set -u
[ $# -eq 2 ] || { echo "usage: bench_vs_pytorch.sh WAVEPIPE SRCDIR" >&2; exit 2; }
wavepipe=$1 srcdir=$2
data=$srcdir/jobs/data/sonnets.txt
steps=${BENCH_STEPS:-5} repeats=${BENCH_REPEATS:-1} tol=${LOSS_TOL:-1e-4}
threads=${BENCH_THREADS:-"1 $(nproc)"}
[ -x "$wavepipe" ] || { echo "bench_vs_pytorch: no executable $wavepipe" >&2; exit 2; }
[ "$steps" -ge 2 ] 2> /dev/null || { echo "bench_vs_pytorch: BENCH_STEPS must be at least 2" >&2; exit 2; }

# name layers channels heads T max_positions vocabulary batch
all_sizes="demo 16 64 4 64 64 256 8
gpt2-small-T256 12 768 12 256 1024 50257 4
gpt2-small-T1024 12 768 12 1024 1024 50257 1
gpt24x1024-T256 24 1024 16 256 1024 50257 1"

# The virtual environment, made once (bench/torch_venv.sh).
# shellcheck source=bench/torch_venv.sh
. "$(dirname "$0")/torch_venv.sh"
torch_venv_ready bench_vs_pytorch || exit 1

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)] }'; }

echo "# CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores;" \
    "SIMD: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(sse4_2|avx|avx2|fma|avx512[a-z]*)$' | tr '\n' ' ')"
echo "# wavepipe: $("$wavepipe" --version 2>&1 | head -n 1); its CBLAS: $("$wavepipe" --version 2>&1 | sed -n 's/^  CBLAS loaded: //p')"
echo "# OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-unset}, on both sides"
echo "# pytorch: $("$py" -c 'import torch; print(torch.__version__, "CPU capability", torch.backends.cpu.get_cpu_capability())')"
echo "# $steps steps a run (step 0 warm-up), $repeats run(s) a side in turn; wall seconds a step, medians; denormals flushed on both sides"
printf '%-18s %-26s %3s %10s %10s %6s %9s %9s %6s %9s\n' size "L C H T V, batch" thr "wavepipe s" "pytorch s" ratio \
    "wp cpu s" "pt cpu s" ratio "loss diff"
status=0
while read -r name L C H T P V B; do
    case " ${BENCH_SIZES:-$name} " in *" $name "*) ;; *) continue ;; esac
    cat > "$tmp/m.cfg" << CFG
model = { layers = $L; channels = $C; heads = $H; sequence_length = $T; max_positions = $P; vocabulary = $V; };
train = { global_batch = $B; micro_batches = 1; steps = $steps; seed = 1337L; learning_rate = 0.001;
          beta1 = 0.9; beta2 = 0.95; eps = 1e-8; weight_decay = 0.0; };
CFG
    rm -rf "$tmp/ck"
    if ! OMP_NUM_THREADS=1 "$wavepipe" run --config "$tmp/m.cfg" --data "$data" --steps 0 --save "$tmp/ck" \
            > "$tmp/save.log" 2>&1; then
        echo "bench_vs_pytorch: $name: saving the initial weights fails" >&2; cat "$tmp/save.log" >&2; exit 1
    fi
    for th in $threads; do
        : > "$tmp/wp.t"; : > "$tmp/pt.t"; : > "$tmp/wp.c"; : > "$tmp/pt.c"; worst=0
        for r in $(seq "$repeats"); do
            rm -f "$tmp/r.csv"
            profile=""
            case " ${BENCH_PROFILE-gpt2-small-T256} " in *" $name "*) [ "$th" = 1 ] && [ "$r" = 1 ] && profile=1 ;; esac
            if ! OMP_NUM_THREADS=$th "$wavepipe" run --config "$tmp/m.cfg" --data "$data" --results "$tmp/r.csv" \
                    --kernel-times "$tmp/kt.csv" > "$tmp/wp.log" 2>&1; then
                echo "bench_vs_pytorch: $name: wavepipe run fails" >&2; cat "$tmp/wp.log" >&2; exit 1
            fi
            if ! OMP_NUM_THREADS=$th "$py" "$srcdir/bench/pytorch_step.py" "$tmp/ck" --data "$data" --batch "$B" \
                    --seq "$T" --steps "$steps" --threads "$th" ${profile:+--profile} > "$tmp/pt.log" 2>&1; then
                echo "bench_vs_pytorch: $name: pytorch_step.py fails" >&2; cat "$tmp/pt.log" >&2; exit 1
            fi
            grep -q "check: flushed everywhere" "$tmp/pt.log" || { head -n 1 "$tmp/pt.log"; status=1; }
            if [ -n "$profile" ]; then
                cp "$tmp/kt.csv" "$tmp/kt.profile"
                { echo "## $name, 1 thread: wavepipe's kernels, per step after the first (run --kernel-times)"
                  tail -n +2 "$tmp/kt.profile" | sort -t, -k5,5 -g -r | awk -F, '{ r[NR] = $0; t += $5 } END {
                      for (i = 1; i <= NR; i++) { split(r[i], f, ",")
                          printf "   %-26s %7.0f calls %9.3f s wall %9.3f s cpu %5.1f %%\n", f[2], f[3], f[4], f[5], 100 * f[5] / t }
                      printf "   %-26s %7s       %9s        %9.3f s cpu\n", "all kernels", "", "", t }'
                  echo "## $name, 1 thread: PyTorch's ops on one more step (torch.profiler)"
                  sed -n '/^profiled step/,$p' "$tmp/pt.log" | sed 's/^/   /'
                } > "$tmp/profile.$name"
            fi
            # columns 13, 14, 19: iteration, iter_time_s, loss
            awk -F, 'NR > 1 { print $13, $14, $19 }' "$tmp/r.csv" > "$tmp/wp.rows"
            awk '$1 == "step" { print $2, $6, $4 }' "$tmp/pt.log" > "$tmp/pt.rows"
            awk '$1 > 0 { print $2 }' "$tmp/wp.rows" >> "$tmp/wp.t"
            awk '$1 > 0 { print $2 }' "$tmp/pt.rows" >> "$tmp/pt.t"
            # CPU seconds a step: wavepipe's kernels (--kernel-times, the steps after the first), PyTorch's process
            awk -F, 'NR > 1 { c += $5 } END { print c }' "$tmp/kt.csv" >> "$tmp/wp.c"
            awk '$1 == "step" && $2 > 0 { print $8 }' "$tmp/pt.log" >> "$tmp/pt.c"
            worst=$(awk -v w="$worst" -v n="$steps" 'NR == FNR { ours[$1] = $3; next }
                ($1 in ours) { d = ours[$1] - $3; d = d < 0 ? -d : d; d /= ($3 < 0 ? -$3 : $3); if (d > w) w = d; k++ }
                END { print (k == n && w != "missing") ? w : "missing" }' "$tmp/wp.rows" "$tmp/pt.rows")
        done
        ours=$(median < "$tmp/wp.t") theirs=$(median < "$tmp/pt.t")
        ours_cpu=$(median < "$tmp/wp.c") theirs_cpu=$(median < "$tmp/pt.c")
        verdict=$(awk -v w="$worst" -v t="$tol" 'BEGIN { print (w != "missing" && w + 0 <= t + 0) ? "" : " LOSSES DIFFER" }')
        [ -z "$verdict" ] || status=1
        printf '%-18s %-26s %3s %10.3f %10.3f %6.2f %9.3f %9.3f %6.2f %9.1e%s\n' "$name" "$L $C $H $T $V, $B" "$th" \
            "$ours" "$theirs" "$(echo "$theirs / $ours" | bc -l)" "$ours_cpu" "$theirs_cpu" \
            "$(echo "$theirs_cpu / $ours_cpu" | bc -l)" "$worst" "$verdict"
    done
done <<< "$all_sizes"
for f in "$tmp"/profile.*; do [ -e "$f" ] && cat "$f"; done
echo "ratio = PyTorch time / wavepipe time (above 1: wavepipe faster); cpu s: CPU seconds a step, all threads (wavepipe: its kernels' sum, --kernel-times; PyTorch: the process's); loss diff: largest relative difference of a step's loss (tolerance $tol)"
exit $status
