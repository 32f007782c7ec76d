# shellcheck shell=bash
# shellcheck disable=SC2034 # RP_SIMULATED, MPI_LINE, REUSED, LOAD ... are for the scripts that source this
# bench/reproduce/lib.sh -- what every paper's reproduction script shares
# (sourced by bench/reproduce/<paper>.sh; see bench/reproduce/README.md):
# where results go, how a file is published (temporary name, then rename,
# so an interrupted run never leaves half a file where a committed one was),
# the two kinds of evidence and their labels, the provenance block, the
# comparison rows of a README table, and the SVG + PNG plots.
#
# A script calls rp_init PAPER WAVEPIPE SRCDIR [OUTDIR] first; it then has
#   RP_PAPER, RP_WP (the wavepipe binary), RP_SRC, RP_OUT (results/PAPER),
#   RP_WORK (a scratch directory, removed on exit unless RP_KEEP_WORK=1).

RP_SIMULATED="simulated at the paper's scale"
RP_MEASURED="measured on the test cluster"

rp_log() { echo "reproduce[$RP_PAPER]: $*" >&2; }
rp_die() { echo "reproduce[$RP_PAPER]: error: $*" >&2; exit 1; }

rp_init() { # rp_init PAPER WAVEPIPE SRCDIR [OUTDIR]
    RP_PAPER=$1
    RP_WP=$2
    RP_SRC=$(cd "$3" && pwd)
    RP_OUT=${4:-$RP_SRC/results/$1}
    [ -x "$RP_WP" ] || rp_die "no wavepipe binary at $RP_WP (build first: make)"
    mkdir -p "$RP_OUT" || rp_die "cannot create $RP_OUT"
    RP_WORK=$(mktemp -d "${TMPDIR:-/tmp}/wp-reproduce-$1.XXXXXX") || rp_die "no scratch directory"
    if [ "${RP_KEEP_WORK:-0}" = 1 ]; then
        rp_log "scratch kept in $RP_WORK"
    else
        trap 'rm -rf "$RP_WORK"' EXIT
    fi
    RP_START_S=$(date +%s)
}

# rp_init_full PAPER WAVEPIPE SRCDIR: rp_init for a script with full
# lengths on request: FULL from REPRODUCE_FULL (default 0), and with FULL = 1
# the results in results/PAPER/full, so that each target regenerates its own
rp_init_full() {
    FULL=${REPRODUCE_FULL:-0}
    rp_init "$1" "$2" "$3" "$( [ "$FULL" = 1 ] && echo "$(cd "$3" && pwd)/results/$1/full")"
}

# rp_publish TMPFILE NAME: moves a finished file to RP_OUT/NAME in one rename
rp_publish() {
    mkdir -p "$(dirname "$RP_OUT/$2")"
    mv -f "$1" "$RP_OUT/$2.tmp.$$" && mv -f "$RP_OUT/$2.tmp.$$" "$RP_OUT/$2" || rp_die "cannot write $RP_OUT/$2"
}

# rp_write NAME < content: writes RP_OUT/NAME from stdin through a temporary name
rp_write() {
    local tmp="$RP_WORK/write.$$.$RANDOM"
    cat > "$tmp" || rp_die "cannot write $tmp"
    rp_publish "$tmp" "$1"
}

# rp_plot NAME GNUPLOT_BODY [WIDTH HEIGHT]: RP_OUT/NAME.svg and NAME.png from
# the body (everything after `set terminal` and `set output`); fails loudly,
# since a figure a README links to must exist.
rp_plot() {
    local name=$1 body=$2 w=${3:-720} h=${4:-480} ext term tmp
    command -v gnuplot > /dev/null || rp_die "gnuplot is not installed (scripts/install-deps installs gnuplot-nox)"
    for ext in svg png; do
        if [ $ext = svg ]; then term="svg size $w,$h dynamic font 'sans,12'"; else term="pngcairo size $w,$h font 'sans,10'"; fi
        tmp="$RP_WORK/$name.$$.$ext"
        printf 'set terminal %s\nset output "%s"\n%s\n' "$term" "$tmp" "$body" | gnuplot 2> "$RP_WORK/gnuplot.err" \
            || { cat "$RP_WORK/gnuplot.err" >&2; rp_die "gnuplot failed on $name.$ext"; }
        rp_publish "$tmp" "$name.$ext"
    done
}

# rp_diff_pct OURS PAPER: (ours / paper - 1) in percent, one decimal, signed
rp_diff_pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "n/a"; else printf "%+.1f %%", 100 * (a / b - 1) }'; }

# rp_within OURS REF LIMIT_PCT: true when |OURS / REF - 1| <= LIMIT_PCT %
rp_within() { awk -v a="$1" -v b="$2" -v l="$3" 'BEGIN { d = b ? 100 * (a / b - 1) : 0; if (d < 0) d = -d; exit !(d <= l) }'; }

# rp_row WHAT PAPER OURS LIMIT_PCT WHY: one markdown row "| what | paper | ours |
# difference | note |"; the note is WHY when |difference| > LIMIT_PCT, else
# "reproduces". PAPER may be "n/a" (a figure the paper shows only as a plot).
rp_row() {
    local what=$1 paper=$2 ours=$3 limit=$4 why=$5 diff note
    if [ "$paper" = n/a ]; then
        diff="n/a"; note=$why
    else
        diff=$(rp_diff_pct "$ours" "$paper")
        if rp_within "$ours" "$paper" "$limit"; then note="reproduces (within $limit %)"; else note=$why; fi
    fi
    printf '| %s | %s | %s | %s | %s |\n' "$what" "$paper" "$ours" "$diff" "$note"
}

