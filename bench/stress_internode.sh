#!/usr/bin/env bash
# Stress of inter-node MPI on the test cluster (by hand: make stress-internode;
# root, not in CI): a virtual Slurm cluster of 4 nodes (tests/cluster/
# vcluster.sh, VCLUSTER_MPI=mpich5 unless set), then JOBS consecutive jobs of
#     srun --mpi=pmi2 -N 4 -n 16 wavepipe run --config gpt-tiny.cfg --steps 2
# (1f1b, 16 stages, 4 ranks a node), each under a timeout. A job is finished
# (exit 0), hung (ran into the timeout: "in finalize" when its summary line
# was already printed) or failed (any other status). Prints one line per job
# and a summary line with the seconds per job and the bytes the nodes sent
# into the bridge per job (rx_bytes of wpv1..wpv4: MPI on the links, or not);
# exits 1 if any job hung or failed.
# Usage: stress_internode.sh WAVEPIPE SRCDIR [WORKDIR]
#   env: STRESS_JOBS (50), STRESS_STEPS (2), STRESS_TIMEOUT seconds a job (60);
#   VCLUSTER_MPI, VCLUSTER_UCX_TLS and the MPI's own variables pass through,
#   e.g. VCLUSTER_MPI=debian VCLUSTER_UCX_TLS=tcp,self UCX_NET_DEVICES=eth0
#   for Debian's MPICH over UCX's TCP.
set -u
wavepipe=$(readlink -f "$1") srcdir=$(readlink -f "$2")
work=${3:-$(pwd)/stress-internode}
jobs=${STRESS_JOBS:-50} steps=${STRESS_STEPS:-2} limit=${STRESS_TIMEOUT:-60}
nodes=4 ranks=16
vc=$srcdir/tests/cluster/vcluster.sh
cfg=$srcdir/jobs/models/gpt-tiny.cfg
export VCLUSTER_MPI=${VCLUSTER_MPI:-mpich5} VCLUSTER_CPUS=$((ranks / nodes))

mkdir -p "$work" && work=$(readlink -f "$work")
dir=$work/cluster
# one virtual cluster a machine (fixed names): the tests' lock
mkdir -p /run/lock
exec 9> /run/lock/wavepipe-vcluster.lock
flock 9
trap 'timeout 60 bash "$vc" down "$dir" >/dev/null 2>&1' EXIT
trap 'exit 1' INT TERM HUP
timeout 120 bash "$vc" up "$dir" "$nodes" || { echo "stress: the cluster did not come up"; exit 1; }
# shellcheck disable=SC1091
. "$dir/env"

link_rx_bytes() { timeout 10 bash "$vc" rx-bytes "$dir"; }

# Waits (up to 30 s) until no job of a stopped run is left in the queue.
queue_drained() {
    local i
    for ((i = 0; i < 60; i++)); do
        [ -z "$(timeout 5 squeue -h -o %i 2>/dev/null)" ] && return 0
        sleep 0.5
    done
    return 1
}

version=$(timeout 30 srun -N 1 -n 1 "$wavepipe" --version | sed -n 's/^  MPI loaded: //p')
echo "stress: $jobs jobs of $ranks ranks on $nodes nodes, wavepipe run --steps $steps, $limit s each; VCLUSTER_MPI=$VCLUSTER_MPI ($version)"
finished=0 hung=0 hung_finalize=0 failed=0 secs_sum=0 bytes_min='' bytes_max=0
for ((j = 1; j <= jobs; j++)); do
    out=$work/job$j.txt
    rx0=$(link_rx_bytes)
    t0=$(date +%s%N)
    timeout -k 5 "$limit" srun --mpi=pmi2 -N "$nodes" -n "$ranks" -J "stress$j" "$wavepipe" run --config "$cfg" \
        --steps "$steps" > "$out" 2>&1
    rc=$?
    t1=$(date +%s%N)
    bytes=$(($(link_rx_bytes) - rx0))
    ms=$(((t1 - t0) / 1000000))
    case $rc in
    0) what=finished finished=$((finished + 1)) secs_sum=$((secs_sum + ms)) ;;
    124 | 137)
        what=hung hung=$((hung + 1))
        if grep -q '^summary:' "$out"; then what="hung in finalize" hung_finalize=$((hung_finalize + 1)); fi
        queue_drained || echo "stress: jobs still queued after job $j"
        ;;
    *) what="failed ($rc)" failed=$((failed + 1)) ;;
    esac
    [ -z "$bytes_min" ] || [ "$bytes" -lt "$bytes_min" ] && bytes_min=$bytes
    [ "$bytes" -gt "$bytes_max" ] && bytes_max=$bytes
    printf 'job %2d: %-16s %6d.%03d s  %9d B on the links\n' "$j" "$what" $((ms / 1000)) $((ms % 1000)) "$bytes"
done
per_job=$(awk -v s="$secs_sum" -v n="$finished" 'BEGIN { if (n) printf "%.2f", s / 1000 / n; else print "-" }')
echo "stress summary: $jobs jobs of $ranks ranks on $nodes nodes ($VCLUSTER_MPI): $finished finished, $hung hung" \
    "($hung_finalize in finalize), $failed failed; $per_job s per finished job;" \
    "$bytes_min-$bytes_max B a job into the bridge"
[ "$hung" -eq 0 ] && [ "$failed" -eq 0 ]
