#!/usr/bin/env bash
# `wavepipe plan --format megatron` (issue 30): the chosen plan as
# Megatron-LM's command-line arguments, every flag checked against the flags
# Megatron-LM core_v0.15.0 defines in megatron/training/arguments.py
# (tests/megatron/arguments.txt, scripts/megatron-arguments.py), with values
# of the right kind, the degrees those of the plan's summary, a layout that
# adds up to the model's blocks; and a clear error for plans Megatron-LM
# cannot run.
. "$(dirname "$0")/lib.sh"
out=$(scratch_dir)
T=$WP_SRCDIR/topology
flags=$WP_SRCDIR/tests/megatron/arguments.txt
check=$WP_SRCDIR/tests/megatron/check_args.py
printf 'model = { layers = 96; channels = 12288; heads = 96; sequence_length = 2048; max_positions = 2048; vocabulary = 51200; };\ntrain = { global_batch = 64; micro_batches = 64; steps = 1; };\n' > "$out/t175.model.cfg"
"$WAVEPIPE" profile --model "$out/t175.model.cfg" --analytic --flops-per-s 1.65e14 --micro-batch 1 -o "$out/T175.cfg" > /dev/null 2>&1
plan() { "$WAVEPIPE" plan --layers "$out/T175.cfg" --global-batch 64 --cluster "$T/dgx-a100-x384-ib-hdr.cfg" --devices 64 "$@"; }

i=0
for opts in "--sequence-parallel auto --distributed-optimizer on" "--chunks 4 --recompute always" \
            "--tensor 8x1 --recompute selective --memory 1000GiB"; do
    i=$((i + 1))
    # shellcheck disable=SC2086
    plan $opts --format megatron > "$out/m$i.txt" 2>&1
    expect_status 0 $? "plan $opts --format megatron"
    python3 "$check" "$flags" "$out/m$i.txt" > "$out/check$i.txt" 2>&1
    expect_status 0 $? "every flag of $opts is Megatron-LM's, with a value of its kind"
    # shellcheck disable=SC2086
    plan $opts > "$out/t$i.txt" 2>&1
    tp=$(sed -n 's/^Megatron-LM.s terms: TP \([0-9]*\) .*/\1/p' "$out/t$i.txt")
    pp=$(sed -n 's/^Megatron-LM.s terms: .*, PP \([0-9]*\).*/\1/p' "$out/t$i.txt")
    expect_contains "$out/m$i.txt" "--tensor-model-parallel-size $tp --pipeline-model-parallel-size $pp" \
        "$opts: TP $tp and PP $pp as the summary says"
    layout=$(grep -o "pipeline-model-parallel-layout '[^']*'" "$out/m$i.txt" | sed "s/.*'\(.*\)'/\1/")
    if [ -n "$layout" ]; then
        n=$(echo "$layout" | tr '|' '\n' | sed -E 's/[EL]//g; s/^t$/t*1/; s/^$/t*0/; s/t\*//' | paste -sd+ - | bc)
        expect_status 96 "$n" "$opts: the layout's blocks add up to the model's 96"
    fi
done
expect_contains "$out/m1.txt" "--sequence-parallel" "sequence parallelism, as the plan chose it"
expect_contains "$out/m1.txt" "--use-distributed-optimizer" "the distributed optimizer"
expect_contains "$out/m2.txt" "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1" \
    "whole recomputation on every stage"
expect_contains "$out/m3.txt" "--recompute-granularity selective" "selective recomputation"

# plans Megatron-LM cannot run: a 2D tensor group, stages of different data-parallel sizes
plan --tensor 4x2 --format megatron > "$out/e1.txt" 2>&1
expect_status 1 $? "a 2D tensor group is refused"
expect_contains "$out/e1.txt" "Megatron-LM's splits on one" "saying why"
"$WAVEPIPE" plan --layers "$WP_SRCDIR/profiles/dapple-v100/bert-48-pbs-2.txt" --global-batch 64 \
    --cluster "$T/dapple-config-a.cfg" --format megatron > "$out/e2.txt" 2>&1
if grep -q "one data-parallel size" "$out/e2.txt"; then
    pass "a plan whose stages differ in replicas is refused, saying why"
else
    python3 "$check" "$flags" "$out/e2.txt" > "$out/check-e2.txt" 2>&1
    expect_status 0 $? "a DAPPLE plan of one data-parallel size: every flag is Megatron-LM's"
fi
finish
