#!/usr/bin/env bash
# wavepipe's GPT-2 against PyTorch: the loss `wavepipe run` reports for saved
# weights equals the loss PyTorch computes for them (tests/torch_reference.py:
# a plain-PyTorch GPT-2 and, where transformers imports, Hugging Face's
# GPT2LMHeadModel.from_pretrained on the checkpoint directory).
#   - trained weights: 3 steps on 2 ranks (1f1b), saved; `--resume` runs step 3,
#     whose row in the results is the loss of those weights on step 3's batch;
#   - initial weights: `--steps 0 --save` against row 0 of the training run
#     (same seed: the loss of the initial weights on step 0's batch);
#   - perturbed weights: the trained checkpoint plus N(0, 0.3^2) noise on every
#     weight, resumed the same way. After 3 steps the weights are still near
#     their initialisation (std 0.02), where the forward pass is almost linear:
#     there a missing attention scale or causal mask moves the loss by only
#     ~1e-6 relative. With the noise, attention, LayerNorm and MLP work on
#     inputs of order one and such mistakes move it by 3e-3 to 3e-2.
#   - control: PyTorch's loss of the initial weights on step 3's batch differs
#     from wavepipe's loss of the trained ones (the comparison can fail).
# Tolerance: 1e-5 relative. Both sides compute in float32 with different
# summation orders; measured here: wavepipe and PyTorch agree within 2e-8
# relative on the trained and initial weights and 1e-7 on the perturbed ones,
# and PyTorch in float32 is within 2e-7 of the same model in float64, so 1e-5
# leaves a margin of 50 for other CPUs and BLAS builds. What it catches: a
# wrong batch (the next step's batch moves the loss by 2e-3 to 3e-2), weights
# of another step (9e-2), transposed c_proj, swapped q/k, interleaved heads,
# attention scale 1/C or none, no causal mask, ReLU for GELU (all >= 3e-3 on the
# perturbed weights), LayerNorm eps 1e-6 (4e-5 on the initial weights). Not the
# erf form of GELU for the tanh form: that moves it by 1.5e-6 at most.
# Skips (77) where no python3 imports torch (Debian: apt-get install
# python3-torch; with pyenv, `python3` is not Debian's /usr/bin/python3, so
# that one is tried too, and TORCH_PYTHON names another interpreter).
. "$(dirname "$0")/lib.sh"

py=""
for cand in ${TORCH_PYTHON:-} python3 /usr/bin/python3; do
    if "$cand" -c 'import torch' > /dev/null 2>&1; then py=$cand; break; fi
done
if [ -z "$py" ]; then
    echo "SKIP: no python3 here imports torch (tried ${TORCH_PYTHON:+$TORCH_PYTHON, }python3, /usr/bin/python3; Debian: python3-torch)"
    exit 77
fi
echo "# python: $py (torch $("$py" -c 'import torch; print(torch.__version__)'))"

out=$(scratch_dir)
cfg="$WP_SRCDIR/jobs/models/gpt-tiny.cfg"
data="$WP_SRCDIR/jobs/data/sonnets.txt"
ref="$WP_SRCDIR/tests/torch_reference.py"
TOL=1e-5
T=$(sed -n 's/^[[:space:]]*sequence_length[[:space:]]*=[[:space:]]*\([0-9]*\).*/\1/p' "$cfg" | head -n 1)

wp() { # wp NAME ARGS...: a 2-rank run, output in $out/NAME.log
    local name=$1
    shift
    "$MPIEXEC" -n 2 "$WAVEPIPE" run --config "$cfg" --data "$data" --schedule 1f1b "$@" > "$out/$name.log" 2>&1
}

# csv_get FILE ITERATION COLUMN: the value of COLUMN in the row of ITERATION
csv_get() {
    awk -F, -v it="$2" -v col="$3" '
        NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        $c["iteration"] == it { v = $c[col] }
        END { if (v == "") exit 1; print v }' "$1"
}

