#!/usr/bin/env bash
# `wavepipe schedule` and `wavepipe simulate` from the command line: the CSV
# headers campaigns rely on, validation, timelines as Chrome trace JSON and
# SVG, comparing every kind at once, a bandwidth trace, data-parallel copies
# of every kind (--data-parallel), and bad input.
. "$(dirname "$0")/lib.sh"
out=$(scratch_dir)

"$WAVEPIPE" schedule --kind 1f1b --ranks 2 --micro-batches 2 --format csv > "$out/s.csv"
expect_status 0 $? "schedule --format csv"
expect_status "rank,step,op,stage,microbatch,peer" "$(head -n 1 "$out/s.csv")" "schedule CSV header"
expect_contains "$out/s.csv" "0,0,F,0,0," "rank 0 starts with F of stage 0, micro-batch 0, empty peer"
expect_contains "$out/s.csv" "0,1,SEND_ACT,0,0,1" "then sends the activation to rank 1"
expect_contains "$out/s.csv" "1,0,RECV_ACT,1,0,0" "rank 1 receives it first"
expect_contains "$out/s.csv" ",STEP,0,," "optimizer steps have no micro-batch and no peer"
"$WAVEPIPE" schedule --kind hanayo --ranks 4 --micro-batches 8 --waves 2 --validate > "$out/h.txt"
expect_status 0 $? "schedule --validate of hanayo"
expect_contains "$out/h.txt" "valid:" "validation reported"
expect_contains "$out/h.txt" "hanayo: 4 ranks, 16 stages, 8 micro-batches" "hanayo with 2 waves has 2WP = 16 stages"

"$WAVEPIPE" simulate --kind hanayo --ranks 4 --micro-batches 8 --waves 2 --tf 1 --tb 2 \
    --svg "$out/t.svg" --trace "$out/t.json" > "$out/sim.txt"
expect_status 0 $? "simulate hanayo with a timeline"
expect_contains "$out/sim.txt" "bubble ratio" "simulate prints the bubble ratio"
expect_contains "$out/t.svg" "<svg" "SVG written"
expect_contains "$out/t.svg" "rank 3" "SVG has a row per rank"
if python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert any(e.get('ph')=='X' for e in d['traceEvents'])" "$out/t.json" 2>/dev/null; then
    pass "Chrome trace is JSON with complete events"
else
    fail "Chrome trace is not valid JSON with events"
fi

"$WAVEPIPE" simulate --kind all --ranks 4 --micro-batches 8 --k 2 --waves 2 --chunks 2 --tf 1 --tb 2 \
    --format csv > "$out/all.csv" 2> "$out/all.err"
expect_status 0 $? "simulate --kind all"
expect_status "kind,ranks,micro_batches,k,waves,chunks,makespan,bubble_ratio,peak_activations_max" \
    "$(head -n 1 "$out/all.csv")" "simulate CSV header"
expect_status 11 "$(wc -l < "$out/all.csv")" "one row per kind (10) after the header"
expect_contains "$out/all.csv" "1f1b,4,8,1,1,1,33,0.272727273,4" "1f1b row: makespan (M+P-1)(tf+tb) = 33"

printf 'time_s,src,dst,factor\n10,*,*,0.25\n' > "$out/bw.csv"
base=$("$WAVEPIPE" simulate --kind 1f1b --ranks 4 --micro-batches 8 --tc 0.5 --format csv | tail -n 1 | cut -d, -f7)
slow=$("$WAVEPIPE" simulate --kind 1f1b --ranks 4 --micro-batches 8 --tc 0.5 --bandwidth-trace "$out/bw.csv" --format csv | tail -n 1 | cut -d, -f7)
if awk -v a="$base" -v b="$slow" 'BEGIN { exit !(b > a) }'; then
    pass "a bandwidth drop at t=10 lengthens the makespan ($base -> $slow)"
else
    fail "bandwidth trace had no effect ($base -> $slow)"
fi

"$WAVEPIPE" simulate --kind 1f1b --ranks 16 --micro-batches 16 --cluster "$WP_SRCDIR/topology/dgx2-x4-ib-edr.cfg" \
    --message-bytes 64MiB --format csv > "$out/cl.csv"
expect_status 0 $? "simulate on a cluster description (NVSwitch inside, InfiniBand between)"

