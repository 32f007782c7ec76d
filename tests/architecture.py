#!/usr/bin/env python3
"""The architecture test: wavepipe's layers, no include cycles, short functions.

Reads every `#include "..."` of the C, C++ and CUDA files under src/ and
kernels/ (ArchUnit's habit for Java projects, done with the preprocessor's
own edges) and prints TAP, one line per rule:

1. No include cycle. A unit is a header together with every source file
   that defines a function the header declares (a header and its .c, or
   plan.h and the plan_*.c files that implement it); a unit depends on
   the unit of every header one of its files includes. A cycle of units is
   a circle a reader cannot enter at a bottom: each is printed with the
   includes that close it.
2. No include up a layer. Every file sits in one layer, by its folder, and
   includes only its own layer and the layers below (LAYERS, written once
   here); kernels sit beside util.
3. No function in src/ over MAX_FUNCTION_LINES lines, counted from the first
   line of its signature to its closing brace. Data (an initialised array or
   struct at file scope) is not a function; a table of data that long must
   be named in DATA_TABLES.

Usage: architecture.py SRCDIR
"""
import os
import re
import sys

# lowest first: a file may include its own layer's headers and those before it
LAYERS = ["util", "config", "topo", "sched", "plan", "run", "campaign", "commands"]
# folders (relative to the top) and the layer they are in; the first match wins
FOLDER_LAYER = [
    ("kernels/", "util"),  # beside util: the kernels include util and nothing above
    ("src/util/", "util"),
    ("src/config/", "config"),
    ("src/topo/", "topo"),
    ("src/sched/", "sched"),
    ("src/plan/", "plan"),
    ("src/run/", "run"),
    ("src/campaign/", "campaign"),
    ("src/cli/", "commands"),
    ("src/cmd/", "commands"),
]
MAX_FUNCTION_LINES = 150
# tables of data allowed over MAX_FUNCTION_LINES lines, by file and name
DATA_TABLES = set()
SOURCE_SUFFIXES = (".c", ".h", ".cu", ".cc", ".cuh")
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "__attribute__", "defined"}


def read_tree(top):
    files = {}
    for folder in ("src", "kernels"):
        for dirpath, dirnames, filenames in os.walk(os.path.join(top, folder)):
            dirnames.sort()
            for name in sorted(filenames):
                if name.endswith(SOURCE_SUFFIXES):
                    path = os.path.relpath(os.path.join(dirpath, name), top)
                    with open(os.path.join(dirpath, name), errors="replace") as f:
                        files[path] = f.read()
    return files


