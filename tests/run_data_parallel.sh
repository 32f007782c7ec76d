#!/usr/bin/env bash
# Data-parallel copies of every schedule kind (--data-parallel D, or run
# --stages S for D = P/S): real GPT-2 training on local ranks gives the
# single rank's losses and weights after 2 steps, within the tolerance of
# tests/run_equivalence.sh's replicated stages (each replica runs its D-th
# of every micro-batch and the copies' gradients are summed at the
# allreduce: the order of float32 sums differs, so weights agree within 2e-4
# absolute and losses within 1e-6 relative). The kinds whose ranks hold
# several stages (interleaved, bfs, hanayo, zb-v, dualpipev: activations handed
# over in memory at the turns) and chimera (two weight copies, now summed
# over 2 D holders) on 4 ranks in 2 copies, zb-h1 through --stages, zb-v in
# 4 copies and Hanayo and Chimera in 2 copies of 4 ranks on 8, and DAPPLE's
# uneven replicas within each copy. Small on purpose: half a minute here.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/equivalence.sh"
out=$(scratch_dir)
cfg="$WP_SRCDIR/jobs/models/gpt-tiny.cfg"
common=(--config "$cfg" --steps 2 --global-batch 8)

run reference 1 --schedule 1f1b --micro-batches 8 ||
    { fail "single-rank reference run"; cat "$out/reference.log"; finish; exit 1; }
pass "single-rank reference run ($(tr '\n' ' ' < "$out/reference.loss"))"

check "interleaved V=2, 2 copies of 2 ranks" 4 tolerance --schedule interleaved --chunks 2 --data-parallel 2 \
    --micro-batches 2
check "bfs V=2, 2 copies of 2 ranks" 4 tolerance --schedule bfs --chunks 2 --data-parallel 2 --micro-batches 2
check "chimera, 2 copies of 2 ranks" 4 tolerance --schedule chimera --data-parallel 2 --micro-batches 4
check "hanayo W=2, 2 copies of 2 ranks" 4 tolerance --schedule hanayo --waves 2 --data-parallel 2 --micro-batches 4
check "zb-v, 2 copies of 2 ranks" 4 tolerance --schedule zb-v --data-parallel 2 --micro-batches 4
check "dualpipev, 2 copies of 2 ranks" 4 tolerance --schedule dualpipev --data-parallel 2 --micro-batches 4
check "zb-h1, --stages 2 on 4 ranks" 4 tolerance --schedule zb-h1 --stages 2 --micro-batches 4
check "zb-v, 4 copies of 2 ranks" 8 tolerance --schedule zb-v --data-parallel 4 --micro-batches 2
check "hanayo W=1, 2 copies of 4 ranks" 8 tolerance --schedule hanayo --waves 1 --data-parallel 2 --micro-batches 4
check "chimera, 2 copies of 4 ranks" 8 tolerance --schedule chimera --stages 4 --micro-batches 4
# DAPPLE's uneven replicas within each copy: stage 0 on 2 x 2 ranks whose
# slices are the quarters of a micro-batch, stage 1 on 2 ranks (its halves)
check "1f1b replicas 2,1 in 2 copies" 6 tolerance --schedule 1f1b --replicas 2,1 --data-parallel 2 --micro-batches 2
# the layout said, and the rows' replicas column (a stage's holders)
expect_contains "$out/zb-v, 2 copies of 2 ranks.log" "2 data-parallel copies" "the run says it runs copies"
check_bytes
finish
