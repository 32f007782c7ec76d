#!/usr/bin/env bash
# `wavepipe run --compute emulated` on local ranks: each pass sleeps what the
# layer table says, so an iteration must take what the simulator predicts
# from the same table (communication here is shared memory between local
# ranks, cheap next to the passes: 15 % tolerance, loose enough for a loaded
# CI machine, and a run that misses it runs once more, the faster kept: load
# only ever slows a run down); a slowdown file stretches passes while the job runs,
# and so does a scenario's change at a given iteration (--changes), whose other
# changes a hook makes; rows
# and summary say compute=emulated and name the table; bad settings are
# refused with one clear error. Data-parallel copies of Hanayo run, and their
# prediction is half a single copy's on half the ranks.
. "$(dirname "$0")/lib.sh"
out=$(scratch_dir)
bert="$WP_SRCDIR/profiles/dapple-v100/bert-48-pbs-2.txt"
tolerance=0.15

# --- one schedule, measured against the prediction ----------------------------------
run_emu() { # NAME P ARGS...
    local name=$1 P=$2
    shift 2
    timeout 120 "$MPIEXEC" -n "$P" "$WAVEPIPE" run --compute emulated --layers "$bert" "$@" \
        > "$out/$name.log" 2>&1
}
median_iter() { sed -n 's/.*iteration measured \([0-9.]*\) s simulated \([0-9.]*\) s.*/\1 \2/p' "$1"; }
within() { # A B TOL: |A/B - 1| <= TOL
    awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { exit !(b > 0 && a / b - 1 <= t && 1 - a / b <= t) }'
}
# run_timed NAME P ARGS...: run_emu, and up to twice more while the measured
# iteration misses the run's own prediction by more than the tolerance (a
# busy machine: make -j2 check runs two tests at once, and hanayo measured
# +20 % and +16 % beside them where it measures +8 % alone); NAME.log is the
# fastest run
run_timed() {
    local name=$1 try m s m2
    run_emu "$@" || return
    for try in 2 3; do
        read -r m s < <(median_iter "$out/$name.log")
        within "$m" "$s" "$tolerance" && return 0
        echo "    $name: measured $m s against $s s, once more"
        mv "$out/$name.log" "$out/$name.slower.log"
        run_emu "$@" || return
        read -r m2 _ < <(median_iter "$out/$name.log")
        if awk -v a="$m" -v b="$m2" 'BEGIN { exit !(a < b) }'; then
            mv "$out/$name.slower.log" "$out/$name.log"
        fi
    done
    return 0
}

run_timed 1f1b 4 --schedule 1f1b --micro-batches 4 --steps 4 --results "$out/emu.csv"
expect_status 0 $? "4 ranks, 1f1b on BERT-48's DAPPLE profile, emulated"
read -r measured simulated < <(median_iter "$out/1f1b.log")
predicted=$("$WAVEPIPE" simulate --kind 1f1b --ranks 4 --micro-batches 4 --layers "$bert" --format csv |
    awk -F, 'NR == 2 { print $7 }')
echo "    measured $measured s, summary's simulation $simulated s, wavepipe simulate --layers $predicted s"
if within "$simulated" "$predicted" 1e-3; then
    pass "the run's summary and wavepipe simulate --layers predict the same iteration"
else
    fail "the run's summary ($simulated) and wavepipe simulate --layers ($predicted) predict the same iteration"
fi
if within "$measured" "$predicted" "$tolerance"; then
    pass "measured iteration within 15 % of the prediction ($measured s vs $predicted s)"
else
    fail "measured iteration within 15 % of the prediction ($measured s vs $predicted s)"
fi
expect_contains "$out/1f1b.log" "compute=emulated: each pass sleeps what $bert" "the run says how it computes"
expect_contains "$out/1f1b.log" "compute=emulated from $bert" "so does the summary"
head -n 1 "$out/emu.csv" |
    grep -q ',loss,compute,layer_table,dilation,byte_scale,host_busy,adapt,partition,pause_s,stage_compute_s,link_bandwidth_Bps$'
expect_status 0 $? "the CSV header has compute,layer_table,dilation,byte_scale,host_busy after the loss, then the adapt columns"
rows=$(grep -c ",nan,emulated,$bert,1,1,[0-9.]*,none,[0-9:]*,0.000000,[0-9.e:+-]*,[0-9.e:+-]*\$" "$out/emu.csv")
lines=$(wc -l < "$out/emu.csv")
if [ "$rows" -ge 4 ] && [ "$rows" -eq $((lines - 1)) ]; then
    pass "every row says emulated, from which table, with no loss (nan), no adapting and no pause ($rows rows)"
else
    fail "every row says emulated, from which table, with no loss (nan), no adapting and no pause ($rows of $((lines - 1)) rows)"
fi

# --- zero bubble splits B and W; Hanayo hands activations over in memory ---------------
for kind in zb-h1 hanayo; do
    run_timed "$kind" 4 --schedule "$kind" --micro-batches 4 --steps 3 --waves 1
    expect_status 0 $? "$kind runs emulated"
    read -r measured simulated < <(median_iter "$out/$kind.log")
    if within "$measured" "$simulated" "$tolerance"; then
        pass "$kind: measured within 15 % of the table's prediction ($measured s vs $simulated s)"
    else
        fail "$kind: measured within 15 % of the table's prediction ($measured s vs $simulated s)"
    fi
