#!/usr/bin/env python3
"""Checks Megatron-LM arguments (the last line of `wavepipe plan --format
megatron`, comment lines skipped) against Megatron-LM's own flags
(arguments.txt, scripts/megatron-arguments.py): every flag exists, an int
flag has an integer, a choice one of its choices, a flag no value. Prints
one line per flag and 'ok' or the problems; exit status 1 on a problem.

Usage: check_args.py ARGUMENTS.txt OUTPUT.txt"""
import shlex
import sys


def main():
    known = {}
    for line in open(sys.argv[1]):
        if line.startswith("#") or not line.strip():
            continue
        parts = line.split()
        known[parts[0]] = (parts[1], parts[2].split(",") if len(parts) > 2 else [])
    lines = [l for l in open(sys.argv[2]) if l.strip() and not l.startswith("#")]
    if len(lines) != 1:
        print("expected one line of arguments, got %d" % len(lines))
        return 1
    words = shlex.split(lines[0])
    bad, i = 0, 0
    while i < len(words):
        flag = words[i]
        value = words[i + 1] if i + 1 < len(words) and not words[i + 1].startswith("--") else None
        i += 2 if value is not None else 1
        if flag not in known:
            print("%s: not a flag of Megatron-LM" % flag)
            bad += 1
            continue
        kind, choices = known[flag]
        ok = {"int": value is not None and value.lstrip("-").isdigit(),
              "float": value is not None,
              "str": value is not None,
              "flag": value is None,
              "choice": value in choices}[kind]
        print("%s %s: %s%s" % (flag, value if value is not None else "(no value)", kind,
                               "" if ok else " -- WRONG VALUE"))
        bad += not ok
    print("ok" if bad == 0 else "%d problems" % bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
