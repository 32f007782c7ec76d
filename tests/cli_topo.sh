#!/usr/bin/env bash
# `wavepipe topo` and `wavepipe --help` from the command line: the DGX-2
# report, several node types, writing and reading back the cluster file,
# the network option, and bad input (one clear error, nothing written).
. "$(dirname "$0")/lib.sh"
out=$(scratch_dir)
dgx="$WP_FIXTURES/hwloc-nvidiaDGX2.xml"
hgx="$WP_FIXTURES/flux-ipa20-hgx-h100.xml"

"$WAVEPIPE" --help > "$out/help.txt"; expect_status 0 $? "wavepipe --help exits 0"
expect_contains "$out/help.txt" "topo" "--help lists topo"
expect_contains "$out/help.txt" "probe" "--help lists probe"
"$WAVEPIPE" topo --help > "$out/topo-help.txt"; expect_status 0 $? "topo --help exits 0"
expect_contains "$out/topo-help.txt" "--xml FILE[:COUNT]" "topo --help explains --xml"
expect_contains "$out/topo-help.txt" "--network NAME,BW,LAT" "topo --help explains --network"
"$WAVEPIPE" --version > "$out/version.txt"; expect_status 0 $? "--version exits 0"
expect_contains "$out/version.txt" "hwloc" "--version names hwloc"
expect_contains "$out/version.txt" "MPI loaded: MPICH Version: " "--version names the MPI library actually loaded"
expect_contains "$out/version.txt" "CBLAS loaded: " "--version names the CBLAS actually loaded"
# a Debian BLAS build linked by directory (configure's default with gcc) is
# the one the loader took, whatever the system's alternative says (RUNPATH)
blas_dir=$(sed -n 's/^  CBLAS *: .*, \(\/[^,]*\) (built against)$/\1/p' "$out/version.txt")
if [ -n "$blas_dir" ]; then
    if grep -q "^  CBLAS loaded: .*loaded from $blas_dir/" "$out/version.txt"; then
        pass "the CBLAS loaded is the configured one, from $blas_dir"
    else
        fail "the CBLAS loaded is not from the configured $blas_dir: $(grep 'CBLAS loaded' "$out/version.txt")"
    fi
fi

"$WAVEPIPE" topo --xml "$dgx" > "$out/dgx2.txt"; expect_status 0 $? "topo --xml DGX-2 exits 0"
expect_contains "$out/dgx2.txt" "16 GPUs, 12 NVSwitches" "DGX-2: 16 GPUs and 12 NVSwitches"
expect_contains "$out/dgx2.txt" "every GPU pair: NVSwitch, 150 GB/s" "DGX-2: NVSwitch pairs at 150 GB/s"
expect_contains "$out/dgx2.txt" "recorded topology, emulated" "DGX-2: says it is emulated"
n150=$(grep -cE '^  [0-9]+ +Tesla V100.* 150 GB/s$' "$out/dgx2.txt")
expect_status 16 "$n150" "DGX-2: the NVLink bandwidth of each of the 16 GPUs is 150 GB/s"

"$WAVEPIPE" topo --xml "$dgx:2" --xml "$hgx:3" --network ib-hdr,200Gbit/s,1.5us \
    --name mixed --out "$out/mixed.cfg" > "$out/mixed.txt"
expect_status 0 $? "two node types with counts and a network"
expect_contains "$out/mixed.txt" 'cluster "mixed": 2 node types, 5 nodes, 44 GPUs' "counts of a mixed cluster"
expect_contains "$out/mixed.txt" 'inter-node network "ib-hdr": 25 GB/s, latency 1.5 us (given by the user, not measured)' \
    "network from the user"
expect_contains "$out/mixed.cfg" 'format = "wavepipe-cluster";' "cluster file written"
"$WAVEPIPE" topo --cluster "$out/mixed.cfg" > "$out/back.txt"; expect_status 0 $? "cluster file read back"
grep -v '^wrote ' "$out/mixed.txt" > "$out/mixed-noout.txt"
if diff -u "$out/mixed-noout.txt" "$out/back.txt" > "$out/diff.txt"; then
    pass "read-back summary identical to the original"
else
    fail "read-back summary differs"; cat "$out/diff.txt"
fi

# Bad input: one line, file:line, exit 1, nothing overwritten.
echo "keep me" > "$out/keep.cfg"
"$WAVEPIPE" topo --cluster "$WP_SRCDIR/tests/config/bad-unknown-key.cfg" --out "$out/keep.cfg" 2> "$out/err.txt"
expect_status 1 $? "bad cluster file exits 1"
expect_contains "$out/err.txt" "bad-unknown-key.cfg:6: unknown key 'bandwith_Bps' in network; did you mean 'bandwidth_Bps'?" \
    "bad cluster file: file:line and the nearest key"
