#!/usr/bin/env bash
# `wavepipe run --kernel-times FILE.csv`: where the compute went. The demo
# model on 2 ranks (1f1b, 2 stages), 3 steps: one row per rank and kernel
# called, the header first; per step (the warm-up step left out) each stage
# runs its blocks' matmuls forward 4 times per block and micro-batch, the
# last stage the LM head's forward once per micro-batch and AdamW once;
# times are positive and a step's kernels take no more wall time than the
# run's steps did; the losses are those of a run without it (timing
# changes nothing). A file that cannot be written is one clear error.
. "$(dirname "$0")/lib.sh"
out=$(scratch_dir)
cfg="$WP_SRCDIR/jobs/models/gpt-tiny.cfg"
data="$WP_SRCDIR/jobs/data/sonnets.txt"
run2() { # NAME ARGS...
    local name=$1
    shift
    timeout 120 "$MPIEXEC" -n 2 "$WAVEPIPE" run --config "$cfg" --data "$data" --schedule 1f1b --steps 3 \
        --results "$out/$name.csv" "$@" > "$out/$name.log" 2>&1
}

run2 timed --kernel-times "$out/kt.csv"
expect_status 0 $? "2 ranks with --kernel-times"
run2 plain
expect_status 0 $? "2 ranks without"
M=$(awk -F, 'NR > 1 { print $10; exit }' "$out/timed.csv") # micro-batches
L=$(sed -n 's/^[[:space:]]*layers[[:space:]]*=[[:space:]]*\([0-9]*\).*/\1/p' "$cfg" | head -n 1)
bad=$(awk -F, -v M="$M" -v L="$L" '
    NR == 1 { if ($0 != "rank,kernel,calls,wall_s,cpu_s") print "header " $0; next }
    { if ($4 <= 0 || $5 <= 0) print "time " $0; calls[$1 "," $2] = $3; ranks[$1] = 1 }
    END {
        mm = calls["0,matmul_forward"] + calls["1,matmul_forward"]
        if (mm != 4 * L * M) print "matmul_forward " mm " calls a step, want " 4 * L * M
        if (calls["1,lm_head_matmul_forward"] != M) print "lm head forward " calls["1,lm_head_matmul_forward"]
        if (("0,lm_head_matmul_forward" in calls)) print "the first stage ran the head"
        if (calls["0,adamw_update"] != 1 || calls["1,adamw_update"] != 1) print "adamw not once a step on each rank"
        if (length(ranks) != 2) print length(ranks) " ranks"
    }' "$out/kt.csv")
if [ -z "$bad" ]; then
    pass "kernel times: header, both ranks, $((4 * L * M)) block matmuls a step, the head on the last stage"
else
    fail "kernel times: $bad"; sed 's/^/    | /' "$out/kt.csv"
fi
step_s=$(awk -F, 'NR > 2 { s += $14; n++ } END { print s / n }' "$out/timed.csv")
if awk -F, -v s="$step_s" 'NR > 1 { w[$1] += $4 } END { for (r in w) if (w[r] > 1.05 * s) exit 1 }' "$out/kt.csv"; then
    pass "each rank's kernels take at most the step's wall time ($step_s s)"
else
    fail "kernels' wall time beyond the step's ($step_s s)"; cat "$out/kt.csv"
fi
if [ "$(cut -d, -f13,19 "$out/timed.csv")" = "$(cut -d, -f13,19 "$out/plain.csv")" ]; then
    pass "the same losses with and without --kernel-times"
else
    fail "losses differ with --kernel-times"
fi
run2 nodir --kernel-times "$out/no/such/dir/kt.csv"
st=$?
if [ "$st" -ne 0 ] && grep -q "kernel-times" "$out/nodir.log"; then
    pass "an unwritable --kernel-times file: exit $st, $(grep -m1 'kernel-times' "$out/nodir.log")"
else
    fail "an unwritable --kernel-times file: exit $st"; cat "$out/nodir.log"
fi
finish
