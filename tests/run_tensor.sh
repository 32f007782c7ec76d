#!/usr/bin/env bash
# Tensor parallelism and AutoDDL's meshes in the runtime (run --mesh,
# --tensor; plan/tp_block.h): every mesh shape p0 x p1 x p2 of 2, 4 and 8
# ranks, and pipeline x mesh x data parallelism on 8 ranks with 1F1B and
# Hanayo, train 20 steps with the losses of one rank within float rounding
# (the sums of split matmuls and of the collectives run in another order:
# 1e-6 relative; measured up to 1.4e-8), and every rank's counted
# collectives (calls and bytes by kind) equal the model's exactly.
# Activation recomputation (--recompute, and a plan's stages marked
# recompute) keeps the losses bit for bit in less memory. Shapes the model
# cannot split give one clear error. Checkpoints are Hugging Face tensors
# whatever the mesh, and resume on another.
. "$(dirname "$0")/lib.sh"
out=$(scratch_dir)
cfg="$WP_SRCDIR/tests/config/gpt-tp.cfg"

train() { # train NAME P ARGS...: 20 steps (or $steps) of $cfg (or $model), losses into $out/NAME.loss
    local name=$1 P=$2
    shift 2
    "$MPIEXEC" -n "$P" "$WAVEPIPE" run --config "${model:-$cfg}" --steps "${steps:-20}" "$@" > "$out/$name.log" 2>&1
    local rc=$?
    grep '^step' "$out/$name.log" | awk '{print $4}' | tr -d , > "$out/$name.loss"
    return $rc
}

# check NAME P REF ARGS...: against the single-rank run REF
check() {
    local name=$1 P=$2 ref=$3
    shift 3
    if ! train "$name" "$P" "$@"; then
        fail "$name: the run fails"; tail -5 "$out/$name.log" | sed 's/^/    | /'; return
    fi
    local worst
    worst=$(paste "$out/$ref.loss" "$out/$name.loss" |
            awk '{ d = $1 - $2; if (d < 0) d = -d; r = d / $1; if (r > m) m = r } END { if (NR != 20) print "rows " NR; else printf "%.2g", m }')
    if awk -v w="$worst" 'BEGIN { exit !(w ~ /^[0-9.e+-]+$/ && w + 0 <= 1e-6) }'; then
        pass "$name: 20 losses within $worst of one rank's"
    else
        fail "$name: losses beyond 1e-6 of one rank's ($worst)"
    fi
    if grep -q "every rank's equal to the model: yes" "$out/$name.log"; then
        pass "$name: every rank's collectives equal the model's ($(grep -o 'mesh [0-9x]*' "$out/$name.log"))"
    else
        fail "$name: counted collectives differ from the model's"; grep '^mesh' "$out/$name.log" | sed 's/^/    | /'
    fi
}

train ref1 1 --micro-batches 1 || { fail "single-rank reference"; cat "$out/ref1.log"; finish; exit 1; }
pass "single-rank reference, one micro-batch of 8 sequences ($(tail -1 "$out/ref1.loss") after 20 steps)"
train ref4 1 --micro-batches 4 || { fail "single-rank reference, 4 micro-batches"; finish; exit 1; }

# every shape of 2, 4 and 8 ranks the model splits (4 heads: p1 <= 4)
for mesh in 2x1x1 1x2x1 1x1x2 \
            4x1x1 1x4x1 1x1x4 2x2x1 2x1x2 1x2x2 \
            8x1x1 1x1x8 2x2x2 4x2x1 4x1x2 2x4x1 2x1x4 1x2x4 1x4x2; do
    P=$(( $(echo "$mesh" | tr x '*') ))
    check "mesh-$mesh" "$P" ref1 --micro-batches 1 --mesh "$mesh"
done

