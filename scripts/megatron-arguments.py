#!/usr/bin/env python3
"""The command-line flags Megatron-LM defines, as data wavepipe's tests check
`wavepipe plan --format megatron` against (tests/megatron/arguments.txt).

Reads megatron/training/arguments.py of a Megatron-LM checkout (releases
up to core_v0.15.0 define every flag with an explicit add_argument call;
later ones generate many from dataclasses) and prints one line per flag:
FLAG KIND [CHOICES], KIND one of int, float, str, flag (store_true or
store_false: no value) or choice (one of the comma-separated CHOICES).

Usage: megatron-arguments.py ARGUMENTS.py 'SOURCE (repository, tag, commit)'
"""
import re
import sys


def flags(text):
    for m in re.finditer(r"add_argument\(\s*((?:'--[\w-]+'\s*,\s*)+)(.*?)\)\s*\n", text, re.S):
        names = re.findall(r"'(--[\w-]+)'", m.group(1))
        body = m.group(2)
        choices = re.search(r"choices\s*=\s*\[([^\]]*)\]", body)
        action = re.search(r"action\s*=\s*['\"](\w+)['\"]", body)
        kind = re.search(r"type\s*=\s*(\w+)", body)
        if choices:
            values = ",".join(re.findall(r"['\"]([^'\"]*)['\"]", choices.group(1)))
            described = "choice " + values
        elif action and action.group(1) in ("store_true", "store_false"):
            described = "flag"
        elif kind and kind.group(1) in ("int", "float", "str"):
            described = kind.group(1)
        else:
            described = "str"
        for name in names:
            yield name, described


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    text = open(sys.argv[1]).read()
    print("# Megatron-LM's flags (%s), extracted by scripts/megatron-arguments.py" % sys.argv[2])
    print("# FLAG KIND [CHOICES]: int, float, str, flag (no value) or choice")
    seen = set()
    for name, described in flags(text):
        if name not in seen:
            seen.add(name)
            print(name, described)


if __name__ == "__main__":
    main()
