#!/usr/bin/env bash
# `wavepipe sweep` and `wavepipe status` without Slurm: a dry run renders one
# directory per point whose scripts pass `bash -n`; injection attempts in a
# campaign are rejected with a clear error and nothing is written; bad
# campaign files get file:line; re-running skips DONE points and renders
# FAILED ones again; status says pending on a dry-run campaign; --submit
# against a stand-in sbatch chains probe -> run with --dependency; a
# rendered job script runs a point end to end under a stand-in srun.
. "$(dirname "$0")/lib.sh"
out=$(scratch_dir)
camp="$WP_SRCDIR/jobs/campaigns/cpu-weak-test.cfg"
tpl="$WP_SRCDIR/templates"

"$WAVEPIPE" sweep "$camp" --dry-run --results "$out/results" --templates "$tpl" > "$out/dry.txt" 2>&1
expect_status 0 $? "sweep --dry-run of the CPU test campaign"
n=$(find "$out/results/cpu-weak-test" -mindepth 1 -maxdepth 1 -type d | wc -l)
expect_status 9 "$n" "3 schedules x 3 node counts = 9 point directories"
expect_contains "$out/dry.txt" "sbatch --parsable --kill-on-invalid-dep=yes --dependency=afterok:" \
    "dry run prints the chained sbatch commands (a run Slurm cancels when its probe fails)"
bad=0
for f in "$out"/results/cpu-weak-test/*/job.sbatch "$out"/results/cpu-weak-test/*/probe.sbatch; do
    bash -n "$f" || { bad=$((bad + 1)); echo "    bash -n fails: $f"; }
done
expect_status 0 "$bad" "every rendered script passes bash -n"
p=$out/results/cpu-weak-test/p008-hanayo-k1-w2-n3-r0
expect_contains "$p/point.cfg" 'value = "12";' "weak scaling: 3 nodes x global batch 4 = 12, 3 x 4 layers = 12"
expect_contains "$p/model.cfg" "layers = 12;" "the point's model file has its layers"
expect_contains "$p/job.sbatch" "#SBATCH --nodes=3" "#SBATCH nodes"
expect_contains "$p/job.sbatch" "#SBATCH --partition=wp" "#SBATCH partition when given"
if grep -q -- "^#SBATCH --account\|^#SBATCH --qos\|^#SBATCH --constraint\|^#SBATCH --gpus-per-node" "$p/job.sbatch"; then
    fail "optional #SBATCH lines appear though not given"
else
    pass "no account, qos, constraint or gpus lines when not given"
fi
expect_contains "$p/job.sbatch" "srun --mpi=pmi2 --kill-on-bad-exit=1 \"\$wavepipe\" run --config 'model.cfg'" \
    "the MPI step runs under srun --mpi=pmi2, a lost task ending it"
expect_contains "$p/job.sbatch" "--waves '2'" "hanayo gets --waves, quoted"
expect_contains "$p/probe.sbatch" "srun --mpi=pmix" "the probe runs under srun --mpi=pmix"

"$WAVEPIPE" status "$camp" --results "$out/results" --no-slurm > "$out/status.txt" 2>&1
expect_status 0 $? "status of the dry-run campaign"
expect_contains "$out/status.txt" "9 pending, 0 running, 0 done, 0 failed" "status: every point pending"

# re-running: DONE skipped, FAILED rendered again
d0=$out/results/cpu-weak-test/p000-1f1b-k1-w1-n1-r0
d1=$out/results/cpu-weak-test/p001-1f1b-k1-w1-n2-r0
echo "exit status 0" > "$d0/DONE"; echo "exit status 1" > "$d1/FAILED"; echo "# stale" > "$d0/job.sbatch"
printf 'ranks on wpn1 (rank:pid): 0:11\nranks on wpn2 (rank:pid): 1:12\nsrun: error: wpn2: task 1: Killed\n' > "$d1/run.log"
"$WAVEPIPE" status "$camp" --results "$out/results" --no-slurm > "$out/status1.txt" 2>&1
expect_contains "$out/status1.txt" "p001-1f1b-k1-w1-n2-r0                    failed   exit status 1; task 1 on wpn2: Killed (srun)" \
    "status: a failed point with the lost task and its host from run.log"
"$WAVEPIPE" sweep "$camp" --results "$out/results" --templates "$tpl" > "$out/again.txt" 2>&1
expect_status 0 $? "sweep again"
expect_contains "$out/again.txt" "p000-1f1b-k1-w1-n1-r0                    done, skipped" "a DONE point is skipped"
expect_status "# stale" "$(cat "$d0/job.sbatch")" "and its files are left alone"
expect_contains "$out/again.txt" "p001-1f1b-k1-w1-n2-r0                    failed, rendered again" "a FAILED point is rendered again"
expect_contains "$out/again.txt" "p001-1f1b-k1-w1-n2-r0                    failed: task 1 on wpn2: Killed (srun)" \
    "and why it failed"
[ ! -e "$d1/FAILED" ] && pass "its FAILED file is gone" || fail "FAILED still there"
"$WAVEPIPE" status "$camp" --results "$out/results" --no-slurm > "$out/status2.txt" 2>&1
expect_contains "$out/status2.txt" "8 pending, 0 running, 1 done, 0 failed" "status counts the DONE point"
# a point recovered after a lost node (wavepipe recover's chain): status shows it
echo "recovery=1 job=12 lost=wpn2 nodes=1 exclude=wpn2 next=13 reason=task 1 on wpn2: Killed (srun)" > "$d1/recoveries.txt"
"$WAVEPIPE" status "$camp" --results "$out/results" --no-slurm > "$out/status3.txt" 2>&1
expect_contains "$out/status3.txt" "recovered 1 time: job 12 lost wpn2, again on 1 node without wpn2 as job 13" \
    "status: the point's chain of recoveries"

