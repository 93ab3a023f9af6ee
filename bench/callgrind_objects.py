#!/usr/bin/env python3
"""callgrind_objects.py - instructions a pair, by shared object, of the thread that made the
pairs, from two callgrind runs of one program (N1 and N2 pairs, --separate-threads=yes).

usage: callgrind_objects.py [--thread-fn NAME] PREFIX1 PREFIX2 PAIRS [FUNCS_OBJECT]
  PREFIXn  --callgrind-out-file of each run (its threads are PREFIXn-01, PREFIXn-02, ...)
  PAIRS    N2 - N1
  FUNCS_OBJECT  also list the functions of the objects whose path contains this string
  --thread-fn NAME  the thread that made the pairs is the one that ran the function NAME
Prints "total T" (the thread's instructions a pair: start-up, exit and report writing cancel
out in the difference), then "object O N" lines, largest first. Without --thread-fn the thread
that made the pairs is the one whose count grew most from N1 to N2 (thread files are numbered
in creation order, and a traced run has the tracer's writer thread besides the program's); a
main thread whose CUDA start-up moves by more than the pairs cost can win that, so name a
function only the pairs' thread runs where there is one.
"""
import collections
import glob
import re
import sys

NAME = re.compile(r"(ob|cob|fl|fi|fe|cfi|cfl|fn|cfn)=\((\d+)\)(?: (.*))?$")
# A cost line: its positions (as many as the file's "positions:" line names: "line", or
# "instr line" with --dump-instr=yes; each a number, +N, -N, * or 0x...), then the costs.
POSITION = re.compile(r"^(?:[+-]?\d+|\*|0x[0-9a-fA-F]+)$")


def cost(line, npos):
    """The first event's cost of a cost line, None for any other line."""
    f = line.split()
    if len(f) <= npos or not all(POSITION.match(p) for p in f[:npos]) or not f[npos].isdigit():
        return None
    return int(f[npos])


def totals(path):
    with open(path) as f:
        for line in f:
            if line.startswith("totals:"):
                return int(line.split()[1])
    return 0


def parse(path):
    """Self cost by object and by (object, function). Costs after a calls= line are the
    callee's inclusive cost, counted in the callee: skipped here."""
    names, by_obj, by_fn = {}, collections.Counter(), collections.Counter()
    ob = fn_ob = fn = None
    skip = False
    npos = 1
    with open(path) as f:
        for line in f:
            if skip:
                skip = False
                continue
            if line.startswith("positions:"):
                npos = len(line.split()) - 1
                continue
            m = NAME.match(line)
            if m:
                kind, idx, name = m.groups()
                space = "ob" if kind in ("ob", "cob") else "fn" if kind in ("fn", "cfn") else "fl"
                if name is not None:
                    names[space + idx] = name.strip()
                if kind == "ob":
                    ob = names.get(space + idx)
                elif kind == "fn":
                    fn, fn_ob = names.get(space + idx), ob
                continue
            if line.startswith("calls="):
                skip = True
                continue
            c = cost(line, npos)
            if c is not None and fn is not None:
                by_obj[fn_ob or "?"] += c
                by_fn[(fn_ob or "?", fn)] += c
    return by_obj, by_fn


def threads(prefix):
    return {p[len(prefix) + 1:]: p for p in glob.glob(prefix + "-[0-9]*")}


def ran(path, fn):
    """Whether the thread of this file ran the function fn (a fn= or cfn= line names it; a
    C++ name carries its parameters, a recursive call a 'N suffix)."""
    pat = re.compile(r"^c?fn=\(\d+\) %s(\(|'|$)" % re.escape(fn))
    with open(path) as f:
        return any(pat.match(line) for line in f)


def main():
    args = sys.argv[1:]
    fn = None
    if args[:1] == ["--thread-fn"] and len(args) > 1:
        fn, args = args[1], args[2:]
    if len(args) < 3:
        sys.exit(__doc__)
    p1, p2, pairs = args[0], args[1], float(args[2])
    t1, t2 = threads(p1), threads(p2)
    if not t1 or not t2:
        sys.exit("callgrind_objects.py: no thread files for %s or %s" % (p1, p2))
    grow = {k: totals(t2[k]) - totals(t1[k]) for k in t2 if k in t1}
    if fn:
        grow = {k: v for k, v in grow.items() if ran(t1[k], fn) and ran(t2[k], fn)}
        if len(grow) != 1:
            sys.exit("callgrind_objects.py: %d threads ran %s in both runs" % (len(grow), fn))
    if not grow:
        sys.exit("callgrind_objects.py: no thread in both runs")
    k = max(grow, key=grow.get)
    a, af = parse(t1[k])
    b, bf = parse(t2[k])
    print("total %.0f" % (grow[k] / pairs))
    rows = sorted(((b[o] - a.get(o, 0)) / pairs, o) for o in b)
    for d, o in reversed(rows):
        if abs(d) >= 1:
            print("object %s %.0f" % (o.rsplit("/", 1)[-1], d))
    if len(args) > 3:
        rows = sorted(((bf[x] - af.get(x, 0)) / pairs, x) for x in bf if args[3] in x[0])
        for d, x in reversed(rows):
            if abs(d) >= 1:
                print("function %s %.0f" % (x[1], d))


if __name__ == "__main__":
    main()
