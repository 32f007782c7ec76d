#!/usr/bin/env bash
# fidelity_report.sh -- the table and the plot of a fidelity grid, from its
# CSV (bench/fidelity.sh writes one per run; grids run at different times
# are merged by appending their rows): one line per case (predicted,
# measured, error = measured / predicted - 1), mean and max |error| against
# the goal (mean <= 3 %, max <= 8 %), the same without Chimera and for 8
# ranks on 2 nodes without Chimera (the cases the 2-core machine carries),
# the same per link rate, per table and per rank count, and predicted
# against measured with the line y = x (SVG and PNG, when
# gnuplot is installed). Rows of a dilated grid (bench/fidelity.sh's
# columns dilation, byte_scale, host_busy) show them beside the error, and
# the host's busy share closes the table: its mean and most, and the cases
# above the bound (50 %) where the host, not the schedule, may set times.
# Usage: bench/fidelity_report.sh CSV OUTDIR MPI_LINE [NOTE_LINE...]
#   writes OUTDIR/fidelity.txt (also printed) and OUTDIR/fidelity.{svg,png}
set -u
[ $# -ge 3 ] || { echo "usage: $0 CSV OUTDIR MPI_LINE [NOTE_LINE...]" >&2; exit 2; }
csv=$1 out=$2 mpi=$3
shift 3
mkdir -p "$out"
summary() { # summary LABEL AWK_FILTER: mean and max |error| of the rows the filter keeps
    awk -F, -v label="$1" "NR > 1 && ($2)"' { e = $10 < 0 ? -$10 : $10; s += e; n++; if (e > m) { m = e; w = $1 } }
        END { if (n) printf "%s%d cases: mean |error| %.2f %%, max |error| %.2f %% (%s); goal mean <= 3 %%, max <= 8 %%\n",
                            label, n, 100 * s / n, 100 * m, w }' "$csv"
}
{
    echo "Simulator against measurement, compute emulated (each pass sleeps its layer table's time),"
    echo "MPI over the tc-shaped veth links of a virtual Slurm cluster on one 2-core machine ($mpi)."
    for note in "$@"; do echo "$note"; done
    printf '%-42s %12s %12s %8s %5s %5s %6s\n' case predicted_s measured_s error F S host
    awk -F, 'NR > 1 { host = $15 != "" ? sprintf("%5.1f%%", 100 * $15) : "     -"
        printf "%-42s %12.4f %12.4f %+7.1f%% %5s %5s %6s\n", $1, $8, $9, 100 * $10, $13 != "" ? $13 : 1,
               $14 != "" ? $14 : 1, host }' "$csv"
    summary "" 1
    summary "without chimera, " '$6 != "chimera"'
    summary "8 ranks on 2 nodes without chimera, " '$6 != "chimera" && $4 == 8 && $5 == 2'
    # per link rate, table and rank count, in the order the rows name them
    for col in 2 3 4; do
        for v in $(awk -F, -v c=$col 'NR > 1 && !seen[$c]++ { print $c }' "$csv"); do
            case $col in 2) what="at $v" ;; 3) what="$v" ;; 4) what="$v ranks" ;; esac
            summary "$what: " "\$$col == \"$v\""
        done
    done
    awk -F, 'NR > 1 && $15 != "" { n++; s += $15; if ($15 > m) m = $15; if ($15 > 0.5) { over++; list = list " " $1 } }
        END { if (n) printf "host busy over the measured iterations: mean %.1f %%, most %.1f %% of %d cases; %d above 50 %%%s\n",
                            100 * s / n, 100 * m, n, over, over ? ":" list : "" }' "$csv"
} | tee "$out/fidelity.txt"

if command -v gnuplot >/dev/null; then
    for term in "svg size 720,640" "pngcairo size 720,640"; do
        ext=${term%% *}
        [ "$ext" = pngcairo ] && ext=png
        gnuplot <<GNUPLOT 2>/dev/null
set terminal $term
set output "$out/fidelity.$ext"
set datafile separator ","
set title "wavepipe simulate vs measured iteration (emulated compute, virtual cluster)"
set xlabel "predicted iteration (s)"
set ylabel "measured iteration (s)"
set logscale xy
set key top left
set grid
plot "$csv" every ::1 using 8:9 with points pt 7 ps 0.8 title "cases", x with lines lw 1 title "y = x"
GNUPLOT
    done
fi