done

# --- data-parallel copies of a kind whose ranks hold two stages -------------------------
# Hanayo (one wave) in 2 copies of 2 ranks: each replica sleeps its stages'
# time for half of each micro-batch, so the prediction is the one pipeline's
# on 2 ranks with every pass halved (BERT-48's table has no optimizer
# time), and the summary's is simulate's. The copies' allreduce is real:
# BERT-48's gradients, about 600 MB a stage (sent a sixteenth of, with
# --scale-bytes 16, to spare this machine's memory), summed over shared
# memory on its cores, which the prediction (messages free) leaves out as
# it does Chimera's (bench/README.md): the run is only held to at least
# the prediction, and the gap is shown
run_emu hanayo-dp 4 --schedule hanayo --waves 1 --data-parallel 2 --micro-batches 4 --steps 2 --scale-bytes 16
expect_status 0 $? "hanayo in 2 data-parallel copies runs emulated"
read -r measured simulated < <(median_iter "$out/hanayo-dp.log")
sim_layers() { "$WAVEPIPE" simulate --kind hanayo --waves 1 --micro-batches 4 --layers "$bert" --format csv "$@" |
               awk -F, 'NR == 2 { print $7 }'; }
predicted=$(sim_layers --ranks 4 --data-parallel 2)
one=$(sim_layers --ranks 2)
echo "    measured $measured s (with the copies' allreduce), summary's simulation $simulated s, simulate --layers" \
     "$predicted s, one copy on 2 ranks $one s"
if within "$simulated" "$predicted" 1e-3; then
    pass "hanayo in 2 copies: the run's summary predicts what simulate --data-parallel 2 --layers does ($simulated s)"
else
    fail "hanayo in 2 copies: the summary predicts $simulated s, simulate --data-parallel 2 --layers $predicted s"
fi
if within "$predicted" "$(awk -v o="$one" 'BEGIN { print o / 2 }')" 1e-3 &&
    awk -v m="$measured" -v p="$predicted" 'BEGIN { exit !(m >= (1 - 0.15) * p) }'; then
    pass "and it is half one copy's on 2 ranks ($predicted s against $one s), the run no faster"
else
    fail "2 copies predicted $predicted s (one copy on 2 ranks $one s), measured $measured s"
fi
expect_contains "$out/hanayo-dp.log" "ranks 4 (2 data-parallel copies of 2)" "the summary says the copies"

# --- a slowdown file: every pass twice as long --------------------------------------
echo '* 2' > "$out/slow.txt"
run_emu slow 4 --schedule 1f1b --micro-batches 4 --steps 3 --slowdown-file "$out/slow.txt"
expect_status 0 $? "with a slowdown file"
read -r slow_measured _ < <(median_iter "$out/slow.log")
read -r base_measured _ < <(median_iter "$out/1f1b.log")
ratio=$(awk -v a="$slow_measured" -v b="$base_measured" 'BEGIN { printf "%.3f", a / b }')
if within "$slow_measured" "$(awk -v b="$base_measured" 'BEGIN { print 2 * b }')" "$tolerance"; then
    pass "factor 2 doubles the iteration (x$ratio)"
else
    fail "factor 2 doubles the iteration (x$ratio)"
fi

# --- the file changes while the job runs: later steps slow down ----------------------
echo '* 1' > "$out/live.txt"
timeout 120 "$MPIEXEC" -n 2 "$WAVEPIPE" run --compute emulated --layers "$bert" --schedule 1f1b --micro-batches 2 \
    --steps 12 --slowdown-file "$out/live.txt" --results "$out/live.csv" > "$out/live.log" 2>&1 &
job=$!
for _ in $(seq 1 200); do
    n=$(grep -c emulated "$out/live.csv" 2>/dev/null)
    [ "${n:-0}" -ge 3 ] && break
    sleep 0.1
done
echo '0 3' > "$out/live.tmp" && mv "$out/live.tmp" "$out/live.txt"
wait "$job"
expect_status 0 $? "a run whose slowdown file changes"
first=$(awk -F, 'NR == 3 { print $14 }' "$out/live.csv")
last=$(awk -F, 'END { print $14 }' "$out/live.csv")
if awk -v a="$first" -v b="$last" 'BEGIN { exit !(b > 1.5 * a) }'; then
    pass "rank 0 made 3x slower mid-run: the last step $last s against $first s early on"
else
    fail "rank 0 made 3x slower mid-run: the last step $last s against $first s early on"
fi

# --- a scenario (--changes): rank 1 slowed before iteration 3, a hook's change ---------
printf '# a test scenario\n0 slow * 1\n3 slow 1 3   # rank 1\n3 mark one two\n5 slow 1 1\n' > "$out/changes.txt"
printf '#!/bin/sh\necho "$WAVEPIPE_CHANGE_ITERATION $*" >> "%s"\n' "$out/hook.log" > "$out/hook.sh"
chmod +x "$out/hook.sh"
timeout 120 "$MPIEXEC" -n 2 "$WAVEPIPE" run --compute emulated --layers "$bert" --schedule 1f1b --micro-batches 2 \
    --steps 7 --changes "$out/changes.txt" --changes-hook "$out/hook.sh" --results "$out/changes.csv" \
    > "$out/changes.log" 2>&1
