#!/usr/bin/env bash
# `make install` into a prefix that is then moved (as Spack's and EasyBuild's
# prefixes are their own): from there, in a directory with no templates,
# wavepipe plans with an installed topology and profile (named by full path,
# and relative as the help texts name them), renders a campaign
# with the installed templates and model (sweep --dry-run), trains one step
# on the installed corpus, and `man wavepipe-plan` and wavepipe-formats(5)
# render from the installed man pages.
. "$(dirname "$0")/lib.sh"
out=$(scratch_dir)
: "${WP_BUILDDIR:=$(cd "$(dirname "$0")/.." && pwd)}"

make -s -C "$WP_BUILDDIR" install DESTDIR="$out/stage" > "$out/install.txt" 2>&1
expect_status 0 $? "make install DESTDIR=..."
bin=$(find "$out/stage" -path '*/bin/wavepipe' -type f | head -n 1)
if [ -z "$bin" ]; then
    fail "no bin/wavepipe under the DESTDIR"
    sed 's/^/    | /' "$out/install.txt" | tail -20
    finish
    exit 1
fi
# move the prefix away from the configured one: nothing may be found there
mv "${bin%/bin/wavepipe}" "$out/moved"
prefix=$out/moved
wp=$prefix/bin/wavepipe
share=$prefix/share/wavepipe
mkdir -p "$out/elsewhere"
cd "$out/elsewhere" || exit 1

for f in topology/dapple-config-a.cfg profiles/dapple-v100/bert-48-pbs-2.txt templates/probe.sbatch \
         templates/run-cpu.sbatch templates/run-step.sh jobs/models/gpt-tiny.cfg jobs/data/sonnets.txt \
         jobs/campaigns/cpu-weak-test.cfg jobs/tables/mixed-16.cfg; do
    if [ -f "$share/$f" ]; then pass "installed: share/wavepipe/$f"; else fail "not installed: share/wavepipe/$f"; fi
done

"$wp" plan --layers "$share/profiles/dapple-v100/bert-48-pbs-2.txt" --global-batch 64 \
    --cluster "$share/topology/dapple-config-a.cfg" > plan.txt 2>&1
expect_status 0 $? "the installed wavepipe plans with the installed profile and topology"
expect_contains plan.txt "plan for bert-48-pbs-2 (53 layers, profile batch 2) on dapple-config-a" "the plan's summary"

# relative names as the help texts give them, away from any source tree: the installed files
"$wp" plan --layers profiles/dapple-v100/bert-48-pbs-2.txt --global-batch 64 \
    --cluster topology/dapple-config-a.cfg > plan-rel.txt 2>&1
expect_status 0 $? "plan --layers profiles/... --cluster topology/... finds the installed files"
# the same plan (all but the search's time)
if cmp -s <(grep -v '^search:' plan.txt) <(grep -v '^search:' plan-rel.txt); then
    pass "the same plan as with the full paths"
else
    fail "plans differ (plan.txt, plan-rel.txt)"
fi
"$wp" plan --layers profiles/none.txt --global-batch 64 --cluster topology/dapple-config-a.cfg > missing.txt 2>&1
expect_status 1 $? "a relative file found nowhere is still an error"
expect_contains missing.txt "profiles/none.txt" "naming the path as given"

# the installed campaign as shipped (its model and templates two levels above
# it), named as in `wavepipe sweep --help`
"$wp" sweep jobs/campaigns/cpu-weak-test.cfg --dry-run --results results > sweep.txt 2>&1
expect_status 0 $? "sweep jobs/campaigns/cpu-weak-test.cfg --dry-run: the installed campaign"
n=$(find results/cpu-weak-test -mindepth 1 -maxdepth 1 -type d 2>/dev/null | wc -l)
expect_status 9 "$n" "9 point directories rendered"
# a campaign of the user's own, away from any templates folder: the templates
# come from the installed data directory, found from the program's place
sed "s|^model = .*|model = \"$share/jobs/models/gpt-tiny.cfg\";|; s|^name = .*|name = \"mine\";|" \
    "$share/jobs/campaigns/cpu-weak-test.cfg" > mine.cfg
"$wp" sweep mine.cfg --dry-run --results results > mine.txt 2>&1
expect_status 0 $? "sweep --dry-run of a campaign outside the prefix, templates from the prefix"
job=$(find results/mine -name job.sbatch | head -n 1)
if [ -n "$job" ] && bash -n "$job"; then pass "its job script renders and passes bash -n"; else fail "no job script, or bash -n fails"; fi
expect_contains "$job" "wavepipe='$wp'" "the job runs the installed program"
expect_contains "$job" "finish_step" "run-step.sh from the installed templates is in the job"
"$wp" sweep mine.cfg --dry-run --results results --templates "$out/none" > none.txt 2>&1
expect_status 1 $? "an explicit --templates without the templates is an error"
expect_contains none.txt "template probe.sbatch not found (tried $out/none/probe.sbatch" "the error names the path tried"

"$wp" status jobs/campaigns/cpu-weak-test.cfg --results results --no-slurm > status.txt 2>&1
expect_status 0 $? "status jobs/campaigns/cpu-weak-test.cfg: the installed campaign"
expect_contains status.txt "pending" "its points are pending"

# one training step of the installed model on the installed corpus (the model names no data)
"$MPIEXEC" -n 1 "$wp" run --config jobs/models/gpt-tiny.cfg --steps 1 > run.txt 2>&1
expect_status 0 $? "wavepipe run --config jobs/models/gpt-tiny.cfg: the installed model and corpus"

# the man pages, as man finds them under the prefix
for page in wavepipe wavepipe-topo wavepipe-probe wavepipe-calibrate wavepipe-profile wavepipe-plan \
            wavepipe-schedule wavepipe-sbp wavepipe-simulate wavepipe-run wavepipe-sweep wavepipe-status \
            wavepipe-recover wavepipe-harvest; do
    [ -f "$prefix/share/man/man1/$page.1" ] || fail "not installed: share/man/man1/$page.1"
done
MANWIDTH=200 man -M "$prefix/share/man" wavepipe-plan > man-plan.txt 2> man-plan.err
expect_status 0 $? "man wavepipe-plan renders from the prefix"
expect_contains man-plan.txt "wavepipe-plan - DAPPLE's planner" "its NAME is the command's summary"
expect_contains man-plan.txt "--global-batch" "its options are the --help text's"
expect_contains man-plan.txt "wavepipe-formats(5)" "it refers to the formats page"
# help2man keeps the help text's layout (issue 29): each example a line of
# its own, and the sbatch commands under --submit part of its text, not
# options of their own
MANWIDTH=200 man -M "$prefix/share/man" wavepipe-sweep > man-sweep.txt 2> man-sweep.err
expect_status 0 $? "man wavepipe-sweep renders from the prefix"
n=$(grep -cE '^ +wavepipe (sweep|status) jobs/campaigns/[a-z-]+\.cfg' man-sweep.txt)
expect_status 3 "$n" "its three examples are a line each"
if grep -qE '^ {5,8}sbatch ' man-sweep.txt; then
    fail "an sbatch command of --submit is rendered as an option"
else
    pass "the sbatch commands of --submit are rendered as its text"
fi
MANWIDTH=200 man -M "$prefix/share/man" 5 wavepipe-formats > man-formats.txt 2>&1
expect_status 0 $? "man 5 wavepipe-formats renders from the prefix"
for section in "CAMPAIGN FILES" "CLUSTER FILES" "LAYER TABLES" "PLAN FILES"; do
    expect_contains man-formats.txt "$section" "wavepipe-formats(5) has $section"
done

finish
