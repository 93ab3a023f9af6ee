#!/usr/bin/env bash
# gpu_rows.sh - issue 10's GPU rows as docs/PERFORMANCE.md reads them since session 27, on a
# GPU machine: the PyTorch loop with caching off and with cudaMallocAsync, each one process
# alternating blocks of two steps between the tracer passing every call through and the
# tracer recording (defaults: Python and native stacks on), so that the host's per-process
# modes cancel; then the 16-thread cudaMalloc+cudaFree row.
#
# usage: bench/gpu_rows.sh BUNDLE [REPS]
#   BUNDLE  scripts/bundle.sh's output folder with the probe library beside the product
#           (`bash bench/probe_lib.sh BUNDLE/lib`: lib/libgpumemtrace-probes.so)
#   REPS    how many times the two PyTorch rows run, one after the other (default 2)
# Environment: GMT_ROWS_NOCACHE_STEPS (default 600), GMT_ROWS_ASYNC_STEPS (default 1200),
# GMT_ROWS_CPUS (taskset's CPUs, default 2-5), GMT_ROWS_16THR_REPS (default 5; 0 leaves the
# 16-thread row out), GMT_ROWS_16THR_AB (default 3; 0 leaves the 16-thread A/B out).
#
# Each PyTorch line: the allocator mode, then bench/gpu/torch_transformer.py's own lines for
# the A/B (GMT_TL_AB=1024: the probe library's timers off, GMT_TL_AB_BLOCK=2): ms_pass (the
# untraced step), ms_traced, ab_ratio (median over block pairs of traced / pass: the row's
# figure), ab_pairs with its quartiles, ab_ci90 (a 90 % bootstrap interval of that median).
# The 16-thread row is bench/gpu_probe.sh's, settings native, off (stacks off) and default:
# separate processes, whose native figure moves with the host. Then the same row as one process
# (bench/gpu/pairs.c, PAIRS_AB=1024: 16 threads x 20,000 pairs in phases of 250 pairs, all
# threads together, alternating between the probe library passing every call through and
# recording with its timers off), by default and with stacks off: ab_ratio (median over phase
# pairs of traced / pass), ab_pairs with its quartiles, ab_ci90, us_per_call (the pass phases).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bundle=$(cd "${1:?usage: gpu_rows.sh BUNDLE [REPS]}" && pwd) || exit 2
reps=${2:-2}
probe="$bundle/lib/libgpumemtrace-probes.so"
. "$here/preload_path.sh"
gmt_bench_preloadable "$probe"
[[ -f $probe ]] || { echo "gpu_rows.sh: no probe library $probe (bench/probe_lib.sh)" >&2; exit 2; }
[[ $reps =~ ^[1-9][0-9]?$ ]] || { echo "gpu_rows.sh: REPS is 1-99, not '$reps'" >&2; exit 2; }
command -v nvidia-smi >/dev/null && nvidia-smi -L
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GPUMEMTRACE_LOG=quiet GPUMEMTRACE_OUTPUT="$work/r-%p.json"
row() { # mode steps, then the allocator's environment
  local mode=$1 steps=$2
  shift 2
  echo "== $mode $(date -u +%H:%M:%S) ($steps steps)"
  env "$@" LD_PRELOAD="$probe" GMT_TL_AB=1024 GMT_TL_AB_BLOCK=2 \
    taskset -c "${GMT_ROWS_CPUS:-2-5}" python3 "$here/gpu/torch_transformer.py" "$steps" \
    2>>"$work/stderr.txt" | grep -E '^(ms_pass|ms_traced|ab_ratio|ab_pairs|ab_ci90) ' ||
    { echo "gpu_rows.sh: $mode failed:"; tail -5 "$work/stderr.txt"; }
}
for ((r = 1; r <= reps; r++)); do
  row nocache "${GMT_ROWS_NOCACHE_STEPS:-600}" PYTORCH_NO_CUDA_MEMORY_CACHING=1
  row async "${GMT_ROWS_ASYNC_STEPS:-1200}" PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync
done
n16=${GMT_ROWS_16THR_REPS:-5}
if ((n16 > 0)); then
  echo "== 16thr $(date -u +%H:%M:%S)"
  GMT_PROBE_ROWS=16thr GMT_PROBE_SETTINGS="native off default" \
    bash "$here/gpu_probe.sh" "$bundle" "$bundle/lib/libgpumemtrace.so" "$n16"
fi
n16ab=${GMT_ROWS_16THR_AB:-3}
if ((n16ab > 0)); then
  nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
  if "$nvcc" -x c++ -O2 -cudart shared -o "$work/pairs" "$here/gpu/pairs.c" -ldl -lpthread; then
    for ((r = 1; r <= n16ab; r++)); do
      for depth in default 0; do
        echo "== 16thr-ab stacks $([[ $depth == 0 ]] && echo off || echo default) $(date -u +%H:%M:%S)"
        env $([[ $depth == 0 ]] && echo GPUMEMTRACE_STACK_DEPTH=0) LD_PRELOAD="$probe" \
          PAIRS_AB=1024 "$work/pairs" threads 16 20000 2>>"$work/stderr.txt" ||
          { echo "gpu_rows.sh: 16thr-ab failed:"; tail -5 "$work/stderr.txt"; }
      done
    done
  else
    echo "gpu_rows.sh: nvcc could not build bench/gpu/pairs.c: no 16thr-ab rows"
  fi
fi
