#!/usr/bin/env python3
"""No import cycles between a crate's top-level modules (issue 20).

For every crate under crates/ and apps/ (and baselines/, fuzz-smoke/), a
top-level module depends on another when code in it (comments and doc
links aside, and `tests.rs` files) names `crate::<other>`. A cycle in that
graph fails the check with the modules named. Run by `make lint`.
"""
import os
import re
import sys


def modules(src):
    out = {}
    for e in sorted(os.listdir(src)):
        p = os.path.join(src, e)
        if e in ("lib.rs", "main.rs"):
            continue
        if e.endswith(".rs"):
            out[e[:-3]] = [p]
        elif os.path.isdir(p) and e != "bin":
            out[e] = [os.path.join(r, f) for r, _, fs in os.walk(p) for f in fs if f.endswith(".rs")]
    return out


def code(path):
    if os.path.basename(path) == "tests.rs":
        return ""
    lines = open(path, encoding="utf-8").read().splitlines()
    return "\n".join(l for l in lines if not l.lstrip().startswith("//"))


def cycles(graph):
    found, state = [], {}

    def visit(n, path):
        state[n] = "open"
        for m in sorted(graph[n]):
            if state.get(m) == "open":
                found.append(path[path.index(m):] + [m])
            elif m not in state:
                visit(m, path + [m])
        state[n] = "done"

    for n in sorted(graph):
        if n not in state:
            visit(n, [n])
    return found


def main():
    roots = [d for top in ("crates", "apps", "baselines") if os.path.isdir(top)
             for d in (os.path.join(top, c) for c in sorted(os.listdir(top)))] + ["fuzz-smoke"]
    bad = 0
    for crate in roots:
        src = os.path.join(crate, "src")
        if not os.path.isdir(src):
            continue
        mods = modules(src)
        texts = {k: "\n".join(code(f) for f in fs) for k, fs in mods.items()}
        graph = {k: {o for o in mods if o != k and re.search(r"\bcrate::" + re.escape(o) + r"\b", texts[k])}
                 for k in mods}
        for c in cycles(graph):
            print(f"{crate}: import cycle {' -> '.join(c)}", file=sys.stderr)
            bad += 1
    if bad:
        sys.exit(1)
    print("module cycles: none")


if __name__ == "__main__":
    main()
