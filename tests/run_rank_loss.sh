#!/usr/bin/env bash
# Rank loss on one machine: 4 ranks train gpt-tiny (1f1b, a checkpoint every
# 10 steps); after the checkpoint of step 10 one rank is
#   - killed (SIGKILL): mpiexec ends the job and names a process and its
#     host, which rank 0's map at the start ("ranks on HOST (rank:pid): ...")
#     turns into a rank (Slurm's srun names the killed task itself:
#     tests/slurm_rank_loss.sh);
#   - stopped (SIGSTOP: alive but silent, as a rank whose node lost its
#     link): the others' watchdog (--watchdog-s 3) ends the job with exit
#     status 69 and messages naming each stalled rank, what it waits on and
#     the peer with their hosts, one of them the stopped rank.
# Each time the job must end within 10 s of the signal (measured and
# printed), every line of the results CSV must be a whole row with the
# iterations in order, and the last checkpoint must load (--resume runs on).
. "$(dirname "$0")/lib.sh"
out=$(scratch_dir)
cfg="$WP_SRCDIR/jobs/models/gpt-tiny.cfg"
limit_ms=10000
victim_rank=2
victim_pid=

cleanup() { [ -n "$victim_pid" ] && kill -9 "$victim_pid" 2>/dev/null; }
trap cleanup EXIT

# rows FILE: data rows so far
rows() { [ -f "$1" ] && echo $(( $(wc -l < "$1") - 1 )) || echo 0; }

# lose_a_rank NAME SIGNAL: runs the job in $out/NAME, sends SIGNAL to rank
# $victim_rank once 13 rows are written; sets job_rc, took_ms, victim_pid
lose_a_rank() {
    local d=$out/$1 sig=$2 mpipid t0 deadline
    mkdir -p "$d"
    ls /dev/shm/ 2>/dev/null | grep '^mpich_shm_' > "$d/shm.before"
    "$MPIEXEC" -n 4 "$WAVEPIPE" run --config "$cfg" --schedule 1f1b --steps 2000 --results "$d/r.csv" \
        --save "$d/ck" --save-every 10 --watchdog-s 3 > "$d/log" 2>&1 < /dev/null &
    mpipid=$!
    deadline=$(( $(now_ms) + 120000 ))
    while [ "$(rows "$d/r.csv")" -lt 13 ] && kill -0 "$mpipid" 2>/dev/null && [ "$(now_ms)" -lt "$deadline" ]; do
        sleep 0.05
    done
    victim_pid=$(grep '^ranks on ' "$d/log" | tr ' ' '\n' | grep "^$victim_rank:" | cut -d: -f2)
    if [ -z "$victim_pid" ] || ! kill -0 "$mpipid" 2>/dev/null; then
        fail "$1: the job runs 13 steps and prints its map of ranks (pid of rank $victim_rank: '$victim_pid')"
        sed 's/^/    | /' "$d/log" | tail -20
        kill "$mpipid" 2>/dev/null
        job_rc=-1 took_ms=0
        return
    fi
    t0=$(now_ms)
    kill "-$sig" "$victim_pid"
    # the job's end, or 30 s
    while kill -0 "$mpipid" 2>/dev/null && [ $(( $(now_ms) - t0 )) -lt 30000 ]; do sleep 0.02; done
    took_ms=$(( $(now_ms) - t0 ))
    if kill -0 "$mpipid" 2>/dev/null; then
        kill "$mpipid"
        kill -9 "$victim_pid" 2>/dev/null
    fi
    wait "$mpipid"
    job_rc=$?
    kill -9 "$victim_pid" 2>/dev/null
    victim_pid=
    # MPICH's shared memory segments the killed job left, mapped by no process
    # (not those of other jobs on the machine)
    local f
    for f in $(ls /dev/shm/ 2>/dev/null | grep '^mpich_shm_' | grep -vxF -f "$d/shm.before"); do
        grep -qsF "/dev/shm/$f" /proc/[0-9]*/maps || rm -f "/dev/shm/$f"
    done
    echo "# $1: SIG$sig to rank $victim_rank -> job ended after $took_ms ms (exit status $job_rc)"
}

# intact NAME: the CSV has whole rows, iterations 0..n-1; the checkpoint loads
intact() {
    local d=$out/$1 n
    if python3 - "$d/r.csv" <<'EOF'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline='')))
