#!/usr/bin/env bash
# `mpiexec -n 8 wavepipe sbp --measure`: a strategy's communication
# executed over MPI (run/comm/sbp_exec.c), 8 ranks posing as 2 nodes x 4 GPUs.
# For the chosen mesh, Megatron's 1D split, data parallelism and a
# written-out strategy (alltoalls within a node and across nodes, the P2P
# permutation, mesh axes within and across nodes) each term's bytes
# counted from the MPI calls equal the model's exactly on all 8 ranks, and
# Megatron's and DP's totals equal their closed forms. The job's one node
# is reported as not the model's two; emulated compute is left out of the
# step's communication; DP's gradients go in buckets; --cluster gives the
# links; --wait spin waits in MPI_Wait; bad input gets one error and a
# nonzero status.
. "$(dirname "$0")/lib.sh"
out=$(scratch_dir)
rm -f /dev/shm/mpich_shm_* 2>/dev/null
widths=256,128,64,32,16 # 4 layers, float32: 256x128, 128x64, 64x32, 32x16
base=(--widths "$widths" --batch 64 --devices 8 --gpus-per-node 4)
run8() { timeout 60 "$MPIEXEC" -n 8 "$WAVEPIPE" sbp "${base[@]}" "$@"; }

# every row's model bytes equal its counted bytes (the last columns:
# model_bytes counted_bytes[^*] emulated), and every rank agrees
check_bytes() { # FILE WHAT
    if awk '/^fc[0-9]/ { rows++; if ($(NF-1) != $(NF-2)) bad++; if ($NF != "emulated") bad++ }
            END { exit !(rows == 16 && bad == 0) }' "$1"; then
        pass "$2: counted bytes equal the model's in all 16 terms (4 layers x 4), every row says emulated"
    else
        fail "$2: counted bytes equal the model's in all 16 terms"; sed 's/^/    | /' "$1"
    fi
    expect_contains "$1" "ranks_exact=8/8" "$2: all 8 ranks count exactly the model's bytes"
    if awk '/^summary:/ { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
            END { exit !(v["model_bytes"] > 0 && v["counted_min_bytes"] == v["model_bytes"] &&
                         v["counted_max_bytes"] == v["model_bytes"]) }' "$1"; then
        pass "$2: the total per device, least and most over the ranks, is the model's"
    else
        fail "$2: the total per device is the model's"; grep '^summary:' "$1"
    fi
}
summary_value() { sed -n "s/^summary:.* $2=\([^ ]*\).*/\1/p" "$1"; }

# Megatron with 0.05 s of emulated compute per layer and pass; DP with the
# weight gradients in 32 KiB buckets
mixed=1x2x4@1x1x2,2x4x1@2x1x1,2x1x4@1x1x2,4x1x2@1x1x2
declare -A extra=([megatron]="--compute-s 0.05" [dp]="--bucket 32KiB")
for s in chosen megatron dp "$mixed"; do
    f="$out/measure-${s//[,@]/_}.txt"
    # shellcheck disable=SC2086
    run8 --strategy "$s" --measure --repeats 1 ${extra[$s]:-} > "$f" 2>&1
    expect_status 0 $? "--measure --strategy $s ${extra[$s]:-}on 8 ranks"
    check_bytes "$f" "$s"
done
f=$out/measure-megatron.txt
expect_contains "$f" "0.05 s slept per layer and pass" "--compute-s: said"
step=$(summary_value "$f" step_s)
if awk -v s="$step" 'BEGIN { exit !(s != "" && s < 0.4) }'; then
    pass "--compute-s: the step's 8 x 0.05 s of sleep are not counted as communication (step_s $step)"
else
    fail "--compute-s: step_s $step should leave out the 0.4 s slept"
fi
f=$out/measure-dp.txt
# fc0's gradient: 256 x 128 x 4 B = 128 KiB, 4 buckets; fc3's 2 KiB, one
grep -qE '^fc0 +weight_sync .* allreduce in 4 ' "$f" && grep -qE '^fc3 +weight_sync .* allreduce +8 ' "$f" &&
    pass "--bucket 32KiB: fc0's 128 KiB gradient in 4 AllReduces, fc3's 2 KiB in one" ||
    fail "--bucket 32KiB: fc0's gradient in 4 AllReduces, fc3's in one"
