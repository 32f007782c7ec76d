#!/usr/bin/env bash
# Campaign points on the test cluster's real Slurm when things go wrong
# (issue 29):
#  - a probe that cannot start (its point directory under a /tmp the nodes
#    do not share, as a new user's first campaign had it): Slurm cancels the
#    run waiting for it (--kill-on-invalid-dep=yes), `wavepipe status` calls
#    the point failed and says why, `wavepipe sweep --submit` submits it
#    again, and warned before about the /tmp;
#  - a run an older sweep left waiting for a failed probe (submitted
#    without --kill-on-invalid-dep): failed in status, DependencyNeverSatisfied
#    read from squeue, and cancelled when the point is submitted again;
#  - the cluster restarted, which numbers its jobs from 1 again: new jobs of
#    a point's old ids are not taken for the point's, and --dry-run and
#    --submit decide alike.
. "$(dirname "$0")/lib.sh"
vcluster_start slurm_sweep 2
tpl="$WP_SRCDIR/templates"

# one 1-node point of the test campaign
camp="$work/one.cfg"
sed -e 's|^name = .*|name = "one";|' -e "s|^model = .*|model = \"$WP_SRCDIR/jobs/models/gpt-tiny.cfg\";|" \
    -e 's|^  schedule = .*|  schedule = ["1f1b"];|' -e 's|^  nodes = .*|  nodes = [1];|' \
    "$WP_SRCDIR/jobs/campaigns/cpu-weak-test.cfg" > "$camp"

# 1. results under a /tmp that is private to each node
priv=$(mktemp -d /tmp/wp-slurm-sweep.XXXXXX)
"$WAVEPIPE" sweep "$camp" --submit --results "$priv" --templates "$tpl" --wavepipe "$WAVEPIPE" > "$work/sub1.txt" 2>&1
expect_status 0 $? "sweep --submit of a point whose results are under a private /tmp"
expect_contains "$work/sub1.txt" "warning: the results folder, $priv/one, is under /tmp, which compute nodes do not share" \
    "sweep warned before submitting"
pt=$priv/one/p000-k1-w1-n1-r0
read -r _ probe _ < <(grep '^probe' "$pt/jobids")
read -r _ run _ < <(grep '^run' "$pt/jobids")
# Slurm cancels the run once the probe has failed: nothing of the point stays in the queue
gone=0
for _ in $(seq 1 60); do
    if ! squeue --noheader --format=%i | grep -qx "$probe\|$run"; then gone=1; break; fi
    sleep 1
done
expect_status 1 "$gone" "the probe failed and Slurm cancelled its run (nothing left pending)"
"$WAVEPIPE" status "$camp" --results "$priv" > "$work/st1.txt" 2>&1
expect_contains "$work/st1.txt" "p000-k1-w1-n1-r0                         failed" "status: the point failed"
expect_contains "$work/st1.txt" "the probe (job $probe) left no probe-$probe.err here: its node could not write to the point directory" \
    "and why: the probe's node could not write to the point directory"
"$WAVEPIPE" sweep "$camp" --submit --results "$priv" --templates "$tpl" --wavepipe "$WAVEPIPE" > "$work/sub2.txt" 2>&1
expect_contains "$work/sub2.txt" "p000-k1-w1-n1-r0                         failed, rendered again, submitted" \
    "sweep --submit submits the failed point again"
# shellcheck disable=SC2046
scancel $(awk '{print $2}' "$pt/jobids") 2>/dev/null || true
rm -rf "$priv"

# 2. a run left waiting for ever on a failed probe, as an older sweep left it
res=$work/results
"$WAVEPIPE" sweep "$camp" --dry-run --results "$res" --templates "$tpl" --wavepipe "$WAVEPIPE" > "$work/dry.txt" 2>&1
pt=$res/one/p000-k1-w1-n1-r0
bad=$(sbatch --parsable --partition=wp --output=/dev/null --wrap 'exit 3')
stuck=$(sbatch --parsable --partition=wp --output=/dev/null --dependency=afterok:"$bad" --wrap 'true')
printf 'probe %s - -\nrun %s - -\n' "$bad" "$stuck" > "$pt/jobids"
never=0
for _ in $(seq 1 60); do
    squeue --noheader --jobs="$stuck" --format=%r 2>/dev/null | grep -q DependencyNeverSatisfied && { never=1; break; }
    sleep 1
done
expect_status 1 "$never" "a run that waits on a failed probe without --kill-on-invalid-dep stays pending"
"$WAVEPIPE" status "$camp" --results "$res" > "$work/st2.txt" 2>&1
expect_contains "$work/st2.txt" "failed   run $stuck PENDING (DependencyNeverSatisfied), probe $bad gone; it waits for a probe that failed and can never start" \
    "status: such a point is failed, not pending"
"$WAVEPIPE" sweep "$camp" --submit --results "$res" --templates "$tpl" --wavepipe "$WAVEPIPE" > "$work/sub3.txt" 2>&1
expect_contains "$work/sub3.txt" "cancelled the run waiting for ever: $stuck" "sweep --submit cancels it and submits the point again"
sleep 1
if squeue --noheader --format=%i | grep -qx "$stuck"; then fail "the waiting run is gone from the queue"; else pass "the waiting run is gone from the queue"; fi

# 3. the cluster restarted: its job ids begin again
read -r _ old_probe _ old_submit < <(grep '^probe' "$pt/jobids" | tail -1)
[ "$old_submit" != "-" ] && pass "a job's submit time is recorded ($old_submit)" || fail "no submit time recorded"
bash "$vc" down "$dir" > /dev/null 2>&1
vcluster_up "$vc" "$dir" 2 "$(dirname "$WAVEPIPE"):$builddir:$WP_SRCDIR"
ids="" id=0
while [ "$id" -lt "$old_probe" ] && [ "$id" -lt 100 ]; do
    id=$(sbatch --parsable --partition=wp --output=/dev/null --wrap 'sleep 120') || break
    ids="$ids $id"
done
case " $ids " in
*" $old_probe "*) pass "the restarted cluster gives the point's old job id $old_probe to another job" ;;
*) fail "the restarted cluster did not reuse job id $old_probe (got$ids)" ;;
esac
"$WAVEPIPE" status "$camp" --results "$res" > "$work/st3.txt" 2>&1
expect_contains "$work/st3.txt" "p000-k1-w1-n1-r0                         failed" \
    "status: the new jobs of the old ids are not the point's, which is failed"
"$WAVEPIPE" sweep "$camp" --dry-run --results "$res" --templates "$tpl" --wavepipe "$WAVEPIPE" > "$work/dry3.txt" 2>&1
expect_contains "$work/dry3.txt" "p000-k1-w1-n1-r0                         failed, rendered again" "--dry-run would submit it again"
"$WAVEPIPE" sweep "$camp" --submit --results "$res" --templates "$tpl" --wavepipe "$WAVEPIPE" > "$work/sub4.txt" 2>&1
expect_contains "$work/sub4.txt" "p000-k1-w1-n1-r0                         failed, rendered again, submitted" "and --submit does"
# shellcheck disable=SC2086
scancel $ids 2>/dev/null || true
finish
