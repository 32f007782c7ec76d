#!/usr/bin/env bash
# `wavepipe plan --format torch` (issue 30): the chosen plan's stage split and
# its schedule as the compute_only CSV of torch.distributed.pipelining's
# PipelineScheduleMulti._load_csv, checked without PyTorch by
# tests/pipelining/check_schedule.py (bench/torch_schedule.sh loads and runs
# it with PyTorch): rows = pipeline ranks, one F and one B of every stage and
# micro-batch on the stage's rank, each F before its B, the ranks finishing
# without deadlock, the lock-step grid, the split the plan's own stages; the
# schedule the generator's own (wavepipe schedule --format torch-csv) for the
# plan's kind, ranks, micro-batches, chunks and warm-up policy; the degrees
# those of the plan's summary. 1F1B with data parallelism, a straight
# pipeline, interleaved plans of 2 and 4 chunks, tensor x pipeline x data
# parallelism, a 2-D tensor group, DAPPLE's BERT-48 (warm-up policy B); the
# checker's own failures on broken schedules; plans PyTorch cannot run.
. "$(dirname "$0")/lib.sh"
out=$(scratch_dir)
T=$WP_SRCDIR/topology
check=$WP_SRCDIR/tests/pipelining/check_schedule.py
"$WAVEPIPE" profile --model "$WP_SRCDIR/jobs/models/gpt-tiny.cfg" --analytic --flops-per-s 1e12 \
    -o "$out/tiny.cfg" > "$out/profile.log" 2>&1
expect_status 0 $? "an analytic table of the demo model (18 layers: embedding, block0..block15, head)"
tiny() { "$WAVEPIPE" plan --layers "$out/tiny.cfg" --cluster "$T/dgx2-x4-ib-edr.cfg" "$@"; }
bert() {
    "$WAVEPIPE" plan --layers "$WP_SRCDIR/profiles/dapple-v100/bert-48-pbs-2.txt" --global-batch 64 \
        --cluster "$T/dapple-config-a.cfg" "$@"
}
field() { sed -n "s/^# pipeline:.* $1=\([^ ]*\).*/\1/p" "$2"; }

# torch_case NAME TABLE-FUNCTION CHECKER-OPTIONS -- PLAN-OPTIONS...
torch_case() {
    local name=$1 fn=$2 opts=()
    shift 2
    while [ "$1" != -- ]; do opts+=("$1"); shift; done
    shift
    "$fn" "$@" --format torch > "$out/$name.txt" 2> "$out/$name.err"
    expect_status 0 $? "$name: plan --format torch"
    "$fn" "$@" --format csv > "$out/$name.csv" 2>&1
    "$fn" "$@" > "$out/$name.sum" 2>&1
    local M
    M=$(sed -n 's/^global batch [0-9]*: \([0-9]*\) micro-batch.*/\1/p' "$out/$name.sum")
    python3 "$check" "$out/$name.txt" --plan-csv "$out/$name.csv" --microbatches "$M" "${opts[@]}" \
        > "$out/$name.check" 2>&1
    expect_status 0 $? "$name: the form and order _load_csv and _validate_schedule want, the ranks finishing without deadlock, the lock-step grid, the plan's split ($(tail -n 1 "$out/$name.check"))"
    if ! grep -q "check_schedule: .*: ok$" "$out/$name.check"; then sed 's/^/    | /' "$out/$name.check"; fi
    # the degrees as the summary gives them
    local pp dp p1 p2
    p1=$(sed -n 's/^Megatron-LM.s terms: TP [0-9]* (tensor group \([0-9]*\) x \([0-9]*\).*/\1/p' "$out/$name.sum")
    p2=$(sed -n 's/^Megatron-LM.s terms: TP [0-9]* (tensor group \([0-9]*\) x \([0-9]*\).*/\2/p' "$out/$name.sum")
    pp=$(sed -n 's/^Megatron-LM.s terms: .*, PP \([0-9]*\).*/\1/p' "$out/$name.sum")
    dp=$(sed -n 's/^Megatron-LM.s terms: .*, DP \([0-9]*\),.*/\1/p' "$out/$name.sum")
    expect_status "$pp $dp ${p1}x$p2" "$(field pipeline_ranks "$out/$name.txt") $(field data_parallel "$out/$name.txt") $(field tensor "$out/$name.txt")" \
        "$name: pipeline ranks, data-parallel size and tensor group those of the summary (PP $pp, DP $dp, $p1 x $p2)"
    # the rows are what the generator makes for the plan's schedule
    local kind P v pol
    kind=$(field schedule "$out/$name.txt") P=$(field pipeline_ranks "$out/$name.txt")
    v=$(field stages_per_rank "$out/$name.txt") pol=$(field warmup_policy "$out/$name.txt")
    "$WAVEPIPE" schedule --kind "$kind" --ranks "$P" --micro-batches "$M" --chunks "$v" --policy "$pol" \
        --format torch-csv > "$out/$name.gen" 2>&1
    grep -v '^#' "$out/$name.txt" > "$out/$name.rows"
    if cmp -s "$out/$name.rows" "$out/$name.gen"; then
        pass "$name: the rows are wavepipe schedule --kind $kind --ranks $P --micro-batches $M --chunks $v --policy $pol"
    else
        fail "$name: the rows differ from wavepipe schedule --kind $kind --ranks $P --micro-batches $M --chunks $v"
        diff "$out/$name.rows" "$out/$name.gen" | head -n 10 | sed 's/^/    | /'
    fi
}

