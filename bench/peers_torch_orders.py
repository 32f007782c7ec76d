"""Every schedule class of PyTorch's torch.distributed.pipelining, its
compute order dumped without a process group (issue 33, make bench-peers).

Each class is built on stand-in stages (the attributes its constructor
reads: index, count, group size and rank), which is how PyTorch's own
schedule tests build them; the order is the class's pipeline_order (the
multi-stage classes) or _get_pipeline_order() (GPipe, 1F1B), compute actions
only, compound OVERLAP_F_B actions expanded into their parts in order.

Usage: peers_torch_orders.py OUTDIR P M [P M ...]
Writes OUTDIR/<class>-P<P>-M<M>.csv in wavepipe's compute-only schedule
CSV (rank,step,op,stage,microbatch,peer; op F, B, I or W, peer empty) and
prints one line per order written or refused (class, P, M, why).
"""
import os
import sys
import warnings

warnings.filterwarnings("ignore")

import torch  # noqa: E402
from torch.distributed.pipelining import schedules as S  # noqa: E402
from torch.distributed.pipelining.stage import _PipelineStageBase  # noqa: E402


class StandInStage(_PipelineStageBase):
    """What a schedule's constructor reads of a stage; nothing runs."""

    def __init__(self, stage_index, num_stages, group_size, group_rank):
        self.submod = torch.nn.Linear(1, 1)
        self.stage_index = stage_index
        self.num_stages = num_stages
        self.group_size = group_size
        self.group_rank = group_rank
        self.group = None
        self.stage_index_to_group_rank = {}
        self.dw_builder = None
        self.has_backward = True
        self.chunks = None

    def _create_grad_recv_info(self, *args, **kwargs):
        return ()

    def _prepare_forward_infra(self, *args, **kwargs):
        return ()

    def _prepare_backward_infra(self, *args, **kwargs):
        return ()


# (name, class, stages a rank, placement): "loop" puts stage c P + r on rank
# r (Megatron's interleaving, breadth-first), "v" stages r and 2P-1-r
CLASSES = [
    ("GPipe", "ScheduleGPipe", 1, "loop"),
    ("1F1B", "Schedule1F1B", 1, "loop"),
    ("Interleaved1F1B-1", "ScheduleInterleaved1F1B", 1, "loop"),
    ("Interleaved1F1B", "ScheduleInterleaved1F1B", 2, "loop"),
    ("LoopedBFS", "ScheduleLoopedBFS", 2, "loop"),
    ("InterleavedZeroBubble-1", "ScheduleInterleavedZeroBubble", 1, "loop"),
    ("InterleavedZeroBubble-2", "ScheduleInterleavedZeroBubble", 2, "loop"),
    ("ZBVZeroBubble", "ScheduleZBVZeroBubble", 2, "v"),
    ("DualPipeV", "ScheduleDualPipeV", 2, "v"),
]


def stage_of(c, r, P, placement):
    if placement == "v":
        return r if c == 0 else 2 * P - 1 - r
    return c * P + r


def compute_actions(actions):
    for a in actions:
        if a is None:
            continue
        if a.sub_actions:
            yield from compute_actions(a.sub_actions)
        elif a.computation_type.value in ("F", "B", "I", "W"):
            yield a


def order_of(cls, P, M, V, placement):
    """rank -> list of (op, stage, micro-batch)."""
    order = {}
    for r in range(P):
        stages = [StandInStage(stage_of(c, r, P, placement), P * V, P, r) for c in range(V)]
        if issubclass(cls, S.PipelineScheduleSingle):
            sched = cls(stages[0], M)
            full = sched._get_pipeline_order()
        else:
            sched = cls(stages, M)
            full = sched.pipeline_order
        order[r] = [(a.computation_type.value, a.stage_index, a.microbatch_index)
                    for a in compute_actions(full[r])]
    return order


def check(order, P, M, V):
    """None, or why the order is not one: every stage's forward and
    backward (whole, or I and W) of every micro-batch exactly once."""
    seen = {}
    for r, acts in order.items():
        for op, st, mb in acts:
            if not (0 <= st < P * V and 0 <= mb < M):
                return f"rank {r} runs {st}{op}{mb}, outside {P * V} stages x {M} micro-batches"
            seen[(op, st, mb)] = seen.get((op, st, mb), 0) + 1
    for st in range(P * V):
        for mb in range(M):
            whole = seen.get(("B", st, mb), 0)
            parts = (seen.get(("I", st, mb), 0), seen.get(("W", st, mb), 0))
            if seen.get(("F", st, mb), 0) != 1 or not (whole == 1 and parts == (0, 0) or whole == 0 and parts == (1, 1)):
                return f"{st}F{mb} or its backward is missing or repeated"
    return None


def main(argv):
    if len(argv) < 4 or (len(argv) - 2) % 2:
        print(__doc__.strip().splitlines()[-5], file=sys.stderr)
        return 2
    out = argv[1]
    os.makedirs(out, exist_ok=True)
    print(f"# torch {torch.__version__}")
    for i in range(2, len(argv), 2):
        P, M = int(argv[i]), int(argv[i + 1])
        for name, cls_name, V, placement in CLASSES:
            cls = getattr(S, cls_name, None)
            if cls is None:
                print(f"{name},{P},{M},absent: torch {torch.__version__} has no {cls_name}")
                continue
            try:
                order = order_of(cls, P, M, V, placement)
            except Exception as e:  # the class refuses the shape: say why
                print(f"{name},{P},{M},refused: {str(e).splitlines()[0][:160]}")
                continue
            why = check(order, P, M, V)
            if why:
                print(f"{name},{P},{M},refused: not an order: {why}")
                continue
            path = os.path.join(out, f"{name}-P{P}-M{M}.csv")
            with open(path + ".tmp", "w") as f:
                f.write("rank,step,op,stage,microbatch,peer\n")
                for r in range(P):
                    for step, (op, st, mb) in enumerate(order[r]):
                        f.write(f"{r},{step},{op},{st},{mb},\n")
            os.replace(path + ".tmp", path)
            print(f"{name},{P},{M},ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
