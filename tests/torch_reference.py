#!/usr/bin/env python3
"""PyTorch reference for a wavepipe checkpoint: the mean loss of one step's batch.

Usage:
    torch_reference.py DIR --data CORPUS --batch B --seq T [--step I]
                       [--route plain|hf|plain64] ... [--threads N] [--compare-logits]
    torch_reference.py DIR --write-perturbed OUT [--sigma S] [--seed N]

DIR is a checkpoint written by `wavepipe run --save DIR`: DIR/model.safetensors
(float32, Hugging Face GPT2LMHeadModel names and shapes, Conv1D layout y = x @ W + b,
no lm_head.weight: tied to transformer.wte.weight) and DIR/config.json (GPT2Config
keys). The step I defaults to the checkpoint's `wavepipe_steps_done` metadata, so that
the loss printed is the one `wavepipe run --resume DIR --steps I+1` reports for
iteration I (the loss of step I's forward pass, before its update).

The batch follows wavepipe's data rule: in step I, sequence j (0 <= j < B) of the
global batch starts at byte ((I*B + j)*T) mod (N - T - 1) of the N-byte corpus; its
inputs are the T bytes from there and its targets the next T bytes (shifted by one).
The loss is the mean cross-entropy over all B*T tokens.

Routes (each prints one line `ROUTE LOSS`, the loss with 9 significant digits):
  plain    a minimal GPT-2 written here in plain PyTorch (pre-LayerNorm blocks, causal
           attention with fused QKV, tanh-GELU, eps 1e-5, tied LM head), float32; it
           reads model.safetensors with the standard library (struct + json +
           torch.frombuffer) and needs no package besides torch.
  hf       transformers.GPT2LMHeadModel.from_pretrained(DIR), float32, with the loss
           computed here from its logits (its own `labels=` loss drops the last
           position). Skipped with a note on stderr when transformers is missing; when
           from_pretrained fails it falls back to load_state_dict(strict=False) with
           the tensors read here and reports the missing/unexpected keys.
  plain64  the plain model in float64: not a second implementation, but the yardstick
           for how far float32 rounding alone moves the loss.
Default: plain and hf (hf only where transformers imports).

--write-perturbed OUT [--sigma S] [--seed N] computes no loss: it copies checkpoint DIR
to OUT with N(0, S^2) noise (torch.Generator seeded N) added to every weight. Trained
for a few steps, GPT-2's weights are still near their initialisation (std 0.02), where
the GELU, LayerNorm and softmax inputs are small and the forward pass is almost linear;
with S = 0.3 they are of order one, and a `wavepipe run --resume OUT` computes its loss
in the regime where a wrong GELU, eps or attention scale shows.

--compare-logits prints, for the routes run, the largest absolute difference of their
logits from the first route's, with the position where it occurs.

Exit status: 0 when every requested route ran (hf may be skipped when not requested
explicitly), 2 on bad usage, 1 when a requested route failed.
"""
import argparse
import json
import math
import os
import struct
import sys

import torch
import torch.nn.functional as F

DTYPES = {"F32": torch.float32, "F64": torch.float64, "F16": torch.float16,
          "BF16": torch.bfloat16, "I64": torch.int64, "I32": torch.int32}


def read_safetensors(path):
    """Returns ({name: tensor}, metadata) using only the standard library and torch."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {}) or {}
    body = bytearray(data[8 + n:])  # writable, so torch.frombuffer does not warn
    tensors = {}
    for name, t in header.items():
        b, e = t["data_offsets"]
        dtype = DTYPES[t["dtype"]]
        flat = torch.frombuffer(body, dtype=dtype, count=(e - b) // torch.tensor([], dtype=dtype).element_size(),
                                offset=b) if e > b else torch.empty(0, dtype=dtype)
        tensors[name] = flat.reshape(t["shape"]).clone()
    return tensors, meta


def write_perturbed(ckdir, out, sigma, seed):
    """Copies checkpoint ckdir to out with N(0, sigma^2) noise added to every F32 tensor
    of model.safetensors (header and metadata kept byte for byte)."""
    import shutil
    os.makedirs(out, exist_ok=True)
    for name in ("config.json", "optimizer.safetensors"):  # through DIR's links to latest/
        shutil.copy(os.path.join(ckdir, name), out)
    path = os.path.join(ckdir, "model.safetensors")
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n].decode("utf-8"))
    W, _ = read_safetensors(path)
    body = bytearray(data[8 + n:])
    gen = torch.Generator().manual_seed(seed)
    for name in sorted(W):  # a fixed order, so the noise depends on the seed alone
        if header[name]["dtype"] != "F32":
            continue
        b, e = header[name]["data_offsets"]
        w = W[name] + sigma * torch.randn(W[name].shape, generator=gen)
        body[b:e] = w.numpy().astype("<f4").tobytes()
    with open(os.path.join(out, "model.safetensors"), "wb") as f:
        f.write(data[:8 + n] + bytes(body))


def make_batch(corpus, step, B, T):
    """Inputs and targets [B, T] (int64) of step `step` under wavepipe's data rule."""
    N = len(corpus)
    if N < T + 2:
        raise SystemExit(f"torch_reference: corpus of {N} bytes is shorter than T + 2 = {T + 2}")
    x = torch.empty(B, T, dtype=torch.long)
    y = torch.empty(B, T, dtype=torch.long)
    for j in range(B):
        s = ((step * B + j) * T) % (N - T - 1)
        x[j] = torch.tensor(list(corpus[s:s + T]), dtype=torch.long)
        y[j] = torch.tensor(list(corpus[s + 1:s + T + 1]), dtype=torch.long)
    return x, y


