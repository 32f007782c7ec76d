#!/usr/bin/env bash
# Benchmarks of the training runtime (by hand: make bench-runtime), each a
# ratio taken within one run, as the machines are shared:
#  (a) overhead = measured iteration time / simulated time, the simulator
#      replaying the run's own measured per-stage F/B/W times with free
#      communication (goal: at most 1.10 on 8 ranks);
#  (c) measured against simulated bubble ratio for every schedule.
# With more ranks than cores the measured per-action times include the
# sharing of the cores, and so do the simulated ones that replay them.
# Usage: bench_runtime.sh WAVEPIPE SRCDIR [RANKS] [STEPS]
set -u
wavepipe=$1 srcdir=$2 ranks=${3:-8} steps=${4:-6} mpiexec=${MPIEXEC:-mpiexec}
cfg="$srcdir/jobs/models/gpt-tiny.cfg"
waves=$(( 16 / (2 * ranks) )); [ "$waves" -lt 1 ] && waves=1
echo "wavepipe runtime, demo GPT, $ranks ranks on $(nproc) cores, $steps steps (summary of the last):"
printf '%-12s %10s %10s %10s %10s %10s\n' schedule "iter s" "sim s" overhead "bubble" "sim bubble"
for spec in "gpipe:" "1f1b:" "kfkb:--k 2" "interleaved:--chunks 2" "chimera:" "hanayo:--waves $waves" "zb-h1:"; do
    kind=${spec%%:*} opts=${spec#*:}
    # shellcheck disable=SC2086
    line=$("$mpiexec" -n "$ranks" "$wavepipe" run --config "$cfg" --schedule "$kind" $opts --steps "$steps" \
           --micro-batches "$ranks" 2>&1 | grep '^summary:')
    echo "$line" | sed -E 's/.*bubble ratio measured ([0-9.]+) simulated ([0-9.]+), iteration measured ([0-9.]+) s simulated ([0-9.]+) s \(overhead ([0-9.]+)[^)]*\).*/\3 \4 \5 \1 \2/' |
        { read -r it sim ov bm bs; printf '%-12s %10s %10s %10s %10s %10s\n' "$kind" "$it" "$sim" "$ov" "$bm" "$bs"; }
done
