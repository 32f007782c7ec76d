#!/usr/bin/env bash
# `wavepipe run --adapt both` reacting to a slower network, small enough for
# CI, as a campaign: jobs/campaigns/adaptive-ci.cfg through `wavepipe sweep
# --submit` on the virtual Slurm cluster (2 nodes of 2 CPUs, MPICH 5 over
# the veth links), then `wavepipe harvest`. 4 ranks on 2 nodes, compute
# emulated from the synthetic mixed-16 table (16 equal layers of 4 and 8 ms
# a sequence whose outputs are 384 KiB, layer 8's half of that, as a CNN's
# pooling shrinks them; 16 micro-batches of one sequence), the links
# unshaped until the run itself has both shaped to 100 Mbit/s before
# iteration 12 (its changes.txt, made through tests/cluster/
# scenario-hook.sh). A static 1F1B point and an adaptive one, which starts
# as 1F1B on 4:4:4:4, decides every 4 iterations (a move of one boundary,
# then k among 1, 2, 4 at the same micro-batch size on the partition that
# will run) and must
#   - neither switch nor move before the drop (on the unshaped links kFkB
#     was predicted 1-2.5 % faster, no move over 2 %),
#   - within N + 1 = 5 iterations of the drop move the cut between the
#     nodes to layer 8's smaller output (4:5:3:4, predicted 21 % faster)
#     and switch to kFkB on it (k = 4 predicted 14-16 % faster): both after
#     iteration 15 in the runs here, 4 iterations after the drop; the
#     iterations went from 0.94 s to 1.5 s at the drop and to 1.0 s after,
# its rows must run the plan the log says from the switch on, the move's
# pause measured, and harvest must put the adaptive point ahead of its
# static twin (adapt_vs_static 1.06-1.07 in the runs here: the first 12
# iterations alike, and the two moves paused 1.2-1.3 s in all). About 1.5
# minutes. Skips (77) only where network namespaces cannot be made.
if [ -z "${WAVEPIPE:-}" ] && [ -n "${top_builddir:-}" ]; then
    WAVEPIPE="$(cd "$top_builddir" && pwd)/src/wavepipe"
fi
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

every=4
drop=12
VCLUSTER_MPI=mpich5 VCLUSTER_CPUS=2 vcluster_start slurm_adapt 2

campaign="$WP_SRCDIR/jobs/campaigns/adaptive-ci.cfg"
results="$work/results"
"$WAVEPIPE" sweep "$campaign" --submit --results "$results" --templates "$WP_SRCDIR/templates" \
    --wavepipe "$WAVEPIPE" > "$work/sweep.log" 2>&1
expect_status 0 $? "wavepipe sweep --submit adaptive-ci (a static and an adaptive point)"
camp=$results/adaptive-ci
expect_status 2 "$(wait_for_points "$camp" 2 "${SLURM_ADAPT_TIMEOUT:-400}")" "both points finish (DONE)"
static=$(find "$camp" -mindepth 1 -maxdepth 1 -type d -name '*adaptnone*' | head -n 1)
adaptive=$(find "$camp" -mindepth 1 -maxdepth 1 -type d -name '*adaptboth*' | head -n 1)
for p in "$static" "$adaptive"; do
    [ -f "$p/DONE" ] || { tail -n 20 "$p/run.log" 2>/dev/null; cat "$p"/run-*.err 2>/dev/null; } | sed 's/^/    | /'
done
expect_contains "$adaptive/env.txt" "MPI loaded: MPICH Version: 5" "the runs used MPICH 5 (MPI over the links)"

rows=$adaptive/results.csv decisions=$adaptive/adapt.csv
for p in "$static" "$adaptive"; do
    n=$(awk 'END { print NR - 1 }' "$p/results.csv" 2>/dev/null)
    expect_status 24 "${n:-0}" "$(basename "$p"): 24 iterations, one row each"
    grep -q "^change before iteration $drop: rate 100mbit (by .*scenario-hook.sh" "$p/run.log" 2>/dev/null
    expect_status 0 $? "$(basename "$p"): the run had the links shaped to 100 Mbit/s before iteration $drop"
done
sed 's/^/    /' "$decisions" 2>/dev/null | cut -c 1-200

