#!/usr/bin/env bash
# Tensor parallelism and AutoDDL's meshes in the runtime (run --mesh,
# --tensor; plan/tp_block.h): every mesh shape p0 x p1 x p2 of 2, 4 and 8
# ranks, and pipeline x mesh x data parallelism on 8 ranks with 1F1B and
# Hanayo, train 20 steps with the losses of one rank within float rounding
# (the sums of split matmuls and of the collectives run in another order:
# 1e-6 relative; measured up to 1.4e-8), and every rank's counted
# collectives (calls and bytes by kind) equal the model's exactly. Shapes
# the model cannot split give one clear error.
. "$(dirname "$0")/lib.sh"
out=$(scratch_dir)
cfg="$WP_SRCDIR/tests/config/gpt-tp.cfg"

train() { # train NAME P ARGS...: 20 steps, losses into $out/NAME.loss
    local name=$1 P=$2
    shift 2
    "$MPIEXEC" -n "$P" "$WAVEPIPE" run --config "$cfg" --steps 20 "$@" > "$out/$name.log" 2>&1
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
"$WAVEPIPE" run --config "$cfg" --tensor 2 --save "$out/no" > "$out/bad-save.log" 2>&1
expect_status 2 $? "--tensor with --save is refused for now"
finish