# injection attempts: rejected, nothing written
i=0
for evil in '$(touch x)' '`touch x`' '; rm -rf ~' 'a
b' "it's"; do
    i=$((i + 1))
    for where in name partition schedule; do
        f="$out/evil$i-$where.cfg"
        sed -e "s|^name = .*|name = \"inj$i\";|" -e "s|^model = .*|model = \"$WP_SRCDIR/jobs/models/gpt-tiny.cfg\";|" "$camp" > "$f"
        case $where in
        name) python3 - "$f" "$evil" <<'PY'
import sys; p, v = sys.argv[1], sys.argv[2]
s = open(p).read().replace('name = "inj', 'name = "' + v.replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n') + 'inj', 1)
open(p, 'w').write(s)
PY
        ;;
        partition) python3 - "$f" "$evil" <<'PY'
import sys; p, v = sys.argv[1], sys.argv[2]
s = open(p).read().replace('partition = "wp"', 'partition = "' + v.replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n') + '"')
open(p, 'w').write(s)
PY
        ;;
        schedule) python3 - "$f" "$evil" <<'PY'
import sys; p, v = sys.argv[1], sys.argv[2]
s = open(p).read().replace('"hanayo"]', '"' + v.replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n') + '"]')
open(p, 'w').write(s)
PY
        ;;
        esac
        (cd "$out" && "$WAVEPIPE" sweep "$f" --results "$out/inj" --templates "$tpl") > "$out/evil.txt" 2>&1
        st=$?
        if [ "$st" -ne 0 ] && grep -q "is not allowed\|unknown schedule" "$out/evil.txt" && grep -q "evil$i-$where.cfg:[0-9]" "$out/evil.txt" \
            && [ ! -e "$out/inj" ] && [ ! -e "$out/x" ] && [ ! -e x ]; then
            pass "injection $i in $where rejected with file:line, nothing written"
        else
            fail "injection $i in $where (status $st)"; sed 's/^/    | /' "$out/evil.txt"; ls "$out" | sed 's/^/    | /'
        fi
    done
done

# bad campaign files: file:line
printf 'format = "wavepipe-campaign"; version = 1;\nname = "b"; template = "run-cpu";\nmodel = "jobs/models/gpt-tiny.cfg";\nscaling = "weak"; global_batch_per_node = 4;\nsteps = 4;\naxes = { nodez = [1]; };\n' > "$out/bad1.cfg"
(cd "$WP_SRCDIR" && "$WAVEPIPE" sweep "$out/bad1.cfg" --results "$out/bad") > "$out/bad1.txt" 2>&1
expect_status 1 $? "an unknown axis is an error"
expect_contains "$out/bad1.txt" "bad1.cfg:6:" "named with file:line"
expect_contains "$out/bad1.txt" "nodes" "with the nearest name"
sed 's/nodez = \[1\]/nodes = [1, 2]; schedule = ["hanayo"]; waves = [8]/' "$out/bad1.cfg" > "$out/bad2.cfg"
(cd "$WP_SRCDIR" && "$WAVEPIPE" sweep "$out/bad2.cfg" --results "$out/bad") > "$out/bad2.txt" 2>&1
expect_status 1 $? "a point hanayo cannot run is an error"
expect_contains "$out/bad2.txt" "layers >= 2*W*P" "and says why"
[ ! -e "$out/bad" ] && pass "nothing written for bad campaigns" || fail "bad campaigns wrote $out/bad"

# --submit with stand-in sbatch/squeue (no accounting: sacct fails)
mkdir -p "$out/bin"
cat > "$out/bin/sbatch" <<'SH'
#!/bin/bash
n=$(( $(cat "$FAKE_SLURM/next" 2>/dev/null || echo 100) + 1 )); echo "$n" > "$FAKE_SLURM/next"
echo "$*" >> "$FAKE_SLURM/sbatch.log"; echo "$n"
SH
printf '#!/bin/bash\ncat "$FAKE_SLURM/queue" 2>/dev/null\n' > "$out/bin/squeue"
printf '#!/bin/bash\necho "sacct: error: Slurm accounting storage is disabled" >&2\nexit 1\n' > "$out/bin/sacct"
printf '#!/bin/bash\nprintf "AccountingStorageType   = (null)\\nClusterName             = fakecluster\\n"\n' > "$out/bin/scontrol"
printf '#!/bin/bash\necho "$*" >> "$FAKE_SLURM/scancel.log"\n' > "$out/bin/scancel"
chmod +x "$out/bin/"*
export FAKE_SLURM="$out"
PATH="$out/bin:$PATH" "$WAVEPIPE" sweep "$camp" --submit --max-concurrent 2 --results "$out/sub" --templates "$tpl" > "$out/submit.txt" 2>&1
expect_status 0 $? "sweep --submit"
expect_status 18 "$(wc -l < "$out/sbatch.log")" "9 probes and 9 runs submitted"
expect_contains "$out/sbatch.log" "--parsable --kill-on-invalid-dep=yes --dependency=afterok:101 --chdir=$out/sub/cpu-weak-test/p000-1f1b-k1-w1-n1-r0 $out/sub/cpu-weak-test/p000-1f1b-k1-w1-n1-r0/job.sbatch" \
    "the run waits for its probe, and Slurm cancels it when the probe fails"
expect_contains "$out/sbatch.log" "--dependency=afterok:105,afterany:102" "--max-concurrent 2: the third run waits for the first"
expect_contains "$out/sub/cpu-weak-test/p000-1f1b-k1-w1-n1-r0/jobids" "run 102 fakecluster -" \
    "job ids recorded with the cluster's name (and the submit time squeue gives, here none)"
printf '102 RUNNING\n104 PENDING\n' > "$out/queue"
PATH="$out/bin:$PATH" "$WAVEPIPE" status "$camp" --results "$out/sub" > "$out/st3.txt" 2>&1
expect_contains "$out/st3.txt" "p000-1f1b-k1-w1-n1-r0                    running" "status: running from squeue"
expect_contains "$out/st3.txt" "1 running" "status counts"
expect_contains "$out/st3.txt" "failed   run 106 gone" "jobs gone from the queue without DONE are failed"
PATH="$out/bin:$PATH" "$WAVEPIPE" sweep "$camp" --submit --results "$out/sub" --templates "$tpl" > "$out/resub.txt" 2>&1
expect_contains "$out/resub.txt" "p000-1f1b-k1-w1-n1-r0                    submitted and not finished" "a point in the queue is left alone"
expect_contains "$out/resub.txt" "7 submitted now" "lost points are submitted again"

# a probe that failed (issue 29): its run, left waiting for ever by an older
# sweep, makes the point failed, the probe's error named; a probe that could
# not even write its error file says so; sweep --submit cancels the waiting
# run and submits the point again
s0=$out/sub/cpu-weak-test/p000-1f1b-k1-w1-n1-r0 s1=$out/sub/cpu-weak-test/p001-1f1b-k1-w1-n2-r0
printf 'probe 119 fakecluster -\nrun 120 fakecluster -\n' >> "$s0/jobids"
echo "slurmstepd: error: couldn't chdir to results: No such file or directory" > "$s0/probe-119.err"
printf 'probe 121 fakecluster -\nrun 122 fakecluster -\n' >> "$s1/jobids"
printf '120|PENDING|DependencyNeverSatisfied|2026-11-29T08:00:01\n' > "$out/queue"
PATH="$out/bin:$PATH" "$WAVEPIPE" status "$camp" --results "$out/sub" > "$out/st4.txt" 2>&1
expect_contains "$out/st4.txt" "p000-1f1b-k1-w1-n1-r0                    failed   run 120 PENDING (DependencyNeverSatisfied), probe 119 gone; it waits for a probe that failed and can never start; the probe failed, $s0/probe-119.err: slurmstepd: error: couldn't chdir" \
    "status: a run waiting for a failed probe is a failed point, the probe's error file and line named"
expect_contains "$out/st4.txt" "p001-1f1b-k1-w1-n2-r0                    failed   run 122 gone, probe 121 gone" "a point whose jobs are gone is failed"
expect_contains "$out/st4.txt" "the probe (job 121) left no probe-121.err here: its node could not write to the point directory" \
    "and a probe that left nothing behind is said to be one whose node could not write there"
PATH="$out/bin:$PATH" "$WAVEPIPE" sweep "$camp" --dry-run --results "$out/sub" --templates "$tpl" > "$out/dry4.txt" 2>&1
expect_contains "$out/dry4.txt" "p000-1f1b-k1-w1-n1-r0                    failed, rendered again" "a dry run decides as status does"
expect_contains "$out/dry4.txt" "  scancel 120" "and prints the scancel of the waiting run"
rm -f "$out/scancel.log"
PATH="$out/bin:$PATH" "$WAVEPIPE" sweep "$camp" --submit --results "$out/sub" --templates "$tpl" > "$out/resub4.txt" 2>&1
expect_contains "$out/resub4.txt" "p000-1f1b-k1-w1-n1-r0                    failed, rendered again, submitted: probe" \
    "sweep --submit submits the failed point again, as the dry run said"
expect_contains "$out/scancel.log" "120" "after cancelling the run that waited for ever"
expect_contains "$out/resub4.txt" "cancelled the run waiting for ever: 120" "and says so"

# job identity (issue 29): a restarted cluster numbers its jobs again; a job
# of the same id taken later is not the point's
s2=$out/sub/cpu-weak-test/p002-1f1b-k1-w1-n3-r0
printf 'probe 130 fakecluster 2026-11-29T08:00:00\nrun 131 fakecluster 2026-11-29T08:00:01\n' > "$s2/jobids"
printf '131|RUNNING|None|2026-11-30T09:15:00\n' > "$out/queue"
PATH="$out/bin:$PATH" "$WAVEPIPE" status "$camp" --results "$out/sub" > "$out/st5.txt" 2>&1
expect_contains "$out/st5.txt" "p002-1f1b-k1-w1-n3-r0                    failed   run 131 gone, probe 130 gone" \
    "a job of the point's id but another submit time is not the point's"
printf '131|RUNNING|None|2026-11-29T08:00:01\n' > "$out/queue"
PATH="$out/bin:$PATH" "$WAVEPIPE" status "$camp" --results "$out/sub" > "$out/st6.txt" 2>&1
expect_contains "$out/st6.txt" "p002-1f1b-k1-w1-n3-r0                    running" "the same id and submit time is"
printf 'run 131 othercluster 2026-11-29T08:00:01\n' >> "$s2/jobids"
PATH="$out/bin:$PATH" "$WAVEPIPE" status "$camp" --results "$out/sub" > "$out/st7.txt" 2>&1
expect_contains "$out/st7.txt" "p002-1f1b-k1-w1-n3-r0                    failed   run 131 gone" "a job of another cluster is not"
PATH="$out/bin:$PATH" "$WAVEPIPE" sweep "$camp" --dry-run --results "$out/sub" --templates "$tpl" > "$out/dry7.txt" 2>&1
PATH="$out/bin:$PATH" "$WAVEPIPE" sweep "$camp" --submit --results "$out/sub" --templates "$tpl" > "$out/sub7.txt" 2>&1
dry_says=$(grep '^p0' "$out/dry7.txt" | awk '{print $1, $2, $3}' | sed 's/,$//' | sort)
sub_says=$(grep '^p0' "$out/sub7.txt" | awk '{print $1, $2, $3}' | sed 's/,$//' | sort)
expect_status "$dry_says" "$sub_says" "--dry-run and --submit decide alike for every point"

# nothing half-submitted (issue 29): without sbatch, nothing is rendered
mkdir -p "$out/nobin"
PATH="$out/nobin" "$WAVEPIPE" sweep "$camp" --submit --results "$out/noslurm" --templates "$tpl" > "$out/noslurm.txt" 2>&1
expect_status 1 $? "sweep --submit without sbatch on PATH fails"
expect_contains "$out/noslurm.txt" "sbatch is not on PATH, so nothing was rendered or submitted" "saying so"
expect_contains "$out/noslurm.txt" "--dry-run" "and pointing to --dry-run"
[ ! -e "$out/noslurm" ] && pass "nothing rendered" || fail "$out/noslurm was written"
# an sbatch that fails part way: the points before are submitted, that one
# put back and the rest not rendered; the next --submit goes on
mkdir -p "$out/half"
cp "$out/bin/"* "$out/half/"
cat > "$out/half/sbatch" <<'SH'
#!/bin/bash
n=$(( $(cat "$FAKE_SLURM/next" 2>/dev/null || echo 100) + 1 )); echo "$n" > "$FAKE_SLURM/next"
if [ "$n" = "${FAKE_SBATCH_FAIL:-0}" ]; then echo "sbatch: error: Batch job submission failed: Socket timed out" >&2; exit 1; fi
echo "$*" >> "$FAKE_SLURM/sbatch.log"; echo "$n"
SH
chmod +x "$out/half/sbatch"
hs=$out/halfslurm && mkdir -p "$hs" && : > "$hs/queue"
FAKE_SLURM=$hs FAKE_SBATCH_FAIL=104 PATH="$out/half:$PATH" "$WAVEPIPE" sweep "$camp" --submit --results "$out/hres" \
    --templates "$tpl" > "$out/half1.txt" 2>&1
expect_status 1 $? "an sbatch that fails at the second point's run fails the sweep"
expect_contains "$out/half1.txt" "point p001-1f1b-k1-w1-n2-r0 not submitted (put back as it was; 1 points submitted before it" \
    "saying which point, and that the rest waits for the next --submit"
expect_contains "$hs/scancel.log" "103" "the probe whose run was refused is cancelled"
[ -s "$out/hres/cpu-weak-test/p000-1f1b-k1-w1-n1-r0/jobids" ] && pass "the first point is submitted whole" || fail "p000 not submitted"
left=$(find "$out/hres/cpu-weak-test" -mindepth 1 -maxdepth 1 -type d | wc -l)
expect_status 1 "$left" "no other point is rendered"
printf '101 PENDING\n102 PENDING\n' > "$hs/queue"
FAKE_SLURM=$hs PATH="$out/half:$PATH" "$WAVEPIPE" sweep "$camp" --submit --results "$out/hres" --templates "$tpl" > "$out/half2.txt" 2>&1
expect_status 0 $? "the next --submit"
expect_contains "$out/half2.txt" "1 submitted earlier and not finished, 8 submitted now" "goes on from where it stopped"

# results under /tmp (issue 29): a warning before submitting, unless shared
tmpres=$(mktemp -d /tmp/wp-sweep-cli.XXXXXX)
"$WAVEPIPE" sweep "$camp" --dry-run --results "$tmpres" --templates "$tpl" > "$out/tmp1.txt" 2>&1
expect_contains "$out/tmp1.txt" "warning: the results folder, $tmpres/cpu-weak-test, is under /tmp, which compute nodes do not share" \
    "a dry run warns that results under /tmp are not where the jobs run"
WAVEPIPE_SHARED_TMP="/nothing:$tmpres" "$WAVEPIPE" sweep "$camp" --dry-run --results "$tmpres" --templates "$tpl" > "$out/tmp2.txt" 2>&1
if grep -q "^warning: the results folder" "$out/tmp2.txt"; then
    fail "no warning for results under a /tmp the nodes share"
else
    pass "no warning for results under a /tmp the nodes share (WAVEPIPE_SHARED_TMP)"
fi
rm -rf "$tmpres"

# status of a campaign never swept (issue 29): says how, exit status 1
"$WAVEPIPE" status "$camp" --results "$out/never" --no-slurm > "$out/never.txt" 2>&1
expect_status 1 $? "status of a campaign not swept exits 1"
expect_contains "$out/never.txt" "no point of cpu-weak-test is in $out/never/cpu-weak-test: \`wavepipe sweep" "and says to sweep it"

# a rendered job script runs a point end to end (stand-in srun: one rank)
printf '#!/bin/bash\nwhile [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done\nexec "$@"\n' > "$out/bin/srun"
chmod +x "$out/bin/srun"
p=$out/results/cpu-weak-test/p006-hanayo-k1-w2-n1-r0
PATH="$out/bin:$PATH" bash "$p/job.sbatch" > /dev/null 2>&1
expect_status 0 $? "job.sbatch of a 1-node point runs"
[ -f "$p/DONE" ] && pass "it writes DONE" || fail "no DONE"
expect_contains "$p/run.log" "summary:" "run.log ends with the summary"
expect_contains "$p/env.txt" "wavepipe" "env.txt holds the versions"
expect_status 5 "$(wc -l < "$p/results.csv")" "results.csv: header and 4 iterations"
rm -f "$p/DONE"
PATH="$out/bin:$PATH" bash "$p/job.sbatch" > /dev/null 2>&1
expect_contains "$p/run.log" "resuming from ckpt" "a requeued job resumes from its checkpoint"
[ -f "$p/DONE" ] && pass "and writes DONE again" || fail "no DONE after resume"

# the time-limit warning: #SBATCH --signal=B:USR1@S and --requeue from the
# campaign; the job script passes the USR1 that reaches its shell on to the
# run, which checkpoints after its iteration and exits 75; the script then
# requeues the job (stand-in scontrol) without DONE or FAILED, and the job
# run again resumes: every iteration once, the losses of an uninterrupted run
expect_contains "$p/job.sbatch" "#SBATCH --signal=B:USR1@120" "the run job asks for the time-limit warning (default 120 s)"
expect_contains "$p/job.sbatch" "#SBATCH --requeue" "and to be requeueable"
expect_contains "$p/job.sbatch" "--keep '2'" "it keeps the newest 2 checkpoints (default keep_checkpoints)"
cat > "$out/signal.cfg" <<EOF
format = "wavepipe-campaign"; version = 1;
name = "signal-test"; template = "run-cpu"; model = "$WP_SRCDIR/jobs/models/gpt-tiny.cfg";
scaling = "strong"; global_batch = 8; steps = 60; warmup = 1; save_every = 25; keep_checkpoints = 1;
slurm = { partition = "wp"; time = "00:10:00"; signal_warning_s = 300; };
axes = { schedule = ["1f1b"]; ranks_per_node = [1]; };
EOF
"$WAVEPIPE" sweep "$out/signal.cfg" --dry-run --results "$out/sig" --templates "$tpl" > /dev/null 2>&1
sp=$(ls -d "$out"/sig/signal-test/p000*)
expect_contains "$sp/job.sbatch" "#SBATCH --signal=B:USR1@300" "slurm.signal_warning_s sets the warning"
printf '#!/bin/bash\necho "$*" >> "%s/scontrol.log"\n' "$out" > "$out/bin/scontrol"
chmod +x "$out/bin/scontrol"
(cd "$sp" && SLURM_JOB_ID=777 PATH="$out/bin:$PATH" exec bash job.sbatch > /dev/null 2>&1) &
jpid=$!
for _ in $(seq 200); do [ "$(grep -c '^step' "$sp/run.log" 2>/dev/null)" -ge 5 ] && break; sleep 0.05; done
kill -USR1 "$jpid"
wait "$jpid"
expect_status 0 $? "the job script ends with 0 after requeueing"
expect_status "requeue 777" "$(cat "$out/scontrol.log" 2>/dev/null)" "it ran scontrol requeue on its own job"
if [ ! -e "$sp/DONE" ] && [ ! -e "$sp/FAILED" ] && [ -L "$sp/ckpt/latest" ]; then
    pass "no DONE, no FAILED, a checkpoint ($(readlink "$sp/ckpt/latest"))"
else
    fail "after the warning: $(ls "$sp" | tr '\n' ' ') ckpt: $(ls "$sp/ckpt" 2>&1 | tr '\n' ' ')"
fi
expect_contains "$sp/run.log" "stopped by signal 10 after" "the run says it stopped on the signal"
(cd "$sp" && SLURM_JOB_ID=777 SLURM_RESTART_COUNT=1 PATH="$out/bin:$PATH" bash job.sbatch > /dev/null 2>&1)
expect_status 0 $? "the requeued job runs to the end"
[ -f "$sp/DONE" ] && pass "and writes DONE" || fail "no DONE after the requeue"
expect_status "1" "$(ls "$sp/ckpt" | grep -c '^step-')" "keep_checkpoints = 1: one step directory left"
"$MPIEXEC" -n 1 "$WAVEPIPE" run --config "$sp/model.cfg" --schedule 1f1b --global-batch 8 --steps 60 \
    --results "$out/sig-ref.csv" > /dev/null 2>&1
if [ "$(awk -F, 'NR > 1 { print $13, $19 }' "$out/sig-ref.csv")" = \
     "$(awk -F, 'NR > 1 { print $13, $19 }' "$sp/results.csv")" ]; then
    pass "stopped, requeued, resumed: each of the 60 iterations once, with the uninterrupted run's losses"
else
    fail "the requeued point's rows differ from an uninterrupted run's"
fi
sed 's/signal_warning_s = 300;/signal_warning_s = 0; requeue = false;/' "$out/signal.cfg" > "$out/nosignal.cfg"
"$WAVEPIPE" sweep "$out/nosignal.cfg" --dry-run --results "$out/nosig" --templates "$tpl" > /dev/null 2>&1
if grep -q -- "^#SBATCH --signal" "$out"/nosig/signal-test/p000*/job.sbatch; then
    fail "signal_warning_s = 0 still asks for a signal"
else
    pass "signal_warning_s = 0: no --signal line"
fi
expect_contains "$(ls "$out"/nosig/signal-test/p000*/job.sbatch)" "#SBATCH --no-requeue" "requeue = false: --no-requeue"

# axis adapt: run --adapt (and the campaign's adapt_every) where not none, the
# value in the point's id; a run it refuses is an error before anything is
# written; two points run end to end (mpiexec, 2 ranks) and harvest keeps
# the adaptive and the static run apart, each with its own series
adapt_camp() { # FILE AXES
    cat > "$1" <<EOF
format = "wavepipe-campaign"; version = 1;
name = "adapt-test"; template = "run-cpu"; model = "$WP_SRCDIR/jobs/models/gpt-tiny.cfg";
scaling = "strong"; global_batch = 8; steps = 4; warmup = 1; adapt_every = 2; launcher = "mpiexec";
slurm = { partition = "wp"; time = "00:10:00"; };
axes = { $2 };
EOF
}
adapt_camp "$out/adapt.cfg" 'schedule = ["1f1b"]; ranks_per_node = [2]; adapt = ["none", "k", "partition", "both"];'
"$WAVEPIPE" sweep "$out/adapt.cfg" --dry-run --results "$out/ares" --templates "$tpl" > "$out/adapt.txt" 2>&1
expect_status 0 $? "sweep --dry-run of a campaign with axis adapt"
expect_status "p000-adaptnone-n1-r0 p001-adaptk-n1-r0 p002-adaptpartition-n1-r0 p003-adaptboth-n1-r0" \
    "$(ls "$out/ares/adapt-test" | tr '\n' ' ' | sed 's/ $//')" "the point directories name the adapt value"
a=$out/ares/adapt-test
if grep -q -- "--adapt" "$a/p000-adaptnone-n1-r0/job.sbatch"; then
    fail "adapt none passes no --adapt"
else
    pass "adapt none passes no --adapt"
fi
for pm in 1:k 2:partition 3:both; do
    expect_contains "$a/p00${pm%%:*}-adapt${pm#*:}-n1-r0/job.sbatch" "--adapt '${pm#*:}' --adapt-every '2'" \
        "adapt ${pm#*:}: --adapt '${pm#*:}' with the campaign's adapt_every"
done
expect_status 'value = "k";' "$(grep -A1 'name = "adapt";' "$a/p001-adaptk-n1-r0/point.cfg" | tail -n 1 | sed 's/^ *//')" \
    "point.cfg records the adapt axis"
adapt_camp "$out/adapt_bad.cfg" 'adapt = ["none", "auto"];'
"$WAVEPIPE" sweep "$out/adapt_bad.cfg" --dry-run --results "$out/abad" --templates "$tpl" > "$out/adapt_bad.txt" 2>&1
expect_status 1 $? "an unknown adapt value is an error"
expect_contains "$out/adapt_bad.txt" 'adapt_bad.cfg:5: adapt "auto" must be "none", "k", "partition" or "both"' \
    "named with file:line and the values"
adapt_camp "$out/adapt_bad2.cfg" 'schedule = ["interleaved"]; chunks = [2]; ranks_per_node = [2]; micro_batches = [4]; adapt = ["partition"];'
"$WAVEPIPE" sweep "$out/adapt_bad2.cfg" --dry-run --results "$out/abad" --templates "$tpl" > "$out/adapt_bad2.txt" 2>&1
expect_status 1 $? "adapt partition on interleaved (two stages a rank) is an error"
expect_contains "$out/adapt_bad2.txt" "moves layers between ranks that hold one stage each" "and says why"
adapt_camp "$out/adapt_bad3.cfg" 'schedule = ["gpipe"]; adapt = ["k"];'
"$WAVEPIPE" sweep "$out/adapt_bad3.cfg" --dry-run --results "$out/abad" --templates "$tpl" > "$out/adapt_bad3.txt" 2>&1
expect_status 1 $? "adapt k on gpipe is an error"
expect_contains "$out/adapt_bad3.txt" "adapt k tunes 1f1b and kfkb runs, not gpipe" "and says why"
[ ! -e "$out/abad" ] && pass "nothing written for the refused adapt campaigns" || fail "refused adapt campaigns wrote $out/abad"

for pt in p000-adaptnone-n1-r0 p002-adaptpartition-n1-r0; do
    PATH="$out/bin:$PATH" timeout 300 bash "$a/$pt/job.sbatch" > /dev/null 2>&1
    expect_status 0 $? "job.sbatch of $pt runs (mpiexec, 2 ranks)"
done
expect_contains "$a/p002-adaptpartition-n1-r0/run.log" "adapt partition: every 2 iterations" "the partition point ran adaptively"
expect_status "none partition" \
    "$(for pt in p000-adaptnone-n1-r0 p002-adaptpartition-n1-r0; do
           awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "adapt") c = i; next } { print $c }' "$a/$pt/results.csv" | sort -u
       done | tr '\n' ' ' | sed 's/ $//')" "the results rows say how each point adapted"
