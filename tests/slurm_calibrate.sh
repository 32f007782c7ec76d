#!/usr/bin/env bash
# `wavepipe calibrate` measures a network whose speed we set. On the virtual
# Slurm cluster (tests/cluster/vcluster.sh) of 2 nodes, each node's link is
# shaped with `tc ... tbf rate 200mbit`; one sbatch job (-N 2, two tasks per
# node) runs
#     srun --mpi=pmi2 wavepipe calibrate --out calibrated.cfg
# on MPICH 5 over libfabric's tcp provider (VCLUSTER_MPI=mpich5: MPI on the
# veth links; why: "MPI transport" in vcluster.sh), both link levels are
# fitted, and the fitted inter-node bandwidth written to calibrated.cfg must
# be within 15 % of the tbf rate (Ethernet, IP and TCP headers take about 5 %
# of it). Then the links are dilated (vcluster.sh shape --dilate 4
# --scale-bytes 2: 25 Mbit/s) and `calibrate --dilate 4 --scale-bytes 2`
# must fit the undilated 200 Mbit/s within the same 15 %. Every step runs
# under a timeout and says so when it runs out.
# (It ran one rank per node on Debian's MPICH, whose UCX over TCP hangs in
# MPI_Finalize in jobs of more ranks.) Skips (77) only where network
# namespaces cannot be made; the cluster lives in the build tree
# (tests/vcluster.slurm_calibrate) and is torn down on exit.
if [ -z "${WAVEPIPE:-}" ] && [ -n "${top_builddir:-}" ]; then
    WAVEPIPE="$(cd "$top_builddir" && pwd)/src/wavepipe"
fi
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

vc="$(cd "$(dirname "$0")" && pwd)/cluster/vcluster.sh"
nodes=2
per_node=2
rate=200mbit            # tc tbf rate of each node's outgoing link
rate_Bps=25000000       # the same in bytes/s
burst=256kbit           # 32 KB: about 1 ms at the rate
tolerance=0.15
step_timeout=${SLURM_CALIBRATE_STEP_TIMEOUT:-90}   # seconds for the srun step
job_timeout=${SLURM_CALIBRATE_JOB_TIMEOUT:-150}    # seconds for sbatch --wait

vcluster_require "$vc"
vcluster_lock
builddir=${WP_BUILDDIR:-$(pwd)}
dir="$(cd "$builddir" && pwd)/tests/vcluster.slurm_calibrate"

vcluster_down_on_exit "$vc" "$dir"

# --- the cluster, shaped ---------------------------------------------------------
VCLUSTER_MPI=mpich5 vcluster_up "$vc" "$dir" "$nodes" "$(dirname "$WAVEPIPE"):$builddir"
shaped=0
for i in $(seq 1 "$nodes"); do
    bash "$vc" shape "$dir" "wpn$i" "$rate" "$burst" && shaped=$((shaped + 1))
done
expect_status "$nodes" "$shaped" "every node's link is shaped to $rate (tbf, burst $burst)"
qdisc=$(nsenter --net=/run/netns/wpn1 tc qdisc show dev eth0 2>&1)
echo "    wpn1: $qdisc"
case $qdisc in *"rate 200Mbit"*) pass "tc shows the rate on wpn1" ;; *) fail "tc shows the rate on wpn1" ;; esac

