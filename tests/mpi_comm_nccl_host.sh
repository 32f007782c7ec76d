#!/usr/bin/env bash
# src/run/comm/comm_nccl.c on the host emulation's NCCL (tests/cuda_host, over
# MPI) against the MPI backend on 2 and 4 ranks of this machine: messages in
# a ring, sums, gathers and scatters over all ranks and over pairs, channel
# sums (tests/test_comm_nccl_host; one rank runs in the unit tests).
. "$(dirname "$0")/lib.sh"
out=$(scratch_dir)
program="${WP_BUILDDIR:-$(cd "$(dirname "$0")/.." && pwd)}/tests/test_comm_nccl_host"
for n in 2 4; do
    timeout 300 "$MPIEXEC" -n "$n" "$program" > "$out/ranks$n.txt" 2>&1
    expect_status 0 $? "mpiexec -n $n test_comm_nccl_host exits 0"
    expect_contains "$out/ranks$n.txt" "ok 3 - $n ranks: NCCL ring" "$n ranks: the NCCL ring delivers what MPI does"
    expect_contains "$out/ranks$n.txt" "ranks, pairs listed high rank first: reduce_scatter_sum" \
        "$n ranks: a reduce-scatter over pairs ran"
    if grep -q '^not ok' "$out/ranks$n.txt"; then
        fail "$n ranks: every check of the program passes"
        grep -A2 '^not ok' "$out/ranks$n.txt"
    else
        pass "$n ranks: every check of the program passes"
    fi
done
finish