"$WAVEPIPE" harvest "$a" --no-plots > "$out/aharv.txt" 2> "$out/aharv.err"
expect_status 0 $? "harvest of the adapt campaign"
expect_status "none,1 partition,1" \
    "$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) { if ($i == "adapt") c = i; if ($i == "strong_speedup") s = i } next }
               { print $c "," $s + 0 }' "$a/harvest.csv" | tr '\n' ' ' | sed 's/ $//')" \
    "two runs, each its own group and baseline (strong speedup 1 each, not against their mean)"
expect_contains "$out/aharv.txt" "adapt=partition" "the summary table names the series by adapt"

# scenarios: emulated compute from a layer table, timed changes per point
# (changes.txt, run --changes, the campaign's hook), axis scenario in the id
# and point.cfg; refused campaigns name file:line and write nothing; two
# points run end to end and harvest reads their rows (loss nan)
printf '#!/bin/sh\necho "hook $WAVEPIPE_CHANGE_ITERATION $*" >> "%s"\n' "$out/hook.log" > "$out/hook.sh"
chmod +x "$out/hook.sh"
scen_camp() { # FILE EXTRA AXES
    cat > "$1" <<EOF
format = "wavepipe-campaign"; version = 1;
name = "scen-test"; template = "run-emulated"; compute = "emulated";
layer_table = "$WP_SRCDIR/jobs/tables/mixed-16.cfg";
scaling = "strong"; global_batch = 4; steps = 6; warmup = 1; adapt_every = 2; launcher = "mpiexec";
$2
slurm = { partition = "wp"; time = "00:10:00"; };
axes = { $3 };
EOF
}
scen_camp "$out/scen.cfg" "scenarios = { slowed = [\"0 slow * 1\", \"3 slow 1 3\"]; marked = [\"2 mark a b\"]; };
scenario_hook = \"$out/hook.sh\";" 'ranks_per_node = [2]; scenario = ["none", "slowed", "marked"]; adapt = ["none"];'
"$WAVEPIPE" sweep "$out/scen.cfg" --dry-run --results "$out/sres" --templates "$tpl" > "$out/scen.txt" 2>&1
expect_status 0 $? "sweep --dry-run of an emulated campaign with scenarios"
sc=$out/sres/scen-test
expect_status "p000-none-n1-r0 p001-slowed-n1-r0 p002-marked-n1-r0" "$(ls "$sc" | tr '\n' ' ' | sed 's/ $//')" \
    "the point directories name the scenario"
