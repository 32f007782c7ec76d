#!/usr/bin/env python3
"""Checks what `wavepipe plan --format torch` writes, without PyTorch
(tests/cli_plan_torch.sh; bench/torch_schedule.sh loads and runs it with
PyTorch).

Usage: check_schedule.py OUTPUT [--plan-csv FILE] [--microbatches M]
                         [--layers N] [--first NAME] [--last NAME]

OUTPUT is the command's standard output: '# pipeline: key=value ...', the
'# split: ' CSV (a header, a line per stage), and the schedule rows (lines
without '#'). Checked, each failure a line on stderr and exit status 1:
 - the rows are what torch.distributed.pipelining's _Action.from_str reads
   as compute actions (STAGE F|B|I|W MICRO-BATCH) or empty, one row per
   pipeline rank (PipelineScheduleMulti._validate_schedule's count);
 - every stage runs every micro-batch's forward once and its backward once
   (B, or I and W), stage s only on rank s mod P (the split's rank), a
   forward before its backward and I before W on that rank;
 - the ranks, each running its row in order, finish: an action waits for
   what it needs from another stage (the forward of stage s - 1, the
   backward of stage s + 1), and no rank waits for ever;
 - the lock-step grid PipelineScheduleMulti's step loop needs: what a cell
   needs from another rank sits in an earlier column (its receive is posted
   in the step its sender computes);
 - the split: stages 0 .. S-1 with rank s mod P and chunk s div P, layers
   consecutive from 0 to N-1 (names --first and --last at the ends), one
   data-parallel size and tensor group for all, as many devices as
   replicas x tensor, virtual stages on the devices of their rank's first;
   with --plan-csv (the plan's `--format csv`) the same layers, replicas
   and devices.
"""
import argparse
import csv
import re
import sys

ACTION = re.compile(r"^(\d+)(F|B|I|W)(\d+)$")
failures = []


def fail(message):
    failures.append(message)
    print("check_schedule: " + message, file=sys.stderr)


def read_output(path):
    pipeline, split, rows = {}, [], []
    with open(path, newline="") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("# pipeline: "):
                for item in line[len("# pipeline: "):].split():
                    key, _, value = item.partition("=")
                    pipeline[key] = value
            elif line.startswith("# split: "):
                split.append(line[len("# split: "):])
            elif not line.startswith("#"):
                rows.append(line)
    return pipeline, list(csv.DictReader(split)), [next(csv.reader([r])) for r in rows]


def parse_rows(rows):
    """Per rank, its actions as (column, stage, kind, micro-batch)."""
    per_rank = []
    for r, row in enumerate(rows):
        actions = []
        for c, cell in enumerate(row):
            if cell.strip() == "":
                continue
            m = ACTION.match(cell)
            if not m:
                fail(f"rank {r}, column {c}: '{cell}' is not a compute action STAGE F|B|I|W MICRO-BATCH")
                continue
            actions.append((c, int(m.group(1)), m.group(2), int(m.group(3))))
        per_rank.append(actions)
    return per_rank


def check_counts(per_rank, P, S, M):
    seen = {}
    for r, actions in enumerate(per_rank):
        done = set()
        for _, s, kind, mb in actions:
            if s >= S or mb >= M:
                fail(f"rank {r}: {s}{kind}{mb} is outside {S} stages x {M} micro-batches")
                continue
            if s % P != r:
                fail(f"rank {r}: {s}{kind}{mb}, but stage {s} belongs on rank {s % P}")
            key = (s, kind, mb)
            seen[key] = seen.get(key, 0) + 1
            if kind in "BI" and (s, "F", mb) not in done:
                fail(f"rank {r}: {s}{kind}{mb} before its forward")
            if kind == "W" and (s, "I", mb) not in done:
                fail(f"rank {r}: {s}W{mb} before {s}I{mb}")
            done.add(key)
    for s in range(S):
        for mb in range(M):
            f, b, i, w = (seen.get((s, k, mb), 0) for k in "FBIW")
            if f != 1 or not ((b == 1 and i == w == 0) or (b == 0 and i == w == 1)):
                fail(f"stage {s}, micro-batch {mb}: {f} F, {b} B, {i} I, {w} W (want one F and one B, or I + W)")


def needs(s, kind, mb, S):
    """What a compute action waits for from another stage, or None."""
    if kind == "F" and s > 0:
        return [(s - 1, "F", mb)]
    if kind in "BI" and s < S - 1:
        return [(s + 1, "B", mb), (s + 1, "I", mb)]
    return None


