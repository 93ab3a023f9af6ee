#!/usr/bin/env bash
# cache_pairs.sh - the cache lines the tracer misses a cudaMalloc+cudaFree pair when the
# program's work between allocations has evicted its memory (a PyTorch step does: on the H200
# the unwinder took 1.1-1.3 us a walk, the bookkeeping about 1 us a pair with stacks off, far
# above what their instruction counts predict; docs/PERFORMANCE.md "Session 9").
#
# usage: bench/cache_pairs.sh [BUILD_DIR] [FRAMES] [LIB ...]
#   bench_pairs on the stand-in, one thread, FRAMES (default 24) nested calls above the loop,
#   BENCH_THRASH_KIB=2048 written after each pair, under callgrind's cache simulation with a
#   48 KiB L1 and a 1 MiB last level (so 2 MiB of writes empties both). Each setting runs with
#   1,000 and 3,000 pairs; the difference of the calling thread's counts over 2,000 is a pair.
#   Prints, per setting, the last-level misses a pair (reads, writes) and what the tracer adds
#   over native; and for the last LIB, the tracer's functions by their own misses a pair.
#   LIB: libgpumemtrace.so files (default BUILD_DIR's); settings native, then each LIB with
#   stacks on (default) and off.
# Environment: GMT_CACHE_FUNCS=off lists the last LIB's functions with stacks off (default:
#   on); GMT_CACHE_LINES=1 also lists the same run's source lines by their misses a pair (0.3
#   or more), which names each cache line a pair misses (docs/PERFORMANCE.md, "Session 17").
#   GMT_CACHE_PY=INTERPRETER: the pairs are made from Python instead, by
#   bench/python_shapes.py through ctypes (GMT_CACHE_SHAPE chain, the default, FRAMES Python
#   frames deep; or nested, 24 callables), with GMT_SHAPES_THRASH_KIB=2048 between pairs: the
#   Python walk's and the replays' lines too. The interpreter itself, not a launcher script
#   such as a pyenv shim (valgrind must not trace a shell).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
frames=${2:-24}
shift $(($# > 2 ? 2 : $#))
libs=("$@")
((${#libs[@]})) || libs=("$build/src/libgpumemtrace.so")
. "$root/bench/preload_path.sh"
gmt_bench_preloadable "${libs[@]}"
bin="$build/bench/bench_pairs"
command -v valgrind >/dev/null || { echo "cache_pairs.sh: valgrind not found" >&2; exit 2; }
command -v callgrind_annotate >/dev/null || { echo "cache_pairs.sh: callgrind_annotate not found" >&2; exit 2; }
[[ -x $bin ]] || { echo "cache_pairs.sh: build $build first (no $bin)" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export GMT_STANDIN_DEVICES=1 GMT_STANDIN_MEM_BYTES=$((1 << 30)) GMT_STANDIN_RESERVE_BYTES=$((1 << 30))
export GPUMEMTRACE_OUTPUT="$out/r-%p.json" GPUMEMTRACE_LOG=quiet BENCH_THRASH_KIB=2048
n1=1000 n2=3000
pre=("$bin" 1) post=(4096 "$frames") # the command: pre, the pairs, post
if [[ -n ${GMT_CACHE_PY:-} ]]; then
  shape=${GMT_CACHE_SHAPE:-chain}
  case $shape in
    chain) ;;
    nested) n1=480 n2=1440 ;;
    *) echo "cache_pairs.sh: GMT_CACHE_SHAPE=$shape: want chain or nested" >&2; exit 2 ;;
  esac
  [[ -x $GMT_CACHE_PY ]] || { echo "cache_pairs.sh: GMT_CACHE_PY: no $GMT_CACHE_PY" >&2; exit 2; }
  pre=("$GMT_CACHE_PY" "$root/bench/python_shapes.py" "$build/standin/libcudart.so" "$shape")
  post=("$frames")
  export GMT_SHAPES_THRASH_KIB=2048 PYTHONHASHSEED=0
fi

# run NAME PAIRS [ENV...]: one callgrind run; its per-thread files are $out/NAME-PAIRS-NN
run() {
  local name=$1 n=$2
  shift 2
  env "$@" valgrind --tool=callgrind --cache-sim=yes --D1=49152,12,64 --LL=1048576,16,64 \
    --separate-threads=yes --callgrind-out-file="$out/$name-$n" "${pre[@]}" "$n" "${post[@]}" \
    >/dev/null 2>&1
}

settings=(native)
run native $n1
run native $n2
for i in "${!libs[@]}"; do
  [[ -f ${libs[$i]} ]] || { echo "cache_pairs.sh: no ${libs[$i]}" >&2; exit 2; }
  for s in default off; do
    env=(LD_PRELOAD="${libs[$i]}")
    [[ $s == off ]] && env+=(GPUMEMTRACE_STACK_DEPTH=0)
    run "$s$i" $n1 "${env[@]}"
    run "$s$i" $n2 "${env[@]}"
    settings+=("$s$i")
  done
done

python3 - "$out" "$n1" "$n2" "${#libs[@]}" "${settings[@]}" <<'PY'
import glob, os, re, subprocess, sys
out, n1, n2, nlibs, settings = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:]

def totals(f):
    ev = tot = None
    for line in open(f):
        if line.startswith("events:"):
            ev = line.split()[1:]
        elif line.startswith("totals:"):
            tot = [int(x) for x in line.split()[1:]]
    return dict(zip(ev, tot))

def thread(name):
    """The calling thread: the one whose instructions grew most from n1 to n2 pairs."""
    best = None
    for f2 in glob.glob(f"{out}/{name}-{n2}-*"):
        f1 = f2.replace(f"-{n2}-", f"-{n1}-")
        a, b = totals(f1), totals(f2)
        d = {k: (b[k] - a.get(k, 0)) / (n2 - n1) for k in b}
        if best is None or d["Ir"] > best[0]["Ir"]:
            best = (d, f1, f2)
    return best

rows = {s: thread(s) for s in settings}
nat = rows["native"][0]
print(f"{'setting':<10} {'instr':>9} {'LL rd miss':>11} {'LL wr miss':>11} {'LL i miss':>10} {'LL added':>9}")
for s in settings:
    d = rows[s][0]
    added = d["DLmr"] + d["DLmw"] + d["ILmr"] - nat["DLmr"] - nat["DLmw"] - nat["ILmr"]
    print(f"{s:<10} {d['Ir']:9.0f} {d['DLmr']:11.1f} {d['DLmw']:11.1f} {d['ILmr']:10.1f} {added if s != 'native' else 0:9.1f}")

# The last library's functions (stacks on), by their own last-level misses a pair.
def self_misses(f):
    txt = subprocess.run(["callgrind_annotate", "--show=DLmr,DLmw", "--threshold=100",
                          "--inclusive=no", f], capture_output=True, text=True).stdout
    d = {}
    for line in txt.splitlines():
        # "DLmr (pct) DLmw (pct) file:function [object]" (an uncounted column reads ".");
        # the tracer's own: a file under src/ (link-time inlining names the file, not the
        # object, for code inlined into another file's function).
        m = re.match(r"\s*([\d,.]+)\s+(?:\([^)]*\)\s+)?([\d,.]+)\s+(?:\([^)]*\)\s+)?(\S[^\[]*)", line)
        if not m:
            continue
        where = m.group(3).strip()
        if where.startswith("=>"):  # a call from the function above: inclusive, not its own
            continue
        ours = re.search(r"(?:^|/)src/(.*)", where)  # the path may be relative to the cwd
        if not ours or "tests/" in where:
            continue
        num = lambda x: 0 if x == "." else int(x.replace(",", ""))
        key = ours.group(1)
        d[key] = d.get(key, 0) + num(m.group(1)) + num(m.group(2))
    return d
_, f1, f2 = rows[os.environ.get("GMT_CACHE_FUNCS", "default") + str(nlibs - 1)]
a, b = self_misses(f1), self_misses(f2)
diff = sorted(((b[k] - a.get(k, 0)) / (n2 - n1), k) for k in b)
which = os.environ.get("GMT_CACHE_FUNCS", "default")
print(f"the tracer's functions (last library, stacks {'off' if which == 'off' else 'on'}), "
      "own last-level misses a pair:")
for v, k in reversed(diff):
    if v >= 0.5:
        print(f"  {v:6.1f}  {k}")

# GMT_CACHE_LINES=1: the same run's source lines of the tracer, by their misses a pair (reads,
# writes), from the larger run's counts alone (start-up and exit misses are spread over its
# 3,000 pairs: a line missed once a pair reads 1.0, give or take that).
if os.environ.get("GMT_CACHE_LINES") == "1":
    txt = subprocess.run(["callgrind_annotate", "--auto=yes", "--show=DLmr,DLmw",
                          "--show-percs=no", "--threshold=100", f2],
                         capture_output=True, text=True).stdout
    print("the tracer's source lines (same run), last-level misses a pair, reads and writes:")
    src = None
    num = lambda x: 0 if x == "." else int(x.replace(",", ""))
    for line in txt.splitlines():
        if "Auto-annotated source" in line:
            src = line.split()[-1]
            continue
        m = re.match(r"^\s*([\d,]+|\.)\s+([\d,]+|\.)\s+(.*)$", line)
        ours = src and re.search(r"(?:^|/)src/(.*)", src)  # relative to the cwd, or absolute
        if not m or not ours or "tests/" in src:
            continue
        code = m.group(3).strip()
        if code.startswith("=>") or "events annotated" in code:
            continue
        r, w = num(m.group(1)) / n2, num(m.group(2)) / n2
        if r + w >= 0.3:
            print(f"  {r:5.2f} {w:5.2f}  {ours.group(1):24s} {code[:90]}")
PY
