#!/usr/bin/env python3
"""wavepipe's schedule CSV in PyTorch's own pipelining classes
(bench/torch_schedule.sh; `make bench-torch-schedule`).

Usage: torch_load_csv.py FILE [--run] [--port N] [--classes NAME,...]

FILE is what `wavepipe plan --format torch` prints (its '# pipeline:' line
gives the pipeline ranks, stages and n_microbatches, its '# split:' lines each
stage's rank and layer count) or a bare compute-only CSV (`wavepipe schedule
--format torch-csv`: ranks, stages and micro-batches from the cells).

1. Load, in this process (stages stand-ins with the attributes the schedule
   classes read; no process group): PipelineScheduleMulti._load_csv and
   _PipelineScheduleRuntime._load_csv (compute_only) on the lines without
   '#'. Checked: pipeline_order equals the file cell for cell; the stage to
   rank mapping _validate_schedule infers is the split's (stage s on rank
   s mod P); the runtime's lowering to sends and receives
   (_prepare_schedule_with_comms) pairs every send with a receive; its
   dry run (_simulate_comms_compute, as _simulate() calls it, without the
   rank-local UNSHARD/RESHARD/REDUCE_GRAD actions the lowering adds and that
   dry run does not know in PyTorch 2.15) finishes without deadlock.
2. With --run, one training step of a small model on P processes (gloo on
   127.0.0.1, CPU), under each of the two classes: stage s a chain of as many
   Linear+tanh layers as the split gives it (one where there is no split),
   every rank holding its stages as PipelineStage, the loaded schedule's
   step(). Checked: the loss of every micro-batch and every parameter's
   gradient equal those of the same model run whole in one process (the mean
   of the micro-batches' losses), to 1e-5 relative.
--classes runs only some of the two. Prints one line per check; exits 1
when any fails.
"""
import argparse
import csv
import os
import sys
import tempfile
import types
import warnings

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")  # torch from PyPI without numpy
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
from torch.distributed.pipelining import PipelineStage  # noqa: E402
from torch.distributed.pipelining.schedules import (  # noqa: E402
    REDUCE_GRAD,
    RESHARD,
    SEND_B,
    SEND_F,
    RECV_B,
    RECV_F,
    UNSHARD,
    WAIT_REDUCE_GRAD,
    PipelineScheduleMulti,
    _PipelineScheduleRuntime,
    _simulate_comms_compute,
)

WIDTH, SAMPLES_PER_MB, TOL = 8, 2, 1e-5
CLASSES = {"PipelineScheduleMulti": PipelineScheduleMulti, "_PipelineScheduleRuntime": _PipelineScheduleRuntime}


def read(path):
    """(P, S, M, layers per stage, rows of cells, the rows as written) from wavepipe's output."""
    pipeline, split, rows, lines = {}, [], [], []
    with open(path, newline="") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("# pipeline: "):
                pipeline = dict(item.partition("=")[::2] for item in line[len("# pipeline: "):].split())
            elif line.startswith("# split: "):
                split.append(line[len("# split: "):])
            elif not line.startswith("#"):
                rows.append(next(csv.reader([line])))
                lines.append(line + "\n")
    if pipeline:
        P, S, M = (int(pipeline[k]) for k in ("pipeline_ranks", "stages", "n_microbatches"))
    else:  # a bare CSV: what the cells say
        from torch.distributed.pipelining.schedules import _Action
        acts = [_Action.from_str(c) for r in rows for c in r if c.strip()]
        P, S, M = len(rows), 1 + max(a.stage_index for a in acts), 1 + max(a.microbatch_index for a in acts)
    layers = [1] * S
    for x in csv.DictReader(split):
        layers[int(x["stage"])] = int(x["last_index"]) - int(x["first_index"]) + 1
    return P, S, M, layers, rows, lines


def stand_in_stages(P, S, rank):
    """What PipelineScheduleMulti.__init__ and _load_csv read of a stage."""
    return [types.SimpleNamespace(stage_index=s, num_stages=S, group_size=P, group_rank=rank,
                                  is_first=s == 0, is_last=s == S - 1)
            for s in range(rank, S, P)] or [types.SimpleNamespace(stage_index=rank, num_stages=S, group_size=P,
                                                                  group_rank=rank, is_first=False, is_last=False)]


