#!/usr/bin/env python3
"""typeswap_seeds.py - "type-swapped" seeds for the report reader, derived from sample reports.

usage: typeswap_seeds.py OUT_DIR SEED_FILE...
       (a SEED_FILE that is not a JSON object is skipped; OUT_DIR is emptied first)

A past crash came from a report where an array was given as an object (a timeline's
"points", "merged.ranks"): the loader sized its arrays by the element count (0 for an object)
and walked the object's members past the end. These seeds make that kind of input on purpose,
everywhere: each is one seed report with exactly one value's type swapped,

  array  -> object  (its elements under the keys "0", "1", ...)
  object -> array   (its members' values, in order)
  number -> string  (its JSON text)

and the rest left as it was, so the reader gets past everything else and meets the swap. Only
the first value at each place of the structure is swapped (places differ by their keys; array
indices and the numeric ids of "stacks" count as one place), so a timeline of a hundred points
gives one seed per swap, not a hundred. The output is deterministic: the same inputs give the
same files, named <seed stem>.<n>.<swap>.json, with n counting the seed's swaps in document
order. Standard library only; used by run_fuzz.py (the libFuzzer run) and by
tests/cli/badinput.py --typeswap (every verb on every seed).
"""
import json
import os
import shutil
import sys


def place(path):
    """The structural place of a value: indices and numeric keys folded into one."""
    return tuple("#" if isinstance(k, int) or (isinstance(k, str) and k.isdigit()) else k
                 for k in path)


def walk(value, path=()):
    """(path, value) for every value in document order, the root first."""
    yield path, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from walk(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from walk(v, path + (i,))


def swapped(value):
    """(swap name, new value) for a value whose type is swapped, else None."""
    if isinstance(value, list):
        return "array_as_object", {str(i): v for i, v in enumerate(value)}
    if isinstance(value, dict):
        return "object_as_array", list(value.values())
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return "number_as_string", json.dumps(value)
    return None


def replace(doc, path, new):
    if not path:
        return new
    out = json.loads(json.dumps(doc))  # a deep copy
    parent = out
    for k in path[:-1]:
        parent = parent[k]
    parent[path[-1]] = new
    return out


def seeds_of(doc):
    """(n, swap name, document) for every type-swapped seed of doc."""
    seen = set()
    n = 0
    for path, value in walk(doc):
        s = swapped(value)
        if s is None:
            continue
        key = (place(path), s[0])
        if key in seen:
            continue
        seen.add(key)
        yield n, s[0], replace(doc, path, s[1])
        n += 1


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out = sys.argv[1]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    total = 0
    for seed in sorted(sys.argv[2:]):
        try:
            with open(seed, "rb") as f:
                doc = json.loads(f.read().decode("utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(doc, dict):
            continue
        stem = os.path.splitext(os.path.basename(seed))[0]
        for n, swap, new in seeds_of(doc):
            with open(os.path.join(out, f"{stem}.{n}.{swap}.json"), "w") as f:
                json.dump(new, f, separators=(",", ":"))
            total += 1
    print(f"typeswap_seeds: {total} seeds in {out}")


if __name__ == "__main__":
    main()
