# vcluster_jobs.sh -- sourced by the benchmarks that measure on the virtual
# Slurm cluster (bench/fidelity.sh, bench/plan_ranking.sh): bring it up with
# MPI over its links, shape them, run bounded sbatch jobs, calibrate the
# network. The caller sources it, calls vcj_args "$0" "$@" and defines
# log MESSAGE and die MESSAGE.

# vcj_args "$0" "$@": the caller's WAVEPIPE SRCDIR OUTDIR as absolute paths in
# WAVEPIPE, SRCDIR and OUT (OUTDIR made), VC the cluster script; a usage line
# and exit 2 when they are not three
vcj_args() {
    local self=$1
    shift
    if [ $# -ne 3 ]; then
        echo "usage: $self WAVEPIPE SRCDIR OUTDIR" >&2
        exit 2
    fi
    WAVEPIPE=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
    SRCDIR=$(cd "$2" && pwd)
    mkdir -p "$3"
    OUT=$(cd "$3" && pwd)
    VC=$SRCDIR/tests/cluster/vcluster.sh
}

# vcj_campaign_string CAMPAIGN KEY: the value of the top-level string
# setting `KEY = "...";` of a campaign file (empty when it has none)
vcj_campaign_string() {
    sed -n 's/^'"$2"' = "\(.*\)";$/\1/p' "$1"
}

# vcj_up CLDIR NODES CPUS_PER_NODE: waits for the machine's cluster lock
# (one virtual cluster a machine, its names are fixed), brings NODES nodes
# up on MPICH 5 and tears them down when the caller exits; sets MPI_LINE
# to the MPI library the nodes load.
vcj_up() {
    local reason
    if ! reason=$(bash "$VC" can-run 2>&1); then die "the virtual cluster cannot run here: $reason"; fi
    VCJ_DIR=$1
    VCJ_NODES=$2
    mkdir -p /run/lock
    exec 9> /run/lock/wavepipe-vcluster.lock
    flock 9
    trap 'bash "$VC" down "$VCJ_DIR" >/dev/null 2>&1' EXIT
    trap 'exit 1' INT TERM HUP
    VCLUSTER_MPI=mpich5 VCLUSTER_CPUS=$3 VCLUSTER_KEEP="$OUT:$(dirname "$WAVEPIPE"):$SRCDIR" \
        bash "$VC" up "$VCJ_DIR" "$VCJ_NODES" || die "the cluster did not come up"
    # shellcheck disable=SC1091
    . "$VCJ_DIR/env"
    MPI_LINE=$(srun -N 1 -n 1 --mpi=pmi2 "$WAVEPIPE" --version 2>&1 | grep 'MPI loaded' | sed 's/^ *MPI loaded: *//')
    MPI_LINE="$MPI_LINE, ofi eager threshold ${MPIR_CVAR_CH4_OFI_EAGER_THRESHOLD:-default}"
    log "MPI on the cluster: $MPI_LINE"
    mkdir -p "$OUT/logs" "$OUT/runs"
}

# vcj_shape RATE [F [S]]: every node's link shaped to RATE (tc tbf), or
# "none" (tests/cluster/scenario-hook.sh's rate, which runs' --changes use
# too), dilated F times and byte-scaled S times (RATE / (F x S))
vcj_shape() {
    VCLUSTER_DIR=$VCJ_DIR VCLUSTER_NODES=$VCJ_NODES WAVEPIPE_DILATION=${2:-1} WAVEPIPE_BYTE_SCALE=${3:-1} \
        bash "$SRCDIR/tests/cluster/scenario-hook.sh" rate "$1" > /dev/null ||
        die "cannot shape the links to $1"
}

# vcj_job NAME NODES TASKS PER_NODE SCRIPT LIMIT_S: one sbatch job of TASKS
# ranks in blocks of at most PER_NODE on NODES nodes, waited for, bounded;
# its output in OUT/logs/NAME.out
vcj_job() {
    local name=$1 nodes=$2 tasks=$3 per=$4 script=$5 limit=$6
    timeout "$limit" sbatch --wait --parsable -J "$name" -p wp -N "$nodes" -n "$tasks" \
        --ntasks-per-node="$per" -t 60 \
        -D "$OUT" -o "$OUT/logs/$name.out" "$script" > "$OUT/logs/$name.sbatch" 2>&1
    local rc=$?
    if [ "$rc" -eq 124 ]; then
        log "$name: no end within $limit s, cancelled"
        scancel "$(head -n 1 "$OUT/logs/$name.sbatch")" 2>/dev/null
    fi
    return "$rc"
}

# vcj_calibrate RATE [F [S]]: wavepipe calibrate on 2 nodes x 2 ranks (every node's
# link is shaped alike, and more ranks than the 2 cores spin in MPI's waits
# and time each other out: 6 ranks on 3 nodes fitted alpha = 2 ms where 4 on
# 2 fit 57 us), made over for all VCJ_NODES nodes; on links dilated F
# times and byte-scaled S times (vcj_shape RATE F S), calibrate --dilate F
# --scale-bytes S: the undilated network's fit. Prints its path
# (OUT/runs/calibrated-RATE[-FfSs].cfg)
# vcj_calibration_name RATE [F [S]]: how a calibration at RATE dilated F x S
# is named (RATE, or RATE-F<F>S<S>): OUT/runs/calibrated-NAME.cfg
vcj_calibration_name() {
    if [ "${2:-1}:${3:-1}" = 1:1 ]; then echo "$1"; else echo "$1-F${2}S$3"; fi
}

vcj_calibrate() {
    local rate=$1 f=${2:-1} s=${3:-1} name
    name=$(vcj_calibration_name "$rate" "$f" "$s")
    local cal=$OUT/runs/calibrated-$name.cfg
    # the model's message sizes, 64 KiB to 4 MiB, or 16 KiB to 1 MiB of
    # bytes actually sent where the byte scale is above 4: smaller messages
    # (S = 16 sent 4 to 256 KiB) fitted the links 16 % slow at 1 Gbit/s and
    # no intra-node beta at all
    local lo=$((s > 4 ? 16 * s : 64)) hi=$((s > 4 ? s : 4))
    cat > "$OUT/runs/calibrate-$name.sh" <<EOS
#!/bin/bash
srun --mpi=pmi2 "$WAVEPIPE" calibrate --min-bytes ${lo}KiB --max-bytes ${hi}MiB --repeat 5 --dilate $f --scale-bytes $s \
    --out "$cal"
EOS
    log "rate $rate (dilation $f, byte scale $s): calibrating on 2 nodes x 2 ranks"
    vcj_job "calibrate-$name" 2 4 2 "$OUT/runs/calibrate-$name.sh" 900 ||
        die "calibrate at $name failed ($OUT/logs/calibrate-$name.out)"
    grep -E '^(fit|wrote)' "$OUT/logs/calibrate-$name.out" | sed 's/^/    /' >&2
    "$WAVEPIPE" topo --cluster "$cal" --nodes "$VCJ_NODES" --quiet --out "$cal.tmp" && mv "$cal.tmp" "$cal" ||
        die "cannot make $cal over for $VCJ_NODES nodes"
    echo "$cal"
}

# vcj_median_iteration CSV: the median iteration (column 14) over the rows
# after the first step (row 2 is step 0) of a wavepipe run --results file
vcj_median_iteration() {
    awk -F, 'NR > 2 { print $14 }' "$1" 2>/dev/null | sort -g |
        awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}
