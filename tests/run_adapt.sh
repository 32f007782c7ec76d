#!/usr/bin/env bash
# `wavepipe run --adapt k|partition|both` (Ada-Grouper's online tuning of k,
# AutoPipe's live re-partitioning) with real compute on local ranks. A
# switch or a move changes no parameter:
#  - switches between plans of the same micro-batch size (1F1B -> 2F2B ->
#    4F4B -> 1F1B, replayed from a decision log after iterations 1, 3, 5)
#    keep every stage's backward order, so losses and weights are bit for
#    bit those of the static run;
#  - switches that change the micro-batch size (4 -> 2 -> 1 -> 4
#    sequences) sum the same gradients in another order: losses within 1e-6
#    relative, weights within 2e-4 absolute (as tests/run_equivalence.sh),
#    also with data-parallel copies (--stages 2 on 4 ranks);
#  - blocks moved between neighbours (their parameters and AdamW moments
#    sent over MPI) compute the same rows with the same kernels: bit for
#    bit; to and from a replicated stage within summation order; moves and
#    switches of k together;
#  - the tuner moves blocks off a rank slowed 3x (--slowdown-file) at its
#    first decision, with the static run's losses;
#  - a checkpoint written after switches or moves records the partition and
#    resumes from it (or, on another stage count, splits evenly) to the
#    uninterrupted run's losses.
# The rows name the plan each iteration ran; the tuner decides every N
# iterations with one line each, logs every decision, and its candidates
# hold no more activations than the start plan. With --trace every
# decision is an instant event, in order, before the traced iteration; without
# --adapt the trace is the iteration alone. Bad logs and options get one
# clear error.
. "$(dirname "$0")/lib.sh"
out=$(scratch_dir)
cfg="$WP_SRCDIR/jobs/models/gpt-tiny.cfg"
header="iteration,adapt,from_k,from_micro_batch,from_partition,to_k,to_micro_batch,to_partition,predicted_from_s,predicted_to_s,switched,reasons"

run() { # run NAME P ARGS...: 8 steps of 16 sequences, saved into $out/NAME
    local name=$1 P=$2
    shift 2
    timeout 300 "$MPIEXEC" -n "$P" "$WAVEPIPE" run --config "$cfg" --steps 8 --global-batch 16 \
        --results "$out/$name.csv" --save "$out/$name" "$@" > "$out/$name.log" 2>&1
    local rc=$?
    grep '^step' "$out/$name.log" | awk '{print $4}' > "$out/$name.loss"
    return $rc
}

same() { # same REF NAME WHAT: bit for bit (every tensor; the metadata records the partition)
    if cmp -s "$out/$1.loss" "$out/$2.loss" &&
       python3 "$WP_SRCDIR/tests/st_compare.py" "$out/$1/model.safetensors" "$out/$2/model.safetensors" > /dev/null; then
        pass "$3: losses and weights bit for bit the static run's"
    else
        fail "$3: not bit for bit ($(tr '\n' ' ' < "$out/$2.loss") against $(tr '\n' ' ' < "$out/$1.loss"))"
    fi
}

close() { # close REF NAME WHAT: within summation order
    local cmp
    cmp=$(python3 "$WP_SRCDIR/tests/st_compare.py" --atol 2e-4 "$out/$1/model.safetensors" \
          "$out/$2/model.safetensors")
    if [ $? -eq 0 ] && [ -s "$out/$2.loss" ] && [ "$(wc -l < "$out/$1.loss")" = "$(wc -l < "$out/$2.loss")" ] &&
       awk 'NR == FNR { a[FNR] = $1; next } { d = $1 - a[FNR]; if (d < 0) d = -d; if (d > 1e-6 * a[FNR]) exit 1 }' \
           "$out/$1.loss" "$out/$2.loss"; then
        pass "$3: losses and weights the static run's within summation order ($cmp)"
    else
        fail "$3: beyond tolerance ($cmp; $(tr '\n' ' ' < "$out/$2.loss") against $(tr '\n' ' ' < "$out/$1.loss"))"
    fi
}

