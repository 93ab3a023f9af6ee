#!/usr/bin/env bash
# gpu_bench.sh - issue 10's cost table on a GPU machine, with the relocatable bundle.
#
# usage: bench/gpu_bench.sh BUNDLE [REPS]
#   BUNDLE  scripts/bundle.sh's output folder (lib/libgpumemtrace.so)
#   REPS    interleaved repetitions of each C row (default 5; PyTorch rows use 3)
# Needs nvcc (NVCC, PATH or /usr/local/cuda/bin), python3, and PyTorch for the PyTorch rows
# (skipped, visibly, without it). Finishes in about 3 minutes; prints a table to stdout.
# Environment: GMT_BENCH_RAW=FILE keeps every sample ("row setting value" lines);
# GMT_BENCH_OLD_LIB=PATH adds an older libgpumemtrace.so as settings old-default, old-off and
# old-hooks, interleaved with the others (before/after measured side by side in one run);
# GMT_BENCH_TORCH=0 leaves out the PyTorch rows (they take most of the time, and a few ms per
# step on a shared machine does not resolve a few µs per allocation); GMT_BENCH_TORCH_REPS
# (default 3) repetitions of the PyTorch rows, started while less than GMT_BENCH_BUDGET
# seconds (default 200) have passed; GMT_BENCH_CPU=N pins
# the one-thread async row to CPU N with taskset (default 2; empty: not pinned): on the H200
# host that row was bimodal from process to process (0.8-0.9 or 1.4-1.7 us a pair natively),
# which a fixed CPU is meant to remove.
#
# Rows (medians and lower quartiles of interleaved runs: every setting once per repetition):
#   async   cudaMallocAsync+cudaFreeAsync pair, 64-320 KiB, one thread, stack depth 32 (us/pair)
#   sync    one thread: cudaMalloc, a 20 us kernel, cudaFree of the previous buffer (which waits
#           for the kernel), PyTorch's order with caching off: the tracer's time the device
#           waits for (us/iteration; pinned as the async row). Between processes it
#           scatters by about +-2 us on the H200, more than the tracer costs: the tracer's
#           share is pairs.c's in-process A/B (PAIRS_AB, docs/PERFORMANCE.md "Session 12")
#   16thr   16 threads x 5000 cudaMalloc+cudaFree, 4-64 KiB (us per call one thread sees)
#   16sites the same, each thread from a call chain of its own (a stack id of its own): what
#           16thr costs beyond it is the threads sharing one stack's live counters
#           (native, default, off, old-default only)
#   torch-nocache / torch-async  a small training loop (ms/step), PYTORCH_NO_CUDA_MEMORY_CACHING=1
#           and PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync, untraced vs traced (default)
# Settings: native; cupti-empty (a probe library with an empty CUPTI callback on the same
# driver calls: the driver plus CUPTI's own dispatch); default (GPUMEMTRACE_BACKEND unset:
# auto, which records with the driver entry-point wrappers in a preloaded process; depth 32);
# off (default, GPUMEMTRACE_STACK_DEPTH=0); cupti (GPUMEMTRACE_BACKEND=cupti); cupti-off.
# The split at the end: driver = native; bookkeeping (default) = off - native; unwinder
# (default) = default - off; CUPTI dispatch = cupti-empty - native; our CUPTI callback =
# cupti-off - cupti-empty; unwinder under CUPTI = cupti - cupti-off.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bundle=$(cd "${1:?usage: gpu_bench.sh BUNDLE [REPS]}" && pwd)
reps=${2:-5}
lib="$bundle/lib/libgpumemtrace.so"
. "$here/preload_path.sh"
gmt_bench_preloadable "$lib"
[[ -f $lib ]] || { echo "gpu_bench.sh: no $lib" >&2; exit 2; }
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[[ -x $nvcc ]] || { echo "gpu_bench.sh: nvcc not found (set NVCC)" >&2; exit 2; }
cuda_home=${CUDA_HOME:-$(cd "$(dirname "$nvcc")/.." && pwd)}
start=$(date +%s)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
raw=${GMT_BENCH_RAW:-$work/raw.txt}
: >"$raw"

# ---- build the workloads and the probe ----
"$nvcc" -x c++ -O2 -cudart shared -o "$work/pairs" "$here/gpu/pairs.c" -ldl -lpthread || exit 1
# shellcheck source=bench/gpu/settings.sh
. "$here/gpu/settings.sh"
probe=""
gmt_build_cupti_empty "$cuda_home" "$here/gpu/cupti_empty.c" "$work/cupti_empty.so" &&
  probe="$work/cupti_empty.so"
[[ -n $probe ]] || echo "gpu_bench.sh: CUPTI probe not built (no cupti.h/libcupti.so under $cuda_home): cupti-empty skipped" >&2

export GPUMEMTRACE_OUTPUT="$work/r-%p.json" GPUMEMTRACE_LOG=quiet

run() { # setting, then the command; prints the command's number
  local s=$1
  shift
  case $s in
    native) "$@" ;;
    cupti-empty) LD_PRELOAD="$probe" "$@" ;;
    default) LD_PRELOAD="$lib" "$@" ;;
    off) LD_PRELOAD="$lib" GPUMEMTRACE_STACK_DEPTH=0 "$@" ;;
    cupti) LD_PRELOAD="$lib" GPUMEMTRACE_BACKEND=cupti "$@" ;;
    cupti-off) LD_PRELOAD="$lib" GPUMEMTRACE_BACKEND=cupti GPUMEMTRACE_STACK_DEPTH=0 "$@" ;;
    old-default) LD_PRELOAD="$old" "$@" ;;
    old-off) LD_PRELOAD="$old" GPUMEMTRACE_STACK_DEPTH=0 "$@" ;;
    old-hooks) LD_PRELOAD="$old" GPUMEMTRACE_BACKEND=hooks "$@" ;;
  esac 2>>"$work/stderr.txt" | awk '$1 ~ /^(us_per_pair|us_per_call|ms_per_step)$/ {print $2}'
  rm -f "$work"/r-*.json
}

