#!/usr/bin/env bash
# make bench-peers (issue 33): every schedule class of PyTorch's
# torch.distributed.pipelining (GPipe, 1F1B, Interleaved1F1B with one and two
# stages a rank, LoopedBFS, InterleavedZeroBubble with one and two,
# ZBVZeroBubble, DualPipeV) dumps its order for P in {4, 8} and M in {P, 2P,
# 4P} (bench/peers_torch_orders.py, PyTorch from PyPI in the shared venv:
# bench/torch_venv.sh); each is timed beside wavepipe's orders of every kind
# (wavepipe schedule --format csv, made for the cell's costs and tc, the
# memory-bounded kinds also given the torch order's peak as --max-inflight)
# on one event clock that is not wavepipe's simulator (bench/peers_compare.py),
# at costs (tf, tb, tw) = (1, 2, 0) and (1, 1, 1) and a hop time tc in {0,
# 0.25, 1}; the table shows, per torch order, wavepipe's fastest order whose
# peak is no higher, and the ratio (goal: at most 1 in every cell).
# Usage: peers.sh WAVEPIPE SRCDIR
# Environment: TORCH_VENV, TORCH_SPEC (bench/torch_venv.sh); PEERS_RANKS
# (default "4 8"); PEERS_TC (default 0,0.25,1); PEERS_OUT (the CSV, default
# bench-peers.csv here).
set -u
[ $# -eq 2 ] || { echo "usage: peers.sh WAVEPIPE SRCDIR" >&2; exit 2; }
wavepipe=$1 srcdir=$2
[ -x "$wavepipe" ] || { echo "peers: no executable $wavepipe" >&2; exit 2; }
# shellcheck source=bench/torch_venv.sh
. "$(dirname "$0")/torch_venv.sh"
torch_venv_ready peers || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
shapes=()
for P in ${PEERS_RANKS:-4 8}; do
    shapes+=("$P" "$P" "$P" $((2 * P)) "$P" $((4 * P)))
done
echo "# wavepipe $("$wavepipe" --version 2>&1 | head -n 1)"
"$py" "$srcdir/bench/peers_torch_orders.py" "$tmp/orders" "${shapes[@]}" | grep -v ',ok$' | sed 's/^\([^#]\)/# \1/'
ranks=$(echo "${PEERS_RANKS:-4 8}" | tr ' ' ',')
python3 "$srcdir/bench/peers_compare.py" "$wavepipe" "$tmp/orders" "${PEERS_OUT:-bench-peers.csv}" \
    --ranks "$ranks" --tc "${PEERS_TC:-0,0.25,1}"
