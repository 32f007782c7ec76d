#!/usr/bin/env bash
# Benchmarks of the training runtime (by hand: make bench-runtime), each a
# ratio taken within one run, as the machines are shared:
#  (a) overhead = measured iteration time / simulated time;
#  (b) measured against simulated bubble ratio, for every schedule;
#  (c) what measuring costs (pairing the messages' times and agreeing the
#      sums at each iteration's end, wavepipe run's "measuring:" line): its
#      share of the iteration. Goal: at most 1 %. With BENCH_ADAPT=MODE
#      (k, partition, both) the runs that can tune also do (--adapt MODE
#      --adapt-every 2: a decision every other iteration, ten times the
#      default's rate), and the share is that of measuring and tuning
#      together, the mean over the steps (decisions included); the goal is
#      the same 1 % when nothing changes.
# Two modes:
#  real      the demo GPT computed by the CPU kernels; the simulator replays
#            the run's own measured per-stage F/B/W times (CPU time of each
#            compute) with free communication. With more ranks than cores
#            the measured times include the sharing of the cores, and so do
#            the simulated ones that replay them.
#  emulated  compute emulated from a layer table (wavepipe run --compute
#            emulated: each pass sleeps the table's time, uses no core, as a
#            GPU rank's host waits on its device); the simulator times the
#            schedule with the same table, communication free: the ratio is
#            what the runtime itself (MPI, polling, wake-ups) adds. The table
#            is GPT-2 small's width at 62 blocks (bench/models/
#            gpt2-small-deep.cfg, analytic at 1 TFLOP/s). Goal: at most 1.05
#            on 8 and 16 ranks.
# Usage: bench_runtime.sh WAVEPIPE SRCDIR [RANKS] [STEPS] [real|emulated]
set -u
wavepipe=$1 srcdir=$2 ranks=${3:-8} steps=${4:-6} mode=${5:-real} mpiexec=${MPIEXEC:-mpiexec}
case $mode in
real)
    cfg="$srcdir/jobs/models/gpt-tiny.cfg"
    waves=$(( 16 / (2 * ranks) )); [ "$waves" -lt 1 ] && waves=1
    model=(--config "$cfg")
    echo "wavepipe runtime, demo GPT computed, $ranks ranks on $(nproc) cores, $steps steps (summary of the last):"
    ;;
emulated)
    table=$(mktemp -d)/gpt2-small-deep.cfg
    "$wavepipe" profile --model "$srcdir/bench/models/gpt2-small-deep.cfg" --analytic --flops-per-s 1e12 \
        --micro-batch 2 -o "$table" > /dev/null || exit 1
    waves=1
    model=(--compute emulated --layers "$table")
    echo "wavepipe runtime, compute emulated from $table (GPT-2 small width, 62 blocks, 1 TFLOP/s),"
    echo "$ranks local ranks on $(nproc) cores, $steps steps (median iteration of the steps after the first):"
    ;;
*) echo "usage: $0 WAVEPIPE SRCDIR [RANKS] [STEPS] [real|emulated]" >&2; exit 2 ;;
esac
printf '%-12s %10s %10s %10s %10s %10s %10s\n' schedule "iter s" "sim s" overhead "bubble" "sim bubble" "measure %"
for spec in "gpipe:" "1f1b:" "kfkb:--k 2" "interleaved:--chunks 2" "chimera:" "hanayo:--waves $waves" "zb-h1:" \
    "zb-v:" "dualpipev:"; do
    kind=${spec%%:*} opts=${spec#*:}
    M=$ranks batch=()
    if [ "$kind" = dualpipev ]; then
        M=$((2 * ranks)) # DualPipeV needs M >= 2P
        [ "$mode" = real ] && [ "$M" -gt 8 ] && batch=(--global-batch "$M") # gpt-tiny's batch is 8
    fi
    adapt=""
    case "${BENCH_ADAPT:-}" in
    k | both) case $kind in 1f1b | kfkb) adapt="--adapt $BENCH_ADAPT --adapt-every 2" ;; esac ;;
    partition) case $kind in gpipe | 1f1b | kfkb | zb-h1) adapt="--adapt partition --adapt-every 2" ;; esac ;;
    esac
    # shellcheck disable=SC2086
    out=$("$mpiexec" -n "$ranks" "$wavepipe" run "${model[@]}" --schedule "$kind" $opts $adapt --steps "$steps" \
           --micro-batches "$M" "${batch[@]}" 2>&1)
    share=$(echo "$out" | sed -n 's/^measuring: .*(median, \([0-9.]*\) %.*/\1/p')
    [ -n "$adapt" ] && share=$(echo "$out" | sed -n 's/^measuring and tuning: .* mean [0-9.]* ms, \([0-9.]*\) %.*/\1/p')
    echo "$out" | grep '^summary:' |
        sed -E 's/.*bubble ratio measured ([0-9.]+) simulated ([0-9.]+), iteration measured ([0-9.]+) s simulated ([0-9.]+) s \(overhead ([0-9.]+)[^)]*\).*/\3 \4 \5 \1 \2/' |
        { read -r it sim ov bm bs; printf '%-12s %10s %10s %10s %10s %10s %10s\n' "$kind" "$it" "$sim" "$ov" "$bm" "$bs" "${share:-?}"; }
done
