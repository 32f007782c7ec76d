#!/usr/bin/env bash
# vcluster.sh -- a real multi-node Slurm cluster on one Linux machine, built
# from network namespaces.  wavepipe's Slurm tests run on it.
#
# Usage:
#   vcluster.sh can-run              0: namespaces/veth/bridges can be made here
#                                    1: they cannot (reason on stdout)
#                                    2: a tool this script needs is missing
#   vcluster.sh up DIR [NODES]       build a cluster of NODES (1-4, default 3)
#                                    slurmd nodes; writes DIR/env to source
#   vcluster.sh down DIR             tear it down (safe twice, safe half-built)
#   vcluster.sh selftest DIR         srun -N NODES hostname, checks the names
#   vcluster.sh shape [--dilate F] [--scale-bytes S] DIR NODE RATE [BURST]
#                                    tbf rate limit on NODE's outgoing link (e.g.
#                                    200mbit; BURST default 32kbit). Dilated
#                                    (wavepipe run --dilate F --scale-bytes S):
#                                    the rate divided by F x S, the burst by S
#                                    (at least 2 KiB: one frame) and the queue's
#                                    latency limit (50 ms) times F, so that the
#                                    link carries 1/S of the bytes in F times the
#                                    time. Added latency (netem) would be
#                                    multiplied by F; this kernel has no netem,
#                                    so links add none (their own is the host's)
#   vcluster.sh unshape DIR NODE     remove it
#   vcluster.sh rx-bytes DIR         bytes the nodes have sent into the bridge
#                                    (rx_bytes of the ports wpv1..wpvN, every
#                                    frame): two readings bound what a job sent
#
# Shape of the cluster:
#   controller  slurmctld in the root network namespace, in its own UTS
#               namespace with host name wpctl, at 10.250.0.1 on bridge wpbr
#   nodes       wpn1..wpnN: one network namespace each (/run/netns/wpnN), own
#               UTS namespace (host name wpnN), own mount namespace in which
#               DIR/nodes/wpnN/tmp is bind-mounted on /tmp; address 10.250.0.1N
#               on eth0, a veth whose other end (wpvN) is a port of wpbr
#   munge       a private munged: key, socket, pid, log, seed under DIR/munge
#   Slurm       slurm.conf under DIR/etc, ports 26817 (slurmctld) and 26818
#               (slurmd), partition wp (default), MpiDefault=none, no
#               accounting (job completions go to DIR/log/jobcomp.txt)
#
# What this script owns, and the only things it creates or removes:
#   - the network namespaces wpn1..wpn4, the bridge wpbr, the links wpv1..wpv4
#   - the lines of /etc/hosts that end in "# wavepipe-vcluster"
#   - the symbolic link /run/wavepipe-vcluster -> DIR (short socket paths)
#   - the daemons it starts (munged, slurmctld, slurmd) and every process
#     inside the wpnN namespaces (slurmstepd, job tasks).  Leftovers of an
#     earlier run are found and killed by pid: Slurm daemons by their UTS host
#     name (wpctl, wpn1..wpn4), munged by its --key-file under a DIR that
#     holds the .vcluster marker
#   - under DIR: env etc/ munge/ state/ sp/ log/ run/ nodes/ .vcluster
#     (other files under DIR are left alone)
#
# Paths that must be visible on the nodes (binaries under test, job output)
# must not be under /tmp, which is private per node.  DIR itself, the
# checkout this script is in, the directory `up` was run from and the
# colon-separated paths in $VCLUSTER_KEEP are re-mounted at their own place on
# the nodes when they are under /tmp, so a build tree under /tmp still works;
# DIR/env lists them in WAVEPIPE_SHARED_TMP (wavepipe sweep warns about
# results or a program under another /tmp path).
#
# Environment knobs (read by 'up'):
#   VCLUSTER_CPUS     CPUs declared per node (default 2; more is allowed,
#                     SlurmdParameters=config_overrides)
#   VCLUSTER_WAIT     seconds to wait for all nodes to be idle (default 60)
#   VCLUSTER_KEEP     colon-separated paths under /tmp to keep visible on nodes
#                     (beside DIR, the checkout and the current directory)
#   VCLUSTER_UCX_TLS  UCX_TLS written to DIR/env (default: none, see below)
#   VCLUSTER_MPI      debian (default): MPI programs run on Debian's MPICH
#                     4.0.2 as built; mpich5: DIR/env also sources
#                     mpi5-env.sh beside this script, which swaps in MPICH 5
#                     (scripts/install-deps puts it in /opt/wavepipe/mpich5)
#                     over libfabric's tcp provider: MPI crosses the links
#
# MPI transport.  MPICH (ch4:ucx) talks through UCX between nodes (ranks of
# one node use MPICH's own shared memory).  Left alone, UCX sees the nodes as
# one machine and uses shared memory (sysv/posix/cma) between them: MPI works
# and is reliable, but its traffic does not cross the veth links, so 'shape'
# does not slow it.  UCX_TLS=tcp,self with UCX_NET_DEVICES=eth0 (lo of one
# namespace does not reach another's) makes MPI traffic go over the veth
# links, but Debian 12's MPICH 4.0.2 + UCX 1.13.1 then hangs in MPI_Finalize
# in most jobs of 3 or more ranks (nearly always with 3 nodes; also with 2
# nodes of 2 ranks; never seen with 2 ranks): each rank closes its UCX
# endpoints and then waits in a PMI barrier, where it no longer progresses
# UCX, while a peer still waits on it to close an endpoint (UCX debug logs
# show it on endpoints MPI never used, whose TCP connection is still being
# set up).  MPICH fixed it upstream ("ch4/ucx: remove MPIR_pmi_barrier in
# finalize", pmodels/mpich#6596).  Tried here, none avoids it:
# UCX_TCP_PUT_ENABLE=n, UCX_RNDV_THRESH=inf, UCX_PROTO_ENABLE=y, shorter
# UCX_TCP_KEEP* times, a message between every pair of ranks after
# MPI_Init, a barrier and polling before MPI_Finalize.  Jobs of 2 ranks, one
# per node, finish; `wavepipe calibrate` ends a finalize that hangs after a
# time limit.  Over tcp, UCX_RNDV_THRESH=inf (eager only)
# keeps both directions of an exchange streaming at once; with rendezvous
# they are sometimes serialised, which doubles some timings.
# Non-MPI traffic (PMIx, sockets of the program itself) always crosses them.
#
# VCLUSTER_MPI=mpich5 is the way out (mpi5-env.sh): MPICH 5.0.2 from PyPI,
# same ABI as Debian's libmpich.so.12, with MPIR_CVAR_CH4_NETMOD=ofi
# FI_PROVIDER=tcp FI_TCP_IFACE=eth0; ranks of one node keep MPICH's shared
# memory, ranks of different nodes (different node ids from Slurm's PMI)
# talk TCP over eth0. Measured here (2 cores, `srun --mpi=pmi2 -N 3 -n 8
# wavepipe run --config jobs/models/gpt-tiny.cfg --steps 3`, 1f1b, 8 stages,
# ranks 3+3+2, 16 messages of 32 KiB between nodes per step, 1.57 MB in all):
# the bridge ports' rx_bytes (wpv1..wpv3) grew by 2.07 MB (3 of 3 runs);
# about 0.66 MB more per extra step (0.52 MB of it payload). The same job on
# Debian's MPICH (default UCX): 0.04 MB, i.e. only Slurm's own traffic; MPICH
# 5 with its default netmod (ucx): 0.04 MB too (UCX's shared memory again);
# MPICH 5 with ofi and no FI_PROVIDER: over the links too, but the provider is
# then libfabric's choice. The libmpich.so.12 link sits in MPICH 5's own
# lib/, so that the library's RUNPATH ($ORIGIN/mpich) finds its libfabric and
# UCX: from a directory of its own, $ORIGIN is that directory and (ldd) the
# loader takes Debian's UCX 1.13 and finds no libfabric, unless lib/mpich is
# put on LD_LIBRARY_PATH too. Reliability (bench/stress_internode.sh, jobs
# of 16 ranks on 4 nodes, `wavepipe run` 2 steps): MPICH 5 as above, 50 of
# 50 jobs finished, 2.0 s a job; Debian's MPICH
# with UCX_TLS=tcp,self UCX_NET_DEVICES=eth0: 10 of 10 hung in finalize.
#
# Needs root and the Debian packages slurmctld slurmd slurm-client
# slurm-wlm-basic-plugins munge iproute2 util-linux procps (and libpmix-dev
# for srun --mpi=pmix: Slurm's plugin dlopens libpmix.so).  No systemd.
set -euo pipefail