# --- the jobs ----------------------------------------------------------------------
# calibrate_job NAME "CALIBRATE_ARGS" MEASUREMENTS: one sbatch job (-N 2, two
# tasks a node) of wavepipe calibrate ARGS --out DIR/NAME/NAME.cfg, whose fit
# of the inter-node level must be within 15 % of the undilated tc rate
calibrate_job() {
    local name=$1 args=$2 measurements=$3 rundir=$dir/$1
    rm -rf "$rundir" && mkdir -p "$rundir"
    cat > "$rundir/job.sh" <<JOB
#!/bin/bash
# sbatch job of tests/slurm_calibrate.sh; the step is bounded so that the job always ends
echo "job \$SLURM_JOB_ID on \$SLURM_JOB_NODELIST (\$SLURM_NTASKS tasks), batch host \$(hostname)"
timeout "$step_timeout" srun -N 1 -n 1 "$WAVEPIPE" --version | grep '^  MPI'
timeout -k 5 "$step_timeout" srun --mpi=pmi2 "$WAVEPIPE" calibrate --min-bytes 256KiB --max-bytes 4MiB \\
    --repeat 5 $args --out "$rundir/$name.cfg"
st=\$?
[ "\$st" -eq 124 ] && echo "calibrate step did not finish within $step_timeout s: stopped"
echo "calibrate step exit status \$st"
exit "\$st"
JOB
    local t0 t1 rc
    t0=$(now_ms)
    run_bg timeout "$job_timeout" sbatch --wait --parsable -J "slurm_calibrate_$name" -p wp -N "$nodes" \
        --ntasks-per-node="$per_node" -t 5 -D "$rundir" -o "$rundir/job.out" \
        "$rundir/job.sh" > "$rundir/sbatch.txt" 2>&1
    rc=$?
    t1=$(now_ms)
    sbatch_report "$rundir" "$rc" "$job_timeout"
    expect_status 0 "$rc" "$name: the calibrate job over $nodes nodes succeeds within $job_timeout s ($(secs "$t0" "$t1") s)"
    if grep -qF "calibrate step exit status 0" "$rundir/job.out" 2>/dev/null; then
        pass "$name: srun --mpi=pmi2 wavepipe calibrate exits 0"
    else
        fail "$name: srun --mpi=pmi2 wavepipe calibrate exits 0"
    fi
    expect_contains "$rundir/job.out" "MPI loaded: MPICH Version: 5." "$name: calibrate runs on MPICH 5 (wavepipe --version)"
    expect_contains "$rundir/job.out" "$((nodes * per_node)) MPI ranks on $nodes nodes ($per_node per node)" \
        "$name: $per_node ranks on each node"
    expect_contains "$rundir/job.out" "fit intra-node ($measurements measurements)" "$name: the intra-node level is fitted"
    expect_contains "$rundir/job.out" "fit inter-node ($measurements measurements)" "$name: the inter-node level is fitted"

    # the calibrated network
    local cfg=$rundir/$name.cfg bw verdict i
    if [ ! -s "$cfg" ]; then
        fail "$name: $name.cfg written"
        return
    fi
    pass "$name: $name.cfg written"
    for i in $(seq 1 "$nodes"); do
        expect_contains "$cfg" "host = \"wpn$i\"" "$name: wpn$i in $name.cfg"
    done
    expect_contains "$cfg" 'source = "calibrated";' "$name: the network is marked calibrated"
    bw=$(sed -n 's/^ *bandwidth_Bps = \([0-9.eE+-]*\);/\1/p' "$cfg")
    if verdict=$(awk -v b="$bw" -v r="$rate_Bps" -v t="$tolerance" 'BEGIN {
        if (b == "") { print "no bandwidth_Bps"; exit 1 }
        d = (b - r) / r
        printf "fitted %.2f MB/s vs tbf %.2f MB/s undilated: %+.1f %%", b / 1e6, r / 1e6, 100 * d
        exit !(d <= t && d >= -t) }'); then
        pass "$name: inter-node bandwidth within 15 % of the tc rate ($verdict)"
    else
        fail "$name: inter-node bandwidth within 15 % of the tc rate ($verdict)"
    fi
    "$WAVEPIPE" topo --cluster "$cfg" --quiet
    expect_status 0 $? "$name: $name.cfg reads back with wavepipe topo --cluster"
}

calibrate_job calibrated "" 15

# --- dilated: the links 4 x 2 times slower, calibrate told so, the same fit --------
shaped=0
for i in $(seq 1 "$nodes"); do
    bash "$vc" shape --dilate 4 --scale-bytes 2 "$dir" "wpn$i" "$rate" "$burst" && shaped=$((shaped + 1))
done
expect_status "$nodes" "$shaped" "every node's link is shaped to $rate dilated 4 times and byte-scaled 2 times"
qdisc=$(nsenter --net=/run/netns/wpn1 tc qdisc show dev eth0 2>&1)
echo "    wpn1: $qdisc"
case $qdisc in
*"rate 25Mbit"*"lat 200ms"* | *"rate 25Mbit"*"latency 200ms"*) pass "tc shows 200mbit / 8 and a 4 x 50 ms queue on wpn1" ;;
*) fail "tc shows 200mbit / 8 and a 4 x 50 ms queue on wpn1" ;;
esac
calibrate_job dilated "--dilate 4 --scale-bytes 2 --collectives p2p,allreduce" 6
expect_contains "$dir/dilated/job.out" "dilation=4 byte_scale=2" "the dilated calibration says so"

[ "$failures" -eq 0 ] || vcluster_show_logs "$dir"

# --- teardown (the EXIT trap does it again, harmlessly) ----------------------------
vcluster_teardown "$vc" "$dir"
finish
