"""wavepipe's schedules against PyTorch's on one clock that is not
wavepipe's simulator (issue 33, make bench-peers).

The clock: a small event simulator written here, independent of
src/sched/simulate.c. Each rank runs its compute actions in its list's
order, each as soon as the rank is free and its inputs are there:
F(s, m) after F(s-1, m); the backward of the last stage after its forward;
B or I (the input gradient) of stage s after that of stage s+1 and after
F(s, m); W after I of the same stage and micro-batch. An input made on
another rank arrives tc later (one hop, the same for every message; links
never queue). A pass through a stage of a schedule with S stages on P
ranks costs its tf, tb, tw times P / S; a whole backward costs tb + tw.
Activation memory: a micro-batch's stage is held from the start of its F
to the end of its backward (its W where split), weighted P / S, so a peak
is in micro-batches through 1/P of the model; Chimera's second weight copy
is not counted. Gradient sums (wavepipe's ALLREDUCE) are not timed: no
torch order has one.

For every cell (P, M, costs, tc) and every torch order, the table gives
wavepipe's fastest order whose peak on this clock is no higher than the
torch order's (every kind, its variants, and the memory-bounded kinds
given the torch order's peak with --max-inflight), and the ratio of
makespans (wavepipe / torch; at most 1 is the goal).

Usage: peers_compare.py WAVEPIPE TORCH_ORDERS_DIR OUT.csv [--ranks 4,8]
       [--tc 0,0.25,1]
"""
import argparse
import csv
import math
import os
import subprocess
import sys

COSTS = [(1.0, 2.0, 0.0), (1.0, 1.0, 1.0)]


def read_order(lines):
    """rank -> [(op, stage, mb)] of the compute actions of a schedule CSV."""
    order = {}
    for row in csv.DictReader(lines):
        if row["op"] in ("F", "B", "I", "W"):
            order.setdefault(int(row["rank"]), []).append((row["op"], int(row["stage"]), int(row["microbatch"])))
    return order


def simulate(order, P, costs, tc, split_ops):
    """(makespan, peak) of an order on this file's clock; split_ops: the
    order's B is an input gradient (a W follows it) rather than whole."""
    tf, tb, tw = costs
    S = 1 + max(st for acts in order.values() for _, st, _ in acts)
    w = P / S
    where = {}
    for r, acts in order.items():
        for op, st, mb in acts:
            where[("I" if op == "B" and split_ops else op, st, mb)] = r
    done = {}
    pos = {r: 0 for r in order}
    free = {r: 0.0 for r in order}
    held, peak = {r: [] for r in order}, 0.0
    remaining = sum(len(a) for a in order.values())

    def ready(key, r):
        """when key's result is usable on rank r, or None if not yet made"""
        if key not in done:
            return None
        return done[key] + (tc if where[key] != r else 0.0)

    while remaining:
        moved = False
        for r, acts in order.items():
            while pos[r] < len(acts):
                op, st, mb = acts[pos[r]]
                kind = "I" if op == "B" and split_ops else op
                deps = []
                if kind == "F":
                    if st > 0:
                        deps.append(("F", st - 1, mb))
                    cost = tf
                elif kind in ("B", "I"):
                    deps.append(("F", st, mb))
                    if st < S - 1:
                        nxt = ("B", st + 1, mb) if ("B", st + 1, mb) in where else ("I", st + 1, mb)
                        deps.append(nxt)
                    cost = tb + tw if kind == "B" else tb
                else:  # W
                    deps.append(("I", st, mb))
                    cost = tw
                times = [ready(d, r) for d in deps]
                if any(t is None for t in times):
                    break
                start = max([free[r]] + times)
                end = start + cost * w
                done[(kind, st, mb)] = end
                free[r] = end
                if kind == "F":
                    held[r].append((start, 1))
                if kind == "B" or kind == "W":
                    held[r].append((end, -1))
                pos[r] += 1
                remaining -= 1
                moved = True
        if not moved:
            raise RuntimeError("the order deadlocks on this clock")
    for r in order:
        level = 0.0
        # releases before acquisitions at the same instant
        for _, d in sorted(held[r], key=lambda e: (e[0], e[1])):
            level += d * w
            peak = max(peak, level)
    return max(free.values()), peak


def wavepipe_candidates(P, M, peak):
    """(label, options) of every kind and variant to try for a cell."""
    c = [("gpipe", "--kind gpipe"), ("1f1b A", "--kind 1f1b --policy A"), ("1f1b B", "--kind 1f1b --policy B")]
    for k in (2, 4):
        if k < M:
            c.append((f"kfkb k={k}", f"--kind kfkb --k {k}"))
    for v in (2, 4):
        if M % P == 0:
            c.append((f"interleaved V={v}", f"--kind interleaved --chunks {v}"))
        c.append((f"bfs V={v}", f"--kind bfs --chunks {v}"))
    bounded = [("zb-h1", "--kind zb-h1"), ("zb-v", "--kind zb-v")]
    for v in (2, 3, 4):
        if M % P == 0:
            bounded.append((f"zb-h1 V={v}", f"--kind zb-h1 --chunks {v}"))
    if P % 2 == 0:
        bounded.append(("chimera", "--kind chimera"))
    if M >= 2 * P:
        bounded.append(("dualpipev", "--kind dualpipev"))
    for W in (1, 2, 3, 4):
        bounded.append((f"hanayo W={W}", f"--kind hanayo --waves {W}"))
    limits = sorted({d for d in (math.floor(peak + 1e-9), P) if d >= 1})
    for label, opts in bounded:
        for d in limits:
            c.append((f"{label} D={d}", f"{opts} --max-inflight {d}"))
    for d in limits:
        if d < M:
            c.append((f"1f1b D={d}", f"--kind 1f1b --max-inflight {d}"))
    return c