if [ ! -e "$sc/p000-none-n1-r0/changes.txt" ] && [ ! -e "$sc/p000-none-n1-r0/model.cfg" ]; then
    pass "scenario none: no changes.txt; emulated: no model.cfg"
else
    fail "scenario none or emulated compute wrote changes.txt or model.cfg"
fi
expect_contains "$sc/p001-slowed-n1-r0/changes.txt" "3 slow 1 3" "the point's changes.txt holds its scenario"
expect_contains "$sc/p001-slowed-n1-r0/job.sbatch" "--compute 'emulated' --layers '$WP_SRCDIR/jobs/tables/mixed-16.cfg' --changes '$sc/p001-slowed-n1-r0/changes.txt' --changes-hook '$out/hook.sh'" \
    "the run gets --compute emulated, --layers, --changes and --changes-hook"
if grep -E '^(run_args=|run_step )' "$sc/p001-slowed-n1-r0/job.sbatch" | grep -q -- "--save\|--device\|--config"; then
    fail "the emulated template passes no --save, --device or --config"
else
    pass "the emulated template passes no --save, --device or --config"
fi
expect_status 'value = "slowed";' "$(grep -A1 'name = "scenario";' "$sc/p001-slowed-n1-r0/point.cfg" | tail -n 1 | sed 's/^ *//')" \
    "point.cfg records the scenario axis"