settings="native default off cupti cupti-off"
[[ -n $probe ]] && settings="native cupti-empty default off cupti cupti-off"
old=${GMT_BENCH_OLD_LIB:-}
old_torch=""
if [[ -n $old ]]; then
  [[ -f $old ]] || { echo "gpu_bench.sh: GMT_BENCH_OLD_LIB=$old is not a file" >&2; exit 2; }
  settings="$settings old-default old-off old-hooks"
  old_torch="old-default"
fi
pin=()
cpu=${GMT_BENCH_CPU-2}
if [[ -n $cpu ]] && command -v taskset >/dev/null; then pin=(taskset -c "$cpu"); fi
echo "gpu_bench.sh: async row ${pin[*]:-not pinned}" >&2
for ((r = 0; r < reps; r++)); do
  for s in $settings; do
    echo "async $s $(run "$s" "${pin[@]}" "$work/pairs" async 20000)" >>"$raw"
    echo "sync $s $(run "$s" "${pin[@]}" "$work/pairs" sync 10000)" >>"$raw"
    echo "16thr $s $(run "$s" "$work/pairs" threads 16 5000)" >>"$raw"
    case $s in native | default | off | old-default)
      echo "16sites $s $(run "$s" "$work/pairs" threads-sites 16 5000)" >>"$raw" ;;
    esac
  done
done

# ---- PyTorch: untraced vs traced, interleaved; bounded so the whole run stays short ----
if [[ ${GMT_BENCH_TORCH:-1} == 0 ]]; then
  echo "torch-nocache skipped GMT_BENCH_TORCH=0" >>"$raw"
elif python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  for ((r = 0; r < ${GMT_BENCH_TORCH_REPS:-3}; r++)); do
    (($(date +%s) - start > ${GMT_BENCH_BUDGET:-200})) && { echo "gpu_bench.sh: time budget reached, torch rep $r skipped" >&2; break; }
    for s in native default $old_torch; do
      echo "torch-nocache $s $(PYTORCH_NO_CUDA_MEMORY_CACHING=1 run "$s" python3 "$here/gpu/torch_loop.py" 30)" >>"$raw"
      echo "torch-async $s $(PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync run "$s" python3 "$here/gpu/torch_loop.py" 30)" >>"$raw"
    done
  done
else
  echo "torch-nocache skipped no-torch" >>"$raw"
fi

GMT_BENCH_GPU_DIR="$here/gpu" python3 - "$raw" <<'PY'
import os, statistics, sys
sys.path.insert(0, os.environ["GMT_BENCH_GPU_DIR"])
from samples import load
samples = load(sys.argv[1])
med = {k: statistics.median(v) for k, v in samples.items() if v}
# The lower quartile too: on the H200 the async row is bimodal (PERFORMANCE.md), and a median
# of a few runs lands on either mode; the lower quartile follows the fast one.
q1 = {k: sorted(v)[len(v) // 4] for k, v in samples.items() if v}
units = {"async": "us/pair", "sync": "us/iter", "16thr": "us/call", "16sites": "us/call", "torch-nocache": "ms/step",
         "torch-async": "ms/step"}
print(f"{'row':<14} {'setting':<12} {'median':>9} {'added':>9} {'ratio':>6} {'q1':>9} {'added':>9} {'n':>3}  unit")
for row in ["async", "sync", "16thr", "16sites", "torch-nocache", "torch-async"]:
    base = med.get((row, "native"))
    for s in ["native", "cupti-empty", "default", "off", "cupti", "cupti-off", "old-default",
              "old-off", "old-hooks"]:
        m = med.get((row, s))
        if m is None:
            continue
        add = m - base if base else float("nan")
        ratio = m / base if base else float("nan")
        qb = q1.get((row, "native"))
        qa = q1[(row, s)] - qb if qb else float("nan")
        print(f"{row:<14} {s:<12} {m:9.3f} {add:9.3f} {ratio:6.2f} {q1[(row, s)]:9.3f} {qa:9.3f} "
              f"{len(samples[(row, s)]):3d}  {units[row]}")
for (row, stat, table) in [(r, st, t) for r in ["async", "16thr"] for st, t in (("median", med), ("q1", q1))]:
    g = lambda s: table.get((row, s))
    if None in (g("native"), g("default"), g("off")):
        continue
    parts = [f"driver {g('native'):.3f}",
             f"bookkeeping {g('off') - g('native'):+.3f}",
             f"unwinder(d32) {g('default') - g('off'):+.3f}"]
    if None not in (g("cupti"), g("cupti-off")):
        if g("cupti-empty") is not None:
            parts += [f"CUPTI dispatch {g('cupti-empty') - g('native'):+.3f}",
                      f"our CUPTI callback {g('cupti-off') - g('cupti-empty'):+.3f}"]
        parts += [f"unwinder under CUPTI {g('cupti') - g('cupti-off'):+.3f}"]
    print(f"split {row} {stat} ({units[row]}): " + " | ".join(parts))
PY
echo "gpu_bench.sh: $(($(date +%s) - start)) s; stderr of the runs: $(wc -l <"$work/stderr.txt") lines"
[[ -s $work/stderr.txt ]] && head -5 "$work/stderr.txt"
exit 0