# pipeline x mesh x data parallelism, 2 x 2 x 2 on 8 ranks: 1F1B with two
# replicas per stage and a tensor group of 2; Hanayo with the mesh's axis 0
# as the data-parallel one (2 x 2 x 1); and zero-bubble H1, whose split
# backward runs the weight pass apart, on 4 stages x tensor group 1 x 2
check "1f1b-pp2-tp2-dp2" 8 ref4 --micro-batches 4 --schedule 1f1b --stages 2 --tensor 2
# each lane's pieces summed in gradient buckets of a few blocks (--grad-bucket-mb)
check "1f1b-pp2-tp2-dp2, 0.01 MiB buckets" 8 ref4 --micro-batches 4 --schedule 1f1b --stages 2 --tensor 2 \
    --grad-bucket-mb 0.01
check "hanayo-pp2-mesh2x2x1" 8 ref4 --micro-batches 4 --schedule hanayo --waves 1 --mesh 2x2x1
check "zb-h1-pp4-tp1x2" 8 ref4 --micro-batches 4 --schedule zb-h1 --tensor 1x2

# peak_mib LOG: the summary's peak activation memory
peak_mib() { sed -n 's/.*peak activation memory \([0-9.]*\) MiB.*/\1/p' "$1"; }
# recomputed A B: run B recomputes what run A keeps: the same losses bit for
# bit (the same schedule runs the same kernels on the same inputs) in less
# activation memory at the peak
recomputed() {
    local a b
    a=$(peak_mib "$out/$1.log") b=$(peak_mib "$out/$2.log")
    if [ -s "$out/$2.loss" ] && cmp -s "$out/$1.loss" "$out/$2.loss"; then
        pass "$2: the losses of $1 bit for bit"
    else
        fail "$2: losses differ from $1's"; paste "$out/$1.loss" "$out/$2.loss" | head -3 | sed 's/^/    | /'
    fi
    if [ -n "$a" ] && [ -n "$b" ] && awk -v a="$a" -v b="$b" 'BEGIN { exit !(b < a) }'; then
        pass "$2: peak activation memory $b MiB, $a MiB keeping activations"
    else
        fail "$2: peak activation memory '$b' MiB not below '$a' MiB"
    fi
}
# activation recomputation (--recompute): every stage's forward again before
# its backward, the mesh's forward collectives included (counted again in
# the model's bytes)
check "1f1b-pp2-tp2-dp2, recompute" 8 ref4 --micro-batches 4 --schedule 1f1b --stages 2 --tensor 2 --recompute
expect_contains "$out/1f1b-pp2-tp2-dp2, recompute.log" "recompute: all 2 stages run their forward again" \
    "... and says which stages recompute"
recomputed "1f1b-pp2-tp2-dp2" "1f1b-pp2-tp2-dp2, recompute"

# checkpoints stay Hugging Face GPT-2 tensors whatever the mesh (pieces
# made whole on save, cut again on load) and resume on another mesh
ck() { # ck NAME P ARGS...: 6 steps of 2 micro-batches, losses into $out/NAME.loss
    local name=$1 P=$2
    shift 2
    "$MPIEXEC" -n "$P" "$WAVEPIPE" run --config "$cfg" --micro-batches 2 "$@" > "$out/$name.log" 2>&1
    local rc=$?
    grep '^step' "$out/$name.log" | awk '{print $4}' | tr -d , > "$out/$name.loss"
    return $rc
}
same_losses() { # same_losses A B: B's steps are the last of A's, within 1e-6 relative
    local n
    n=$(wc -l < "$out/$2.loss")
    [ "$n" -gt 0 ] && tail -n "$n" "$out/$1.loss" | paste - "$out/$2.loss" |
        awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > 1e-6 * $1) exit 1 }'
}
ck ck-ref 1 --steps 6 --save "$out/ck-ref" && ck ck-half 1 --steps 3 --save "$out/ck-half" ||
    fail "single-rank checkpoint runs"
if ck ck-mesh 4 --steps 6 --mesh 1x2x2 --save "$out/ck-mesh" &&
   python3 "$WP_SRCDIR/tests/st_compare.py" --atol 2e-4 "$out/ck-ref/model.safetensors" \
       "$out/ck-mesh/model.safetensors" > "$out/ck-mesh.cmp" &&
   python3 "$WP_SRCDIR/tests/st_compare.py" --atol 2e-4 "$out/ck-ref/optimizer.safetensors" \
       "$out/ck-mesh/optimizer.safetensors" >> "$out/ck-mesh.cmp"; then
    pass "a 1x2x2 mesh saves the single rank's tensors and moments under their names ($(head -1 "$out/ck-mesh.cmp"))"