readonly BR=wpbr
readonly NET=10.250.0
readonly CTL=wpctl
readonly CTL_ADDR=$NET.1
readonly NODE_PREFIX=wpn
readonly VETH_PREFIX=wpv
readonly MAX_NODES=4
readonly CTLD_PORT=26817
readonly SLURMD_PORT=26818
readonly TAG='# wavepipe-vcluster'
readonly NODE_IF=eth0
# Unix socket paths are limited to 107 bytes, so the sockets (munge's, and
# slurmstepd's under SlurmdSpoolDir) are reached through this short link to
# DIR, whatever DIR's length.
readonly LINK=/run/wavepipe-vcluster

CPUS=${VCLUSTER_CPUS:-2}
MPI=${VCLUSTER_MPI:-debian}
MPI5_ENV=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/mpi5-env.sh
CHECKOUT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
WAIT_S=${VCLUSTER_WAIT:-60}

log() { printf 'vcluster: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

usage() {
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0" >&2
    exit 2
}

node_name() { printf '%s%d' "$NODE_PREFIX" "$1"; }
node_addr() { printf '%s.%d' "$NET" $((10 + $1)); }

# --- processes ------------------------------------------------------------

# alive PID: the process exists and is not a zombie.
alive() {
    local st
    [[ -r /proc/$1/stat ]] || return 1
    st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
    [[ -n $st && $st != Z && $st != X ]]
}

# comm_is PID NAME
comm_is() { [[ $(cat "/proc/$1/comm" 2>/dev/null) == "$2" ]]; }

# pid_from FILE NAME: the pid in FILE if that process is alive and is NAME.
pid_from() {
    local p
    [[ -r $1 ]] || return 0
    p=$(tr -dc '0-9' <"$1")
    [[ -n $p ]] && alive "$p" && comm_is "$p" "$2" && echo "$p"
    return 0
}

# wait_gone TENTHS: drops dead pids from the caller's `left` array, polling
# every 0.1 s for up to TENTHS tenths of a second; true once none is left.
wait_gone() {
    local i p
    for ((i = 0; i < $1; i++)); do
        local still=()
        for p in "${left[@]}"; do alive "$p" && still+=("$p"); done
        left=("${still[@]+"${still[@]}"}")
        ((${#left[@]})) || return 0
        sleep 0.1
    done
    return 1
}

# kill_wait PID...: SIGTERM, wait up to 3 s, SIGKILL, wait up to 2 s.
kill_wait() {
    local p left=()
    for p in "$@"; do alive "$p" && left+=("$p"); done
    ((${#left[@]})) || return 0
    kill -TERM "${left[@]}" 2>/dev/null || true
    wait_gone 30 && return 0
    log "SIGKILL to ${left[*]}"
    kill -KILL "${left[@]}" 2>/dev/null || true
    wait_gone 20 && return 0
    log "warning: still alive after SIGKILL: ${left[*]}"
}

# kill_listed: kill_wait the pids read from stdin (one a line, any order).
kill_listed() {
    local pids
    mapfile -t pids < <(grep -E '^[0-9]+$' | sort -un)
    if ((${#pids[@]})); then kill_wait "${pids[@]}"; fi
}

# Slurm daemons of any earlier run: recognised by their UTS host name.
stale_slurm_pids() {
    local p h
    for p in $(pgrep -x 'slurmctld|slurmscriptd|slurmd|slurmstepd' 2>/dev/null || true); do
        alive "$p" || continue
        h=$(nsenter --target "$p" --uts hostname 2>/dev/null) || continue
        if [[ $h == "$CTL" || $h =~ ^${NODE_PREFIX}[1-${MAX_NODES}]$ ]]; then
            echo "$p"
        fi
    done
}

# munged daemons started by this script (for any DIR that still carries the
# .vcluster marker), recognised by their --key-file argument.
stale_munged_pids() {
    local p key d
    for p in $(pgrep -x munged 2>/dev/null || true); do
        alive "$p" || continue
        key=$(tr '\0' '\n' <"/proc/$p/cmdline" 2>/dev/null |
            sed -n 's/^--key-file=//p' | head -n1)
        [[ $key == */munge/munge.key ]] || continue
        d=${key%/munge/munge.key}
        [[ -e $d/.vcluster ]] && echo "$p"
    done
    return 0
}

# --- can-run --------------------------------------------------------------

cmd_can_run() {
    local t missing=()
    for t in ip unshare nsenter tc slurmctld slurmd munged munge unmunge \
        sinfo srun sbatch scontrol; do
        command -v "$t" >/dev/null 2>&1 || missing+=("$t")
    done
    if ((${#missing[@]})); then
        echo "missing tools: ${missing[*]}"
        return 2
    fi
    if [[ $(id -u) != 0 ]]; then
        echo "not root: network namespaces and bridges need root"
        return 1
    fi
    if ! t=$(unshare --net --uts --mount true 2>&1); then
        echo "cannot create namespaces (unshare --net --uts --mount): $t"
        return 1
    fi
    if ! t=$(unshare --net sh -c \
        'ip link add name wpchk0 type veth peer name wpchk1 &&
         ip link add name wpchkbr type bridge &&
         ip link set wpchk0 master wpchkbr' 2>&1); then
        echo "cannot create veth pairs/bridges: $t"
        return 1
    fi
    local ns=wpchk$$
    if ! t=$(ip netns add "$ns" 2>&1); then
        echo "cannot create named network namespaces (ip netns add): $t"
        return 1
    fi
    ip netns del "$ns" 2>/dev/null || true
    echo "ok"
}

# --- down -----------------------------------------------------------------

hosts_remove() {
    grep -qF -- "$TAG" /etc/hosts 2>/dev/null || return 0
    local rest
    rest=$(grep -vF -- "$TAG" /etc/hosts || true)
    # rewrite in place: /etc/hosts may be a bind mount, so no rename
    printf '%s\n' "$rest" >/etc/hosts
}

cmd_down() {
    local dir=${1:-}
    [[ -n $dir ]] || usage
    local i n

    # 1. everything inside the node namespaces (slurmd, slurmstepd, tasks),
    # 2. slurmctld, and leftovers of earlier runs
    kill_listed < <(
        for ((i = 1; i <= MAX_NODES; i++)); do
            n=$(node_name "$i")
            if [[ -e /run/netns/$n ]]; then ip netns pids "$n" 2>/dev/null || true; fi
            pid_from "$dir/run/slurmd.$n.pid" slurmd
        done
        pid_from "$dir/run/slurmctld.pid" slurmctld
        stale_slurm_pids
    )
    # 3. our munged
    kill_listed < <(
        pid_from "$dir/munge/munged.pid" munged
        stale_munged_pids
    )

    # 4. network
    for ((i = 1; i <= MAX_NODES; i++)); do
        ip link del "$VETH_PREFIX$i" 2>/dev/null || true
        ip netns del "$(node_name "$i")" 2>/dev/null || true
    done
    ip link del "$BR" 2>/dev/null || true
    [[ -L $LINK ]] && rm -f "$LINK"
    hosts_remove
    rm -f "$dir/run/"*.pid "$dir/munge/munged.pid" 2>/dev/null || true
    return 0
}

# --- up -------------------------------------------------------------------

write_conf() {
    local dir=$1 nodes=$2 i conf=$1/etc/slurm.conf
    cat >"$conf" <<EOF
# Written by tests/cluster/vcluster.sh; rewritten on every 'up'.
ClusterName=wavepipe
SlurmctldHost=$CTL($CTL_ADDR)
SlurmUser=root
MailProg=/bin/true
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$LINK/munge/munge.socket
CredType=cred/munge
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
StateSaveLocation=$dir/state
SlurmdSpoolDir=$LINK/sp/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.%n.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$dir/etc/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/log/jobcomp.txt
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/backfill
ReturnToService=2
SlurmdParameters=config_overrides
SlurmctldTimeout=30
SlurmdTimeout=60
MessageTimeout=10
InactiveLimit=0
KillWait=5
MinJobAge=300
TmpFS=/tmp
EOF
    for ((i = 1; i <= nodes; i++)); do
        echo "NodeName=$(node_name "$i") NodeAddr=$(node_addr "$i") CPUs=$CPUS State=UNKNOWN" >>"$conf"
    done
    echo "PartitionName=wp Nodes=${NODE_PREFIX}[1-$nodes] Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO" >>"$conf"
    : >"$dir/etc/plugstack.conf"
}

log_tails() {
    local dir=$1 f
    for f in "$dir"/log/munged.log "$dir"/log/slurmctld.log "$dir"/log/slurmd.*.log; do
        [[ -r $f ]] || continue
        echo "==== tail of $f" >&2
        tail -n 25 "$f" >&2
    done
}

start_munged() {
    local dir=$1 m=$1/munge i
    chmod 0755 "$m"
    dd if=/dev/urandom of="$m/munge.key" bs=1024 count=1 status=none
    chmod 0400 "$m/munge.key"
    # --force: runs as root and accepts group-writable parents (logged, harmless)
    munged --force --socket="$LINK/munge/munge.socket" --key-file="$m/munge.key" \
        --pid-file="$m/munged.pid" --log-file="$dir/log/munged.log" \
        --seed-file="$m/munged.seed" 2>>"$dir/log/munged.log" ||
        { log_tails "$dir"; die "munged did not start"; }
    for ((i = 0; i < 50; i++)); do
        if munge -S "$LINK/munge/munge.socket" -n 2>/dev/null |
            unmunge -S "$LINK/munge/munge.socket" >/dev/null 2>&1; then
            return 0
        fi
        sleep 0.1
    done
    log_tails "$dir"
    die "munged does not answer on $LINK/munge/munge.socket"
}

make_network() {
    local nodes=$1 i n v
    ip link add name "$BR" type bridge
    ip addr add "$CTL_ADDR/24" dev "$BR"
    ip link set "$BR" up
    for ((i = 1; i <= nodes; i++)); do
        n=$(node_name "$i")
        v=$VETH_PREFIX$i
        ip netns add "$n"
        ip link add name "$v" type veth peer name "$NODE_IF" netns "$n"
        ip link set "$v" master "$BR"
        ip link set "$v" up
        ip -n "$n" link set lo up
        ip -n "$n" addr add "$(node_addr "$i")/24" dev "$NODE_IF"
        ip -n "$n" link set "$NODE_IF" up
    done
}

hosts_add() {
    local nodes=$1 i
    {
        echo "$CTL_ADDR $CTL $TAG"
        for ((i = 1; i <= nodes; i++)); do
            echo "$(node_addr "$i") $(node_name "$i") $TAG"
        done
    } >>/etc/hosts
}

# The node's start script, run by sh inside the node's namespaces.
# $1 node name, $2 private tmp, $3 slurm.conf, $4.. paths under /tmp to keep.
# shellcheck disable=SC2016
readonly NODE_SH='
set -e
n=$1; priv=$2; conf=$3; shift 3
hostname "$n"
if [ $# -gt 0 ]; then
    for k in "$@"; do
        rel=${k#/tmp/}
        mkdir -p "$priv/$rel"
        mount --bind "$k" "$priv/$rel"
    done
    mount --rbind "$priv" /tmp
else
    mount --bind "$priv" /tmp
fi
cd /
exec slurmd -f "$conf" -N "$n"
'

# Paths to keep visible on the nodes because they live under /tmp: DIR,
# the checkout this script is in and the directory `up` runs from (so that
# a build and a campaign's results there work as they are), and
# $VCLUSTER_KEEP.
keep_paths() {
    local dir=$1 p r
    local IFS=:
    for p in $dir "$CHECKOUT" "$PWD" ${VCLUSTER_KEEP:-}; do
        [[ -n $p && -e $p ]] || continue
        r=$(readlink -f "$p")
        [[ $r == /tmp/* ]] && echo "$r"
    done | sort -u | awk 'top == "" || index($0, top "/") != 1 { print; top = $0 }'
}

cmd_up() {
    local dir=${1:-} nodes=${2:-3} i n t
    [[ -n $dir ]] || usage
    [[ $dir == /* ]] || die "DIR must be absolute: $dir"
    [[ $dir != *[[:space:]\'\"\\]* ]] || die "DIR must not contain blanks or quotes: $dir"
    if ! [[ $nodes =~ ^[1-9][0-9]*$ ]] || ((nodes > MAX_NODES)); then
        die "NODES must be 1..$MAX_NODES: $nodes"
    fi
    [[ $CPUS =~ ^[1-9][0-9]*$ ]] || die "VCLUSTER_CPUS must be a number: $CPUS"
    # shellcheck source=/dev/null
    case $MPI in
    debian) ;;
    mpich5) (. "$MPI5_ENV") || die "VCLUSTER_MPI=mpich5: MPICH 5 is not installed" ;;
    *) die "VCLUSTER_MPI must be debian or mpich5: $MPI" ;;
    esac
    dir=${dir%/}
    if ! t=$(cmd_can_run); then die "cannot run here: $t"; fi

    local t0=$SECONDS
    mkdir -p "$dir"
    cmd_down "$dir"
    # MPICH's shared-memory segments of killed jobs stay in /dev/shm under
    # names made from the job's PMI space, which a new cluster (job ids from
    # 1 again) gives its jobs too: MPI_Init then fails with "Out of memory"
    # in MPIDI_POSIX_comm_bootstrap and the other ranks wait in MPI_Init.
    # Every job of the machine's one cluster is gone now (cmd_down), so the
    # segments left are stale.
    rm -f /dev/shm/mpich_shm_*
    : >"$dir/.vcluster"
    rm -rf "${dir:?}/etc" "$dir/munge" "$dir/state" "$dir/sp" "$dir/log" \
        "$dir/run" "$dir/nodes" "$dir/env"
    mkdir -p "$dir/etc" "$dir/munge" "$dir/state" "$dir/log" "$dir/run"
    ln -sfn "$dir" "$LINK"
    for ((i = 1; i <= nodes; i++)); do
        n=$(node_name "$i")
        mkdir -p "$dir/sp/$n" "$dir/nodes/$n/tmp"
        chmod 1777 "$dir/nodes/$n/tmp"
    done
    write_conf "$dir" "$nodes"
    local conf=$dir/etc/slurm.conf
    export SLURM_CONF=$conf

    start_munged "$dir"
    make_network "$nodes"
    hosts_add "$nodes"

    # shellcheck disable=SC2016
    unshare --uts sh -c 'hostname "$1" && cd / && exec slurmctld -f "$2"' \
        sh "$CTL" "$conf" || { log_tails "$dir"; die "slurmctld did not start"; }

    local keep
    mapfile -t keep < <(keep_paths "$dir")
    for ((i = 1; i <= nodes; i++)); do
        n=$(node_name "$i")
        nsenter --net="/run/netns/$n" \
            unshare --uts --mount --propagation private \
            sh -c "$NODE_SH" sh "$n" "$dir/nodes/$n/tmp" "$conf" \
            "${keep[@]+"${keep[@]}"}" ||
            { log_tails "$dir"; die "slurmd on $n did not start"; }
    done

    # wait until every node is idle
    local deadline=$((SECONDS + WAIT_S)) idle=0 out=
    while ((SECONDS < deadline)); do
        out=$(timeout 5 sinfo -h -N -p wp -o '%N %t' 2>/dev/null || true)
        idle=$(grep -c ' idle$' <<<"$out" || true)
        ((idle == nodes)) && break
        sleep 0.5
    done
    if ((idle != nodes)); then
        log "nodes not idle after ${WAIT_S}s; sinfo says:"
        printf '%s\n' "$out" >&2
        log_tails "$dir"
        die "cluster did not come up"
    fi

    local ucx="unset UCX_TLS" mpi="# MPI: Debian's MPICH as built (VCLUSTER_MPI=debian)"
    [[ -n ${VCLUSTER_UCX_TLS:-} ]] && ucx="export UCX_TLS='$VCLUSTER_UCX_TLS'"
    [[ $MPI == mpich5 ]] && mpi="# MPI: MPICH 5 over tcp (VCLUSTER_MPI=mpich5)
export WP_MPICH5='${WP_MPICH5:-/opt/wavepipe/mpich5}'
. '$MPI5_ENV' || return 1"
    cat >"$dir/env" <<EOF
# Written by tests/cluster/vcluster.sh up: source this to use the cluster
# (sbatch/srun pass this environment on to the jobs).
export SLURM_CONF=$conf
$ucx
export VCLUSTER_DIR=$dir
export VCLUSTER_NODES=$nodes
export VCLUSTER_NODELIST='${NODE_PREFIX}[1-$nodes]'
export VCLUSTER_MPI=$MPI
# the paths under /tmp the nodes see as here (wavepipe sweep warns of others)
export WAVEPIPE_SHARED_TMP='$(keep_paths "$dir" | paste -sd: -)'
$mpi
EOF
    log "up: $nodes nodes idle in $((SECONDS - t0)) s (source $dir/env)"
}

# --- selftest, shape --------------------------------------------------------

load_env() {
    local dir=${1:-}
    [[ -n $dir && -r $dir/env ]] || die "no cluster at '$dir' (no $dir/env)"
    # shellcheck disable=SC1091
    source "$dir/env"
}

cmd_selftest() {
    load_env "${1:-}"
    local want got i
    want=$(for ((i = 1; i <= VCLUSTER_NODES; i++)); do node_name "$i"; echo; done)
    got=$(timeout 60 srun -N "$VCLUSTER_NODES" -n "$VCLUSTER_NODES" hostname | sort)
    if [[ $got != "$want" ]]; then
        log "srun hostname gave:"; printf '%s\n' "$got" >&2
        die "selftest failed"
    fi
    log "selftest ok: $(tr '\n' ' ' <<<"$got")"
}

check_node() {
    [[ ${1:-} =~ ^${NODE_PREFIX}[1-${MAX_NODES}]$ && -e /run/netns/$1 ]] ||
        die "no such node: ${1:-}"
}

# tc_bits_per_s RATE: tc's rate (bit, kbit, mbit, gbit, tbit; bps, kbps,
# mbps, gbps: bytes; a bare number: bits) in bits per second
tc_bits_per_s() {
    local n=${1%%[!0-9.]*} unit=${1##*[0-9.]}
    [[ -n $n && $n =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "rate '$1': a number and a tc unit (e.g. 1gbit, 100mbit)"
    local mult
    case ${unit,,} in
    "" | bit) mult=1 ;; kbit) mult=1e3 ;; mbit) mult=1e6 ;; gbit) mult=1e9 ;; tbit) mult=1e12 ;;
    bps) mult=8 ;; kbps) mult=8e3 ;; mbps) mult=8e6 ;; gbps) mult=8e9 ;;
    *) die "rate '$1': unknown unit '$unit' (bit, kbit, mbit, gbit, tbit, bps, kbps, mbps, gbps)" ;;
    esac
    awk -v n="$n" -v m="$mult" 'BEGIN { printf "%.0f", n * m }'
}

# tc_bytes SIZE: tc's size (b or a bare number, kb/k, mb/m, gb: bytes;
# kbit, mbit, gbit: bits; 1024-based as tc reads them) in bytes
tc_bytes() {
    local n=${1%%[!0-9.]*} unit=${1##*[0-9.]}
    [[ -n $n && $n =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "size '$1': a number and a tc unit (e.g. 32kbit, 4kb)"
    local mult
    case ${unit,,} in
    "" | b) mult=1 ;; k | kb) mult=1024 ;; m | mb) mult=1048576 ;; g | gb) mult=1073741824 ;;
    kbit) mult=128 ;; mbit) mult=131072 ;; gbit) mult=134217728 ;;
    *) die "size '$1': unknown unit '$unit' (b, kb, mb, gb, kbit, mbit, gbit)" ;;
    esac
    awk -v n="$n" -v m="$mult" 'BEGIN { printf "%.0f", n * m }'
}

cmd_shape() {
    local dilate=1 scale=1
    while [[ ${1:-} == --* ]]; do
        case $1 in
        --dilate) dilate=${2:-}; shift 2 ;;
        --scale-bytes) scale=${2:-}; shift 2 ;;
        *) usage ;;
        esac
    done
    [[ $dilate =~ ^[0-9]+(\.[0-9]+)?$ && $scale =~ ^[0-9]+(\.[0-9]+)?$ ]] &&
        awk -v f="$dilate" -v s="$scale" 'BEGIN { exit !(f >= 1 && s >= 1) }' ||
        die "--dilate and --scale-bytes take numbers >= 1 (got '$dilate', '$scale')"
    load_env "${1:-}"
    check_node "${2:-}"
    [[ -n ${3:-} ]] || usage
    local bits burst rate latency
    bits=$(tc_bits_per_s "$3") || exit 1
    burst=$(tc_bytes "${4:-32kbit}") || exit 1
    rate=$(awk -v b="$bits" -v f="$dilate" -v s="$scale" 'BEGIN { r = b / (f * s); printf "%.0f", r < 8 ? 8 : r }')
    burst=$(awk -v b="$burst" -v s="$scale" 'BEGIN { v = b / s; printf "%.0f", v < 2048 ? 2048 : v }')
    latency=$(awk -v f="$dilate" 'BEGIN { printf "%.0f", 50000 * f }')
    nsenter --net="/run/netns/$2" tc qdisc replace dev "$NODE_IF" root \
        tbf rate "${rate}bit" burst "$burst" latency "${latency}us"
}

cmd_unshape() {
    load_env "${1:-}"
    check_node "${2:-}"
    nsenter --net="/run/netns/$2" tc qdisc del dev "$NODE_IF" root 2>/dev/null || true
}

cmd_rx_bytes() {
    load_env "${1:-}"
    local i sum=0
    for ((i = 1; i <= VCLUSTER_NODES; i++)); do
        sum=$((sum + $(<"/sys/class/net/$VETH_PREFIX$i/statistics/rx_bytes")))
    done
    echo "$sum"
}

case ${1:-} in
can-run) cmd_can_run ;;
up) shift; cmd_up "$@" ;;
down) shift; cmd_down "$@" ;;
selftest) shift; cmd_selftest "$@" ;;
shape) shift; cmd_shape "$@" ;;
unshape) shift; cmd_unshape "$@" ;;
rx-bytes) shift; cmd_rx_bytes "$@" ;;
*) usage ;;
esac