tiny_layers=(--layers 18 --first embedding --last head)
torch_case dp2 tiny "${tiny_layers[@]}" -- --global-batch 8 --devices 4 --tensor 1x1 --memory 10MB
torch_case straight tiny "${tiny_layers[@]}" -- --global-batch 16 --devices 4 --tensor 1x1 --memory 8MB
torch_case inter2 tiny "${tiny_layers[@]}" -- --global-batch 16 --devices 4 --tensor 1x1 --memory 5MB --chunks 4
torch_case inter4 tiny "${tiny_layers[@]}" -- --global-batch 16 --devices 4 --tensor 1x1 --memory 6MB --chunks 4
torch_case hybrid tiny "${tiny_layers[@]}" -- --global-batch 16 --devices 16 --tensor 2x1 --memory 6MB
torch_case mesh2d tiny "${tiny_layers[@]}" -- --global-batch 16 --devices 8 --tensor 2x2 --memory 6MB
torch_case bert bert --layers 53 --first "node1 input_ids" --last "node53 pooler" --

# what the cases are meant to cover, so a planner that chooses otherwise says so
expect_contains "$out/dp2.txt" "schedule=1f1b warmup_policy=A data_parallel=2" "dp2: 1F1B over 2 data-parallel replicas"
expect_contains "$out/inter2.txt" "stages_per_rank=2 n_microbatches=16 schedule=interleaved" \
    "inter2: an interleaved plan of 2 chunks (16 micro-batches)"
expect_contains "$out/inter4.txt" "pipeline_ranks=4 stages=16 stages_per_rank=4" "inter4: 16 virtual stages on 4 ranks"
expect_contains "$out/inter4.txt" "# split: 5,1,1,block5,block5,6,6,1,1x1," "inter4: stage 5 is rank 1's second chunk, block5 alone"
expect_contains "$out/hybrid.txt" "data_parallel=4 tensor=2x1" "hybrid: tensor 2 x data 4 x pipeline"
expect_contains "$out/mesh2d.txt" "# the tensor group 2 x 2 is AutoDDL's 2-D mesh" "mesh2d: a 2-D tensor group said"
expect_contains "$out/bert.txt" "warmup_policy=B data_parallel=8" "bert: DAPPLE's deeper warm-up (policy B), 8 replicas"
expect_contains "$out/bert.txt" "0F0,0F1,0F2,0B0" "bert: policy B warms rank 0 up with 3 forwards"
expect_contains "$out/straight.txt" "recompute,devices" "the split's header"