else
    fail "a 1x2x2 mesh's checkpoint differs from one rank's"; cat "$out/ck-mesh.cmp" "$out/ck-mesh.log" | tail -5
fi
if ck ck-resume 8 --steps 6 --schedule 1f1b --stages 2 --mesh 2x2x1 --resume "$out/ck-half" &&
   same_losses ck-ref ck-resume; then
    pass "one rank's checkpoint resumes on 2 stages x mesh 2x2x1 with its losses ($(tr '\n' ' ' < "$out/ck-resume.loss"))"
else
    fail "resuming one rank's checkpoint on a mesh"; tail -3 "$out/ck-resume.log"
fi
if ck ck-half-mesh 4 --steps 3 --mesh 1x2x2 --save "$out/ck-half-mesh" &&
   ck ck-remesh 8 --steps 6 --mesh 2x2x2 --resume "$out/ck-half-mesh" && same_losses ck-ref ck-remesh; then
    pass "a 1x2x2 mesh's checkpoint resumes on a 2x2x2 mesh with one rank's losses"
else
    fail "resuming a mesh's checkpoint on another mesh"; tail -3 "$out/ck-remesh.log"
fi

# a hybrid plan (wavepipe plan --tensor 2x1) runs as planned: the same
# losses as the run given by hand
"$WAVEPIPE" profile --model "$WP_SRCDIR/jobs/models/gpt-tiny.cfg" -o "$out/tiny.layers.cfg" > /dev/null 2>&1
"$WAVEPIPE" plan --layers "$out/tiny.layers.cfg" --global-batch 8 --cluster "$WP_SRCDIR/topology/dgx2-x4-ib-edr.cfg" \
    --devices 4 --memory 10MB --tensor 2x1 --recompute never --out "$out/tp.plan.cfg" > "$out/tp.plan.txt" 2>&1
expect_status 0 $? "plan gpt-tiny on 4 GPUs in tensor groups of 2x1"
"$MPIEXEC" -n 4 "$WAVEPIPE" run --config "$WP_SRCDIR/jobs/models/gpt-tiny.cfg" --plan "$out/tp.plan.cfg" --steps 3 \
    > "$out/tp-plan.log" 2>&1
expect_status 0 $? "run --plan trains the hybrid plan on 4 local ranks"
expect_contains "$out/tp-plan.log" "tensor groups of 2x1" "... and says it runs tensor groups"
blocks=$(sed -n 's/.*blocks per stage \([0-9,]*\),.*/\1/p' "$out/tp-plan.log")
nmicro=$(sed -n 's/^micro_batches = \([0-9]*\);/\1/p' "$out/tp.plan.cfg" | head -1)
"$MPIEXEC" -n 4 "$WAVEPIPE" run --config "$WP_SRCDIR/jobs/models/gpt-tiny.cfg" --partition "$blocks" --tensor 2 \
    --micro-batches "$nmicro" --steps 3 > "$out/tp-hand.log" 2>&1
if [ -n "$blocks" ] && [ "$(grep '^step 2' "$out/tp-plan.log")" != "" ] &&
   [ "$(grep '^step 2' "$out/tp-plan.log" | awk '{print $4}')" = "$(grep '^step 2' "$out/tp-hand.log" | awk '{print $4}')" ]; then
    pass "the plan's run has the losses of --partition $blocks --tensor 2"
else
    fail "plan and hand-given runs differ"; grep '^step 2' "$out/tp-plan.log" "$out/tp-hand.log"
fi
# a plan that recomputes (wavepipe plan --recompute always: a pipeline of 4
# stages in 6 MB per GPU) runs so, with the losses of the same run given by
# hand keeping activations, in less memory
"$WAVEPIPE" plan --layers "$out/tiny.layers.cfg" --global-batch 8 --cluster "$WP_SRCDIR/topology/dgx2-x4-ib-edr.cfg" \
    --devices 4 --memory 6MB --tensor 1x1 --recompute always --out "$out/rc.plan.cfg" > "$out/rc.plan.txt" 2>&1
