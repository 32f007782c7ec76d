#!/usr/bin/env bash
# On a real Slurm cluster of 3 nodes built from network namespaces on this
# machine (tests/cluster/vcluster.sh), one sbatch job over all nodes
# (-N 3 --ntasks-per-node=2) runs
#     srun --mpi=pmix wavepipe probe --out probe.cfg   (PMIx client, no MPI)
#     srun --mpi=pmi2 wavepipe topo  --out topo.cfg    (MPICH over PMI-2)
# and both cluster files must name wpn1, wpn2 and wpn3; topo.cfg must list
# ranks 0..5.  Skips (77) only where network namespaces cannot be made.
# The cluster lives in the build tree (tests/vcluster.slurm_probe) and is
# torn down on exit, whatever happened.
if [ -z "${WAVEPIPE:-}" ] && [ -n "${top_builddir:-}" ]; then
    WAVEPIPE="$(cd "$top_builddir" && pwd)/src/wavepipe"
fi
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

vc="$(cd "$(dirname "$0")" && pwd)/cluster/vcluster.sh"
nodes=3
per_node=2
step_timeout=${SLURM_PROBE_STEP_TIMEOUT:-60}   # seconds per srun step
job_timeout=${SLURM_PROBE_JOB_TIMEOUT:-180}    # seconds for sbatch --wait

vcluster_require "$vc"
vcluster_lock
builddir=${WP_BUILDDIR:-$(pwd)}
dir="$(cd "$builddir" && pwd)/tests/vcluster.slurm_probe"
rundir="$dir/job"

vcluster_down_on_exit "$vc" "$dir"

# --- the cluster ------------------------------------------------------------
vcluster_up "$vc" "$dir" "$nodes" "$(dirname "$WAVEPIPE"):$builddir"

# --- the job ------------------------------------------------------------------
rm -rf "$rundir" && mkdir -p "$rundir"
cat > "$rundir/job.sh" <<'EOF'
#!/bin/bash
# sbatch job of tests/slurm_probe.sh; WAVEPIPE, RUNDIR and STEP_TIMEOUT come
# from the submitting environment.  Each step is bounded so that the job always ends.
echo "job $SLURM_JOB_ID on $SLURM_JOB_NODELIST ($SLURM_NTASKS tasks), batch host $(hostname)"
timeout "$STEP_TIMEOUT" srun --mpi=pmix "$WAVEPIPE" probe --out "$RUNDIR/probe.cfg"
probe=$?
echo "probe step exit status $probe"
timeout "$STEP_TIMEOUT" srun --mpi=pmi2 "$WAVEPIPE" topo --out "$RUNDIR/topo.cfg"
topo=$?
echo "topo step exit status $topo"
[ "$probe" -eq 0 ] && [ "$topo" -eq 0 ]
EOF

t0=$(now_ms)
WAVEPIPE="$WAVEPIPE" RUNDIR="$rundir" STEP_TIMEOUT="$step_timeout" \
    run_bg timeout "$job_timeout" sbatch --wait --parsable -J slurm_probe -p wp -N "$nodes" \
    --ntasks-per-node="$per_node" -t 5 -D "$rundir" -o "$rundir/job.out" \
    "$rundir/job.sh" > "$rundir/sbatch.txt" 2>&1
rc=$?
t1=$(now_ms)
sed 's/^/    sbatch: /' "$rundir/sbatch.txt"
echo "---- job output ($rundir/job.out)"
[ -r "$rundir/job.out" ] && sed 's/^/    | /' "$rundir/job.out"
expect_status 0 "$rc" "the sbatch job over $nodes nodes succeeds ($(secs "$t0" "$t1") s)"
if [ -r "$rundir/job.out" ]; then pass "the job wrote its output file"; else fail "the job wrote its output file"; fi
step_ok() {   # step_ok NAME DESCRIPTION: the job's output says the step exited 0
    if grep -qF "$1 step exit status 0" "$rundir/job.out" 2>/dev/null; then pass "$2"; else fail "$2"; fi
}
step_ok probe "srun --mpi=pmix wavepipe probe exits 0"
step_ok topo "srun --mpi=pmi2 wavepipe topo exits 0"

# --- the cluster files ----------------------------------------------------------
for f in probe topo; do
    if [ -s "$rundir/$f.cfg" ]; then
        pass "$f.cfg written"
        for i in $(seq 1 "$nodes"); do
            expect_contains "$rundir/$f.cfg" "host = \"wpn$i\"" "wpn$i in $f.cfg"
        done
    else
        fail "$f.cfg written"
    fi
done
if [ -s "$rundir/topo.cfg" ]; then
    for r in $(seq 0 $((nodes * per_node - 1))); do
        if grep -Eq "(^|[^_[:alnum:]])rank = $r;" "$rundir/topo.cfg"; then
            pass "rank $r in topo.cfg"
        else
            fail "rank $r in topo.cfg"
        fi
    done
    n=$(grep -Ec "(^|[^_[:alnum:]])rank = [0-9]+;" "$rundir/topo.cfg")
    expect_status $((nodes * per_node)) "$n" "topo.cfg lists $((nodes * per_node)) ranks"
fi

if [ -s "$rundir/probe.cfg" ]; then
    expect_contains "$rundir/probe.cfg" 'launcher = "pmix";' "probe.cfg says PMIx found the nodes"
    n=$(grep -Ec "(^|[^_[:alnum:]])rank = [0-9]+;" "$rundir/probe.cfg")
    expect_status $((nodes * per_node)) "$n" "probe.cfg lists $((nodes * per_node)) ranks"
    "$WAVEPIPE" topo --cluster "$rundir/probe.cfg" --quiet
    expect_status 0 $? "probe.cfg reads back with wavepipe topo --cluster"
fi
[ -s "$rundir/topo.cfg" ] && expect_contains "$rundir/topo.cfg" 'launcher = "mpi";' "topo.cfg says MPI found the nodes"

[ "$failures" -eq 0 ] || vcluster_show_logs "$dir"

# --- teardown (the EXIT trap does it again, harmlessly) ---------------------------
vcluster_teardown "$vc" "$dir"
finish
