#!/usr/bin/env bash
# cli_where.sh - what telling apart stacks of one user frame costs the CLI on a large report
# (docs/cli.md, "Stacks that share their user frame"; docs/PERFORMANCE.md, session 47): a report
# of COUNT leak groups whose stacks all go through one helper and differ only three callers out
# (the worst case for the callers' comparison), read by `export --format html` (every group a
# row) and `report --top COUNT`; wall time of each, interleaved with an older CLI when given.
#
# usage: bench/cli_where.sh [BUILD_DIR] [REPEATS] [COUNT]
#   BUILD_DIR  a build folder (default build/): src/gpumemtrace
#   REPEATS    runs per setting, interleaved (default 5)
#   COUNT      leak groups in the report (default 100000)
# Environment:
#   GMT_WHERE_OLD_CLI=PATH  an older gpumemtrace as the setting "old", run in turn with "new"
# Prints one line per run and the medians.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
reps=${2:-5}
count=${3:-100000}
new=$build/src/gpumemtrace
old=${GMT_WHERE_OLD_CLI:-}
for f in "$new" ${old:+"$old"}; do
  [[ -x $f ]] || { echo "cli_where.sh: no $f (build first)" >&2; exit 2; }
done
work=$(mktemp -d /tmp/gmt-cli-where.XXXXXX)
trap 'rm -rf "$work"' EXIT
python3 - "$root/tests/cli/data/valid_v2.json" "$count" "$work/big.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
groups = []
for i in range(n):
    sid = 100 + i
    frames = [{"type": "native", "address": "0x1000", "module": "/opt/x/libtorch_cuda.so",
               "offset": 16, "build_id": None, "symbol": "alloc", "file": None, "line": None,
               "inlined": []},
              {"type": "python", "file": "/home/u/m.py", "function": "u8", "line": 43},
              {"type": "python", "file": "/home/u/m.py", "function": "build", "line": 47},
              {"type": "python", "file": "/home/u/m.py", "function": "layer",
               "line": 100 + i % 97},
              {"type": "python", "file": "/home/u/m.py", "function": "step", "line": 1000 + i},
              {"type": "python", "file": "/home/u/train.py", "function": "<module>", "line": 5}]
    r["stacks"][str(sid)] = {"frames": frames, "python": "captured"}
    groups.append({"stack_id": sid, "bytes": (n - i) * 4096, "count": 1, "kind": "device",
                   "device": 0, "api": "cudaMalloc", "suppressed": False, "library": "lib"})
r["leaks"].update(groups=groups, groups_total=n, count=n,
                  total_bytes=sum(g["bytes"] for g in groups))
json.dump(r, open(sys.argv[3], "w"))
PY
python3 - "$work" "$reps" "$count" "$new" ${old:+"$old"} <<'PY'
import statistics, subprocess, sys, time
work, reps, count, clis = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
names = ["new", "old"][:len(clis)]
times = {(n, v): [] for n in names for v in ("html", "report")}
for k in range(reps):
    for name, cli in zip(names, clis):
        for verb, argv in (("html", [cli, "export", f"{work}/big.json", "--format", "html",
                                     "-o", f"{work}/{name}.html"]),
                           ("report", [cli, "report", "--top", count, f"{work}/big.json"])):
            t = time.monotonic()
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           check=True)
            times[(name, verb)].append(time.monotonic() - t)
        print(f"run {k + 1} {name}: html {times[(name, 'html')][-1]:.3f} s, report "
              f"{times[(name, 'report')][-1]:.3f} s")
for name in names:
    print(f"median {name}: html {statistics.median(times[(name, 'html')]):.3f} s, report "
          f"{statistics.median(times[(name, 'report')]):.3f} s")
PY
