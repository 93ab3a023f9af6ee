#!/usr/bin/env bash
# pgo_test.sh TRAIN_BUILD - scripts/pgo.sh end to end: the two-stage profile-guided build of
# the preload library in a fresh folder, trained on TRAIN_BUILD's stand-in and benchmarks.
# Checks that the training wrote profiles, that the second stage compiled from them, and that
# the library it made traces bench_pairs, bench_async_pairs and a Python program exactly
# (every allocation and release counted once, a Python frame in its stacks).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
train=${1:?usage: pgo_test.sh TRAIN_BUILD}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bash "$root/scripts/pgo.sh" "$work/b" "$train" gpumemtrace -- -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DGPUMEMTRACE_BUILD_TESTS=OFF -DGPUMEMTRACE_BUILD_BENCH=OFF 2>"$work/log" ||
  { echo "FAIL: scripts/pgo.sh"; cat "$work/log"; exit 1; }
n=$(find "$work/b" -name '*.gcda' | wc -l)
((n >= 10)) || { echo "FAIL: $n profile files after the training"; exit 1; }
grep -q -- '-fprofile-use' "$work/b/build.ninja" || { echo "FAIL: the second stage is not built with -fprofile-use"; exit 1; }
lib="$work/b/src/libgpumemtrace.so"
export GMT_STANDIN_DEVICES=1 GMT_STANDIN_MEM_BYTES=$((1 << 30)) GMT_STANDIN_RESERVE_BYTES=$((1 << 30))
export GPUMEMTRACE_LOG=quiet
check() { # report allocs api
  python3 - "$@" <<'PY' || exit 1
import json, sys
r = json.load(open(sys.argv[1]))
want, api = int(sys.argv[2]), sys.argv[3]
s = r["summary"]
if s["allocs"] != want or s["frees"] != want or s["live_count"] != 0:
    sys.exit(f"FAIL: {sys.argv[1]}: allocs {s['allocs']} frees {s['frees']} live {s['live_count']}, want {want}")
if s["apis"].get(api, {}).get("allocs") != want:
    sys.exit(f"FAIL: {sys.argv[1]}: {api} not counted {want} times: {s['apis']}")
PY
}
# bench_pairs makes one warm-up pair before its PAIRS.
GPUMEMTRACE_OUTPUT="$work/c.json" LD_PRELOAD=$lib "$train/bench/bench_pairs" 2 500 >/dev/null || { echo "FAIL: bench_pairs traced"; exit 1; }
check "$work/c.json" 1001 cudaMalloc
GPUMEMTRACE_OUTPUT="$work/a.json" LD_PRELOAD=$lib "$train/bench/bench_async_pairs" 1 700 >/dev/null || { echo "FAIL: bench_async_pairs traced"; exit 1; }
check "$work/a.json" 701 cudaMallocAsync
GPUMEMTRACE_OUTPUT="$work/p.json" LD_PRELOAD=$lib python3 "$root/bench/python_shapes.py" \
  "$train/standin/libcudart.so" chain 300 >/dev/null || { echo "FAIL: python_shapes traced"; exit 1; }
# ctypes finds cudaMalloc in the stand-in's own handle, below the preload: the driver
# wrapper records each pair.
check "$work/p.json" 300 cuMemAlloc_v2
python3 - "$work/p.json" <<'PY' || exit 1
import json, sys
r = json.load(open(sys.argv[1]))
py = [f for s in r["stacks"].values() for f in s["frames"] if f.get("type") == "python"]
if not any(str(f.get("file", "")).endswith("python_shapes.py") for f in py):
    sys.exit("FAIL: no python_shapes.py frame in the Python program's stacks")
PY
echo "PASS: $n profiles; the profile-guided library traced C, async and Python pairs exactly"
