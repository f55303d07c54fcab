#!/usr/bin/env python3
"""The shape of `World` (src/world/): its fields, its methods per file, and
the calls between files through `self.method()`, which no import shows.

    python3 scripts/world_shape.py            # the figures
    python3 scripts/world_shape.py --pairs    # also every file pair, both directions marked

The rules are those of tests/it/layout.rs: a method is a `fn` inside an
`impl ... World ... {` block (tests excluded); a cross-file call is
`self.NAME(` in one file where NAME is a World method defined only in
another file.
"""

import os
import re
import sys
from collections import defaultdict

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "world")


def body(text):
    i = text.find("\n#[cfg(test)]\nmod tests")
    return text if i < 0 else text[:i]


def impl_blocks(text):
    """The bodies of `impl ... World<...> {` blocks."""
    out = []
    for m in re.finditer(r"^impl(<[^>]*>)?\s+World\b[^{]*\{", text, re.M):
        depth, i = 1, m.end()
        while depth and i < len(text):
            c = text[i]
            depth += c == "{"
            depth -= c == "}"
            i += 1
        out.append(text[m.end() : i])
    return out


def world_fields(text):
    m = re.search(r"pub struct World<'s> \{(.*?)\n\}", text, re.S)
    if not m:
        return []
    return re.findall(r"^\s*(?:pub(?:\([a-z]+\))?\s+)?([a-z_][a-z0-9_]*)\s*:", m.group(1), re.M)


def main():
    files = {}
    for d, _, fs in os.walk(ROOT):
        for f in fs:
            if f.endswith(".rs"):
                p = os.path.join(d, f)
                files[os.path.relpath(p, ROOT)] = body(open(p, encoding="utf-8").read())
    methods = {}
    for f, text in files.items():
        names = []
        for b in impl_blocks(text):
            names += re.findall(r"^\s*(?:pub(?:\([a-z]+\))?\s+)?fn\s+([a-z_][a-z0-9_]*)", b, re.M)
        if names:
            methods[f] = names
    owner = defaultdict(set)
    for f, names in methods.items():
        for n in names:
            owner[n].add(f)
    calls = defaultdict(int)
    for f, text in files.items():
        for n in re.findall(r"\bself\.([a-z_][a-z0-9_]*)\(", text):
            o = owner.get(n)
            if o and f not in o and len(o) == 1:
                calls[(f, next(iter(o)))] += 1
    fields = world_fields(files.get("mod.rs", ""))
    both = {tuple(sorted(p)) for p in calls if (p[1], p[0]) in calls}
    print(f"World fields: {len(fields)}")
    print(f"World methods: {sum(len(v) for v in methods.values())} in {len(methods)} files: "
          + ", ".join(f"{f} {len(v)}" for f, v in sorted(methods.items())))
    print(f"cross-file calls: {sum(calls.values())} over {len(calls)} file pairs, "
          f"{len(both)} pairs in both directions")
    if "--pairs" in sys.argv:
        for (a, b), n in sorted(calls.items()):
            mark = " <->" if tuple(sorted((a, b))) in both else ""
            print(f"  {a} -> {b}: {n}{mark}")


if __name__ == "__main__":
    main()