def mean_cross_entropy(logits, targets):
    """Mean over all B*T tokens of -log softmax(logits)[target], written out."""
    V = logits.shape[-1]
    lp = logits.reshape(-1, V)
    m = lp.max(dim=-1, keepdim=True).values
    logz = m.squeeze(-1) + torch.log(torch.exp(lp - m).sum(dim=-1))
    picked = lp.gather(1, targets.reshape(-1, 1)).squeeze(1)
    return (logz - picked).mean()


# ---- route (b): GPT-2 in plain PyTorch ------------------------------------------------

def layer_norm(x, w, b, eps):
    mu = x.mean(dim=-1, keepdim=True)
    var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)  # biased variance, as GPT-2
    return (x - mu) / torch.sqrt(var + eps) * w + b


def gelu_tanh(x):
    # gelu_new: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def plain_gpt2_logits(W, cfg, idx, dtype):
    g = lambda name: W[name].to(dtype)
    L, C, H = cfg["n_layer"], cfg["n_embd"], cfg["n_head"]
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    if cfg.get("activation_function", "gelu_new") != "gelu_new":
        raise SystemExit("torch_reference: plain route implements gelu_new only")
    B, T = idx.shape
    D = C // H
    wte = g("transformer.wte.weight")
    x = wte[idx] + g("transformer.wpe.weight")[:T].unsqueeze(0)
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    for i in range(L):
        p = f"transformer.h.{i}."
        h = layer_norm(x, g(p + "ln_1.weight"), g(p + "ln_1.bias"), eps)
        qkv = h @ g(p + "attn.c_attn.weight") + g(p + "attn.c_attn.bias")  # [B,T,3C]
        q, k, v = qkv.split(C, dim=-1)
        q = q.reshape(B, T, H, D).transpose(1, 2)  # [B,H,T,D]
        k = k.reshape(B, T, H, D).transpose(1, 2)
        v = v.reshape(B, T, H, D).transpose(1, 2)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(D)
        att = att.masked_fill(~causal, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + (y @ g(p + "attn.c_proj.weight") + g(p + "attn.c_proj.bias"))
        h = layer_norm(x, g(p + "ln_2.weight"), g(p + "ln_2.bias"), eps)
        h = gelu_tanh(h @ g(p + "mlp.c_fc.weight") + g(p + "mlp.c_fc.bias"))
        x = x + (h @ g(p + "mlp.c_proj.weight") + g(p + "mlp.c_proj.bias"))
    x = layer_norm(x, g("transformer.ln_f.weight"), g("transformer.ln_f.bias"), eps)
    head = W["lm_head.weight"].to(dtype) if "lm_head.weight" in W else wte  # tied
    return x @ head.t()


# ---- route (a): Hugging Face transformers ---------------------------------------------

def hf_logits(ckdir, W, idx, notes):
    import transformers  # noqa: F401  (ImportError handled by the caller)
    from transformers import GPT2Config, GPT2LMHeadModel
    try:
        model, info = GPT2LMHeadModel.from_pretrained(
            ckdir, torch_dtype=torch.float32, local_files_only=True, output_loading_info=True)
        how = f"from_pretrained (transformers {transformers.__version__})"
        missing, unexpected = info.get("missing_keys", []), info.get("unexpected_keys", [])
    except Exception as e:  # e.g. no safetensors support in this transformers
        notes.append(f"hf: from_pretrained failed ({type(e).__name__}: {e}); "
                     "falling back to load_state_dict(strict=False)")
        with open(os.path.join(ckdir, "config.json")) as f:
            config = GPT2Config(**json.load(f))
        model = GPT2LMHeadModel(config)
        res = model.load_state_dict(W, strict=False)
        model.tie_weights()
        how = f"load_state_dict(strict=False) (transformers {transformers.__version__})"
        missing, unexpected = list(res.missing_keys), list(res.unexpected_keys)
    # lm_head.weight is tied to wte; attn.bias / attn.masked_bias are buffers, not weights.
    missing = [k for k in missing if k != "lm_head.weight" and not k.endswith((".attn.bias", ".attn.masked_bias"))]
    if missing or unexpected:
        notes.append(f"hf: missing keys {missing}, unexpected keys {unexpected}")
    if not model.transformer.wte.weight.data_ptr() == model.lm_head.weight.data_ptr():
        notes.append("hf: lm_head is not tied to wte")
    notes.append(f"hf: loaded with {how}")
    model.eval()
    with torch.no_grad():
        return model(input_ids=idx).logits.float()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("ckdir")
    ap.add_argument("--data", help="the corpus (bytes are tokens)")
    ap.add_argument("--batch", "-B", type=int, help="global batch B (sequences)")
    ap.add_argument("--seq", "-T", type=int, help="sequence length T")
    ap.add_argument("--step", type=int, default=None,
                    help="step index I (default: the checkpoint's wavepipe_steps_done)")
    ap.add_argument("--route", action="append", choices=["plain", "hf", "plain64"],
                    help="route(s) to run (repeatable); default: plain and hf")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--compare-logits", action="store_true")
    ap.add_argument("--write-perturbed", metavar="OUT")
    ap.add_argument("--sigma", type=float, default=0.3)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    if a.write_perturbed:
        write_perturbed(a.ckdir, a.write_perturbed, a.sigma, a.seed)
        return 0
    if a.data is None or a.batch is None or a.seq is None:
        ap.error("--data, --batch and --seq are required")

    torch.set_num_threads(a.threads)
    W, meta = read_safetensors(os.path.join(a.ckdir, "model.safetensors"))
    with open(os.path.join(a.ckdir, "config.json")) as f:
        cfg = json.load(f)
    step = a.step
    if step is None:
        if "wavepipe_steps_done" not in meta:
            ap.error("no --step and no wavepipe_steps_done in the checkpoint's metadata")
        step = int(meta["wavepipe_steps_done"])
    if a.seq > cfg["n_positions"]:
        ap.error(f"T = {a.seq} exceeds n_positions = {cfg['n_positions']}")
    with open(a.data, "rb") as f:
        corpus = f.read()
    x, y = make_batch(corpus, step, a.batch, a.seq)
    print(f"# checkpoint {a.ckdir}: steps done {meta.get('wavepipe_steps_done', '?')}; "
          f"step {step}, B {a.batch}, T {a.seq}, corpus {len(corpus)} bytes; torch {torch.__version__}",
          file=sys.stderr)

    routes = a.route or ["plain", "hf"]
    explicit_hf = a.route is not None and "hf" in a.route
    logits, rc, notes = {}, 0, []
    for r in routes:
        try:
            with torch.no_grad():
                if r == "plain":
                    logits[r] = plain_gpt2_logits(W, cfg, x, torch.float32)
                elif r == "plain64":
                    logits[r] = plain_gpt2_logits(W, cfg, x, torch.float64)
                else:
                    logits[r] = hf_logits(a.ckdir, W, x, notes)
        except ImportError as e:
            notes.append(f"{r}: skipped ({e})")
            if r != "hf" or explicit_hf:
                rc = 1
            continue
        loss = mean_cross_entropy(logits[r], y).item()
        print(f"{r} {loss:.9g}")
        sys.stdout.flush()
    for n in notes:
        print("# " + n, file=sys.stderr)
    if a.compare_logits and len(logits) > 1:
        names = list(logits)
        base = logits[names[0]].double()
        for r in names[1:]:
            d = (logits[r].double() - base).abs()
            flat = int(d.argmax())
            b, t, v = flat // (d.shape[1] * d.shape[2]), (flat // d.shape[2]) % d.shape[1], flat % d.shape[2]
            print(f"# logits {r} - {names[0]}: max |diff| {d.max().item():.3e} at sequence {b}, "
                  f"position {t}, token {v}; mean |diff| {d.mean().item():.3e}", file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main())