# the gradient allreduce of one stage on 16 ranks, 16 MB in all (16 x 1 MB shares):
# on DAPPLE's config A (2 x 8, 25 GB/s NVLink pairs, 25 Gbit/s between) a ring
# in each node, then a ring across the 2 nodes:
#   2*7*(1us + 16MB/8/25GB/s) + 2*1*(25us + 16MB/2/3.125GB/s) = 0.006304 s;
# on config B (16 x 1) one ring over the network: 2*15*(25us + 1MB/3.125GB/s) = 0.01035 s
for c in a:0.006304 b:0.01035; do
    "$WAVEPIPE" simulate --kind 1f1b --ranks 16 --micro-batches 1 --replicas 16 --tf 1e-9 --tb 1e-9 \
        --cluster "$WP_SRCDIR/topology/dapple-config-${c%%:*}.cfg" --gradient-bytes 1e6 --message-bytes 0 \
        > "$out/ar-${c%%:*}.txt" 2>&1
    expect_contains "$out/ar-${c%%:*}.txt" "makespan ${c#*:} s" "allreduce on config ${c%%:*}: ${c#*:} s by hand"
done

"$WAVEPIPE" schedule --kind interleaved --ranks 4 --micro-batches 6 --chunks 2 2> "$out/e1.txt"
expect_status 1 $? "interleaved with M not a multiple of P fails"
expect_contains "$out/e1.txt" "multiple of the ranks" "and says why"
"$WAVEPIPE" schedule --kind chimera --ranks 3 --micro-batches 6 2> "$out/e2.txt"
expect_status 1 $? "chimera with an odd P fails"
"$WAVEPIPE" schedule --kind pipedream --ranks 3 2> "$out/e3.txt"
expect_status 2 $? "unknown kind is a usage error"
expect_contains "$out/e3.txt" "unknown --kind 'pipedream'" "the kind is named"
"$WAVEPIPE" simulate --kind 1f1b --tf -1 2> "$out/e4.txt"
expect_status 2 $? "negative time is a usage error"
"$WAVEPIPE" schedule --kind 1f1b --ranks 4 --replicas 1,2 2> "$out/e5.txt"
expect_status 1 $? "replicas not adding up to P fail"
expect_contains "$out/e5.txt" "replicas add up to 3 ranks, but --ranks is 4" "the mismatch is named"
printf 'time_s,src,dst,factor\nsoon,*,*,2\n' > "$out/badbw.csv"
"$WAVEPIPE" simulate --kind 1f1b --bandwidth-trace "$out/badbw.csv" 2> "$out/e6.txt"
expect_status 1 $? "a bad bandwidth trace fails"
expect_contains "$out/e6.txt" "badbw.csv:2:" "with file:line"
# --order-search: a step count >= 0, a generator option (not with a file),
# and from the command line the climbed order: hanayo W=2 P=4 M=9 (not a
# multiple of P) below its generated makespan (test_schedule.c has the
# figures)
"$WAVEPIPE" simulate --kind hanayo --order-search -1 2> "$out/e7.txt"
expect_status 2 $? "a negative --order-search is a usage error"
expect_contains "$out/e7.txt" "--order-search '-1' must be an integer" "the option and value are named"
"$WAVEPIPE" schedule --kind 1f1b --ranks 2 --format csv > "$out/two.csv"
"$WAVEPIPE" simulate --schedule-file "$out/two.csv" --order-search 10 2> "$out/e8.txt"
expect_status 2 $? "--order-search with --schedule-file is a usage error"
expect_contains "$out/e8.txt" "--schedule-file FILE and --order-search" "the conflict is named"
makespan_of() { "$WAVEPIPE" simulate --kind hanayo --ranks 4 --micro-batches 9 --waves 2 "$@" --format csv |
                awk -F, 'NR == 2 { print $7 }'; }
generated=$(makespan_of)
searched=$(makespan_of --order-search 100000)
if awk -v m="$searched" -v g="$generated" 'BEGIN { exit !(m > 0 && g > 0 && m < g) }'; then
    pass "simulate --order-search 100000: hanayo W=2 P=4 M=9 at $searched, below the generated $generated"
else
    fail "simulate --order-search 100000: hanayo W=2 P=4 M=9 at '$searched', not below the generated '$generated'"
fi
# Chimera's two weight copies are summed at the step: with a layer table and
# no cluster that sum costs --tar (none by default), the table's bytes only
# splitting it into buckets (they were once priced at 1 s a byte)
tbl="$WP_SRCDIR/jobs/tables/gpt2-small-deep-2tflops.cfg"
c0=$("$WAVEPIPE" simulate --kind chimera --ranks 4 --micro-batches 4 --layers "$tbl" --format csv | awk -F, 'NR == 2 { print $7 }')
f0=$("$WAVEPIPE" simulate --kind 1f1b --ranks 4 --micro-batches 4 --layers "$tbl" --format csv | awk -F, 'NR == 2 { print $7 }')
c1=$("$WAVEPIPE" simulate --kind chimera --ranks 4 --micro-batches 4 --layers "$tbl" --tar 0.05 --format csv | awk -F, 'NR == 2 { print $7 }')
if awk -v c="$c0" -v f="$f0" -v t="$c1" 'BEGIN { exit !(c > 0 && c < f && t > c && t < c + 0.2) }'; then
    pass "chimera with --layers: $c0 s (1f1b $f0 s), $c1 s with --tar 0.05"
