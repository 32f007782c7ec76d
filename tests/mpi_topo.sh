#!/usr/bin/env bash
# `mpiexec -n 4 wavepipe topo`: every rank of a local MPI job is found, with
# its local rank, on one node; a node can be made to report a recorded GPU
# server through HWLOC_XMLFILE, and the report then says it is emulated.
. "$(dirname "$0")/lib.sh"
out=$(scratch_dir)
"$MPIEXEC" -n 4 "$WAVEPIPE" topo --out "$out/job.cfg" > "$out/job.txt" 2>&1
expect_status 0 $? "mpiexec -n 4 wavepipe topo exits 0"
expect_contains "$out/job.txt" "nodes of the job (found through mpi)" "the job's nodes are listed"
expect_contains "$out/job.txt" " 0(0) 1(1) 2(2) 3(3)" "four ranks with local ranks 0..3 on one node"
for r in 0 1 2 3; do expect_contains "$out/job.cfg" "rank = $r;" "rank $r in the cluster file"; done
expect_contains "$out/job.cfg" "local_rank = 3;" "local rank 3 in the cluster file"
nodes=$(grep -c 'host = ' "$out/job.cfg")
expect_status 1 "$nodes" "one node in the cluster file"
"$WAVEPIPE" topo --cluster "$out/job.cfg" --quiet; expect_status 0 $? "the job's cluster file reads back"

HWLOC_XMLFILE="$WP_FIXTURES/hwloc-nvidiaDGX2.xml" HWLOC_THISSYSTEM=0 \
    "$MPIEXEC" -n 2 "$WAVEPIPE" topo > "$out/emulated.txt" 2>&1
expect_status 0 $? "a job on an emulated DGX-2 node"
expect_contains "$out/emulated.txt" "via HWLOC_XMLFILE (recorded topology, emulated)" "emulation is said plainly"
expect_contains "$out/emulated.txt" "16 GPUs, 12 NVSwitches" "the emulated node has the DGX-2's GPUs"
finish
