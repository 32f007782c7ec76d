#!/usr/bin/env bash
# `wavepipe run --measure FILE.csv`: what every iteration measured, agreed
# over the ranks. On 4 local ranks with emulated compute (BERT-48's DAPPLE
# profile): every pass and message counted once per micro-batch, messages
# of one boundary the same size both ways, at least one message of each
# timed (its receive posted before its send), times and bandwidths
# positive; a
# slowdown file that makes rank 2 twice as slow shows as stage 2's passes
# taking twice as long, and only those; a replicated stage's allreduce is
# measured on both of its holders (real compute); the trace shows every
# message on the ranks' common timeline; rows go only into a file with the
# measurement header, and a refused file is left as it was.
. "$(dirname "$0")/lib.sh"
out=$(scratch_dir)
bert="$WP_SRCDIR/profiles/dapple-v100/bert-48-pbs-2.txt"

run_emu() { # NAME ARGS...
    local name=$1
    shift
    timeout 120 "$MPIEXEC" -n 4 "$WAVEPIPE" run --compute emulated --layers "$bert" --schedule 1f1b \
        --micro-batches 4 --steps 3 --measure "$out/$name.csv" "$@" > "$out/$name.log" 2>&1
}

run_emu plain --results "$out/plain_rows.csv"
expect_status 0 $? "4 ranks, emulated, --measure"
# what,stage -> count in every iteration; times, bytes, bandwidth positive
awk -F, 'NR == 1 { if ($0 != "iteration,what,stage,count,mean_s,bytes,timed,bandwidth_Bps") bad = "header " $0; next }
    { n[$1]++; if ($4 != 4) bad = bad " count " $0; if ($5 <= 0) bad = bad " time " $0 }
    $2 == "activation" || $2 == "gradient" {
        if ($6 <= 0 || $7 < 1 || $7 > $4 || $8 <= 0) bad = bad " link " $0
        size[$1 "," $3 "," $2] = $6 }
    END {
        for (it = 0; it < 3; it++) {
            if (n[it] != 8 + 6) bad = bad " iteration " it " has " n[it] " rows"
            for (b = 1; b <= 3; b++)
                if (size[it "," b ",activation"] != size[it "," b ",gradient"]) bad = bad " sizes at " b
        }
        if (bad != "") { print bad; exit 1 }
    }' "$out/plain.csv" > "$out/plain.check"
if [ $? -eq 0 ]; then
    pass "F and B of 4 stages and both directions of 3 boundaries, 4 each per iteration, sizes equal both ways, some timed"
else
    fail "measurement rows: $(cat "$out/plain.check")"
fi

# the results rows carry the same measurements: per stage F + B + W of one
# micro-batch, per boundary the slower timed direction's bandwidth
if python3 - "$out/plain.csv" "$out/plain_rows.csv" <<'PY'
import csv, sys
meas = list(csv.DictReader(open(sys.argv[1])))
rows = list(csv.DictReader(open(sys.argv[2])))
def near(a, b):
    return abs(a - b) <= 1e-5 * max(abs(a), abs(b), 1e-12)
ok = len(rows) == 3
for r in rows:
    it = r["iteration"]
    mine = [m for m in meas if m["iteration"] == it]
    compute = [sum(float(m["mean_s"]) for m in mine if m["what"] in ("F", "B", "W") and int(m["stage"]) == st)
               for st in range(4)]
    links = []
    for b in range(1, 4):
        timed = [float(m["bandwidth_Bps"]) for m in mine
                 if m["what"] in ("activation", "gradient") and int(m["stage"]) == b and float(m["timed"]) > 0]
        links.append(min(timed) if timed else 0.0)
    got_c = [float(x) for x in r["stage_compute_s"].split(":")]
    got_l = [float(x) for x in r["link_bandwidth_Bps"].split(":")]
    ok = ok and r["adapt"] == "none" and float(r["pause_s"]) == 0 and len(r["partition"].split(":")) == 4
    ok = ok and len(got_c) == 4 and all(near(a, b) and a > 0 for a, b in zip(got_c, compute))
    ok = ok and len(got_l) == 3 and all(near(a, b) for a, b in zip(got_l, links))
    if not ok:
        print("iteration", it, r["stage_compute_s"], compute, r["link_bandwidth_Bps"], links)
        break