else
    fail "chimera with --layers: $c0 s (under 1f1b's $f0 s), $c1 s with --tar 0.05 (at most 0.2 s more)"
fi
# --data-parallel D: every kind in D copies of its pipeline on P/D ranks
"$WAVEPIPE" schedule --kind zb-v --ranks 8 --data-parallel 2 --micro-batches 4 --validate > "$out/dp.txt"
expect_status 0 $? "schedule zb-v in 2 data-parallel copies, validated"
expect_contains "$out/dp.txt" "zb-v: 8 ranks, 8 stages, 4 micro-batches, 2 data-parallel copies of 4 ranks" \
    "a copy's 2P = 8 stages, and the copies said"
expect_contains "$out/dp.txt" "rank 1: F0.0 SEND_ACT0.0>3" "rank 0's replica 1 (rank 1) sends to rank 1's (rank 3)"
"$WAVEPIPE" schedule --kind 1f1b --ranks 6 --replicas 2,2,2 --micro-batches 5 --format csv > "$out/rep.csv"
"$WAVEPIPE" schedule --kind 1f1b --ranks 6 --data-parallel 2 --micro-batches 5 --format csv > "$out/dp.csv"
if [ -s "$out/dp.csv" ] && cmp -s "$out/rep.csv" "$out/dp.csv"; then
    pass "1f1b --data-parallel 2 is --replicas 2,2,2, action for action"
else
    fail "1f1b --data-parallel 2 differs from --replicas 2,2,2"
fi
"$WAVEPIPE" simulate --kind all --ranks 4 --micro-batches 8 --waves 2 --chunks 2 --tf 1 --tb 2 --tw 1 \
    --format csv 2> /dev/null | cut -d, -f1,3- > "$out/one.csv"
"$WAVEPIPE" simulate --kind all --ranks 12 --data-parallel 3 --micro-batches 8 --waves 2 --chunks 2 --tf 1 --tb 2 \
    --tw 1 --format csv 2> /dev/null | cut -d, -f1,3- > "$out/three.csv"
if [ "$(wc -l < "$out/three.csv")" -eq 11 ] && cmp -s "$out/one.csv" "$out/three.csv"; then
    pass "simulate --kind all: every kind in 3 copies on 12 ranks has one pipeline's makespan, bubble and peak on 4"
else
    fail "simulate --kind all with --data-parallel 3 differs from one pipeline on 4 ranks"
    diff "$out/one.csv" "$out/three.csv" | head
fi
"$WAVEPIPE" schedule --kind hanayo --ranks 6 --data-parallel 4 --micro-batches 8 2> "$out/e9.txt"
expect_status 1 $? "--data-parallel 4 on 6 ranks fails"
expect_contains "$out/e9.txt" "--data-parallel 4 does not divide the 6 ranks into pipeline copies" "and says why"
"$WAVEPIPE" simulate --kind chimera --ranks 6 --data-parallel 2 --micro-batches 4 2> "$out/e10.txt"
expect_status 1 $? "chimera in copies of 3 ranks fails"
expect_contains "$out/e10.txt" "chimera in 2 data-parallel copies of 3 ranks: chimera needs an even number of ranks" \
    "and says it of a copy"
"$WAVEPIPE" schedule --kind 1f1b --data-parallel 0 2> "$out/e11.txt"
expect_status 2 $? "--data-parallel 0 is a usage error"
"$WAVEPIPE" simulate --schedule-file "$out/two.csv" --data-parallel 2 2> "$out/e12.txt"
expect_status 2 $? "--data-parallel with --schedule-file is a usage error"
expect_contains "$out/e12.txt" "--schedule-file FILE and --data-parallel" "the conflict is named"
"$WAVEPIPE" schedule --help > "$out/help.txt"; expect_status 0 $? "schedule --help"
expect_contains "$out/help.txt" "--data-parallel D" "schedule --help documents --data-parallel"
"$WAVEPIPE" simulate --help > "$out/help2.txt"; expect_status 0 $? "simulate --help"
expect_contains "$out/help2.txt" "kind,ranks,micro_batches,k,waves,chunks,makespan,bubble_ratio,peak_activations_max" \
    "simulate --help documents the CSV columns"
finish
