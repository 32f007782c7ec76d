#!/usr/bin/env python3
"""Compares two float32 safetensors files tensor by tensor (standard library
only). Prints the largest absolute and relative difference and exits 0 when
every value agrees within --rtol/--atol (0 and 0: bit for bit) and, with
--tight-rtol R --tight-fraction F, a fraction F of the values within R
relative (1e-8 absolute)."""
import json
import struct
import sys


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        b, e = t["data_offsets"]
        out[name] = (t["shape"], body[b:e])
    return out


def main():
    args = sys.argv[1:]
    rtol = atol = 0.0
    if "--rtol" in args:
        i = args.index("--rtol"); rtol = float(args[i + 1]); del args[i:i + 2]
    if "--atol" in args:
        i = args.index("--atol"); atol = float(args[i + 1]); del args[i:i + 2]
    tight_rtol = tight_fraction = None
    if "--tight-rtol" in args:
        i = args.index("--tight-rtol"); tight_rtol = float(args[i + 1]); del args[i:i + 2]
    if "--tight-fraction" in args:
        i = args.index("--tight-fraction"); tight_fraction = float(args[i + 1]); del args[i:i + 2]
    a, b = load(args[0]), load(args[1])
    total = loose = 0
    if sorted(a) != sorted(b):
        print("different tensor names"); return 1
    worst_abs = worst_rel = 0.0
    bad = 0
    for name in a:
        (sa, da), (sb, db) = a[name], b[name]
        if sa != sb:
            print(f"{name}: shapes {sa} and {sb}"); return 1
        total += len(da) // 4
        if da == db:
            continue
        fa = struct.unpack(f"<{len(da)//4}f", da)
        fb = struct.unpack(f"<{len(db)//4}f", db)
        for x, y in zip(fa, fb):
            d = abs(x - y)
            worst_abs = max(worst_abs, d)
            if y != 0:
                worst_rel = max(worst_rel, d / abs(y))
            if d > atol + rtol * abs(y):
                bad += 1
            if tight_rtol is not None and d > 1e-8 + tight_rtol * abs(y):
                loose += 1
    tight_ok = tight_fraction is None or loose <= (1 - tight_fraction) * total
    print(f"max abs diff {worst_abs:.3g}, max rel diff {worst_rel:.3g}, {bad} values out of tolerance"
          + (f", {loose} of {total} beyond {tight_rtol:g} relative" if tight_rtol is not None else ""))
    return 1 if bad or not tight_ok else 0


sys.exit(main())