header, body = rows[0], rows[1:]
assert all(len(r) == len(header) for r in body), "a row without all its fields"
assert [int(r[header.index('iteration')]) for r in body] == list(range(len(body))), "iterations out of order"
float(body[-1][header.index('loss')])
EOF
    then pass "$1: results.csv parses, $(rows "$d/r.csv") whole rows in order"; else fail "$1: results.csv whole"; fi
    n=$(python3 -c "import json; print(json.load(open('$d/ck/config.json')).get('n_layer', 0))" 2>/dev/null)
    [ -n "$n" ] && [ "$n" -gt 0 ] && pass "$1: the last checkpoint's config.json parses" ||
        fail "$1: the last checkpoint's config.json parses"
    "$MPIEXEC" -n 2 "$WAVEPIPE" run --config "$cfg" --schedule 1f1b --steps 22 --resume "$d/ck" \
        --results "$d/resumed.csv" > "$d/resume.log" 2>&1 < /dev/null
    expect_status 0 $? "$1: --resume from the last checkpoint runs on"
    if grep -Eq "^resumed from $d/ck after (10|20) steps" "$d/resume.log"; then
        pass "$1: it was the checkpoint of step 10 or 20"
    else
        fail "$1: resumed from a checkpoint of step 10 or 20"; sed 's/^/    | /' "$d/resume.log" | head -5
    fi
}

# --- a rank killed: the launcher ends the job --------------------------------
lose_a_rank killed KILL
[ "$job_rc" -ne 0 ] && pass "killed: the job fails (exit status $job_rc)" || fail "killed: the job fails"
[ "$took_ms" -gt 0 ] && [ "$took_ms" -le "$limit_ms" ] && pass "killed: the job ends $took_ms ms after the kill" ||
    fail "killed: the job ends within $limit_ms ms of the kill (took $took_ms)"
# mpiexec names a process and its host ("PID N RUNNING AT HOST"); its
# cleanup kills the others with the same signal, so the process it names is
# sometimes another of the job's: the map must make it one of the job's ranks
pid_host=$(grep -o 'PID [0-9]* RUNNING AT [^ ]*' "$out/killed/log" | head -n 1)
pid=$(echo "$pid_host" | cut -d' ' -f2)
host=$(echo "$pid_host" | cut -d' ' -f5)
rank=$(grep "^ranks on $host (rank:pid):" "$out/killed/log" | tr ' ' '\n' | grep ":$pid\$" | cut -d: -f1)
if [ -n "$pid" ] && [ -n "$rank" ]; then
    pass "killed: mpiexec names process $pid on $host, which the map names rank $rank (killed: rank $victim_rank)"
else
    fail "killed: the messages name a rank and its host ('$pid_host', rank '$rank')"
    sed 's/^/    | /' "$out/killed/log" | grep -v '^    | step' | head -20
fi
intact killed

# --- a rank stopped (silent, like a node cut off): the watchdog ends the job ---
lose_a_rank stopped STOP
expect_status 69 "$job_rc" "stopped: the watchdog ends the job with exit status 69"
[ "$took_ms" -gt 0 ] && [ "$took_ms" -le "$limit_ms" ] && pass "stopped: the job ends $took_ms ms after the stop" ||
    fail "stopped: the job ends within $limit_ms ms of the stop (took $took_ms)"
host=$(grep '^ranks on ' "$out/stopped/log" | head -n 1 | cut -d' ' -f3)
# Stopped inside a message exchange, a stalled rank names the silent peer;
# stopped where the others wait in a sum (an iteration's end), no one can
# name it: then the silent rank is the one that never speaks (what wavepipe
# status reads, src/campaign/failure.c)
stalled="^wavepipe run: rank [0-9]+ on $host: no progress for [0-9.]+ s waiting on"
spoke=$(grep -Eo "$stalled" "$out/stopped/log" | cut -d' ' -f4 | sort -u | tr '\n' ' ')
if grep -Eq "$stalled a (receive from|send to) rank $victim_rank \\(on $host\\)" "$out/stopped/log"; then
    pass "stopped: a stalled rank names the silent rank $victim_rank and its host"
elif grep -Eq "$stalled an MPI collective" "$out/stopped/log" && ! echo " $spoke" | grep -q " $victim_rank "; then
    pass "stopped: in a sum, ranks $spoke say they are stalled, never the silent $victim_rank"
else
    fail "stopped: a watchdog message names rank $victim_rank on $host"
    sed 's/^/    | /' "$out/stopped/log" | grep -v '^    | step' | head -20
fi
intact stopped

finish
