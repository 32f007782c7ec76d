#!/usr/bin/env bash
# `wavepipe plan --format torch` in PyTorch itself (issue 30; CI has no
# PyTorch, tests/cli_plan_torch.sh checks the same output's form without it):
# for each plan below, the schedule lines are loaded by
# PipelineScheduleMulti._load_csv and _PipelineScheduleRuntime._load_csv
# (compute_only), compared with the file, lowered to sends and receives and
# dry-run for deadlock, then run for one training step of a small model on as
# many gloo processes (CPU, 127.0.0.1) as the plan has pipeline ranks, under
# both classes, the losses and gradients checked against the model run whole
# (bench/torch_load_csv.py). Also a zero-bubble schedule's I and W cells
# (`wavepipe schedule --kind zb-h1 --format torch-csv`), and, as a control,
# a schedule with a backward removed, which PyTorch's _validate_schedule must
# refuse. PyTorch from PyPI in the shared virtual environment
# (bench/torch_venv.sh: TORCH_VENV, TORCH_SPEC).
# Usage: torch_schedule.sh WAVEPIPE SRCDIR
# Environment: TORCH_VENV, TORCH_SPEC, TORCH_CASES (names below, default all),
# TORCH_RUN (0: load and dry-run only; default 1).
set -u
[ $# -eq 2 ] || { echo "usage: torch_schedule.sh WAVEPIPE SRCDIR" >&2; exit 2; }
wavepipe=$1 srcdir=$2
[ -x "$wavepipe" ] || { echo "torch_schedule: no executable $wavepipe" >&2; exit 2; }
# shellcheck source=bench/torch_venv.sh
. "$(dirname "$0")/torch_venv.sh"
torch_venv_ready torch_schedule || exit 1

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
T=$srcdir/topology
"$wavepipe" profile --model "$srcdir/jobs/models/gpt-tiny.cfg" --analytic --flops-per-s 1e12 -o "$tmp/tiny.cfg" \
    > "$tmp/profile.log" 2>&1 || { cat "$tmp/profile.log" >&2; exit 1; }
tiny="plan --layers $tmp/tiny.cfg --cluster $T/dgx2-x4-ib-edr.cfg"
bert="plan --layers $srcdir/profiles/dapple-v100/bert-48-pbs-2.txt --global-batch 64 --cluster $T/dapple-config-a.cfg"
# name: the wavepipe command line (as tests/cli_plan_torch.sh's cases)
cases="dp2: $tiny --global-batch 8 --devices 4 --tensor 1x1 --memory 10MB --format torch
straight: $tiny --global-batch 16 --devices 4 --tensor 1x1 --memory 8MB --format torch
inter2: $tiny --global-batch 16 --devices 4 --tensor 1x1 --memory 5MB --chunks 4 --format torch
inter4: $tiny --global-batch 16 --devices 4 --tensor 1x1 --memory 6MB --chunks 4 --format torch
hybrid: $tiny --global-batch 16 --devices 16 --tensor 2x1 --memory 6MB --format torch
mesh2d: $tiny --global-batch 16 --devices 8 --tensor 2x2 --memory 6MB --format torch
bert: $bert --format torch
zb-h1: schedule --kind zb-h1 --ranks 4 --micro-batches 8 --tf 1 --tb 1 --tw 1 --format torch-csv"

echo "# PyTorch $("$py" -c 'import torch; print(torch.__version__)') from $venv; wavepipe $("$wavepipe" --version 2>&1 | head -n 1)"
status=0 port=29600
while IFS= read -r line; do
    name=${line%%:*} cmd=${line#*: }
    case " ${TORCH_CASES:-$name} " in *" $name "*) ;; *) continue ;; esac
    # shellcheck disable=SC2086
    if ! "$wavepipe" $cmd > "$tmp/$name.txt" 2> "$tmp/$name.err"; then
        echo "torch_schedule: $name: wavepipe $cmd fails" >&2; cat "$tmp/$name.err" >&2; status=1; continue
    fi
    echo "## $name: wavepipe $cmd"
    grep -E '^# (pipeline|split):' "$tmp/$name.txt" | sed 's/^/   /'
    port=$((port + 10)) run=(--run)
    [ "${TORCH_RUN:-1}" = 0 ] && run=()
    "$py" "$srcdir/bench/torch_load_csv.py" "$tmp/$name.txt" "${run[@]}" --port "$port" > "$tmp/$name.log" 2>&1
    rc=$?
    grep -E '^(PASS|FAIL):' "$tmp/$name.log" | sed 's/^/   /'
    if [ "$rc" -ne 0 ]; then
        status=1
        grep -vE '^(PASS|FAIL):' "$tmp/$name.log" | tail -n 20 | sed 's/^/   | /'
    fi
done <<< "$cases"

# the control: one backward fewer, which PyTorch's own validation refuses
echo "## control: dp2 without its last cell (0B3), which _validate_schedule must refuse"
sed '/^0F0/ s/,0B3$//' "$tmp/dp2.txt" > "$tmp/broken.txt"
"$py" "$srcdir/bench/torch_load_csv.py" "$tmp/broken.txt" > "$tmp/broken.log" 2>&1
if [ $? -eq 1 ] && grep -q "expected 4 total backwards" "$tmp/broken.log"; then
    echo "   PASS: refused: $(grep -m1 -o 'Invalid backward microbatches[^,]*' "$tmp/broken.log")"
else
    echo "   FAIL: the broken schedule was not refused"; sed 's/^/   | /' "$tmp/broken.log"; status=1
fi
# why the grid: the same order without its empty cells (each rank's row its
# own sequence) is what _load_csv and the runtime class take, but
# PipelineScheduleMulti's own step loop posts a receive in the step its
# sender computes and so runs a forward before its input has come
echo "## note: dp2's rows without their empty cells (each rank's order alone)"
(grep '^#' "$tmp/dp2.txt"; grep -v '^#' "$tmp/dp2.txt" | sed 's/,,*/,/g; s/^,//; s/,$//') > "$tmp/compact.txt"
"$py" "$srcdir/bench/torch_load_csv.py" "$tmp/compact.txt" --run --port $((port + 10)) \
    --classes _PipelineScheduleRuntime > "$tmp/compact-runtime.log" 2>&1
grep -E '^(PASS|FAIL):.*step' "$tmp/compact-runtime.log" | sed 's/^/   /'
timeout 120 "$py" "$srcdir/bench/torch_load_csv.py" "$tmp/compact.txt" --run --port $((port + 20)) \
    --classes PipelineScheduleMulti > "$tmp/compact-multi.log" 2>&1
if grep -q '^PASS:.*step' "$tmp/compact-multi.log"; then
    echo "   PipelineScheduleMulti.step() runs them too: this PyTorch no longer needs the lock-step grid"
else
    echo "   PipelineScheduleMulti.step() does not run them: $(grep -m1 -oE '[A-Za-z]*Error: .*' "$tmp/compact-multi.log" | cut -c1-120)"
fi
if [ $status -eq 0 ]; then echo "every check passed"; else echo "SOME CHECKS FAILED"; fi
exit $status