expect_status 0 $? "plan gpt-tiny on 4 GPUs of 6 MB, every stage recomputing"
model="$WP_SRCDIR/jobs/models/gpt-tiny.cfg" steps=2 train "rc-plan" 4 --plan "$out/rc.plan.cfg"
expect_status 0 $? "run --plan trains the plan that recomputes on 4 local ranks"
stages=$(sed -n 's/^pipeline_stages = \([0-9]*\);/\1/p' "$out/rc.plan.cfg")
expect_contains "$out/rc-plan.log" "recompute: all $stages stages run their forward again" "... and says so"
blocks=$(sed -n 's/.*blocks per stage \([0-9,]*\),.*/\1/p' "$out/rc-plan.log")
nmicro=$(sed -n 's/^micro_batches = \([0-9]*\);/\1/p' "$out/rc.plan.cfg" | head -1)
replicas=$(sed -n 's/^data_parallel = \[\(.*\)\];/\1/p' "$out/rc.plan.cfg" | tr -d ' ')
policy=$(sed -n 's/^ *policy = "\([AB]\)";/\1/p' "$out/rc.plan.cfg" | head -1)
model="$WP_SRCDIR/jobs/models/gpt-tiny.cfg" steps=2 train "rc-hand" 4 --partition "$blocks" --micro-batches "$nmicro" \
    --replicas "$replicas" --policy "$policy"
expect_status 0 $? "the same run given by hand, keeping activations (--partition $blocks --replicas $replicas --policy $policy)"
recomputed "rc-hand" "rc-plan"
sed 's/^tensor = \[ 2, 1 \];/tensor = [ 2, 2 ];/' "$out/tp.plan.cfg" > "$out/tp22.plan.cfg"
"$MPIEXEC" -n 4 "$WAVEPIPE" run --config "$WP_SRCDIR/jobs/models/gpt-tiny.cfg" --plan "$out/tp22.plan.cfg" --steps 1 \
    > "$out/tp22.log" 2>&1
[ $? -ne 0 ] && grep -q "wavepipe" "$out/tp22.log" && pass "a plan whose groups do not match its devices is refused" ||
    { fail "a plan whose groups do not match its devices"; tail -3 "$out/tp22.log"; }

# shapes that do not split: one error each, before any rank computes
"$MPIEXEC" -n 8 "$WAVEPIPE" run --config "$cfg" --steps 1 --tensor 8 > "$out/bad-heads.log" 2>&1
expect_status 1 $? "axis 1 of 8 on 4 heads is refused"
expect_contains "$out/bad-heads.log" "does not divide the 4 attention heads" "... saying why"
"$MPIEXEC" -n 4 "$WAVEPIPE" run --config "$cfg" --steps 1 --micro-batches 4 --tensor 1x4 > "$out/bad-seqs.log" 2>&1
expect_status 1 $? "axis 2 of 4 on slices of 2 sequences is refused"
expect_contains "$out/bad-seqs.log" "does not divide the 2 sequences of a slice" "... saying why"
"$MPIEXEC" -n 6 "$WAVEPIPE" run --config "$cfg" --steps 1 --tensor 4 > "$out/bad-ranks.log" 2>&1
expect_status 1 $? "groups of 4 on 6 ranks are refused"
expect_contains "$out/bad-ranks.log" "groups of 4 ranks do not divide the 6 ranks" "... saying why"
"$MPIEXEC" -n 4 "$WAVEPIPE" run --config "$cfg" --steps 1 --schedule zb-h1 --tensor 2 --recompute > "$out/bad-rc.log" 2>&1
expect_status 1 $? "recomputation with a split backward (zb-h1) is refused"
expect_contains "$out/bad-rc.log" "schedule zb-h1: a stage that recomputes its forward cannot split its backward" \
    "... saying why"
"$WAVEPIPE" run --config "$cfg" --tensor 2 --compute emulated --layers x > "$out/bad-emulated.log" 2>&1
expect_status 2 $? "--tensor with emulated compute is refused (the table has no pieces)"
finish