trace_decisions() { # trace_decisions NAME WHAT: $out/NAME.json has one instant event per decision line of NAME.log
    if python3 - "$out/$1.json" "$out/$1.log" <<'PY'
import json, re, sys
trace = json.load(open(sys.argv[1]))
events = trace["traceEvents"]
marks = [e for e in events if e.get("ph") == "i"]
said = [(m.group(1), int(m.group(2)), int(m.group(3) != "stay at"), m.group(4))
        for m in re.finditer(r"^adapt (k|partition) after iteration (\d+): (switch to|move to|stay at) .*?\): (.*)$",
                             open(sys.argv[2]).read(), re.M)]
got = [(e["args"]["adapt"], e["args"]["iteration"], e["args"]["switched"], e["args"]["reasons"]) for e in marks]
ts = [e["ts"] for e in marks]
track = [e["tid"] for e in events if e.get("ph") == "M" and e["args"]["name"] == "adapt decisions"]
traced_at = 1e6 * trace["otherData"]["traced_iteration_start_s"]
ok = len(said) > 0 and got == said and all(e["ts"] >= 0 for e in events if "ts" in e)
ok = ok and all(b >= a and (b > a or m["args"]["iteration"] == n["args"]["iteration"])
                for a, b, m, n in zip(ts, ts[1:], marks, marks[1:]))
ok = ok and all(e["s"] == "g" and [e["tid"]] == track for e in marks) and max(ts) < traced_at
ok = ok and min(e["ts"] for e in events if e.get("ph") == "X") >= traced_at - 1
if not ok:
    print("lines", said, "events", got, "ts", ts, "iteration at", traced_at)
sys.exit(0 if ok else 1)
PY
    then
        pass "$2: --trace has an instant event per decision line (its iteration, switch and reasons), in order, before the traced iteration"
    else
        fail "$2: the trace's decision events"
    fi
}

plans_of() { # the k:micro_batches of each row
    awk -F, 'NR > 1 { printf "%s%s:%s", sep, $8, $10; sep = " " }' "$1"
}

# a decision log of three switches, replayed
decisions() { # decisions FILE k|partition FROM TO...: switches after iterations 1, 3, 5 (K:B, or n0:n1:...)
    local f=$1 what=$2 it=1 from=$3
    shift 3
    echo "$header" > "$f"
    for to in "$@"; do
        if [ "$what" = k ]; then
            echo "$it,k,${from%:*},${from#*:},4:4:4:4,${to%:*},${to#*:},4:4:4:4,0.1,0.09,1,by hand"
        else
            echo "$it,partition,1,4,$from,1,4,$to,0.1,0.09,1,by hand"
        fi >> "$f"
        from=$to
        it=$((it + 2))
    done
}

# same micro-batch size: 16 micro-batches of 1 sequence
run static 4 --schedule 1f1b --micro-batches 16 || { fail "static run"; tail -5 "$out/static.log"; }
decisions "$out/same_b.decisions" k 1:1 2:1 4:1 1:1
run same_b 4 --schedule 1f1b --micro-batches 16 --adapt k --adapt-candidates 2:1,4:1 --adapt-replay "$out/same_b.decisions"
expect_status 0 $? "adaptive run replaying switches between 1F1B, 2F2B and 4F4B"
same static same_b "k switched 1 -> 2 -> 4 -> 1 at micro-batch size 1"
plans=$(plans_of "$out/same_b.csv")
[ "$plans" = "1:16 1:16 2:16 2:16 4:16 4:16 1:16 1:16" ]
expect_status 0 $? "the rows name the plan each iteration ran ($plans)"
n=$(grep -c '^adapt k after iteration [135]: switch to' "$out/same_b.log")
[ "$n" = 3 ]
expect_status 0 $? "three switch lines, after iterations 1, 3 and 5 ($n)"

