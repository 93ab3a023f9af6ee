#!/usr/bin/env bash
# What the tracer itself asks of the CUDA driver and runtime per allocation, on the GPU machine:
# runs bench/gpu/pairs.c's workloads under the CUPTI counting probe (bench/gpu/cupti_count.c)
# natively and under the tracer with the entry-point backend (GPUMEMTRACE_BACKEND=hooks, so
# the tracer holds no CUPTI subscription of its own), and prints each API's calls per pair.
#
# usage: bench/gpu/driver_calls.sh BUNDLE [PAIRS]
# Needs nvcc (NVCC, PATH or /usr/local/cuda/bin) and CUPTI under the toolkit.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bundle=$(cd "${1:?usage: driver_calls.sh BUNDLE [PAIRS]}" && pwd)
pairs=${2:-2000}
lib="$bundle/lib/libgpumemtrace.so"
[[ -f $lib ]] || { echo "driver_calls.sh: no $lib" >&2; exit 2; }
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[[ -x $nvcc ]] || { echo "driver_calls.sh: nvcc not found (set NVCC)" >&2; exit 2; }
cuda_home=${CUDA_HOME:-$(cd "$(dirname "$nvcc")/.." && pwd)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$nvcc" -x c++ -O2 -cudart shared -o "$work/pairs" "$here/pairs.c" -lpthread
cupti_inc=$(dirname "$(find "$cuda_home/" -name cupti.h 2>/dev/null | head -1)")
cupti_so=$(find "$cuda_home/" -name 'libcupti.so' 2>/dev/null | head -1)
[[ -n $cupti_so && -d $cupti_inc ]] || { echo "driver_calls.sh: no CUPTI under $cuda_home" >&2; exit 2; }
cc -shared -fPIC -O2 -I"$cuda_home/include" -I"$cupti_inc" -o "$work/count.so" \
  "$here/cupti_count.c" -L"$(dirname "$cupti_so")" -lcupti -Wl,-rpath,"$(dirname "$cupti_so")"
export GPUMEMTRACE_OUTPUT="$work/r-%p.json" GPUMEMTRACE_LOG=quiet
for row in "async $pairs" "threads 1 $pairs"; do
  for s in native hooks hooks-off; do
    case $s in
      native) pre="$work/count.so"; env=() ;;
      hooks) pre="$work/count.so:$lib"; env=(GPUMEMTRACE_BACKEND=hooks) ;;
      hooks-off) pre="$work/count.so:$lib"; env=(GPUMEMTRACE_BACKEND=hooks GPUMEMTRACE_STACK_DEPTH=0) ;;
    esac
    # shellcheck disable=SC2086
    env "${env[@]}" LD_PRELOAD="$pre" "$work/pairs" $row 2>"$work/err" >/dev/null || true
    awk -v row="${row%% *}" -v s="$s" -v n="$pairs" \
      '$1 == "calls" && $4 >= n / 2 {printf "%s %s %s %s %.2f per pair\n", row, s, $2, $3, $4 / n}' \
      "$work/err"
  done
done