# the checker fails what PyTorch would refuse or what would hang
sed -n '/^#/p' "$out/dp2.txt" > "$out/bad-deadlock.txt"
printf '0F0,0B0,0F1,0B1,0F2,0B2,0F3,0B3\n1F1,1B1,1F0,1B0,1F2,1B2,1F3,1B3\n' >> "$out/bad-deadlock.txt"
sed '/^0F0/ s/,0B3$//' "$out/dp2.txt" > "$out/bad-count.txt"
sed '/^0F0/ s/0B3/1B3/' "$out/dp2.txt" > "$out/bad-rank.txt"
sed 's/^0F0,0F1/0F1,0F0/' "$out/inter2.txt" > "$out/bad-grid.txt"
sed 's/^0F0,/0X0,/' "$out/dp2.txt" > "$out/bad-cell.txt"
for bad in "deadlock:the ranks deadlock" "count:stage 0, micro-batch 3: 1 F, 0 B" "rank:belongs on rank 1" \
           "grid:needs 0F0, in column 1" "cell:'0X0' is not a compute action"; do
    name=${bad%%:*} why=${bad#*:}
    python3 "$check" "$out/bad-$name.txt" --microbatches 4 > "$out/bad-$name.check" 2>&1
    expect_status 1 $? "the checker refuses a broken schedule ($name)"
    expect_contains "$out/bad-$name.check" "$why" "... saying $why"
done

# plans PyTorch cannot run, and what the command refuses
bert_like() { "$WAVEPIPE" plan --layers "$WP_SRCDIR/profiles/dapple-v100/vgg-19-pbs-32.txt" --global-batch 64 \
                  --cluster "$T/dapple-config-a.cfg" "$@"; }
bert_like > "$out/vgg.sum" 2>&1
bert_like --format torch > "$out/e1.txt" 2> "$out/e1.err"
expect_status 1 $? "a plan whose stages differ in data-parallel size ($(sed -n 's/^plan \([^ ]*\):.*/\1/p' "$out/vgg.sum")) is refused"
expect_contains "$out/e1.err" "one data-parallel size for every stage" "saying why"
[ -s "$out/e1.txt" ] && fail "nothing on standard output after the refusal" || pass "nothing on standard output after the refusal"
tiny --global-batch 16 --devices 8 --tensor 2x1 --memory 6MB --format torch > "$out/e2.txt" 2> "$out/e2.err"
expect_status 1 $? "1:1:2 replicas (tensor 2 on 8 GPUs) refused too"
tiny --global-batch 8 --devices 4 --format torch --compare > "$out/e3.txt" 2>&1
expect_status 2 $? "--compare with --format torch is a usage error"
tiny --global-batch 8 --devices 4 --format pytorch > "$out/e4.txt" 2>&1
expect_status 2 $? "--format pytorch is a usage error"
expect_contains "$out/e4.txt" "--format must be text, csv, megatron or torch" "naming the formats"

# --out writes the plan file and keeps standard output the torch document alone
tiny --global-batch 8 --devices 4 --tensor 1x1 --memory 10MB --format torch --out "$out/plan.cfg" > "$out/o.txt" 2>&1
expect_status 0 $? "--format torch with --out"
cmp -s "$out/o.txt" "$out/dp2.txt" && pass "the same document, nothing added" || fail "--out changed standard output"
[ -s "$out/plan.cfg" ] && pass "the plan file written" || fail "no plan file"

"$WAVEPIPE" plan --help > "$out/help.txt" 2>&1
expect_contains "$out/help.txt" "--format text|csv|megatron|torch" "plan --help names the format"
expect_contains "$out/help.txt" "PipelineScheduleMulti._load_csv" "plan --help says what reads it"
expect_contains "$out/help.txt" "'# split: stage,rank,chunk,first_layer,last_layer,first_index," "plan --help gives the split's columns"
finish
