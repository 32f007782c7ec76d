#!/usr/bin/env python3
"""The PyTorch side of bench/gpu_bench.sh: GPT-2 trained in PyTorch 2.x on the
same device, model shape, batch and tokens as `wavepipe run`, timed.

Usage: gpu_bench_torch.py --data CORPUS --layers L --channels C --heads H --seq T
                          --vocab V --batch B --steps S --warmup W
                          --precision fp32|tf32|bf16 --mode eager|compile [--device cuda|cpu]

The model is idiomatic current PyTorch, as a user of it would write GPT-2 (nanoGPT's
shape): nn.Embedding, nn.LayerNorm, nn.Linear, F.scaled_dot_product_attention with
is_causal (FlashAttention where the device has it), tanh GELU, the LM head tied to
the token embedding, F.cross_entropy, torch.optim.AdamW (fused on a GPU). Step I
trains on wavepipe's batch of step I (tests/torch_reference.py's make_batch: byte
tokens of the corpus). Precisions as Megatron-LM and PyTorch users run them: fp32
(TF32 off), tf32 (torch.backends.cuda.matmul.allow_tf32), bf16 (torch.autocast to
bfloat16 over float32 master weights and AdamW). --mode compile wraps the model in
torch.compile.

Prints one line: `torch MODE PRECISION tokens_per_s X peak_bytes Y loss_first A
loss_last Z steps S` (tokens/s the median over the steps after the warm-up; peak
bytes torch.cuda.max_memory_allocated, 0 on the CPU), or `torch MODE PRECISION
failed: WHY` when the mode does not work here."""
import argparse
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from torch_reference import make_batch  # noqa: E402


class Block(nn.Module):
    def __init__(self, C, H):
        super().__init__()
        self.H = H
        self.ln_1, self.ln_2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.c_attn, self.c_proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.c_fc, self.mlp_proj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.H, C // self.H).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, C)
        x = x + self.c_proj(y)
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT2(nn.Module):
    def __init__(self, L, C, H, T, V):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
        self.h = nn.ModuleList(Block(C, H) for _ in range(L))
        self.ln_f = nn.LayerNorm(C)
        for p in self.parameters():  # GPT-2's initialisation scale
            if p.dim() > 1:
                nn.init.normal_(p, std=0.02)

    def forward(self, idx, targets):
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        for b in self.h:
            x = b(x)
        logits = F.linear(self.ln_f(x), self.wte.weight)
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.view(-1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for name in ("layers", "channels", "heads", "seq", "vocab", "batch", "steps", "warmup"):
        ap.add_argument("--" + name, type=int, required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--precision", choices=["fp32", "tf32", "bf16"], required=True)
    ap.add_argument("--mode", choices=["eager", "compile"], required=True)
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    a = ap.parse_args()
    dev = torch.device(a.device)
    torch.manual_seed(1337)
    tf32 = a.precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    model = GPT2(a.layers, a.channels, a.heads, a.seq, a.vocab).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.0,
                            fused=dev.type == "cuda")
    run = model
    if a.mode == "compile":
        try:
            run = torch.compile(model)
        except Exception as e:  # noqa: BLE001 - any failure means "does not work here"
            print(f"torch {a.mode} {a.precision} failed: {type(e).__name__}: {e}".splitlines()[0], flush=True)
            return
    with open(a.data, "rb") as f:
        corpus = f.read()
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats(dev)
    times, losses = [], []
    try:
        for step in range(a.steps):
            x, y = make_batch(corpus, step, a.batch, a.seq)
            x, y = x.to(dev), y.to(dev)
            if dev.type == "cuda":
                torch.cuda.synchronize(dev)
            t0 = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            with torch.autocast(device_type=dev.type, dtype=torch.bfloat16, enabled=a.precision == "bf16"):
                loss = run(x, y)
            loss.backward()
            opt.step()
            if dev.type == "cuda":
                torch.cuda.synchronize(dev)
            times.append(time.perf_counter() - t0)
            losses.append(loss.item())
    except Exception as e:  # noqa: BLE001
        print(f"torch {a.mode} {a.precision} failed: {type(e).__name__}: {e}".splitlines()[0], flush=True)
        return
    timed = times[a.warmup:] or times
    tokens = a.batch * a.seq / statistics.median(timed)
    peak = torch.cuda.max_memory_allocated(dev) if dev.type == "cuda" else 0
    print(f"torch {a.mode} {a.precision} tokens_per_s {tokens:.1f} peak_bytes {peak} loss_first {losses[0]:.6f} "
          f"loss_last {losses[-1]:.6f} steps {a.steps} version {torch.__version__}", flush=True)


main()
