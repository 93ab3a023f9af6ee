#!/usr/bin/env bash
# gpu_callgrind_test.sh LIB STANDIN_DIR - bench/gpu_callgrind.sh run whole against the stand-in
# CUDA (nvcc builds pairs.c; the stand-in's libcudart and libcuda serve it), so that the script
# the GPU machine's instruction counts come from is known to work before it is carried there:
# its settings' environments, the thread it counts and its table. The stand-in's figures are
# not the GPU's; what is checked is what holds for any driver.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
lib=${1:?usage: gpu_callgrind_test.sh LIB STANDIN_DIR}
standin=${2:?usage: gpu_callgrind_test.sh LIB STANDIN_DIR}
command -v valgrind >/dev/null || { echo "SKIP: valgrind is not installed"; exit 77; }
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[[ -x $nvcc ]] || { echo "SKIP: nvcc not found"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bundle/lib"
ln -s "$lib" "$work/bundle/lib/libgpumemtrace.so"
export GMT_STANDIN_DEVICES=1 GMT_STANDIN_MEM_BYTES=$((1 << 30)) GMT_STANDIN_RESERVE_BYTES=$((1 << 30))
out=$(LD_LIBRARY_PATH=$standin GMT_BENCH_OLD_LIB=$lib GMT_CG_PAIRS="500 1500" NVCC=$nvcc \
  bash "$here/gpu_callgrind.sh" "$work/bundle" 2>"$work/err")
rc=$?
printf "%s\n--- stderr ---\n%s\n" "$out" "$(cat "$work/err")"
[[ $rc == 0 ]] || { echo "FAIL: gpu_callgrind.sh ended with $rc"; exit 1; }
python3 - "$out" <<'PY'
import sys
rows, fns = {}, []
for line in sys.argv[1].splitlines():
    f = line.split()
    if len(f) == 9 and f[0] in ("pair", "async") and f[2].lstrip("-").isdigit():
        rows[(f[0], f[1])] = dict(zip(("total", "added", "tracer", "libcuda"), map(int, f[2:6])))
    elif len(f) == 5 and f[2] == "function":
        fns.append(f)
bad = []
def row(s):
    r = rows.get(("pair", s))
    if r is None:
        bad.append(f"no pair row for {s}")
        return {"total": 0, "added": 0, "tracer": 0, "libcuda": 0}
    return r
nat, dft, off, old, oldoff = map(row, ("native", "default", "off", "old-default", "old-off"))
if not nat["total"] > 0 or nat["libcuda"] <= 0 or nat["tracer"] != 0:
    bad.append(f"native: {nat}")
for name, r in (("default", dft), ("off", off), ("old-default", old), ("old-off", oldoff)):
    if not 200 <= r["tracer"] <= 5000 or r["libcuda"] != nat["libcuda"] and abs(r["libcuda"] - nat["libcuda"]) > 50:
        bad.append(f"{name}: {r} (native {nat})")
if not off["tracer"] < dft["tracer"]:
    bad.append(f"stacks off ({off['tracer']}) does not cost less than the default ({dft['tracer']})")
if abs(old["tracer"] - dft["tracer"]) > 20 or abs(oldoff["tracer"] - off["tracer"]) > 20:
    bad.append(f"the same library as 'old' reads otherwise: {old} {dft} / {oldoff} {off}")
q = row("q-ctxdev")
if not q["added"] > 0 or q["tracer"] != 0:
    bad.append(f"q-ctxdev: {q}")
if not any(f[0] == "pair" and f[1] == "default" and f[3] == "gmt_track_alloc" for f in fns):
    bad.append("no function list for the default pair")
# The async row (pairs.c async-worker: batches of 500 pairs) on its thread of its own.
anat, adft = rows.get(("async", "native")), rows.get(("async", "default"))
if not anat or not adft or anat["total"] <= 0 or not 200 <= adft["tracer"] <= 5000:
    bad.append(f"async: native {anat}, default {adft}")
for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
PY