# close A B: |A - B| <= TOL * |B|
close() { awk -v a="$1" -v b="$2" -v t="$TOL" 'BEGIN { d = a - b; if (d < 0) d = -d; m = b < 0 ? -b : b; exit !(d <= t * m) }'; }
reldiff() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; m = b < 0 ? -b : b; printf "%.1e", d / m }'; }

# check NAME CKPT ITERATION WP_LOSS [ARGS...]: every route of torch_reference.py
# on checkpoint CKPT (step ITERATION's batch) within TOL of WP_LOSS
check() {
    local name=$1 ck=$2 it=$3 want=$4
    shift 4
    if ! "$py" "$ref" "$ck" --data "$data" --batch "$B" --seq "$T" --step "$it" "$@" \
            > "$out/$name.torch" 2> "$out/$name.torch.err"; then
        fail "$name: torch_reference.py fails"; sed 's/^/    | /' "$out/$name.torch.err" | tail -20; return
    fi
    sed 's/^/    | /' "$out/$name.torch.err"
    local n=0 bad=0 route loss msg=""
    while read -r route loss; do
        n=$((n + 1))
        msg="$msg $route $loss ($(reldiff "$loss" "$want"))"
        close "$loss" "$want" || bad=$((bad + 1))
    done < "$out/$name.torch"
    if [ "$n" -eq 0 ]; then
        fail "$name: torch_reference.py printed no loss"
    elif [ "$bad" -eq 0 ]; then
        pass "$name: wavepipe $want, torch:$msg within $TOL"
    else
        fail "$name: wavepipe $want, torch:$msg beyond $TOL"
    fi
}

# Trained weights: 3 steps, saved; the resumed run reports step 3's loss.
if ! wp train --steps 3 --save "$out/ck3" --results "$out/train.csv"; then
    fail "training 3 steps on 2 ranks"; sed 's/^/    | /' "$out/train.log"; finish; exit 1
fi
B=$(csv_get "$out/train.csv" 0 global_batch)
if grep -aqF '"wavepipe_steps_done":"3"' "$out/ck3/model.safetensors"; then
    pass "the checkpoint's metadata says 3 steps done"
else
    fail "no wavepipe_steps_done 3 in the checkpoint's metadata"
fi
wp resume --steps 4 --resume "$out/ck3" --results "$out/resume.csv"
expect_status 0 $? "resuming for step 3"
if loss3=$(csv_get "$out/resume.csv" 3 loss); then
    check "trained weights (step 3)" "$out/ck3" 3 "$loss3"
else
    fail "no row of iteration 3 in the resumed run's results"; loss3=""
fi

# Initial weights: --steps 0 --save, against row 0 of the training run.
wp init --steps 0 --save "$out/ck0"
expect_status 0 $? "saving the initial weights (--steps 0)"
check "initial weights (step 0)" "$out/ck0" 0 "$(csv_get "$out/train.csv" 0 loss)"

# Perturbed weights, resumed like the trained ones.
if "$py" "$ref" "$out/ck3" --write-perturbed "$out/ckp" --sigma 0.3 --seed 0 > "$out/perturb.log" 2>&1 &&
   wp perturbed --steps 4 --resume "$out/ckp" --results "$out/perturbed.csv" &&
   lossp=$(csv_get "$out/perturbed.csv" 3 loss); then
    check "perturbed weights (step 3)" "$out/ckp" 3 "$lossp"
else
    fail "perturbed checkpoint: writing or resuming fails"; cat "$out/perturb.log" "$out/perturbed.log"
fi

# Control: the initial weights on step 3's batch are not within TOL of the
# trained weights' loss.
if [ -n "$loss3" ] && l=$("$py" "$ref" "$out/ck0" --data "$data" --batch "$B" --seq "$T" --step 3 \
        --route plain 2> /dev/null | awk '{ print $2 }') && [ -n "$l" ]; then
    if close "$l" "$loss3"; then
        fail "control: initial weights on step 3's batch ($l) within $TOL of the trained ones' ($loss3)"
    else
        pass "control: initial weights on step 3's batch $l, trained $loss3 ($(reldiff "$l" "$loss3") apart)"
    fi
else
    fail "control: no loss"
fi
finish