def load(P, S, M, rows, csv_path):
    ok = True
    for name, cls in CLASSES.items():
        sched = cls(stand_in_stages(P, S, 0), n_microbatches=M)
        try:
            sched._load_csv(csv_path)
        except Exception as e:  # what PyTorch says is the finding
            print(f"FAIL: {name}._load_csv: {type(e).__name__}: {e}")
            ok = False
            continue
        got = [[str(a) if a is not None else "" for a in sched.pipeline_order[r]] for r in range(P)]
        same = len(sched.pipeline_order) == P and got == [[c.strip() for c in row] for row in rows]
        print(f"{'PASS' if same else 'FAIL'}: {name}._load_csv: pipeline_order equals the file "
              f"({P} ranks, {sum(c != '' for r in got for c in r)} actions)")
        mapping = {s: s % P for s in range(S)}
        print(f"{'PASS' if sched.stage_index_to_group_rank == mapping else 'FAIL'}: {name}: stage s on rank s mod P "
              f"(_validate_schedule's mapping {dict(sorted(sched.stage_index_to_group_rank.items()))})")
        ok &= same and sched.stage_index_to_group_rank == mapping
        if cls is _PipelineScheduleRuntime:
            comms = sched.pipeline_order_with_comms
            kinds = [a.computation_type for r in comms for a in comms[r] if a is not None]
            paired = kinds.count(SEND_F) == kinds.count(RECV_F) and kinds.count(SEND_B) == kinds.count(RECV_B)
            want = (S - 1) * M if P > 1 else 0  # between consecutive stages (on other ranks), each way
            paired = paired and kinds.count(SEND_F) == want and kinds.count(SEND_B) == want
            print(f"{'PASS' if paired else 'FAIL'}: {name}: lowered with {kinds.count(SEND_F)} SEND_F/RECV_F and "
                  f"{kinds.count(SEND_B)} SEND_B/RECV_B pairs ({want} each way)")
            # _simulate() as it is raises on the UNSHARD the lowering itself puts first (PyTorch 2.15):
            # the same dry run without the rank-local FSDP and gradient-reduction actions it does not model
            local = (UNSHARD, RESHARD, REDUCE_GRAD, WAIT_REDUCE_GRAD)
            order = {r: [a for a in comms[r] if a is None or a.computation_type not in local] for r in comms}
            try:
                done = _simulate_comms_compute(order, lambda s: sched.stage_index_to_group_rank[s], S)
                steps = max(len(v) for v in done.values())
                print(f"PASS: {name}: _simulate_comms_compute on the lowered schedule (sends, receives, waits): "
                      f"no deadlock, {steps} steps")
            except Exception as e:
                print(f"FAIL: {name}: _simulate_comms_compute: {type(e).__name__}: {e}")
                ok = False
            ok &= paired
    return ok


def make_stage(s, layers):
    torch.manual_seed(1000 + s)
    mods = []
    for _ in range(layers):
        mods += [torch.nn.Linear(WIDTH, WIDTH), torch.nn.Tanh()]
    return torch.nn.Sequential(*mods)


def loss_fn(output, target):
    return torch.nn.functional.mse_loss(output, target)


def reference(S, M, layers, x, y):
    """The whole model in one process: losses per micro-batch, gradients of the mean."""
    model = torch.nn.Sequential(*[make_stage(s, layers[s]) for s in range(S)])
    losses = [loss_fn(model(xm), ym) for xm, ym in zip(x.chunk(M), y.chunk(M))]
    (sum(losses) / M).backward()
    grads = {s: [p.grad.clone() for p in model[s].parameters()] for s in range(S)}
    return [l.detach() for l in losses], grads


def worker(rank, P, S, M, layers, csv_path, port, names, results):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=P)
    torch.manual_seed(0)
    x = torch.randn(M * SAMPLES_PER_MB, WIDTH)
    y = torch.randn(M * SAMPLES_PER_MB, WIDTH)
    ref_losses, ref_grads = reference(S, M, layers, x, y)
    out = {}
    for name in names:  # the parent's choice: a spawned process imports this file afresh
        cls = CLASSES[name]
        mods = {s: make_stage(s, layers[s]) for s in range(rank, S, P)}
        # static shapes (no metadata exchange, which needs numpy); a later stage's input needs its gradient
        meta = [torch.empty(SAMPLES_PER_MB, WIDTH, requires_grad=s > 0) for s in range(S)]
        stages = [PipelineStage(mods[s], s, S, torch.device("cpu"), input_args=meta[s],
                                output_args=torch.empty(SAMPLES_PER_MB, WIDTH, requires_grad=True))
                  for s in sorted(mods)]
        sched = cls(stages, n_microbatches=M, loss_fn=loss_fn)
        sched._load_csv(csv_path)
        losses = []
        args = (x,) if 0 in mods else ()
        kwargs = {"target": y, "losses": losses} if S - 1 in mods else {}
        sched.step(*args, **kwargs)
        err = 0.0
        for s, m in mods.items():
            for p, g in zip(m.parameters(), ref_grads[s]):
                err = max(err, ((p.grad - g).abs().max() / g.abs().max().clamp_min(1e-30)).item())
        if S - 1 in mods:
            err = max(err, max(abs(l.item() - r.item()) / abs(r.item()) for l, r in zip(losses, ref_losses)))
            if len(losses) != M:
                err = float("inf")
        out[name] = err
        dist.barrier()
    results[rank] = out
    dist.destroy_process_group()


def run(P, S, M, layers, csv_path, port):
    with mp.Manager() as manager:
        results = manager.dict()
        mp.spawn(worker, args=(P, S, M, layers, csv_path, port, list(CLASSES), results), nprocs=P, join=True)
        results = dict(results)
    ok = True
    for name in CLASSES:
        err = max(results[r][name] for r in range(P))
        good = err <= TOL
        ok &= good
        print(f"{'PASS' if good else 'FAIL'}: {name}.step() on {P} gloo ranks: every micro-batch's loss and every "
              f"gradient as the whole model's (largest relative difference {err:.1e}, tolerance {TOL:g})")
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--run", action="store_true")
    ap.add_argument("--port", type=int, default=29517)
    ap.add_argument("--classes", help="comma-separated: PipelineScheduleMulti, _PipelineScheduleRuntime")
    a = ap.parse_args()
    if a.classes:
        for name in set(CLASSES) - set(a.classes.split(",")):
            del CLASSES[name]
    P, S, M, layers, rows, lines = read(a.file)
    with tempfile.TemporaryDirectory() as tmp:
        csv_path = os.path.join(tmp, "schedule.csv")  # what grep -v '^#' makes of it
        with open(csv_path, "w") as f:
            f.writelines(lines)
        ok = load(P, S, M, rows, csv_path)
        if a.run:
            ok &= run(P, S, M, layers, csv_path, a.port)
    return 0 if ok else 1


if __name__ == "__main__":
    torch.set_num_threads(1)
    sys.exit(main())