expect_status 1 "$(wc -l < "$out/err.txt")" "bad cluster file: one line of error"
expect_contains "$out/keep.cfg" "keep me" "bad input leaves an existing output untouched"
"$WAVEPIPE" topo --xml /nonexistent.xml 2> "$out/err2.txt"; expect_status 1 $? "missing XML exits 1"
expect_contains "$out/err2.txt" "cannot read /nonexistent.xml" "missing XML named"
"$WAVEPIPE" topo --xml "$dgx" --network ib,fast,1us 2> "$out/err3.txt"; expect_status 2 $? "bad network exits 2"
expect_contains "$out/err3.txt" "'fast' is not a bandwidth" "bad network bandwidth explained"
"$WAVEPIPE" topo --bogus 2> "$out/err4.txt"; expect_status 2 $? "unknown option exits 2"
expect_contains "$out/err4.txt" "unknown option --bogus" "unknown option named"
"$WAVEPIPE" topo --xml "$dgx:0" 2> "$out/err5.txt"; expect_status 2 $? "zero node count exits 2"
expect_contains "$out/err5.txt" "must be an integer in [1, 1000000]" "node count range given"
"$WAVEPIPE" frobnicate 2> "$out/err6.txt"; expect_status 2 $? "unknown command exits 2"
"$WAVEPIPE" topo --xml "$dgx" --out /nonexistent-dir/x.cfg 2> "$out/err7.txt"; expect_status 1 $? "unwritable output exits 1"
expect_contains "$out/err7.txt" "cannot write /nonexistent-dir/x.cfg" "unwritable output named"

# This machine, live (a singleton MPI process).
"$WAVEPIPE" topo --out "$out/live.cfg" > "$out/live.txt"; expect_status 0 $? "live topo of this machine"
expect_contains "$out/live.txt" "live hwloc on $(hostname)" "live topology says where it comes from"
expect_contains "$out/live.cfg" "host = \"$(hostname)\"" "live cluster file names this host"
# The shipped reference machines stay readable.
for f in "$WP_SRCDIR"/topology/*.cfg; do
    "$WAVEPIPE" topo --cluster "$f" --quiet; expect_status 0 $? "topology/$(basename "$f") reads back"
done
# --- --nodes and --gpus-per-node: a calibration made over for a plan of emulated GPUs ---
cp "$WP_SRCDIR/tests/config/good-two-nodes.cfg" "$out/cal.cfg"
printf 'intra_node_network : { name = "shm"; bandwidth_Bps = 5e9; latency_s = 2e-5; source = "calibrated"; };\n' \
    >> "$out/cal.cfg"
"$WAVEPIPE" topo --cluster "$out/cal.cfg" --nodes 4 --gpus-per-node 3 --gpu-memory 16GB --out "$out/emu.cfg" \
    > "$out/emu.txt" 2>&1
expect_status 0 $? "topo --cluster --nodes 4 --gpus-per-node 3"
expect_contains "$out/emu.txt" "1 node type, 4 nodes, 12 GPUs" "4 nodes of 3 GPUs"
expect_contains "$out/emu.txt" "3 emulated GPUs (ranks), linked by the intra-node network" "said emulated, and how linked"
expect_contains "$out/emu.txt" "every GPU pair: SYS, 5 GB/s" "linked at the intra-node network's bandwidth"
"$WAVEPIPE" topo --cluster "$out/emu.cfg" --quiet
expect_status 0 $? "the made-over file reads back"
"$WAVEPIPE" plan --layers "$WP_SRCDIR/profiles/dapple-v100/bert-48-pbs-2.txt" --global-batch 64 \
    --cluster "$out/emu.cfg" > "$out/emu-plan.txt" 2>&1
expect_status 0 $? "wavepipe plan plans on it"
expect_contains "$out/emu-plan.txt" "4 nodes x 3 emulated GPU (16 GB)" "for 4 nodes of 3 emulated GPUs"
"$WAVEPIPE" topo --cluster "$WP_SRCDIR/tests/config/good-two-nodes.cfg" --gpus-per-node 2 > "$out/nointra.txt" 2>&1
expect_status 1 $? "emulated GPUs without an intra-node network are refused"
expect_contains "$out/nointra.txt" "has none (wavepipe calibrate on 2 ranks a node writes it)" "and it says why"
"$WAVEPIPE" topo --nodes 2 > "$out/nocl.txt" 2>&1
expect_status 2 $? "--nodes without --cluster is refused"
finish
