#!/usr/bin/env bash
# The campaign suite end to end on the project's 3-node Slurm cluster
# (network namespaces, tests/cluster/vcluster.sh): the shipped test campaign
# jobs/campaigns/cpu-weak-test.cfg (weak scaling over 1, 2 and 3 nodes x
# {1f1b, kfkb k = 2, hanayo W = 2}) is submitted with sbatch (probe, then the
# run, chained with --dependency); every point must finish; `wavepipe status`
# must say so; `wavepipe harvest` must write the CSV with the efficiency
# columns and the plots; the numbers must be sane (positive throughput,
# efficiencies in (0, 1.5]) and every rendered script must pass bash -n.
# Skips (77) only where network namespaces cannot be made.
. "$(dirname "$0")/lib.sh"
vcluster_start campaign_e2e 3

campaign="$WP_SRCDIR/jobs/campaigns/cpu-weak-test.cfg"
results="$work/results"
"$WAVEPIPE" sweep "$campaign" --submit --results "$results" --templates "$WP_SRCDIR/templates" \
    --wavepipe "$WAVEPIPE" > "$work/sweep.log" 2>&1
expect_status 0 $? "wavepipe sweep --submit"
camp="$results/cpu-weak-test"
points=$(find "$camp" -mindepth 1 -maxdepth 1 -type d | wc -l)
expect_status 9 "$points" "9 points rendered (3 node counts x 3 schedules)"
njobs=$(cat "$camp"/*/jobids 2>/dev/null | wc -l)
expect_status 18 "$njobs" "18 jobs submitted (a probe and a run per point)"

# wait for every point to end (DONE or FAILED), bounded
done_points=$(wait_for_points "$camp" 9 "${CAMPAIGN_E2E_TIMEOUT:-420}")
expect_status 9 "$done_points" "all 9 points finish (DONE)"
if [ "$done_points" -ne 9 ]; then
    "$WAVEPIPE" status "$campaign" --results "$results" 2>&1 | sed 's/^/    | /'
    for f in "$camp"/*/FAILED; do [ -e "$f" ] && tail -5 "$(dirname "$f")/run.log" 2>/dev/null | sed 's/^/    | /'; done
    squeue 2>&1 | sed 's/^/    | /'
fi
"$WAVEPIPE" status "$campaign" --results "$results" > "$work/status.txt" 2>&1
expect_status 0 $? "wavepipe status"
expect_status 9 "$(grep -cE '^p[0-9]+.* done' "$work/status.txt")" "status shows each of the 9 points done"
expect_contains "$work/status.txt" "9 points: 0 pending, 0 running, 9 done, 0 failed" "and sums them up"
for p in "$camp"/*/; do
    [ -s "$p/cluster.cfg" ] && [ -s "$p/env.txt" ] && [ -s "$p/job.sbatch" ] || { fail "$(basename "$p"): cluster.cfg, env.txt and job.sbatch recorded"; continue; }
done
pass "every point recorded its script, environment and cluster file"
bad=0
for s in "$camp"/*/*.sbatch; do bash -n "$s" || bad=$((bad + 1)); done
expect_status 0 "$bad" "every rendered script passes bash -n"

"$WAVEPIPE" harvest "$camp" > "$work/harvest.txt" 2>&1
expect_status 0 $? "wavepipe harvest"
csv="$camp/harvest.csv"
[ -s "$csv" ] && pass "harvest.csv written" || fail "harvest.csv written"
expect_contains "$csv" "weak_efficiency" "harvest.csv has the weak-scaling efficiency column"
expect_status 10 "$(wc -l < "$csv")" "one row per point after the header"
if awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
            { t = $c["samples_per_s_median"]; e = $c["weak_efficiency"];
              if (!(t > 0)) { print "throughput " t " in row " NR; bad = 1 }
              if (!(e > 0 && e <= 1.5)) { print "efficiency " e " in row " NR; bad = 1 } }
            END { exit bad }' "$csv"; then
    pass "positive throughput and efficiencies in (0, 1.5] on every row"
    # weak scaling compares each schedule across node counts: its 1-node row is
    # the reference (efficiency exactly 1), the 2- and 3-node rows are measured
    ones=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } $c["weak_efficiency"] + 0 == 1 { n++ } END { print n + 0 }' "$csv")
    expect_status 3 "$ones" "efficiency 1 only at the smallest node count of each schedule (3 schedules)"
else
    fail "numbers out of range"; cat "$csv"
fi
for plot in throughput bubble predicted; do
    for ext in svg png; do
        [ -s "$camp/plots/$plot.$ext" ] && pass "plot $plot.$ext" || fail "plot $plot.$ext"
    done
done
finish
