#!/usr/bin/env bash
# `--schedule-file` from the command line: a schedule written as PyTorch's
# compute-only CSV (`wavepipe schedule --format torch-csv`) simulates to the
# makespan of the kind it came from and trains on local MPI ranks with the very
# losses and weights of `--schedule KIND` (1f1b, zb-h1's split backward,
# hanayo's several stages per rank); wavepipe's own CSV reads back to the same
# CSV; and the usage and file errors.
. "$(dirname "$0")/lib.sh"
out=$(scratch_dir)
cfg="$WP_SRCDIR/jobs/models/gpt-tiny.cfg"

"$WAVEPIPE" schedule --kind 1f1b --ranks 2 --micro-batches 4 --format torch-csv > "$out/f.csv"
expect_status 0 $? "schedule --format torch-csv"
expect_status "0F0,0F1,,0B0,0F2,0B1,0F3,0B2,,0B3" "$(head -n 1 "$out/f.csv")" \
    "rank 0's row: PyTorch's cells on the lock-step grid"
expect_status 2 "$(wc -l < "$out/f.csv")" "one row per rank, no header"

makespan() { "$WAVEPIPE" simulate "$@" --tf 1 --tb 2 --format csv | tail -n 1 | cut -d, -f7; }
from_file=$(makespan --schedule-file "$out/f.csv")
generated=$(makespan --kind 1f1b --ranks 2 --micro-batches 4)
expect_status "$generated" "$from_file" "simulate --schedule-file: the makespan of --kind 1f1b ($generated)"
"$WAVEPIPE" simulate --schedule-file "$out/f.csv" --tf 1 --tb 2 > "$out/sim.txt"
expect_contains "$out/sim.txt" "file         P=2 M=4 stages=2" "the file's ranks, micro-batches and stages, kind file"

"$WAVEPIPE" schedule --kind hanayo --ranks 4 --micro-batches 8 --waves 2 --format csv > "$out/w.csv"
"$WAVEPIPE" schedule --schedule-file "$out/w.csv" --format csv > "$out/w2.csv"
if cmp -s "$out/w.csv" "$out/w2.csv"; then pass "wavepipe's CSV of hanayo reads back to the same CSV"
else fail "wavepipe's CSV of hanayo changes on the way back"; diff "$out/w.csv" "$out/w2.csv" | head; fi
"$WAVEPIPE" schedule --schedule-file "$out/f.csv" --validate > "$out/v.txt"
expect_status 0 $? "schedule --schedule-file --validate"
expect_contains "$out/v.txt" "valid: " "validation reports its peaks"

# training: the same losses and weights as the generated schedule, bit for bit
train() { # train NAME P ARGS...
    local name=$1 P=$2
    shift 2
    "$MPIEXEC" -n "$P" "$WAVEPIPE" run --config "$cfg" --steps 2 --save "$out/$name" "$@" > "$out/$name.log" 2>&1
    local rc=$?
    grep "^step" "$out/$name.log" | awk "{print \$4}" | tr -d , > "$out/$name.loss"
    return $rc
}
same_training() { # same_training KIND P GENERATOR-OPTIONS...
    local kind=$1 P=$2
    shift 2
    "$WAVEPIPE" schedule --kind "$kind" --ranks "$P" --micro-batches 4 "$@" --format torch-csv > "$out/$kind.csv"
    if ! train "gen-$kind" "$P" --schedule "$kind" "$@"; then
        fail "$kind: run --schedule $kind fails"; tail -5 "$out/gen-$kind.log"; return
    fi
    if ! train "file-$kind" "$P" --schedule-file "$out/$kind.csv"; then
        fail "$kind: run --schedule-file fails"; tail -5 "$out/file-$kind.log"; return
    fi
    if [ -s "$out/gen-$kind.loss" ] && cmp -s "$out/gen-$kind.loss" "$out/file-$kind.loss" &&
       cmp -s "$out/gen-$kind/model.safetensors" "$out/file-$kind/model.safetensors"; then
        pass "$kind: run --schedule-file trains with the losses and weights of --schedule $kind ($(tr '\n' ' ' < "$out/gen-$kind.loss"))"
    else
        fail "$kind: losses $(tr '\n' ' ' < "$out/file-$kind.loss") against $(tr '\n' ' ' < "$out/gen-$kind.loss")"
    fi
}
same_training 1f1b 2
expect_contains "$out/file-1f1b.log" "schedule file $out/1f1b.csv: 2 ranks, 2 stages, 4 micro-batches" \
    "run says what it read"
