#!/usr/bin/env bash
# scenario-hook.sh -- the --changes-hook of `wavepipe run --changes` on the
# virtual Slurm cluster (tests/cluster/vcluster.sh): makes a scenario's
# network changes from inside a job. Rank 0 of the run calls it at an
# iteration boundary and waits for it; it needs the cluster's environment
# (VCLUSTER_DIR, VCLUSTER_NODES: DIR/env, which sbatch and srun pass on to
# the job) and root (the nodes' namespaces, tc), as the cluster's jobs have.
#
#   scenario-hook.sh rate RATE|none
#       every node's link shaped to RATE (tc tbf, e.g. 100mbit), or unshaped;
#       in a dilated run (WAVEPIPE_DILATION F, WAVEPIPE_BYTE_SCALE S, which
#       wavepipe run --dilate F --scale-bytes S gives its --changes-hook, and
#       a caller may set) RATE is the undilated rate: the link gets RATE /
#       (F x S) (vcluster.sh shape --dilate F --scale-bytes S)
#   scenario-hook.sh flow on [STREAMS]
#       a competing flow between nodes 1 and 2, as another job's traffic on
#       the same links: STREAMS TCP streams each way (default 4; bash
#       /dev/tcp writers, python3 readers, in the node namespaces); they
#       last until "flow off" or the end of the job step. Says how many
#       streams run. The streams take their share of the links whatever
#       their rate, so on dilated links the flow is dilated alike (and its
#       processes cost the host F x S times less).
#   scenario-hook.sh flow off
#       the flow stopped
# Exits nonzero, with a message, when a change cannot be made.
set -u
log() { printf 'scenario-hook: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
[ -n "${VCLUSTER_DIR:-}" ] && [ -r "$VCLUSTER_DIR/env" ] ||
    die "no virtual cluster in the environment (VCLUSTER_DIR; source the cluster's env before sbatch)"
VC=$(cd "$(dirname "$0")" && pwd)/vcluster.sh
NODES=${VCLUSTER_NODES:-2}
FLOW_PORT=26900
PIDS=$VCLUSTER_DIR/run/scenario-flow.pids

rate() {
    local i
    for i in $(seq 1 "$NODES"); do
        if [ "$1" = none ]; then
            bash "$VC" unshape "$VCLUSTER_DIR" "wpn$i" > /dev/null 2>&1
        else
            bash "$VC" shape --dilate "${WAVEPIPE_DILATION:-1}" --scale-bytes "${WAVEPIPE_BYTE_SCALE:-1}" \
                "$VCLUSTER_DIR" "wpn$i" "$1" 256kbit > /dev/null || die "cannot shape wpn$i to $1"
        fi
    done
    local dilated=""
    [ "${WAVEPIPE_DILATION:-1}" = 1 ] && [ "${WAVEPIPE_BYTE_SCALE:-1}" = 1 ] ||
        dilated=" (dilated: / ${WAVEPIPE_DILATION:-1} x ${WAVEPIPE_BYTE_SCALE:-1})"
    echo "scenario-hook: links of $NODES nodes ${1/none/unshaped}$dilated"
}

flow_off() {
    local pid
    [ -f "$PIDS" ] || return 0
    for pid in $(cat "$PIDS"); do kill "$pid" 2> /dev/null; done
    rm -f "$PIDS"
}

flow_on() {
    local streams=$1 a b f n tries python pids="" writers=""
    python=$(python3 -c 'import sys; print(sys.executable)') || die "no python3 (the flow's readers)"
    flow_off
    # the readers in the receiving nodes first; the writers once every
    # reader listens (a writer that finds no listener ends at once)
    for b in 1 2; do
        for f in $(seq 1 "$streams"); do
            nsenter --net="/run/netns/wpn$b" "$python" -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(1)
c, _ = s.accept(); buf = bytearray(1 << 20)
while c.recv_into(buf): pass' $((FLOW_PORT + f)) > /dev/null 2>&1 &
            pids="$pids $!"
        done
    done
    for tries in $(seq 1 100); do
        n=0
        for b in 1 2; do
            n=$((n + $(nsenter --net="/run/netns/wpn$b" ss -Hltn "sport > :$FLOW_PORT and sport <= :$((FLOW_PORT + streams))" | wc -l)))
        done
        [ "$n" -ge $((2 * streams)) ] && break
        sleep 0.05
    done
    for a in 1 2; do
        b=$((3 - a))
        for f in $(seq 1 "$streams"); do
            nsenter --net="/run/netns/wpn$a" bash -c "exec cat /dev/zero > /dev/tcp/10.250.0.1$b/$((FLOW_PORT + f))" \
                > /dev/null 2>&1 &
            writers="$writers $!"
        done
    done
    echo "$pids$writers" > "$PIDS"
    sleep 0.2
    n=0
    for f in $writers; do kill -0 "$f" 2> /dev/null && n=$((n + 1)); done
    echo "scenario-hook: flow on: $n of $((2 * streams)) streams running"
    [ "$n" -gt 0 ] || die "no stream of the flow runs"
}

case ${1:-} in
rate) [ $# -eq 2 ] || die "usage: $0 rate RATE|none"; rate "$2" ;;
flow)
    case ${2:-} in
    on) flow_on "${3:-4}" ;;
    off) flow_off; echo "scenario-hook: flow off" ;;
    *) die "usage: $0 flow on [STREAMS] | flow off" ;;
    esac
    ;;
*) die "unknown change '${1:-}' (rate RATE|none, flow on [STREAMS], flow off)" ;;
esac
