#!/usr/bin/env bash
# Time dilation and byte scaling of emulated compute (wavepipe run --dilate F
# --scale-bytes S; calibrate the same): on local ranks, a run dilated 4 times
# with messages of a quarter of the model's bytes lasts about 4 times as
# long on the wall clock, yet reports the undilated run -- its median
# iteration within 15 % of the simulator's prediction from the same table,
# its measured messages the model's bytes (those of an undilated run) --
# and says so in every row (dilation, byte_scale) and in its summary and
# trace; every row has the host's busy share of the iteration; a changes
# hook sees WAVEPIPE_DILATION and WAVEPIPE_BYTE_SCALE from the start's
# change on; bad values
# and dilation without emulated compute are refused with one clear error.
. "$(dirname "$0")/lib.sh"
out=$(scratch_dir)
bert="$WP_SRCDIR/profiles/dapple-v100/bert-48-pbs-2.txt"
tolerance=0.15

run_emu() { # NAME ARGS...: 4 ranks, 1f1b, M = 4, BERT-48's DAPPLE profile
    local name=$1
    shift
    timeout 300 "$MPIEXEC" -n 4 "$WAVEPIPE" run --compute emulated --layers "$bert" --schedule 1f1b \
        --micro-batches 4 --steps 4 --results "$out/$name.csv" --measure "$out/$name.measure.csv" "$@" \
        > "$out/$name.log" 2>&1
}
median_iter() { sed -n 's/.*iteration measured \([0-9.]*\) s simulated \([0-9.]*\) s.*/\1 \2/p' "$1"; }

run_emu plain
expect_status 0 $? "an undilated run (the reference for the bytes)"
start=$(date +%s.%N)
run_emu dilated --dilate 4 --scale-bytes 4 --trace "$out/dilated.json"
rc=$?
wall=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
expect_status 0 $rc "a run dilated 4 times with a quarter of the bytes"
[ "$rc" -eq 0 ] || sed 's/^/    | /' "$out/dilated.log" | tail -n 15

head -n 1 "$out/dilated.csv" | grep -q ',loss,compute,layer_table,dilation,byte_scale,host_busy,adapt,'
expect_status 0 $? "the rows' header names dilation, byte_scale and host_busy after the layer table"
rows=$(awk -F, -v t="$bert" 'NR > 1 && $20 == "emulated" && $21 == t && $22 == 4 && $23 == 4 && $24 >= 0 && $24 <= 1' \
    "$out/dilated.csv" | wc -l)
[ "$rows" -eq 4 ] && pass "every row says dilation 4, byte scale 4 and a host busy share in [0, 1] ($rows rows)" ||
    fail "rows with dilation 4, byte scale 4 and a host busy share ($rows of 4)"
awk -F, 'NR > 1 && ($22 != 1 || $23 != 1) { bad = 1 } END { exit bad }' "$out/plain.csv"
expect_status 0 $? "an undilated run's rows say dilation 1, byte scale 1"

expect_contains "$out/dilated.log" "dilation=4 byte_scale=4: every pass and optimizer step lasts 4 times" \
    "the run says it is dilated"
expect_contains "$out/dilated.log" "dilated 4x with messages of 1/4 of the model's bytes, times and bytes reported undilated" \
    "so does the summary"
grep -q '^summary:.*, host busy [0-9.]* %$' "$out/dilated.log"
expect_status 0 $? "the summary ends with the host's busy share"
expect_contains "$out/dilated.json" "dilation=4: times undilated" "the trace's title says so"

read -r measured simulated < <(median_iter "$out/dilated.log")
if awk -v a="$measured" -v b="$simulated" -v t="$tolerance" 'BEGIN { exit !(b > 0 && a / b - 1 <= t && 1 - a / b <= t) }'
then
    pass "reported median iteration $measured s within 15 % of the undilated prediction $simulated s"
else
    fail "reported median iteration $measured s within 15 % of the undilated prediction $simulated s"
fi
sum=$(awk -F, 'NR > 1 { s += $14 } END { print s }' "$out/dilated.csv")
if awk -v w="$wall" -v s="$sum" 'BEGIN { exit !(w >= 0.9 * 4 * s) }'; then
    pass "the run took $wall s on the wall clock, at least 0.9 x 4 x the $sum s its iterations report"
else
    fail "the run took $wall s on the wall clock, at least 0.9 x 4 x the $sum s its iterations report"
fi