def strip_comments_and_strings(text):
    """The text with comments, string and character literals blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + c)
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([^"]+)"', re.M)


def includes(files, path):
    """(line, header path) of every project header path includes, as the
    build's -I src -I . (and the including file's folder) find them."""
    found = []
    text = files[path]
    for m in INCLUDE.finditer(text):
        name = m.group(1)
        line = text.count("\n", 0, m.start()) + 1
        for base in (os.path.dirname(path), "src", ""):
            candidate = os.path.normpath(os.path.join(base, name))
            if candidate in files:
                found.append((line, candidate))
                break
    return found


def top_level_blocks(path, text):
    """(kind, name, first line, last line) of every brace block at file scope:
    kind 'function', 'data' or 'type'. Preprocessor lines are skipped."""
    clean = strip_comments_and_strings(text)
    clean = re.sub(r"(?m)^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", lambda m: re.sub(r"[^\n]", " ", m.group(0)), clean)
    blocks = []
    depth, head_start, open_at = 0, 0, None
    for i, c in enumerate(clean):
        if c == "{":
            if depth == 0:
                open_at = i
                head = clean[head_start:i]
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0 and open_at is not None:
                blocks.append((head, head_start, i))
                head_start = i + 1
                open_at = None
        elif c == ";" and depth == 0:
            head_start = i + 1
    result = []
    for head, start, end in blocks:
        stripped = head.strip()
        if not stripped:
            continue
        first = clean.count("\n", 0, start + len(head) - len(head.lstrip())) + 1
        last = clean.count("\n", 0, end) + 1
        if "=" in stripped:
            m = re.search(r"(\w+)\s*(\[[^\]]*\]\s*)*=\s*$", stripped)
            result.append(("data", m.group(1) if m else "?", first, last))
        elif "(" in stripped and not re.match(r"^(typedef\s+)?(struct|union|enum)\b[^(]*$", stripped):
            name = "?"
            for m in re.finditer(r"(\w+)\s*\(", stripped):
                if m.group(1) not in KEYWORDS:
                    name = m.group(1)
                    break
            if re.match(r'^extern\s*$', stripped) or stripped.startswith('extern "C"'):
                continue
            result.append(("function", name, first, last))
        else:
            result.append(("type", stripped.split()[-1] if stripped.split() else "?", first, last))
    return result


DECLARED = re.compile(r"\b(wp_\w+)\s*\(")


def units_of(files):
    """unit (a header path, or a source path with no header) -> its files."""
    headers = [p for p in files if p.endswith((".h", ".cuh"))]
    declared_in = {}
    for h in headers:
        clean = strip_comments_and_strings(files[h])
        depth, flat = 0, []
        for c in clean:  # declarations at file scope only (not inline bodies)
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
            elif depth == 0:
                flat.append(c)
        for name in DECLARED.findall("".join(flat)):
            declared_in.setdefault(name, set()).add(h)
    members = {h: {h} for h in headers}
    for p in files:
        if p.endswith((".h", ".cuh")):
            continue
        owners = set()
        own = os.path.splitext(p)[0] + ".h"
        if own in files:
            owners.add(own)
        for kind, name, _, _ in top_level_blocks(p, files[p]):
            if kind == "function":
                owners |= declared_in.get(name, set())
        if not owners:
            owners = {p}
        for o in owners:
            members.setdefault(o, set()).add(p)
    return members


def cycles(files):
    members = units_of(files)
    unit_of_header = {h: h for h in members if h.endswith((".h", ".cuh"))}
    edges = {}  # unit -> {unit: [(file, line, header)]}
    for unit, paths in members.items():
        for p in sorted(paths):
            for line, h in includes(files, p):
                to = unit_of_header.get(h)
                if to and to != unit:
                    edges.setdefault(unit, {}).setdefault(to, []).append((p, line, h))
    # Tarjan's strongly connected components, iteratively
    index, low, on, stack, comps, counter = {}, {}, set(), [], [], [0]
    for root in sorted(members):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, {}))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, {})))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    comps.append(sorted(comp))
    found = []
    for comp in comps:
        inside = set(comp)
        why = []
        for u in comp:
            for to, sites in sorted(edges.get(u, {}).items()):
                if to in inside:
                    p, line, h = sites[0]
                    why.append("%s:%d includes %s" % (p, line, h))
        found.append((comp, why))
    return found


def layer_of(path):
    for prefix, layer in FOLDER_LAYER:
        if path.startswith(prefix):
            return layer
    return None


def layer_violations(files):
    bad = []
    for p in sorted(files):
        mine = layer_of(p)
        if mine is None:
            bad.append("%s is in no layer's folder (%s)" % (p, ", ".join(f for f, _ in FOLDER_LAYER)))
            continue
        for line, h in includes(files, p):
            theirs = layer_of(h)
            if theirs and LAYERS.index(theirs) > LAYERS.index(mine):
                bad.append("%s:%d (%s) includes %s (%s, a higher layer)" % (p, line, mine, h, theirs))
    return bad


def long_functions(files):
    bad = []
    for p in sorted(files):
        if not p.startswith("src/") or p.endswith((".h", ".cuh")):
            continue
        for kind, name, first, last in top_level_blocks(p, files[p]):
            n = last - first + 1
            if n <= MAX_FUNCTION_LINES:
                continue
            if kind == "function":
                bad.append("%s:%d: %s is %d lines" % (p, first, name, n))
            elif kind == "data" and (p, name) not in DATA_TABLES:
                bad.append("%s:%d: the table %s is %d lines and not in DATA_TABLES" % (p, first, name, n))
    return bad


def self_test():
    """The checker on a planted tree: a cycle, an arrow up, a long function
    and a long table are each found, and the clean parts are not."""
    long_body = "".join("    x += %d;\n" % i for i in range(MAX_FUNCTION_LINES))
    planted = {
        "src/util/a.h": '#include "sched/b.h"\nint wp_a(void);\n',
        "src/util/a.c": '#include "util/a.h"\nint wp_a(void)\n{\n    return 0;\n}\n',
        "src/sched/b.h": '#include "sched/c.h"\nint wp_b(void);\n',
        "src/sched/b.c": '#include "sched/b.h"\nint wp_b(void) { return 0; }\n',
        "src/sched/c.h": "int wp_c(void);\n",
        "src/sched/c.c": '#include "sched/c.h"\n#include "sched/b.h"\nint wp_c(void)\n{\n    int x = 0;\n'
                         + long_body + "    return x;\n}\n",
        "src/sched/d.c": "static const int table[] = {\n" + "1,\n" * (MAX_FUNCTION_LINES + 1) + "};\n",
    }
    found_cycles = cycles(planted)
    arrows = layer_violations(planted)
    long = long_functions(planted)
    ok = (len(found_cycles) == 1 and found_cycles[0][0] == ["src/sched/b.h", "src/sched/c.h"]
          and arrows == ["src/util/a.h:1 (util) includes src/sched/b.h (sched, a higher layer)"]
          and len(long) == 2 and long[0].startswith("src/sched/c.c:3: wp_c is %d lines" % (MAX_FUNCTION_LINES + 5))
          and "table table" in long[1])
    return ok, [str(found_cycles), str(arrows), str(long)]


def main():
    top = sys.argv[1] if len(sys.argv) > 1 else "."
    files = read_tree(top)
    if not files:
        print("1..1\nnot ok 1 - no sources found under %s/src" % top)
        return 1
    checks = [
        ("no include cycle between units (a header and the files that define what it declares)",
         ["cycle: %s\n    %s" % (" <-> ".join(c), "\n    ".join(w)) for c, w in cycles(files)]),
        ("no include up a layer (%s; kernels beside util)" % " < ".join(LAYERS), layer_violations(files)),
        ("no function in src/ over %d lines" % MAX_FUNCTION_LINES, long_functions(files)),
    ]
    planted_ok, planted_found = self_test()
    checks.append(("the checker finds a planted cycle, arrow up, long function and long table",
                   [] if planted_ok else ["found: " + "; ".join(planted_found)]))
    print("1..%d" % len(checks))
    failed = 0
    for i, (what, problems) in enumerate(checks, 1):
        if problems:
            failed += 1
            print("not ok %d - %s: %d found" % (i, what, len(problems)))
            for problem in problems:
                print("# " + problem.replace("\n", "\n# "))
        else:
            print("ok %d - %s (%d files)" % (i, what, len(files)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