# rp_row_range WHAT LO HI OURS LIMIT_PCT WHY: the same for a paper figure
# given as a range ("10-25 %", "up to 20 %", "under 1 s"): HI "inf" reads
# ">= LO", LO 0 reads "<= HI"; the difference is 0 inside the range, else
# from the nearer bound; the note is WHY when that is beyond LIMIT_PCT.
rp_row_range() {
    local what=$1 lo=$2 hi=$3 ours=$4 limit=$5 why=$6 paper bound diff note
    if [ "$hi" = inf ]; then paper=">= $lo"; elif [ "$lo" = 0 ]; then paper="<= $hi"; else paper="$lo to $hi"; fi
    bound=$(awk -v a="$ours" -v l="$lo" -v h="$hi" 'BEGIN { if (a < l) print l; else if (h != "inf" && a > h) print h; else print "in" }')
    if [ "$bound" = in ]; then
        diff="in range"; note="reproduces (within the paper's range)"
    else
        diff=$(rp_diff_pct "$ours" "$bound")
        if rp_within "$ours" "$bound" "$limit"; then note="reproduces (within $limit % of the range)"; else note=$why; fi
    fi
    printf '| %s | %s | %s | %s | %s |\n' "$what" "$paper" "$ours" "$diff" "$note"
}

# rp_provenance KIND [DETAIL...]: the block every README starts its results
# with: the evidence kind, the command, the commit, the machine and the date
rp_provenance() {
    local kind=$1 commit
    shift
    # dirty: changes outside results/ (a rerun rewrites the committed results itself)
    if commit=$(git -C "$RP_SRC" rev-parse --short HEAD 2> /dev/null); then
        git -C "$RP_SRC" diff --quiet HEAD -- . ':(exclude)results' 2> /dev/null || commit="$commit-dirty"
    else
        commit="not a git checkout"
    fi
    echo "- **Evidence: $kind.**"
    for d in "$@"; do echo "- $d"; done
    echo "- Made by \`make reproduce-$RP_PAPER\` (\`bench/reproduce/$RP_PAPER.sh\`) at commit \`$commit\`,"
    echo "  on $(nproc) cores of $(uname -m) ($(awk -F: '/model name/ { gsub(/^ +/, "", $2); print $2; exit }' /proc/cpuinfo 2> /dev/null || echo unknown cpu)),"
    echo "  $(date -u +%Y-%m-%d), in $(( $(date +%s) - RP_START_S )) s."
}

# rp_adaptive_measure [VAR=VALUE...] -- SCENARIO:RUNS...: bench/adaptive.sh's
# runs of the scenarios on the test cluster (the VARs its settings, e.g.
# ADAPT_PERIOD, ADAPT_MODE) into RP_WORK/measured, or with REPRODUCE_REUSE=DIR
# an earlier run's output (no runs); every scenario must have rows. Sets
# MEAS (the directory), MPI_LINE, REUSED (a sentence for the README) and
# LOAD (the machine's load average, 1/5/15 min, before and after measuring).
rp_adaptive_measure() {
    local settings=() s
    while [ $# -gt 0 ] && [ "$1" != -- ]; do settings+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    MEAS=$RP_WORK/measured
    if [ -n "${REPRODUCE_REUSE:-}" ]; then
        MEAS=$(cd "$REPRODUCE_REUSE" && pwd)
        rp_log "the measured part from $MEAS (REPRODUCE_REUSE: no runs)"
        REUSED="The measurements are reused (REPRODUCE_REUSE) from a run that ended $(date -u -r "$MEAS/adaptive.txt" +%Y-%m-%dT%H:%MZ); the tables and plots were made again from them."
    else
        rp_log "measuring on the virtual cluster (waits for its lock; ${settings[*]})"
        cut -d' ' -f1-3 /proc/loadavg > "$MEAS.load-before"
        env "${settings[@]}" bash "$RP_SRC/bench/adaptive.sh" "$RP_WP" "$RP_SRC" "$MEAS" "$@" >&2 ||
            rp_die "bench/adaptive.sh failed (logs in $MEAS/logs; RP_KEEP_WORK=1 keeps them)"
        cut -d' ' -f1-3 /proc/loadavg > "$MEAS.load-after"
        REUSED="Measured by this run."
    fi
    for s in "$@"; do
        s=${s%%:*}
        if [ ! -s "$MEAS/$s.csv" ] || [ "$(wc -l < "$MEAS/$s.csv")" -le 2 ]; then
            rp_die "no rows measured for $s (see $MEAS/logs)"
        fi
    done
    MPI_LINE=$(sed -n 's/^MPI: //p' "$MEAS/adaptive.txt")
    if [ -f "$MEAS.load-before" ] && [ -f "$MEAS.load-after" ]; then
        LOAD="$(cat "$MEAS.load-before") before, $(cat "$MEAS.load-after") after"
    else
        LOAD="not recorded"
    fi
}