# a decision after iteration I takes effect at iteration I + 1 (decision
# log: iteration,adapt,from_k,from_micro_batch,from_partition,to_k,
# to_micro_batch,to_partition,predicted_from_s,predicted_to_s,switched,reasons)
before=$(awk -F, -v d="$drop" 'NR > 1 && $11 == 1 && $1 + 1 <= d { print $1 " " $2 }' "$decisions" 2>/dev/null)
if [ -s "$decisions" ] && [ -z "$before" ]; then
    pass "no switch and no move before the drop (1F1B and 4:4:4:4 kept on the unshaped links)"
else
    fail "no switch or move before the drop (after iteration(s) ${before:-?}: $decisions)"
fi
move=$(awk -F, -v d="$drop" 'NR > 1 && $2 == "partition" && $11 == 1 && $1 + 1 > d { print $1 + 1, $5, $8; exit }' \
    "$decisions" 2>/dev/null)
read -r mat from_p to_p <<< "${move:-- - -}"
if [ -n "$move" ] && [ $((mat - drop)) -le $((every + 1)) ] && [ "$to_p" != "$from_p" ]; then
    pass "moved a boundary ($from_p -> $to_p) from iteration $mat: $((mat - drop)) iterations after the drop (at most $((every + 1)))"
else
    fail "a move of a boundary within $((every + 1)) iterations of the drop (first after it: ${move:-none})"
fi
switch=$(awk -F, -v d="$drop" 'NR > 1 && $2 == "k" && $11 == 1 && $1 + 1 > d { print $1 + 1, $3, $6, $7; exit }' \
    "$decisions" 2>/dev/null)
read -r at from_k to_k to_b <<< "${switch:-- - - -}"
if [ -n "$switch" ] && [ "$from_k" = 1 ] && [ "$to_k" -gt 1 ] && [ $((at - drop)) -le $((every + 1)) ]; then
    pass "switched from 1F1B to k=$to_k from iteration $at: $((at - drop)) iterations after the drop (at most $((every + 1)))"
else
    fail "a switch from 1F1B to kFkB within $((every + 1)) iterations of the drop (first after it: ${switch:-none})"
fi
if [ -n "$switch" ]; then
    bad=$(awk -F, -v at="$at" -v k="$to_k" -v b="$to_b" 'NR > 1 && $13 >= at && ($8 != k || $11 != b) { print $13 }' \
        "$rows" | head -n 3)
    ran=$(awk -F, -v at="$at" 'NR > 1 && $13 >= at { n++ } END { print n + 0 }' "$rows")
    if [ -z "$bad" ] && [ "$ran" -gt 0 ]; then
        pass "the $ran rows from iteration $at on ran k=$to_k, micro-batch $to_b"
    else
        fail "rows from iteration $at on run k=$to_k b=$to_b (not: iterations $bad)"
    fi
fi
if [ -n "$move" ]; then
    # the move's row (the iteration it followed) carries its pause
    pause=$(awk -F, -v it=$((mat - 1)) 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        $c["iteration"] == it { print $c["pause_s"] }' "$rows")
    if awk -v p="${pause:-0}" 'BEGIN { exit !(p > 0) }'; then
        pass "the move's pause was measured ($pause s, in the row of iteration $((mat - 1)))"
    else
        fail "the move's pause in the row of iteration $((mat - 1)) (pause_s '${pause:-none}')"
    fi
fi

# harvest compares the twins
"$WAVEPIPE" harvest "$camp" --out "$work/harvest.csv" > "$work/harvest.txt" 2>&1
expect_status 0 $? "wavepipe harvest"
sed 's/^/    /' "$work/harvest.txt" | cut -c 1-200 | head -n 8
ratio=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    $c["adapt"] == "both" { print $c["adapt_vs_static"] }' "$work/harvest.csv" 2>/dev/null)
if awk -v r="${ratio:-0}" 'BEGIN { exit !(r > 1) }'; then
    pass "harvest: the adaptive point's samples/s over its static twin's: $ratio"
else
    fail "harvest: the adaptive point ahead of its static twin (adapt_vs_static '${ratio:-none}')"
fi
finish