def check_runs(per_rank, S):
    """Every rank runs its row in order; an action waits for its input."""
    done, pos = set(), [0] * len(per_rank)
    while True:
        progress = False
        for r, actions in enumerate(per_rank):
            while pos[r] < len(actions):
                _, s, kind, mb = actions[pos[r]]
                want = needs(s, kind, mb, S)
                if want and not any(w in done for w in want):
                    break
                done.add((s, kind, mb))
                pos[r] += 1
                progress = True
        if all(pos[r] == len(a) for r, a in enumerate(per_rank)):
            return
        if not progress:
            stuck = ", ".join(f"rank {r} at {a[pos[r]][1]}{a[pos[r]][2]}{a[pos[r]][3]}"
                              for r, a in enumerate(per_rank) if pos[r] < len(a))
            fail(f"the ranks deadlock: {stuck}")
            return


def check_grid(per_rank, S):
    column = {(s, kind, mb): c for actions in per_rank for c, s, kind, mb in actions}
    for r, actions in enumerate(per_rank):
        for c, s, kind, mb in actions:
            for w in needs(s, kind, mb, S) or []:
                if w in column and column[w] >= c:
                    fail(f"rank {r}, column {c}: {s}{kind}{mb} needs {w[0]}{w[1]}{w[2]}, in column {column[w]} "
                         f"(PipelineScheduleMulti posts the receive in the sender's step: it must come before)")


def check_split(split, pipeline, P, S, args):
    if [int(x["stage"]) for x in split] != list(range(S)):
        fail(f"the split lists stages {[x['stage'] for x in split]}, want 0..{S - 1}")
        return
    dp, tensor = pipeline.get("data_parallel"), pipeline.get("tensor", "0x0")
    p1, _, p2 = tensor.partition("x")
    t = int(p1) * int(p2) if p1.isdigit() and p2.isdigit() else 0
    nxt = 0
    for s, x in enumerate(split):
        if int(x["rank"]) != s % P or int(x["chunk"]) != s // P:
            fail(f"stage {s}: rank {x['rank']} chunk {x['chunk']}, want {s % P} and {s // P}")
        a, b = int(x["first_index"]), int(x["last_index"])
        if a != nxt or b < a:
            fail(f"stage {s}: layers {a}-{b}, want from {nxt}")
        nxt = b + 1
        if x["replicas"] != dp or x["tensor"] != tensor:
            fail(f"stage {s}: {x['replicas']} replicas of {x['tensor']}, the pipeline line {dp} of {tensor}")
        if x["recompute"] not in ("none", "selective", "full"):
            fail(f"stage {s}: recompute '{x['recompute']}'")
        if len(x["devices"].split()) != int(x["replicas"]) * t:
            fail(f"stage {s}: devices '{x['devices']}', want {x['replicas']} x {t}")
        if x["devices"] != split[s % P]["devices"]:
            fail(f"stage {s}: devices '{x['devices']}', but its rank's first stage has '{split[s % P]['devices']}'")
    if args.layers is not None and nxt != args.layers:
        fail(f"the stages end at layer {nxt - 1}, the table's last is {args.layers - 1}")
    if args.first and split[0]["first_layer"] != args.first:
        fail(f"the first stage starts at '{split[0]['first_layer']}', want '{args.first}'")
    if args.last and split[-1]["last_layer"] != args.last:
        fail(f"the last stage ends at '{split[-1]['last_layer']}', want '{args.last}'")
    if args.plan_csv:
        with open(args.plan_csv, newline="") as f:
            plan = list(csv.DictReader(f))
        got = [(x["first_index"], x["last_index"], x["replicas"], x["devices"]) for x in split]
        want = [(x["first_layer"], x["last_layer"], x["replicas"], x["devices"]) for x in plan]
        if got != want:
            fail(f"the split {got} is not the plan's stages {want}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("output")
    ap.add_argument("--plan-csv")
    ap.add_argument("--microbatches", type=int)
    ap.add_argument("--layers", type=int)
    ap.add_argument("--first")
    ap.add_argument("--last")
    args = ap.parse_args()
    pipeline, split, rows = read_output(args.output)
    try:
        P, S, M = (int(pipeline[k]) for k in ("pipeline_ranks", "stages", "n_microbatches"))
        v = int(pipeline["stages_per_rank"])
    except (KeyError, ValueError):
        fail(f"no '# pipeline:' line with pipeline_ranks, stages, stages_per_rank, n_microbatches: {pipeline}")
        return 1
    if S != P * v:
        fail(f"{S} stages on {P} ranks is not {v} a rank")
    if args.microbatches is not None and M != args.microbatches:
        fail(f"n_microbatches={M}, the plan's {args.microbatches}")
    if len(rows) != P:
        fail(f"{len(rows)} schedule rows for {P} pipeline ranks")
    per_rank = parse_rows(rows)
    check_counts(per_rank, P, S, M)
    check_runs(per_rank, S)
    check_grid(per_rank, S)
    check_split(split, pipeline, P, S, args)
    print(f"check_schedule: {P} ranks, {S} stages, {M} micro-batches, "
          f"{sum(len(a) for a in per_rank)} actions: {'FAILED' if failures else 'ok'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
