#!/usr/bin/env bash
# The training object without the command line on 2 ranks
# (tests/test_train, which the unit tests run on 1): its plain run's losses
# bit for bit those of the 1-rank run, a forced move of blocks between the
# two stages, and a stop request on rank 0 that both ranks obey, then the
# run resumed from its checkpoint.
. "$(dirname "$0")/lib.sh"
out=$(scratch_dir)
program="${WP_BUILDDIR:-$(cd "$(dirname "$0")/.." && pwd)}/tests/test_train"
WP_TRAIN_LOSSES="$out/one-rank.losses" timeout 300 "$program" > "$out/ranks1.txt" 2>&1
expect_status 0 $? "test_train on 1 rank exits 0 (the reference losses)"
WP_TRAIN_REFERENCE="$out/one-rank.losses" timeout 300 "$MPIEXEC" -n 2 "$program" > "$out/ranks2.txt" 2>&1
expect_status 0 $? "mpiexec -n 2 test_train exits 0"
expect_contains "$out/ranks2.txt" "2 ranks: the plain run's losses are bit for bit those of the reference run" \
    "2 ranks: the plain run's losses equal one rank's"
expect_contains "$out/ranks2.txt" "2 ranks: the losses after the move are the plain run's" \
    "2 ranks: a forced move between the stages keeps the losses"
expect_contains "$out/ranks2.txt" "2 ranks: a stop request on rank 0 stops every rank" \
    "2 ranks: a stop request on one rank stops both"
if grep -q '^not ok' "$out/ranks2.txt"; then
    fail "2 ranks: every check of the program passes"
    grep -A2 '^not ok' "$out/ranks2.txt"
else
    pass "2 ranks: every check of the program passes"
fi
finish
