#!/usr/bin/env python3
"""Time one GPT-2 training step (forward, backward, AdamW) in PyTorch on the
CPU, for the same model and batch as a wavepipe config: the baseline of
bench/bench_vs_pytorch.sh. Idiomatic PyTorch: F.layer_norm, tanh GELU,
causal attention as Hugging Face's GPT-2 computes it, LM head tied to wte,
torch.optim.AdamW. Prints the median step time over the timed steps.
Usage: pytorch_step.py LAYERS CHANNELS HEADS SEQ VOCAB BATCH THREADS [STEPS]"""
import math
import statistics
import sys
import time

import torch
import torch.nn.functional as F


class Block(torch.nn.Module):
    def __init__(self, C, H):
        super().__init__()
        self.H = H
        self.ln_1 = torch.nn.LayerNorm(C, eps=1e-5)
        self.c_attn = torch.nn.Linear(C, 3 * C)
        self.c_proj = torch.nn.Linear(C, C)
        self.ln_2 = torch.nn.LayerNorm(C, eps=1e-5)
        self.c_fc = torch.nn.Linear(C, 4 * C)
        self.mlp_proj = torch.nn.Linear(4 * C, C)

    def forward(self, x, causal):
        B, T, C = x.shape
        D = C // self.H
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=-1)
        q, k, v = (t.view(B, T, self.H, D).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-1, -2)) / math.sqrt(D)
        att = att.masked_fill(~causal[:T, :T], float("-inf")).softmax(dim=-1)
        x = x + self.c_proj((att @ v).transpose(1, 2).reshape(B, T, C))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(torch.nn.Module):
    def __init__(self, L, C, H, T, V):
        super().__init__()
        self.wte = torch.nn.Embedding(V, C)
        self.wpe = torch.nn.Embedding(T, C)
        self.blocks = torch.nn.ModuleList(Block(C, H) for _ in range(L))
        self.ln_f = torch.nn.LayerNorm(C, eps=1e-5)
        self.register_buffer("causal", torch.ones(T, T, dtype=torch.bool).tril())

    def forward(self, idx, targets):
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(T))
        for b in self.blocks:
            x = b(x, self.causal)
        logits = self.ln_f(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


def main():
    L, C, H, T, V, B, threads = (int(a) for a in sys.argv[1:8])
    steps = int(sys.argv[8]) if len(sys.argv) > 8 else 8
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = GPT(L, C, H, T, V)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.0)
    idx = torch.randint(0, V, (B, T))
    tgt = torch.randint(0, V, (B, T))
    times = []
    for step in range(steps + 2):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = model(idx, tgt)
        loss.backward()
        opt.step()
        if step >= 2:  # two warm-up steps
            times.append(time.perf_counter() - t0)
    print(f"pytorch {torch.__version__}: median step {statistics.median(times):.6f} s over {len(times)} steps")


main()