scen_refused() { # WHAT TEXT EXTRA AXES
    scen_camp "$out/scen_bad.cfg" "$3" "$4"
    "$WAVEPIPE" sweep "$out/scen_bad.cfg" --dry-run --results "$out/sbad" --templates "$tpl" > "$out/scen_bad.txt" 2>&1
    local rc=$?
    if [ "$rc" -eq 1 ] && grep -qF -- "$2" "$out/scen_bad.txt" && [ ! -e "$out/sbad" ]; then
        pass "$1: refused ($2), nothing written"
    else
        fail "$1 (exit $rc)"; sed 's/^/    | /' "$out/scen_bad.txt" | head -5
    fi
}
scen_refused "a bad change" "scen_bad.cfg:5: scenario 'x', change 2: the factor 'fast' must be a number" \
    'scenarios = { x = ["0 slow 1 1", "3 slow 1 fast"]; };' 'scenario = ["x"];'
scen_refused "changes out of order" "scenario 'x', change 2: iteration 1 comes before the one above's 3" \
    'scenarios = { x = ["3 slow 1 1", "1 slow 1 2"]; };' 'scenario = ["x"];'
scen_refused "a scenario not defined" "scen_bad.cfg:7: scenario \"y\" is not in 'scenarios'" \
    'scenarios = { x = ["3 slow 1 2"]; };' 'scenario = ["y"];'
