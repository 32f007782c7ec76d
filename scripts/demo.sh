#!/usr/bin/env bash
# The main job (make demo): the demo GPT (jobs/models/gpt-tiny.cfg) trained
# with every schedule on local MPI ranks, no Slurm. Prints one table row per
# schedule (samples/s, measured and simulated bubble ratio, peak activation
# memory, final loss: the same loss on every row, since every schedule
# computes the same gradients), appends the iterations to results/demo.csv
# and writes Hanayo's measured timeline. Usage: demo.sh WAVEPIPE SRCDIR [RANKS]
set -u
wavepipe=$1 srcdir=$2 ranks=${3:-8} mpiexec=${MPIEXEC:-mpiexec}
cfg="$srcdir/jobs/models/gpt-tiny.cfg"
mkdir -p results
rm -f results/demo.csv
cores=$(nproc)
echo "GPT demo model: $(grep -E '^\s*(layers|channels|heads|sequence_length)' "$cfg" | tr -d ' ;' | sed 's/=/ /' | paste -sd, - | sed 's/,/, /g')"
echo "$ranks local MPI ranks on $cores cores$([ "$ranks" -gt "$cores" ] && echo ": ranks outnumber cores, waiting ranks sleep between polls, timings include the sharing")"
printf '%-12s %-10s %10s %10s %10s %12s %10s\n' schedule options samples/s "bubble" "simulated" "act. MiB" "loss"
waves=$(( 16 / (2 * ranks) )); [ "$waves" -lt 1 ] && waves=1
status=0
for spec in "gpipe:" "1f1b:--policy A" "kfkb:--k 2" "interleaved:--chunks 2" "chimera:" "hanayo:--waves $waves" "zb-h1:"; do
    kind=${spec%%:*} opts=${spec#*:}
    extra=()
    [ "$kind" = hanayo ] && extra=(--trace results/demo-hanayo.json --svg results/demo-hanayo.svg)
    # shellcheck disable=SC2086
    line=$("$mpiexec" -n "$ranks" "$wavepipe" run --config "$cfg" --schedule "$kind" $opts --steps 3 \
           --micro-batches "$ranks" --results results/demo.csv "${extra[@]}" 2>&1 | grep '^summary:')
    if [ -z "$line" ]; then
        printf '%-12s %-10s failed\n' "$kind" "$opts"
        status=1
        continue
    fi
    echo "$line" | sed -E 's/.*: ([0-9.]+) samples\/s, bubble ratio measured ([0-9.]+) simulated ([0-9.]+).*memory ([0-9.]+) MiB, loss ([0-9.]+)/\1 \2 \3 \4 \5/' |
        { read -r sps bm bs mib loss; printf '%-12s %-10s %10s %10s %10s %12s %10s\n' "$kind" "${opts:--}" "$sps" "$bm" "$bs" "$mib" "$loss"; }
done
echo "results/demo.csv: one row per iteration; results/demo-hanayo.{json,svg}: Hanayo's measured timeline"
exit $status