def wavepipe_order(wavepipe, P, M, costs, tc, opts):
    tf, tb, tw = costs
    cmd = [wavepipe, "schedule", "--ranks", str(P), "--micro-batches", str(M), "--tf", str(tf), "--tb", str(tb),
           "--tw", str(tw), "--tc", str(tc), "--format", "csv"] + opts.split()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None
    return read_order(r.stdout.splitlines())


def main(argv):
    ap = argparse.ArgumentParser(description="wavepipe's orders against PyTorch's on an independent clock")
    ap.add_argument("wavepipe")
    ap.add_argument("orders")
    ap.add_argument("out")
    ap.add_argument("--ranks", default="4,8")
    ap.add_argument("--tc", default="0,0.25,1")
    a = ap.parse_args(argv[1:])
    ranks = [int(x) for x in a.ranks.split(",")]
    tcs = [float(x) for x in a.tc.split(",")]
    rows, misses, single_misses = [], [], []
    cache = {}
    for P in ranks:
        for M in (P, 2 * P, 4 * P):
            torch_orders = sorted(f for f in os.listdir(a.orders) if f.endswith(f"-P{P}-M{M}.csv"))
            for costs in COSTS:
                for tc in tcs:
                    for f in torch_orders:
                        name = f[: -len(f"-P{P}-M{M}.csv")]
                        with open(os.path.join(a.orders, f)) as fh:
                            t_order = read_order(fh)
                        t_span, t_peak = simulate(t_order, P, costs, tc, False)
                        best = best_single = None  # any kind; without Chimera's second weight copy
                        for label, opts in wavepipe_candidates(P, M, t_peak):
                            key = (P, M, costs, tc, opts)
                            if key not in cache:
                                o = wavepipe_order(a.wavepipe, P, M, costs, tc, opts)
                                split = any(op == "W" for acts in o.values() for op, _, _ in acts) if o else False
                                cache[key] = simulate(o, P, costs, tc, split) if o else None
                            res = cache[key]
                            if res is None or res[1] > t_peak + 1e-9:
                                continue
                            if best is None or res[0] < best[1] - 1e-9:
                                best = (label, res[0], res[1])
                            if not label.startswith("chimera") and (best_single is None or
                                                                   res[0] < best_single[1] - 1e-9):
                                best_single = (label, res[0], res[1])
                        cost_s = "%g,%g,%g" % costs
                        row = [P, M, cost_s, tc, name, t_span, t_peak]
                        for b in (best, best_single):
                            row += ["none", "", "", ""] if b is None else [b[0], b[1], b[2], b[1] / t_span]
                        if best is None or row[10] > 1 + 1e-9:
                            misses.append(row)
                        if best_single is None or row[14] > 1 + 1e-9:
                            single_misses.append(row)
                        rows.append(row)
    header = ["P", "M", "tf_tb_tw", "tc", "torch_order", "torch_makespan", "torch_peak", "wavepipe_order",
              "wavepipe_makespan", "wavepipe_peak", "ratio", "wavepipe_order_one_weight_copy",
              "one_copy_makespan", "one_copy_peak", "one_copy_ratio"]
    with open(a.out + ".tmp", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        for row in rows:
            w.writerow([("%.6g" % x) if isinstance(x, float) else x for x in row])
    os.replace(a.out + ".tmp", a.out)
    print("| P | M | tf,tb,tw | tc | torch order | makespan | peak | wavepipe's best at no more peak | makespan | peak "
          "| ratio | without chimera | makespan | peak | ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        cells = [("%.4g" % x) if isinstance(x, float) else str(x) for x in row]
        print("| " + " | ".join(cells) + " |")
    cells = len(ranks) * 3 * len(COSTS) * len(tcs)
    for what, col, behind in (("any kind", 10, misses), ("one weight copy (no chimera)", 14, single_misses)):
        ratios = [r[col] for r in rows if r[col] != ""]
        print(f"\n{what}: {len(rows)} torch orders over {cells} cells: wavepipe at or ahead in "
              f"{len(rows) - len(behind)}, behind in {len(behind)}; ratios from {min(ratios):.4f} to {max(ratios):.4f}, "
              f"mean {sum(ratios) / len(ratios):.4f}")
        for m in behind:
            print("behind: P=%s M=%s costs %s tc %s: %s %s (peak %s) against wavepipe's %s" %
                  (m[0], m[1], m[2], m[3], m[4], "%.4g" % m[5], "%.4g" % m[6],
                   "none within its peak" if m[col - 3] == "none" else
                   "%s %.4g (ratio %.4f)" % (m[col - 3], m[col - 2], m[col])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