# the measured messages: per boundary and direction, the bytes of an undilated run (the model's)
bytes_of() { awk -F, '$1 == 1 && ($2 == "activation" || $2 == "gradient") { print $2, $3, $4, $6 }' "$1" | sort; }
plain_bytes=$(bytes_of "$out/plain.measure.csv")
dilated_bytes=$(bytes_of "$out/dilated.measure.csv")
if [ -n "$plain_bytes" ] && paste -d' ' <(echo "$plain_bytes") <(echo "$dilated_bytes") |
    awk '{ if ($1 != $5 || $2 != $6 || $3 != $7 || $8 < $4 || $8 > $4 * 1.001 + 16) bad = 1 } END { exit bad }'; then
    pass "the measured messages count the model's bytes: $(echo "$plain_bytes" | wc -l) kinds as the undilated run's"
else
    fail "the measured messages count the model's bytes (plain: $plain_bytes; dilated: $dilated_bytes)"
fi

# --- a changes hook sees the scaling, the start's change included --------------------------
# (a link rate it sets is dilated alike: scenario-hook.sh reads these)
cat > "$out/hook.sh" << 'HOOK'
#!/bin/sh
echo "$* dilation=${WAVEPIPE_DILATION:-unset} byte_scale=${WAVEPIPE_BYTE_SCALE:-unset}" >> "$(dirname "$0")/hook.txt"
HOOK
chmod +x "$out/hook.sh"
printf '0 rate 1gbit\n1 rate 2gbit\n' > "$out/changes.txt"
timeout 120 "$MPIEXEC" -n 2 "$WAVEPIPE" run --compute emulated --layers "$bert" --schedule 1f1b --micro-batches 2 \
    --steps 2 --dilate 2 --scale-bytes 8 --changes "$out/changes.txt" --changes-hook "$out/hook.sh" \
    --results "$out/hooked.csv" > "$out/hooked.log" 2>&1
expect_status 0 $? "a dilated run with a changes hook"
grep -qx 'rate 1gbit dilation=2 byte_scale=8' "$out/hook.txt"
expect_status 0 $? "the hook's start change (iteration 0) sees WAVEPIPE_DILATION 2 and WAVEPIPE_BYTE_SCALE 8"
grep -qx 'rate 2gbit dilation=2 byte_scale=8' "$out/hook.txt"
expect_status 0 $? "and so does a later one"

# --- refused --------------------------------------------------------------------------
"$WAVEPIPE" run --config "$WP_SRCDIR/jobs/models/gpt-tiny.cfg" --dilate 4 > "$out/real.txt" 2>&1
expect_status 2 $? "--dilate with real compute is a usage error"
expect_contains "$out/real.txt" "they go with --compute emulated" "and says why"
"$WAVEPIPE" run --compute emulated --layers "$bert" --dilate 0.5 > "$out/half.txt" 2>&1
expect_status 2 $? "--dilate 0.5 is refused"
expect_contains "$out/half.txt" "--dilate '0.5' must be a number from 1 to 1000" "naming the range"
"$WAVEPIPE" run --compute emulated --layers "$bert" --scale-bytes x > "$out/x.txt" 2>&1
expect_status 2 $? "--scale-bytes x is refused"

# --- calibrate on a dilated network ---------------------------------------------------
# messages large enough (4 to 64 MiB sent) that their copies outgrow the
# millisecond a loaded machine's scheduler adds (at 16 to 64 KiB sent, a CI
# run once measured 3.0 ms for the smallest and 2.8 ms for the largest, and
# the fit refused a negative beta)
timeout 120 "$MPIEXEC" -n 2 "$WAVEPIPE" calibrate --emulate-nodes 2 --collectives p2p --min-bytes 16MiB \
    --max-bytes 256MiB --repeat 3 --dilate 2 --scale-bytes 4 > "$out/cal.txt" 2>&1
expect_status 0 $? "calibrate --dilate 2 --scale-bytes 4"
expect_contains "$out/cal.txt" "dilation=2 byte_scale=4: each operation moves 1/4 of its size and its time is divided by 2" \
    "calibrate says what it scaled"
grep -q '256MiB\|256 MiB\|268435456' "$out/cal.txt"
expect_status 0 $? "and reports the sizes asked for, not those sent"
"$WAVEPIPE" calibrate --dilate 0 > "$out/cal0.txt" 2>&1
expect_status 2 $? "calibrate --dilate 0 is refused"
finish