expect_status 0 $? "a run with --changes and a hook"
expect_status "3 mark one two" "$(cat "$out/hook.log" 2>/dev/null)" \
    "the hook ran once, before iteration 3, with the change's words and WAVEPIPE_CHANGE_ITERATION"
expect_status 4 "$(grep -c '^change before iteration' "$out/changes.log")" "a line per change"
expect_contains "$out/changes.log" "change before iteration 3: slow 1 3" "the slow change said"
# rows 2..7 hold iterations 0..5 (column 14 the iteration time)
read -r before slowed after < <(awk -F, 'NR == 4 { b = $14 } NR == 6 { s = $14 } NR == 8 { a = $14 }
    END { print b, s, a }' "$out/changes.csv")
if awk -v b="$before" -v s="$slowed" -v a="$after" 'BEGIN { exit !(s > 1.5 * b && a < 0.75 * s) }'; then
    pass "iterations 3-4 slowed and 5 on not: $before s, $slowed s, $after s"
else
    fail "iterations 3-4 slowed and 5 on not: $before s, $slowed s, $after s"
fi
printf '1 mark x\n' > "$out/fails.txt"
timeout 120 "$MPIEXEC" -n 2 "$WAVEPIPE" run --compute emulated --layers "$bert" --schedule 1f1b --micro-batches 2 \
    --steps 4 --changes "$out/fails.txt" --changes-hook /bin/false > "$out/fails.log" 2>&1
rc=$?
if [ "$rc" -eq 1 ] && grep -qF "fails.txt:1: the hook /bin/false failed on 'mark x' (exit status 1)" "$out/fails.log" &&
    [ "$(grep -c '^step' "$out/fails.log")" -eq 1 ]; then
    pass "a hook that fails ends the run after the iteration before its change, with the reason"
else
    fail "a hook that fails ends the run (exit $rc)"; sed 's/^/    | /' "$out/fails.log" | head -8
fi

# --- refused ----------------------------------------------------------------------
bad() { # DESCRIPTION TEXT P ARGS...
    local what=$1 text=$2 P=$3
    shift 3
    timeout 60 "$MPIEXEC" -n "$P" "$WAVEPIPE" run "$@" > "$out/err.log" 2>&1
    local rc=$?
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -qF -- "$text" "$out/err.log" && ! grep -q '^step' "$out/err.log"; then
        pass "$what: refused ($text)"
    else
        fail "$what (exit $rc)"; sed 's/^/    | /' "$out/err.log" | head -8
    fi
}
bad "emulated without a table" "--compute emulated needs --layers TABLE" 1 --compute emulated
bad "a table without emulated compute" "--layers goes with --compute emulated" 1 \
    --config "$WP_SRCDIR/jobs/models/gpt-tiny.cfg" --layers "$bert"
bad "checkpoints of an emulated run" "--compute emulated computes no model" 1 --compute emulated --layers "$bert" \
    --save "$out/ckpt"
bad "a missing table" "none.txt: No such file" 1 --compute emulated --layers "$out/none.txt"
bad "more stages than the table's layers" "has 53 layers, too few for 64 stages" 4 --compute emulated \
    --layers "$bert" --schedule hanayo --waves 8 --micro-batches 4
printf '0 slow 1 2\n4 slow 1 x\n' > "$out/badchanges.txt"
bad "a bad change" "badchanges.txt:2: the factor 'x' must be a number" 2 --compute emulated --layers "$bert" \
    --changes "$out/badchanges.txt"
printf '4 slow 1 2\n2 slow 1 1\n' > "$out/badchanges.txt"
bad "changes out of order" "badchanges.txt:2: iteration 2 comes before the one above's 4" 2 --compute emulated \
    --layers "$bert" --changes "$out/badchanges.txt"
printf '2 slow 3 2\n' > "$out/badchanges.txt"
bad "a change slowing a rank the run has not" "slows rank 3 of a run of 2 ranks" 2 --compute emulated \
    --layers "$bert" --changes "$out/badchanges.txt"
printf '2 rate 100mbit\n' > "$out/badchanges.txt"
bad "a change other than slow without a hook" "changes other than slow need --changes-hook" 2 --compute emulated \
    --layers "$bert" --changes "$out/badchanges.txt"
printf '2 slow 1 2\n' > "$out/badchanges.txt"
bad "a slowdown file and slow changes" "and so does --slowdown-file" 2 --compute emulated --layers "$bert" \
    --changes "$out/badchanges.txt" --slowdown-file "$out/slow.txt"
printf 'timestamp,schedule\n' > "$out/real.csv"
bad "emulated rows into a file of real rows" "real.csv:1: its header is not that of emulated compute rows" 2 \
    --compute emulated --layers "$bert" --micro-batches 2 --steps 1 --results "$out/real.csv"
finish