sys.exit(0 if ok else 1)
PY
then
    pass "each results row's stage_compute_s and link_bandwidth_Bps are the --measure rows' F+B+W and slower direction"
else
    fail "the results rows' measurement columns against --measure"
fi

# the measured trace draws every message of the last iteration, from its
# send's post to its receive seen complete, after the pass that made it
# (one timeline)
run_emu traced --trace "$out/traced.json"
expect_status 0 $? "with --trace"
if python3 - "$out/traced.json" <<'PY'
import json, sys
ev = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "X"]
f_end = {(e["args"]["stage"], e["args"]["microbatch"]): e["ts"] + e["dur"] for e in ev if e["cat"] == "F"}
acts = [e for e in ev if e["cat"] == "SEND_ACT"]
grads = [e for e in ev if e["cat"] == "SEND_GRAD"]
ok = len(acts) == 12 and len(grads) == 12 and all(e["dur"] >= 0 for e in acts + grads)
# an activation leaves after its forward (clock readings 1 us apart at most)
ok = ok and all(e["ts"] >= f_end[(e["args"]["stage"], e["args"]["microbatch"])] - 1 for e in acts)
sys.exit(0 if ok else 1)
PY
then
    pass "the trace has the 12 activations and 12 gradients, each after the forward that made it"
else
    fail "messages in the measured trace"
fi

# stage 2 (rank 2) twice as slow: its F and B means double, the others' stay
printf '2 2.0\n' > "$out/slow.txt"
run_emu slow --slowdown-file "$out/slow.txt"
expect_status 0 $? "with rank 2 slowed down"
ratios=$(awk -F, 'FNR == 1 { f++; next } $1 == 2 && ($2 == "F" || $2 == "B") { t[f, $2 "," $3] = $5 }
    END { for (k in t) { split(k, a, SUBSEP); if (a[1] == 1) printf "%s %.3f\n", a[2], t[2, a[2]] / t[1, a[2]] } }' \
    "$out/plain.csv" "$out/slow.csv" | sort)
echo "$ratios" | sed 's/^/    slowed \/ plain: /'
if echo "$ratios" | awk '{ slow = ($1 ~ /,2$/); if (slow && ($2 < 1.8 || $2 > 2.3)) bad = 1; if (!slow && ($2 < 0.85 || $2 > 1.2)) bad = 1 }
    END { exit !(NR == 8 && !bad) }'; then
    pass "stage 2's passes measured 1.8-2.3x as long, the others within 0.85-1.2x"
else
    fail "the slowdown of rank 2 as measured"
fi

# a replicated stage: both holders' allreduces counted (real compute)
timeout 120 "$MPIEXEC" -n 4 "$WAVEPIPE" run --config "$WP_SRCDIR/jobs/models/gpt-tiny.cfg" --schedule 1f1b \
    --replicas 2,1,1 --micro-batches 2 --steps 2 --measure "$out/rep.csv" > "$out/rep.log" 2>&1
expect_status 0 $? "replicas 2,1,1 with --measure"
if awk -F, '$2 == "allreduce" { n++; if ($3 != 0 || $4 != 2 || $5 <= 0) bad = 1 } END { exit !(n == 2 && !bad) }' \
    "$out/rep.csv"; then
    pass "stage 0's allreduce measured on its 2 holders in each of 2 iterations"
else
    fail "allreduce rows"; sed 's/^/    | /' "$out/rep.csv" | head
fi

# refused: a file with another header, left as it was
printf 'timestamp,schedule\nx,y\n' > "$out/other.csv"
cp "$out/other.csv" "$out/other.before"
run_emu other-run --measure "$out/other.csv"
rc=$?
if [ "$rc" -ne 0 ] && grep -qF "other.csv:1: its header is not that of measurement rows; give --measure another file" \
    "$out/other-run.log" && cmp -s "$out/other.csv" "$out/other.before" && ! grep -q '^step' "$out/other-run.log"; then
    pass "a file of other rows refused before training (exit $rc), left unchanged"
else
    fail "a file of other rows (exit $rc)"; sed 's/^/    | /' "$out/other-run.log" | head -5
fi
finish