scen_refused "a network change without a hook" "scenario 'x' changes more than a rank's speed: it needs scenario_hook" \
    'scenarios = { x = ["3 rate 100mbit"]; };' 'scenario = ["x"];'
scen_refused "a slowed rank the point has not" "scenario x slows rank 3 of 2 ranks" \
    'scenarios = { x = ["3 slow 3 2"]; };' 'ranks_per_node = [2]; scenario = ["x"];'
scen_refused "a word a change may not have" "'\$(touch' is not allowed" \
    'scenarios = { x = ["3 mark $(touch x)"]; }; scenario_hook = "/bin/true";' 'scenario = ["x"];'
grep -v '^layer_table' "$out/scen.cfg" > "$out/scen_bad.cfg"
"$WAVEPIPE" sweep "$out/scen_bad.cfg" --dry-run --results "$out/sbad" --templates "$tpl" > "$out/scen_bad.txt" 2>&1
expect_status 1 $? "emulated compute without a layer table is an error"
expect_contains "$out/scen_bad.txt" 'compute = "emulated" needs layer_table' "and says what it needs"
# a dilated campaign: its runs get --dilate and --scale-bytes (their hook shapes links alike)
scen_camp "$out/scen_dil.cfg" 'dilation = 4; byte_scale = 2.5;' 'ranks_per_node = [2];'
"$WAVEPIPE" sweep "$out/scen_dil.cfg" --dry-run --results "$out/sdil" --templates "$tpl" > "$out/scen_dil.txt" 2>&1
expect_status 0 $? "sweep --dry-run of a dilated emulated campaign"
expect_contains "$out/sdil/scen-test/p000-n1-r0/job.sbatch" "--layers '$WP_SRCDIR/jobs/tables/mixed-16.cfg' --dilate '4' --scale-bytes '2.5'" \
    "its runs get --dilate 4 --scale-bytes 2.5"
