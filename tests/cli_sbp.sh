#!/usr/bin/env bash
# `wavepipe sbp`: the per-layer mesh table for AutoDDL's MLP, the three
# searches agreeing, a one-layer case costed by hand, the plan-file group,
# repeated layers sharing a mesh, the memory limit and bad options.
. "$(dirname "$0")/lib.sh"
out=$(scratch_dir)
mlp=(--widths 32768,16384,4096,2048,512 --batch 8192 --devices 64 --gpus-per-node 8 --element-bytes 2)

"$WAVEPIPE" sbp "${mlp[@]}" -o "$out/mlp.cfg" > "$out/cd.txt" 2>&1
expect_status 0 $? "sbp on AutoDDL's MLP, 64 devices as 8 nodes x 8 GPUs"
expect_contains "$out/cd.txt" "4 layers (4 shapes), batch 8192, 64 devices (8 nodes x 8 GPUs), search cd" "the heading"
for l in fc0 fc1 fc2 fc3; do
    expect_contains "$out/cd.txt" "$l " "a row for $l"
done
expect_contains "$out/mlp.cfg" "sbp" "the plan-file group written"
expect_contains "$out/mlp.cfg" 'name = "fc3";' "with every layer"
expect_contains "$out/mlp.cfg" "mesh = [" "and its mesh"
total_cd=$(grep '^total:' "$out/cd.txt")
for kind in exhaustive mh; do
    "$WAVEPIPE" sbp "${mlp[@]}" --search "$kind" > "$out/$kind.txt" 2>&1
    expect_status 0 $? "--search $kind"
    if [ "$(grep '^total:' "$out/$kind.txt")" = "$total_cd" ]; then
        pass "$kind finds what cd finds: $total_cd"
    else
        fail "$kind: '$(grep '^total:' "$out/$kind.txt")' against cd's '$total_cd'"
    fi
done

# one 4 x 6 x 8 layer on 2 GPUs of a node, alpha 1 us, 1 GB/s: (1,2,1) gathers
# the whole 96-byte input both ways, 2 (alpha + 48 beta) = 2.096 us, the least
"$WAVEPIPE" sbp --widths 6,8 --batch 4 --devices 2 --gpus-per-node 2 --intra 1us,1GB/s \
    --search exhaustive -o "$out/tiny.cfg" > "$out/tiny.txt" 2>&1
expect_status 0 $? "a one-layer chain on 2 devices"
expect_contains "$out/tiny.cfg" "mesh = [ 1, 2, 1 ];" "mesh (1,2,1)"
expect_contains "$out/tiny.cfg" "comm_s = 2.096e-06;" "2 (1 us + 48 ns) by hand"

# a block of two shapes three times over: two classes, one mesh each
"$WAVEPIPE" sbp --widths 1024,4096,1024 --repeat 3 --batch 2048 --devices 16 --gpus-per-node 4 \
    > "$out/rep.txt" 2>&1
expect_status 0 $? "--repeat 3"
expect_contains "$out/rep.txt" "6 layers (2 shapes)" "six layers, two shapes"
if [ "$(awk '$1 ~ /^fc[024]$/ { print $4 }' "$out/rep.txt" | sort -u | wc -l)" = 1 ] &&
   [ "$(awk '$1 ~ /^fc[135]$/ { print $4 }' "$out/rep.txt" | sort -u | wc -l)" = 1 ]; then
    pass "layers of one shape share one mesh"
else
    fail "layers of one shape have different meshes"; cat "$out/rep.txt"
fi

# the memory limit: too small names the least that fits
"$WAVEPIPE" sbp --widths 1024,4096,1024 --repeat 3 --batch 2048 --devices 16 --gpus-per-node 4 \
    --memory 1MiB > "$out/mem.txt" 2>&1
expect_status 1 $? "1 MiB per device is refused"
expect_contains "$out/mem.txt" "the smallest memory that fits is 31.5 MiB (33030144 bytes" \
    "the least: 6 x 4 Mi weights x 16 B / 16 = 24 MiB, inputs 4 B x 2048 x 3 x (1024 + 4096) / 16 = 7.5 MiB"

# bad options
"$WAVEPIPE" sbp "${mlp[@]}" --search annealing > /dev/null 2>&1
expect_status 2 $? "an unknown search is a usage error"
"$WAVEPIPE" sbp --widths 512 --batch 8 --devices 4 > /dev/null 2>&1
expect_status 2 $? "one width is no layer"
"$WAVEPIPE" sbp --widths 512,256 --devices 4 > /dev/null 2>&1
expect_status 2 $? "--batch is needed"
"$WAVEPIPE" sbp --widths 512,256 --batch 8 --devices 4 --repeat 2 > "$out/rep-bad.txt" 2>&1
expect_status 2 $? "--repeat needs the last width to equal the first"
"$WAVEPIPE" sbp --widths 512,256 --batch 8 --devices 12 --gpus-per-node 8 > "$out/nodes.txt" 2>&1
expect_status 1 $? "12 devices are not nodes of 8"
expect_contains "$out/nodes.txt" "12 devices are not whole nodes of 8 GPUs" "and says so"
"$WAVEPIPE" sbp --widths 512,256 --batch 8 --devices 4 --intra 1us > /dev/null 2>&1
expect_status 2 $? "--intra needs LATENCY,BANDWIDTH"
finish
