#!/usr/bin/env python3
"""The PyTorch side of bench/bench_vs_pytorch.sh: the training steps `wavepipe run`
makes, on the same weights and tokens, timed.

Usage: pytorch_step.py CKDIR --data CORPUS --batch B --seq T --steps S --threads N
                       [--lr LR --beta1 B1 --beta2 B2 --eps E --weight-decay WD]
                       [--denormals flush|keep] [--profile]

CKDIR is `wavepipe run --steps 0 --save CKDIR` (the initial weights of the run it is
compared with: same config, same seed). Step I trains on wavepipe's batch of step I
(tests/torch_reference.py's make_batch: byte tokens of the corpus, the same rule as
src/run/model/data.c) with AdamW of the same settings, so that the losses of the two
sides agree step by step. Idiomatic current PyTorch, each op PyTorch's own fastest
CPU path: F.embedding, F.layer_norm, torch.addmm on the Conv1D-layout weights,
F.scaled_dot_product_attention(is_causal=True), tanh GELU, the LM head tied to wte,
F.cross_entropy, torch.optim.AdamW (fused where this torch has it).

Denormals: `flush` (default) calls torch.set_flush_denormal(True) before the first
op, so that the intra-op threads, created later, inherit it; a check over a vector
large enough to be split among the threads says whether denormal results came out.

Prints `torch VERSION threads N denormals flush|keep (check: ...) adamw fused|...`, then
per step `step I loss L wall_s W cpu_s P` (P: the process's CPU time of the step, all
threads), and with --profile one more step (step S's batch) under torch.profiler:
`profiled step ...` and the profiler's table of its ops by self CPU time."""
import argparse
import copy
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from torch_reference import make_batch, read_safetensors  # noqa: E402


class GPT2(torch.nn.Module):
    """GPT-2 on the checkpoint's tensors, Hugging Face names (Conv1D: y = x @ W + b)."""

    def __init__(self, W, cfg):
        super().__init__()
        self.L, self.C, self.H = cfg["n_layer"], cfg["n_embd"], cfg["n_head"]
        self.eps = cfg.get("layer_norm_epsilon", 1e-5)
        self.p = torch.nn.ParameterDict({k.replace(".", "_"): torch.nn.Parameter(v.float().contiguous())
                                         for k, v in W.items() if k != "lm_head.weight"})

    def w(self, name):
        return self.p[name.replace(".", "_")]

    def linear(self, x, name):
        return torch.addmm(self.w(name + ".bias"), x, self.w(name + ".weight"))

    def forward(self, idx, targets):
        B, T = idx.shape
        C, H = self.C, self.H
        ln = lambda x, n: F.layer_norm(x, (C,), self.w(n + ".weight"), self.w(n + ".bias"), self.eps)
        wte = self.w("transformer.wte.weight")
        x = (F.embedding(idx, wte) + self.w("transformer.wpe.weight")[:T]).view(B * T, C)
        for i in range(self.L):
            p = f"transformer.h.{i}."
            qkv = self.linear(ln(x, p + "ln_1"), p + "attn.c_attn")
            q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in qkv.split(C, dim=-1))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B * T, C)
            x = x + self.linear(y, p + "attn.c_proj")
            h = F.gelu(self.linear(ln(x, p + "ln_2"), p + "mlp.c_fc"), approximate="tanh")
            x = x + self.linear(h, p + "mlp.c_proj")
        logits = F.linear(ln(x, "transformer.ln_f"), wte)
        return F.cross_entropy(logits.float(), targets.view(-1))  # in float32 from 16-bit logits too


def adamw(params, a):
    kw = dict(lr=a.lr, betas=(a.beta1, a.beta2), eps=a.eps, weight_decay=a.weight_decay)
    try:
        return torch.optim.AdamW(params, fused=True, **kw), "fused"
    except (RuntimeError, TypeError, ValueError):
        return torch.optim.AdamW(params, **kw), "for-loop"


def denormal_check():
    """Whether a product whose exact result is denormal (1e-30 * 1e-10) comes out
    zero (flushed) in every element of a vector the intra-op threads share."""
    x = torch.full((1 << 22,), 1e-30) * 1e-10
    nonzero = int((x != 0).sum())
    return "flushed everywhere" if nonzero == 0 else f"{nonzero} of {x.numel()} denormal results kept"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("ckdir")
    ap.add_argument("--data", required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--seq", type=int, required=True)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--beta1", type=float, default=0.9)
    ap.add_argument("--beta2", type=float, default=0.95)
    ap.add_argument("--eps", type=float, default=1e-8)
    ap.add_argument("--weight-decay", type=float, default=0.0)
    ap.add_argument("--denormals", choices=["flush", "keep"], default="flush")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--precision", choices=["fp32", "bf16", "bf16-pure"], default="fp32",
                    help="bf16: torch.autocast to bfloat16 over the float32 weights (PyTorch's mixed precision); "
                         "bf16-pure: the model in bfloat16, activations and gradients too, over float32 master "
                         "weights and AdamW (Megatron-LM's --bf16)")
    a = ap.parse_args()

    torch.set_num_threads(a.threads)
    if a.denormals == "flush" and not torch.set_flush_denormal(True):
        raise SystemExit("pytorch_step: this CPU cannot flush denormals (no SSE3)")
    check = denormal_check()
    with open(os.path.join(a.ckdir, "config.json")) as f:
        cfg = json.load(f)
    W, _ = read_safetensors(os.path.join(a.ckdir, "model.safetensors"))
    model = GPT2(W, cfg)
    opt, how = adamw(model.parameters(), a)
    model16 = copy.deepcopy(model).to(torch.bfloat16) if a.precision == "bf16-pure" else None
    with open(a.data, "rb") as f:
        corpus = f.read()
    print(f"torch {torch.__version__} threads {torch.get_num_threads()} denormals {a.denormals} "
          f"(check: {check}) adamw {how}", flush=True)
    for step in range(a.steps + (1 if a.profile else 0)):
        x, y = make_batch(corpus, step, a.batch, a.seq)
        profiled = step == a.steps  # one more step, under the profiler, apart from the timed ones
        prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) if profiled else None
        if prof:
            prof.__enter__()
        w0, c0 = time.perf_counter(), time.process_time()
        opt.zero_grad(set_to_none=True)
        if a.precision == "bf16-pure":  # Megatron-LM's --bf16: a bfloat16 model over float32 masters
            with torch.no_grad():
                for p16, p in zip(model16.parameters(), model.parameters()):
                    p16.copy_(p)
            loss = model16(x, y)
            loss.backward()
            for p16, p in zip(model16.parameters(), model.parameters()):
                p.grad = p16.grad.float()
                p16.grad = None
        else:
            with torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=a.precision == "bf16"):
                loss = model(x, y)
            loss.backward()
        opt.step()
        w1, c1 = time.perf_counter(), time.process_time()
        if prof:
            prof.__exit__(None, None, None)
        print(f"{'profiled ' if profiled else ''}step {step} loss {loss.item():.9g} wall_s {w1 - w0:.6f} "
              f"cpu_s {c1 - c0:.6f}", flush=True)
        if prof:
            print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=20))

main()