# other micro-batch sizes: 4 micro-batches of 4, then 8 of 2, 16 of 1, back
run static4 4 --schedule 1f1b --micro-batches 4 --trace "$out/static4.json" || fail "static run, 4 micro-batches"
python3 -c 'import json, sys; t = json.load(open(sys.argv[1]))
sys.exit(any(e.get("ph") == "i" for e in t["traceEvents"]) or "traced_iteration" in t["otherData"] or
         min(e["ts"] for e in t["traceEvents"] if "ts" in e) != 0)' "$out/static4.json"
expect_status 0 $? "without --adapt the trace has no decision events and starts at the iteration"
decisions "$out/other_b.decisions" k 1:4 2:2 4:1 1:4
run other_b 4 --schedule 1f1b --micro-batches 4 --adapt k --adapt-candidates 2:2,4:1 --adapt-replay "$out/other_b.decisions"
expect_status 0 $? "adaptive run replaying switches of micro-batch size 4 -> 2 -> 1 -> 4"
close static4 other_b "micro-batches of 4, 2, 1, 4 sequences"
plans=$(plans_of "$out/other_b.csv")
[ "$plans" = "1:4 1:4 2:8 2:8 4:16 4:16 1:4 1:4" ]
expect_status 0 $? "the rows name the plan each iteration ran ($plans)"

# data-parallel copies: two pipelines of 2 stages, gradients allreduced
run static_dp 4 --schedule 1f1b --stages 2 --micro-batches 4 || fail "static run, --stages 2"
decisions "$out/dp.decisions" k 1:4 2:2 4:2 1:4
run dp 4 --schedule 1f1b --stages 2 --micro-batches 4 --adapt k --adapt-candidates 2:2,4:2 \
    --adapt-replay "$out/dp.decisions"
expect_status 0 $? "adaptive run with 2 data-parallel copies"
close static_dp dp "two pipeline copies, micro-batches of 4, 2, 2, 4"

# a checkpoint after the switches resumes statically on 2 ranks
decisions "$out/ck.decisions" k 1:4 2:2 4:1
timeout 300 "$MPIEXEC" -n 4 "$WAVEPIPE" run --config "$cfg" --steps 6 --global-batch 16 --schedule 1f1b \
    --micro-batches 4 --adapt k --adapt-candidates 2:2,4:1 --adapt-replay "$out/ck.decisions" --save "$out/ck" \
    > "$out/ck.log.out" 2>&1
expect_status 0 $? "6 adaptive steps saved after two switches"
timeout 300 "$MPIEXEC" -n 2 "$WAVEPIPE" run --config "$cfg" --steps 8 --global-batch 16 --schedule 1f1b \
    --micro-batches 4 --resume "$out/ck" --save "$out/resumed" > "$out/resumed.log" 2>&1
expect_status 0 $? "resumed on 2 ranks, static"
{ grep '^step' "$out/ck.log.out"; grep '^step' "$out/resumed.log"; } | awk '{print $4}' > "$out/resumed.loss"
close static4 resumed "adaptive 6 steps, resumed statically on 2 ranks for 2"

# the tuner deciding by itself: a line every 3 iterations, each logged
run tuned 4 --schedule 1f1b --micro-batches 4 --adapt k --adapt-every 3 --adapt-log "$out/tuned_log.csv" \
    --trace "$out/tuned.json"