scen_refused "a dilation below 1" "scen_bad.cfg:5: " 'dilation = 0.5;' 'ranks_per_node = [2];'
sed -e 's|compute = "emulated";|compute = "real"; model = "'"$WP_SRCDIR"'/jobs/models/gpt-tiny.cfg";|' \
    -e 's|"run-emulated"|"run-cpu"|' -e '/^layer_table/d' "$out/scen_dil.cfg" > "$out/scen_bad.cfg"
"$WAVEPIPE" sweep "$out/scen_bad.cfg" --dry-run --results "$out/sbad" --templates "$tpl" > "$out/scen_bad.txt" 2>&1
expect_status 1 $? "dilation with real compute is an error"
expect_contains "$out/scen_bad.txt" 'dilation slows emulated compute (run --dilate, --scale-bytes): it goes with compute = "emulated"' \
    "and says why"
sed -e 's|"run-emulated"|"run-cpu"|' "$out/scen.cfg" > "$out/scen_bad.cfg"
"$WAVEPIPE" sweep "$out/scen_bad.cfg" --dry-run --results "$out/sbad" --templates "$tpl" > "$out/scen_bad.txt" 2>&1
expect_status 1 $? "emulated compute with the run-cpu template is an error"
expect_contains "$out/scen_bad.txt" 'use "run-emulated"' "and names the template to use"