f=$out/measure-chosen.txt
expect_contains "$f" "8 MPI ranks on 1 node (MPI shared memory), NOT the model's 2 nodes x 4" \
    "the job's layout (one node) is checked against the model's and reported"
expect_contains "$f" "compute emulated: no matmul runs" "the heading says compute is emulated"
expect_contains "$f" "job_nodes=1 node_major=0" "the summary says so too"
# the chosen meshes are the plain search's, in P0xP1xP2@N0xN1xN2
"$WAVEPIPE" sbp "${base[@]}" > "$out/plain.txt" 2>&1
plain=$(awk '/^fc[0-9]/ { gsub(/[()]/, "", $4); gsub(/[()]/, "", $5); split($4, p, ","); split($5, n, ",")
                          printf "%s%sx%sx%s@%sx%sx%s", sep, p[1], p[2], p[3], n[1], n[2], n[3]; sep = "," }' "$out/plain.txt")
if [ -n "$plain" ] && [ "$(summary_value "$f" meshes)" = "$plain" ]; then
    pass "--measure runs the meshes the plain search chooses ($plain)"
else
    fail "--measure runs the plain search's meshes: '$(summary_value "$f" meshes)' vs '$plain'"
fi

# what the written-out strategy exercises: the input's rows (2,4) -> (1,2),
# an alltoall over 4 devices on both nodes; (2,2) -> (2,1) within the
# nodes; (2,1) -> (1,2), the same row count on other nodes: the P2P
# permutation; (1,2) -> (1,4) within the nodes again
f=$out/measure-${mixed//[,@]/_}.txt
for want in "fc0 alltoall 4 inter" "fc1 alltoall 2 intra" "fc2 p2p 1 inter" "fc3 alltoall 2 intra"; do
    read -r layer kind group level <<< "$want"
    if grep -qE "^$layer +alltoall .* $kind fwd\+bwd +$group $level " "$f"; then
        pass "$layer: $kind over $group ($level-node)"
    else
        fail "$layer: $kind over $group ($level-node)"; grep "^$layer " "$f"
    fi
done
if grep -qE '^fc[0-9] +(gather|reduce|weight_sync) .* [0-9]+ inter ' "$f" &&
   grep -qE '^fc[0-9] +(gather|reduce|weight_sync) .* [0-9]+ intra ' "$f"; then
    pass "mesh axes within and across nodes"
else
    fail "mesh axes within and across nodes"
fi

# closed forms, float32, p = 8: Megatron all-gathers (column-parallel) or
# reduce-scatters (row-parallel) each layer's whole activation, forward and
# backward, 2 (7/8) 4 b w; DP all-reduces every weight, 2 (7/8) 4 n_in n_out
megatron=$(( 2 * 7 * 4 * 64 * (256 + 64 + 64 + 16) / 8 ))
dp=$(( 2 * 7 * 4 * (256 * 128 + 128 * 64 + 64 * 32 + 32 * 16) / 8 ))
got=$(summary_value "$out/measure-megatron.txt" counted_max_bytes)
[ "$got" = "$megatron" ] && pass "Megatron: $megatron bytes per device (gathers 256, reduces 64, gathers 64, reduces 16 wide)" ||
    fail "Megatron: $megatron bytes per device, counted $got"
got=$(summary_value "$out/measure-dp.txt" counted_max_bytes)
[ "$got" = "$dp" ] && pass "data parallelism: $dp bytes per device, 2 (7/8) of the float32 weights" ||
    fail "data parallelism: $dp bytes per device, counted $got"
expect_contains "$out/measure-megatron.txt" "1x8x1@1x2x1,1x1x8@1x1x2,1x8x1@1x2x1,1x1x8@1x1x2" \
    "Megatron: column-parallel (1,8,1), then row-parallel (1,1,8)"

# --cluster: intra from its intra_node_network, inter from its network
sed 's/^network = .*/&\nintra_node_network = { name = "mpi-intra-node"; bandwidth_Bps = 2e9; latency_s = 5e-6; source = "calibrated"; };/' \
    "$WP_SRCDIR/tests/config/good-two-nodes.cfg" > "$out/cluster.cfg"
small=(--widths "$widths" --batch 64 --devices 4 --gpus-per-node 2 --strategy megatron)
"$WAVEPIPE" sbp "${small[@]}" --cluster "$out/cluster.cfg" -o "$out/by-cluster.cfg" > "$out/by-cluster.txt" 2>&1
expect_status 0 $? "plain sbp --cluster"
"$WAVEPIPE" sbp "${small[@]}" --intra 5us,2GB/s --inter 2us,12.5GB/s -o "$out/by-hand.cfg" > /dev/null 2>&1
if [ "$(grep -m1 'comm_s' "$out/by-cluster.cfg")" = "$(grep -m1 'comm_s' "$out/by-hand.cfg")" ] &&
   [ -n "$(grep -m1 'comm_s' "$out/by-hand.cfg")" ]; then
    pass "--cluster costs as --intra 5us,2GB/s --inter 2us,12.5GB/s ($(grep -m1 'comm_s' "$out/by-hand.cfg" | tr -s ' '))"
else
    fail "--cluster costs as its intra_node_network and network"
fi
# measured on 2 ranks as 2 nodes of 1, waiting in MPI_Wait
timeout 60 "$MPIEXEC" -n 2 "$WAVEPIPE" sbp --widths "$widths" --batch 64 --devices 2 --gpus-per-node 1 \
    --cluster "$out/cluster.cfg" --measure --repeats 1 --wait spin > "$out/cluster-measure.txt" 2>&1
expect_status 0 $? "--measure --cluster --wait spin on 2 ranks"
expect_contains "$out/cluster-measure.txt" "waited for in MPI_Wait" "--wait spin: said"
expect_contains "$out/cluster-measure.txt" "ranks_exact=2/2" "and both ranks count the model's bytes"
expect_contains "$out/cluster-measure.txt" "cluster.cfg: intra_network mpi-intra-node, calibrated" "intra-node link named"
expect_contains "$out/cluster-measure.txt" "cluster.cfg: network ib-edr, user" "inter-node link named"

# bad input: one error, a nonzero status (2 ranks: each error comes before
# or instead of the run)
one_error() { # FILE STATUS WANT_STATUS TEXT WHAT
    expect_status "$3" "$2" "$5: exit status $3"
    n=$(grep -c '^wavepipe sbp:' "$1")
    if [ "$n" = 1 ] && grep -qF -- "$4" "$1"; then pass "$5: one error, '$4'"; else
        fail "$5: one error with '$4' ($n lines)"; sed 's/^/    | /' "$1"; fi
}
run2() { timeout 60 "$MPIEXEC" -n 2 "$WAVEPIPE" sbp --widths "$widths" --batch 64 "$@" --measure; }
run2 --devices 8 --gpus-per-node 4 > "$out/bad-ranks.txt" 2>&1
one_error "$out/bad-ranks.txt" $? 1 "--devices 8 but the job has 2 MPI ranks" "8 devices on 2 ranks"
run2 --devices 4 --gpus-per-node 3 > "$out/bad-gpn.txt" 2>&1
one_error "$out/bad-gpn.txt" $? 1 "4 devices are not whole nodes of 3 GPUs" "G = 3 does not divide 4 devices"
run2 --devices 4 --gpus-per-node 2 --strategy 2x4x1 > "$out/bad-mesh.txt" 2>&1
one_error "$out/bad-mesh.txt" $? 1 "mesh '2x4x1' has 8 devices, not 4" "a mesh of the wrong size"
run2 --devices 2 --wait often > "$out/bad-wait.txt" 2>&1
one_error "$out/bad-wait.txt" $? 2 "--wait 'often' must be yield or spin" "a bad option under --measure"
"$WAVEPIPE" sbp "${base[@]}" --repeats 3 > "$out/no-measure.txt" 2>&1
one_error "$out/no-measure.txt" $? 2 "need --measure" "--repeats without --measure"
"$WAVEPIPE" sbp "${base[@]}" --cluster "$out/cluster.cfg" --inter 1us,1GB/s > "$out/two-links.txt" 2>&1
one_error "$out/two-links.txt" $? 2 "--cluster gives the links" "--cluster and --inter together"
"$WAVEPIPE" sbp "${base[@]}" --strategy 2x4x1 > "$out/ambiguous.txt" 2>&1
one_error "$out/ambiguous.txt" $? 1 "give the nodes per axis" "a mesh that splits over the nodes in two ways"
finish