expect_status 0 $? "adaptive run, tuning every 3 iterations"
trace_decisions tuned "k tuned"
n=$(grep -c '^adapt k after iteration [25]: \(switch to\|stay at\) k=[0-9]* .*predicted k=1 b=4 ' "$out/tuned.log")
[ "$n" = 2 ]
expect_status 0 $? "a decision line after iterations 2 and 5, every candidate predicted ($n)"
head -n 1 "$out/tuned_log.csv" | grep -qx "$header" && [ "$(wc -l < "$out/tuned_log.csv")" = 3 ]
expect_status 0 $? "--adapt-log has its header and one row per decision"
# every switch logged is the plan the next rows ran
bad=$(awk -F, 'NR == FNR { if (FNR > 1 && $11 == 1) to[$1 + 1] = $6 ":" (16 / $7); next }
    FNR > 1 { it = $13; if (it in to) cur = to[it]; else if (cur == "") cur = "1:4"
              if ($8 ":" $10 != cur) print "iteration " it " ran " $8 ":" $10 " not " cur }' \
    "$out/tuned_log.csv" "$out/tuned.csv")
[ -z "$bad" ]
expect_status 0 $? "the rows follow the logged switches ${bad:+($bad)}"
close static4 tuned "tuned by itself, losses and weights"
# the candidates: the memory-limit curve of 16 sequences and 4 stages
expect_contains "$out/tuned.log" "candidates k=1 b=4 (M=4) [start] k=2 b=2 (M=8) k=3 b=1 (M=16) k=4 b=1 (M=16)" \
    "candidates on the memory-limit curve, no rank holding more than 1F1B's 16 sequences"

# --adapt partition: moves replayed (blocks per stage 4:4:4:4 -> 2:6:5:3 -> 7:3:3:3 -> 4:4:4:4 after
# iterations 1, 3, 5): the moved blocks compute the same rows with the same
# kernels, so losses and weights are bit for bit the static run's
decisions "$out/mv.decisions" partition 4:4:4:4 2:6:5:3 7:3:3:3 4:4:4:4
run moved 4 --schedule 1f1b --micro-batches 4 --adapt partition --adapt-replay "$out/mv.decisions"
expect_status 0 $? "adaptive run replaying three moves of blocks between neighbours"
same static4 moved "blocks moved 4:4:4:4 -> 2:6:5:3 -> 7:3:3:3 -> 4:4:4:4"
n=$(grep -c '^adapt partition: moved [0-9.]* MiB of parameters and AdamW moments between ranks' "$out/moved.log")
[ "$n" = 3 ]
expect_status 0 $? "each move says what it moved and how long it took ($n)"

# the results rows say what each iteration ran on: the blocks per stage
# before the move after it, that move's pause, and per stage the measured
# compute (7 blocks take longer than 3)
if python3 - "$out/moved.csv" "$out/static4.csv" <<'PY'
import csv, sys
moved = list(csv.DictReader(open(sys.argv[1])))
static = list(csv.DictReader(open(sys.argv[2])))
ran = ["4:4:4:4"] * 2 + ["2:6:5:3"] * 2 + ["7:3:3:3"] * 2 + ["4:4:4:4"] * 2
ok = [r["partition"] for r in moved] == ran and all(r["adapt"] == "partition" for r in moved)
ok = ok and all((float(r["pause_s"]) > 0) == (r["iteration"] in ("1", "3", "5")) for r in moved)
ok = ok and all(r["adapt"] == "none" and r["partition"] == "4:4:4:4" and float(r["pause_s"]) == 0 for r in static)
for r in moved + static:
    c = [float(x) for x in r["stage_compute_s"].split(":")]
    l = [float(x) for x in r["link_bandwidth_Bps"].split(":")]
    ok = ok and len(c) == 4 and min(c) > 0 and len(l) == 3 and min(l) >= 0
heavy = sum(float(r["stage_compute_s"].split(":")[0]) / float(r["stage_compute_s"].split(":")[1])
            for r in moved if r["partition"] == "7:3:3:3")
ok = ok and heavy > 2 * 1.3
if not ok:
    for r in moved:
        print(r["iteration"], r["adapt"], r["partition"], r["pause_s"], r["stage_compute_s"], r["link_bandwidth_Bps"])
sys.exit(0 if ok else 1)
PY
then
    pass "rows: adapt, the partition each iteration ran, a pause after iterations 1, 3, 5 only, compute per stage"
else
    fail "the adapt columns of the results rows"
fi

# replicated stage 0 (two replicas), 3 stages: both replicas give and take;
# a block that leaves the replicated stage sums its gradient in one pass
# instead of two halves and an allreduce: within summation order
run static_r 4 --schedule 1f1b --replicas 2,1,1 --micro-batches 4 || fail "static run, replicas 2,1,1"
decisions "$out/mvr.decisions" partition 6:5:5 3:8:5 9:2:5 5:5:6
run moved_r 4 --schedule 1f1b --replicas 2,1,1 --micro-batches 4 --adapt partition --adapt-replay "$out/mvr.decisions"
expect_status 0 $? "moves to and from a stage of two replicas"
close static_r moved_r "replicas 2,1,1, blocks 6:5:5 -> 3:8:5 -> 9:2:5 -> 5:5:6"

# two data-parallel copies of a 2-stage pipeline: both copies move alike
decisions "$out/mvdp.decisions" partition 8:8 5:11 12:4
run moved_dp 4 --schedule 1f1b --stages 2 --micro-batches 4 --adapt partition --adapt-replay "$out/mvdp.decisions"
expect_status 0 $? "moves in two data-parallel pipeline copies"
same static_dp moved_dp "--stages 2, blocks 8:8 -> 5:11 -> 12:4"

# both: a move and switches of k in one run (the log's name, in the
# reasons "replayed from ...", has a quote and a backslash for the trace's JSON)
both_log="$out/both\"q\\.decisions"
echo "$header" > "$both_log"
echo "1,partition,1,4,4:4:4:4,1,4,3:5:4:4,0.1,0.09,1,by hand" >> "$both_log"
echo "3,k,1,4,3:5:4:4,2,2,3:5:4:4,0.1,0.09,1,by hand" >> "$both_log"
echo "5,partition,2,2,3:5:4:4,2,2,4:4:3:5,0.1,0.09,1,by hand" >> "$both_log"
run both 4 --schedule 1f1b --micro-batches 4 --adapt both --adapt-candidates 2:2 --adapt-replay "$both_log" \
    --trace "$out/both.json"
expect_status 0 $? "--adapt both replaying a move, a switch of k and a move"
trace_decisions both "replayed move, switch and move"
close static4 both "moves and a switch of micro-batch size"

# the tuner moves blocks off a rank slowed 3x (real compute), losses unchanged
echo "2 3" > "$out/slow.txt"
run slowed 4 --schedule 1f1b --micro-batches 4 --slowdown-file "$out/slow.txt" --adapt partition --adapt-every 3 \
    --adapt-log "$out/slowed_log.csv" --trace "$out/slowed.json"
expect_status 0 $? "adaptive run with rank 2 slowed 3x"
trace_decisions slowed "partition tuned"
line=$(grep -m1 '^adapt partition after iteration 2: move to' "$out/slowed.log")
to=$(echo "$line" | sed -n 's/.*move to \([0-9:]*\) .*/\1/p')
[ -n "$to" ] && [ "$(echo "$to" | cut -d: -f3)" -lt 4 ]
expect_status 0 $? "after iteration 2 (N = 3) the tuner moves blocks off stage 2 ($to)"
expect_contains "$out/slowed.log" "speed factors F" "the decision gives its reasons"
same static4 slowed "blocks moved by the tuner"
awk -F, 'NR > 1 && $2 == "partition" && $11 == 1 { n++ } END { exit n >= 1 ? 0 : 1 }' "$out/slowed_log.csv"
expect_status 0 $? "the move is in --adapt-log"

# a checkpoint after moves records the partition; resuming uses it (same
# stage count) or splits evenly (another), and the losses go on unchanged
decisions "$out/ckp.decisions" partition 4:4:4:4 2:6:5:3 6:2:5:3
timeout 300 "$MPIEXEC" -n 4 "$WAVEPIPE" run --config "$cfg" --steps 6 --global-batch 16 --schedule 1f1b \
    --micro-batches 4 --adapt partition --adapt-replay "$out/ckp.decisions" --save "$out/ckp" > "$out/ckp.out" 2>&1
expect_status 0 $? "6 steps with two moves, saved"
timeout 300 "$MPIEXEC" -n 4 "$WAVEPIPE" run --config "$cfg" --steps 8 --global-batch 16 --schedule 1f1b \
    --micro-batches 4 --resume "$out/ckp" --save "$out/ckp_same" > "$out/ckp_same.log" 2>&1
expect_status 0 $? "resumed on 4 ranks"
expect_contains "$out/ckp_same.log" "resuming with the partition 6:2:5:3 recorded" "with the recorded partition"
{ grep '^step' "$out/ckp.out"; grep '^step' "$out/ckp_same.log"; } | awk '{print $4}' > "$out/ckp_same.loss"
same static4 ckp_same "moved, saved and resumed on the recorded partition"
timeout 300 "$MPIEXEC" -n 2 "$WAVEPIPE" run --config "$cfg" --steps 8 --global-batch 16 --schedule 1f1b \
    --micro-batches 4 --resume "$out/ckp" --save "$out/ckp_two" > "$out/ckp_two.log" 2>&1
expect_status 0 $? "resumed on 2 ranks"
expect_contains "$out/ckp_two.log" "is of 4 stages, this run has 2: blocks split evenly" "says the partition does not fit"
{ grep '^step' "$out/ckp.out"; grep '^step' "$out/ckp_two.log"; } | awk '{print $4}' > "$out/ckp_two.loss"
close static4 ckp_two "moved, saved and resumed on 2 ranks"

# errors
timeout 60 "$MPIEXEC" -n 4 "$WAVEPIPE" run --config "$cfg" --steps 2 --adapt k --adapt-replay "$out/static.csv" \
    > "$out/bad_replay.log" 2>&1
expect_status 1 $? "a replay file that is not a decision log is refused"
expect_contains "$out/bad_replay.log" "static.csv:1: not a decision log" "with file:line"
decisions "$out/far.decisions" k 1:4 3:3
timeout 60 "$MPIEXEC" -n 4 "$WAVEPIPE" run --config "$cfg" --steps 2 --global-batch 16 --micro-batches 4 --adapt k \
    --adapt-replay "$out/far.decisions" > "$out/far.out" 2>&1
expect_status 1 $? "a replayed switch to a plan that is not a candidate is refused"
expect_contains "$out/far.out" "k=3 with micro-batches of 3, which is not one of this run's candidates" "and says which"
timeout 60 "$MPIEXEC" -n 4 "$WAVEPIPE" run --config "$cfg" --steps 2 --global-batch 16 --micro-batches 4 \
    --schedule interleaved --chunks 2 --adapt partition > "$out/inter.out" 2>&1
expect_status 1 $? "--adapt partition with two stages a rank is refused"
expect_contains "$out/inter.out" "moves layers between ranks that hold one stage each" "and says why"
"$WAVEPIPE" run --config "$cfg" --adapt-log x.csv > "$out/u1.log" 2>&1
expect_status 2 $? "--adapt-log without --adapt is a usage error"
"$WAVEPIPE" run --config "$cfg" --adapt k --schedule hanayo > "$out/u2.log" 2>&1
expect_status 2 $? "--adapt k with hanayo is a usage error"
expect_contains "$out/u2.log" "tunes 1f1b and kfkb runs, not hanayo" "and says why"
"$WAVEPIPE" run --config "$cfg" --adapt k --adapt-candidates 2:x > "$out/u3.log" 2>&1
expect_status 2 $? "a malformed --adapt-candidates is a usage error"
timeout 60 "$MPIEXEC" -n 4 "$WAVEPIPE" run --config "$cfg" --steps 1 --global-batch 16 --adapt k \
    --adapt-candidates 2:3 > "$out/u4.log" 2>&1
expect_status 1 $? "a candidate whose micro-batch does not divide the global batch is refused"
expect_contains "$out/u4.log" "candidate k=2 with micro-batches of 3" "and named"
finish