for pt in p001-slowed-n1-r0 p002-marked-n1-r0; do
    PATH="$out/bin:$PATH" timeout 300 bash "$sc/$pt/job.sbatch" > /dev/null 2>&1
    expect_status 0 $? "job.sbatch of $pt runs (mpiexec, 2 ranks, emulated)"
done
expect_contains "$sc/p001-slowed-n1-r0/run.log" "change before iteration 3: slow 1 3" "the slowed point slowed rank 1 before iteration 3"
expect_status "hook 2 mark a b" "$(cat "$out/hook.log" 2>/dev/null)" "the marked point ran the campaign's hook once, before iteration 2"
"$WAVEPIPE" harvest "$sc" --no-plots > "$out/sharv.txt" 2> "$out/sharv.err"
expect_status 0 $? "harvest of the emulated scenario campaign"
expect_status 2 "$(awk -F, 'NR > 1 && $0 ~ /,done,/ { n++ } END { print n + 0 }' "$sc/harvest.csv")" \
    "two runs harvested, their rows of loss nan read"

# axis data_parallel: run --data-parallel D for any schedule, dpD in the id;
# a D that does not divide a point's ranks is refused before anything is written
dp_camp() { # FILE AXES
    cat > "$1" <<EOF
format = "wavepipe-campaign"; version = 1;
name = "dp-test"; template = "run-cpu"; model = "$WP_SRCDIR/jobs/models/gpt-tiny.cfg";
scaling = "weak"; global_batch_per_node = 8; steps = 4; warmup = 1; launcher = "mpiexec";
slurm = { partition = "wp"; time = "00:10:00"; };
axes = { $2 };
EOF
}
dp_camp "$out/dp.cfg" 'schedule = ["zb-v"]; nodes = [1, 2]; data_parallel = [1, 2]; ranks_per_node = [4]; micro_batches = [2];'
echo 'zip = ( ["nodes", "data_parallel"] );' >> "$out/dp.cfg"
"$WAVEPIPE" sweep "$out/dp.cfg" --dry-run --results "$out/dpres" --templates "$tpl" > "$out/dp.txt" 2>&1
expect_status 0 $? "sweep --dry-run of a campaign adding a data-parallel copy per node"
expect_status "p000-n1-dp1-r0 p001-n2-dp2-r0" "$(ls "$out/dpres/dp-test" | tr '\n' ' ' | sed 's/ $//')" \
    "the point directories name the copies"
expect_contains "$out/dpres/dp-test/p001-n2-dp2-r0/job.sbatch" "--schedule 'zb-v' --data-parallel '2'" \
    "the run gets --data-parallel"
if grep -q -- "--data-parallel" "$out/dpres/dp-test/p000-n1-dp1-r0/job.sbatch"; then
    fail "data_parallel 1 passes --data-parallel"
else
    pass "data_parallel 1 passes no --data-parallel"
fi
dp_camp "$out/dp_bad.cfg" 'schedule = ["hanayo"]; data_parallel = [3]; ranks_per_node = [4];'
"$WAVEPIPE" sweep "$out/dp_bad.cfg" --dry-run --results "$out/dpbad" --templates "$tpl" > "$out/dp_bad.txt" 2>&1
expect_status 1 $? "data_parallel 3 on 4 ranks is an error"
expect_contains "$out/dp_bad.txt" "--data-parallel 3 does not divide the 4 ranks into pipeline copies" "and says why"
[ ! -e "$out/dpbad" ] && pass "nothing written for the refused campaign" || fail "the refused campaign wrote $out/dpbad"

# the precision axis (run --precision): each point's job runs in its own
sed 's/^  nodes = \[1, 2, 3\];/  nodes = [1, 2, 3];\n  precision = ["fp32", "bf16"];/' "$camp" > "$out/prec.cfg"
"$WAVEPIPE" sweep "$out/prec.cfg" --dry-run --results "$out/prec" --templates "$tpl" > "$out/prec.txt" 2>&1
expect_status 0 $? "sweep --dry-run with a precision axis"
expect_status 18 "$(find "$out/prec/cpu-weak-test" -mindepth 1 -maxdepth 1 -type d | wc -l)" "9 points x 2 precisions"
pb=$(find "$out/prec/cpu-weak-test" -mindepth 1 -maxdepth 1 -type d -name '*bf16*' | head -n 1)
expect_contains "$pb/job.sbatch" "--precision 'bf16'" "a bf16 point's run says --precision bf16"
sed 's/"fp32", "bf16"/"fp32", "fp16"/' "$out/prec.cfg" > "$out/prec-bad.cfg"
"$WAVEPIPE" sweep "$out/prec-bad.cfg" --dry-run --results "$out/prec-bad" --templates "$tpl" > "$out/prec-bad.txt" 2>&1
expect_status 1 $? "a precision axis value fp16 refused"
expect_contains "$out/prec-bad.txt" "prec-bad.cfg:$(grep -n 'precision' "$out/prec-bad.cfg" | cut -d: -f1): precision \"fp16\"" \
    "with file:line"

emu="$WP_SRCDIR/jobs/campaigns/adaptive-ci.cfg"
if grep -q '^axes = {' "$emu"; then
    sed 's/^axes = {/axes = {\n  precision = ["bf16"];/' "$emu" > "$out/emu-prec.cfg"
    "$WAVEPIPE" sweep "$out/emu-prec.cfg" --dry-run --results "$out/emu-prec" --templates "$tpl" > "$out/emu-prec.txt" 2>&1
    expect_status 1 $? "a precision axis on an emulated campaign refused"
    expect_contains "$out/emu-prec.txt" "emulated compute takes the layer table's bytes" "and why"
fi
finish
