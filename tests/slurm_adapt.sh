#!/usr/bin/env bash
# `wavepipe run --adapt both` reacting to a slower network, small enough for
# CI: bench/adaptive.sh's rate-drop scenario on the virtual Slurm cluster --
# 4 ranks on 2 nodes, compute emulated from a synthetic table (16 equal
# layers of 4 and 8 ms a sequence whose outputs are 384 KiB, layer 8's half
# of that, as a CNN's pooling shrinks them; 16 micro-batches of one
# sequence), MPI (MPICH 5) over the veth links, unshaped until the run
# itself has both links shaped to 100 Mbit/s before iteration 12 (wavepipe
# run --changes, through tests/cluster/scenario-hook.sh). The run
# starts as 1F1B on 4:4:4:4, decides every 4 iterations (a move of one
# boundary, then k among 1, 2, 4 at the same micro-batch size on the
# partition that will run) and must
#   - neither switch nor move before the drop (on the unshaped links kFkB
#     was predicted 2.1-2.5 % faster, no move over 2 %),
#   - within N + 1 = 5 iterations of the drop move the cut between the
#     nodes to layer 8's smaller output (4:5:3:4, predicted 21 % faster)
#     and switch to kFkB on it (k = 4 predicted 14 % faster): both after
#     iteration 15 in the runs here, 4 iterations after the drop; the
#     iterations went from 0.97 s to 1.5 s at the drop and to 1.05 s
#     after (1.08 s predicted),
# and its rows must run the plan the log says from the switch on, the
# move's pause measured. A full run takes about a minute. Skips (77) only
# where network namespaces cannot be made.
if [ -z "${WAVEPIPE:-}" ] && [ -n "${top_builddir:-}" ]; then
    WAVEPIPE="$(cd "$top_builddir" && pwd)/src/wavepipe"
fi
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

vc="$(cd "$(dirname "$0")" && pwd)/cluster/vcluster.sh"
vcluster_require "$vc"
builddir=${WP_BUILDDIR:-$(pwd)}
out="$(cd "$builddir" && pwd)/tests/out/slurm_adapt"
mkdir -p "$(dirname "$out")"
rm -rf "$out"
every=4
drop=12

# adaptive.sh takes the cluster lock, brings the cluster up and down itself
ADAPT_RUNS=adaptive ADAPT_EVERY=$every timeout -k 10 600 \
    bash "$WP_SRCDIR/bench/adaptive.sh" "$WAVEPIPE" "$WP_SRCDIR" "$out" rate-drop > "$out.log" 2>&1
rc=$?
expect_status 0 "$rc" "bench/adaptive.sh ran the rate-drop scenario (4 ranks, 2 nodes)"
[ "$rc" -eq 0 ] || sed 's/^/    | /' "$out.log" | tail -n 25
expect_contains "$out.log" "MPICH Version: 5" "the run used MPICH 5 (MPI over the links)"

dir=$out/runs/rate-drop
rows=$dir/adaptive.csv decisions=$dir/adaptive.adapt.csv
n=$(awk 'END { print NR - 1 }' "$rows" 2>/dev/null)
expect_status 24 "${n:-0}" "24 iterations, one row each"
sed 's/^/    /' "$decisions" 2>/dev/null | cut -c 1-200

# the drop happened at the boundary before iteration 12, made by the run
seen=$(awk -F, '$3 == "rate" && $4 == "100mbit" { print $2 }' "$dir/adaptive.changes" 2>/dev/null)
if [ "$seen" = "$drop" ]; then
    pass "the run had the links shaped to 100 Mbit/s before iteration $seen (--changes, scenario-hook.sh)"
else
    fail "the links shaped to 100 Mbit/s before iteration $drop (seen: '${seen:-none}')"
fi

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
    grep -q "^$((mat - 1)),$to_p," "$dir/adaptive.moves" 2>/dev/null
    expect_status 0 $? "the move's pause was measured ($(cat "$dir/adaptive.moves" 2>/dev/null))"
fi
grep -E '^rate-drop|^  ' "$out/adaptive.txt" 2>/dev/null | sed 's/^/    /'
finish