same_training zb-h1 2 --tw 1
same_training hanayo 2 --waves 2

# errors: usage, the file's line and cell, the validator's rank, step and action
"$WAVEPIPE" simulate --schedule-file "$out/f.csv" --kind 1f1b 2> "$out/e1.txt"
expect_status 2 $? "--schedule-file with --kind is a usage error"
expect_contains "$out/e1.txt" "--schedule-file FILE and --kind: the file fixes" "the two options are named"
"$WAVEPIPE" schedule --ranks 4 --schedule-file "$out/f.csv" 2> "$out/e2.txt"
expect_status 2 $? "--ranks before --schedule-file is a usage error too"
"$WAVEPIPE" schedule --kind file 2> "$out/e3.txt"
expect_status 2 $? "--kind file is not a kind one generates"
expect_contains "$out/e3.txt" "read with --schedule-file FILE" "and says where it comes from"
printf '0F0,0F1,0B0,0B1\n,1F0,1Q0\n' > "$out/bad.csv"
"$WAVEPIPE" simulate --schedule-file "$out/bad.csv" 2> "$out/e4.txt"
expect_status 1 $? "a bad cell fails"
expect_contains "$out/e4.txt" "bad.csv:2: cell 3 '1Q0' (rank 1) is not an action" "with file:line and cell"
printf '0F0,0F1,0B0,0B1\n1F0,1B0,1F1\n' > "$out/broken.csv"
"$WAVEPIPE" schedule --schedule-file "$out/broken.csv" 2> "$out/e5.txt" > /dev/null
expect_status 1 $? "a missing backward fails before anything runs"
expect_contains "$out/e5.txt" "rank 0 step 6: RECV_GRAD stage 0 micro-batch 1 from rank 1 has no matching send" \
    "naming rank, step and action"
"$MPIEXEC" -n 4 "$WAVEPIPE" run --config "$cfg" --steps 1 --schedule-file "$out/f.csv" > "$out/e6.txt" 2>&1
expect_status 1 $? "run on more ranks than the file has fails"
expect_contains "$out/e6.txt" "is a schedule of 2 ranks: launch 2 (mpiexec -n 2), not 4" "and says how many to launch"
"$WAVEPIPE" run --config "$cfg" --schedule-file "$out/f.csv" --schedule 1f1b 2> "$out/e7.txt"
expect_status 2 $? "run --schedule-file with --schedule is a usage error"
"$WAVEPIPE" run --config "$cfg" --schedule-file "$out/f.csv" --plan p.cfg 2> "$out/e8.txt"
expect_status 2 $? "run --schedule-file with --plan is a usage error"
"$WAVEPIPE" schedule --kind chimera --ranks 4 --micro-batches 8 --format torch-csv > /dev/null 2> "$out/e9.txt"
expect_status 1 $? "chimera (two copies of each stage) cannot be written for PyTorch"
expect_contains "$out/e9.txt" "PyTorch's schedules run each stage on one rank" "and says why"
"$WAVEPIPE" simulate --kind 1f1b --format torch-csv 2> "$out/e10.txt"
expect_status 2 $? "--format torch-csv is for wavepipe schedule"
"$WAVEPIPE" simulate --schedule-file "$out/no-such.csv" 2> "$out/e11.txt"
expect_status 1 $? "an unreadable file fails"
expect_contains "$out/e11.txt" "cannot read schedule file $out/no-such.csv: No such file or directory" "naming it"
"$WAVEPIPE" run --help > "$out/help.txt"
expect_contains "$out/help.txt" "--schedule-file FILE" "run --help documents --schedule-file"
"$WAVEPIPE" schedule --help > "$out/help2.txt"
expect_contains "$out/help2.txt" "--format torch-csv" "schedule --help documents --format torch-csv"
finish
