#!/usr/bin/env bash
# code_lines.sh - the code lines of a tracer library that a traced cudaMalloc+cudaFree pair
# executes, as GMT_PROBE_CODE ranges for the probe switch "codepf" (src/core/probe.h): the
# lines whose instructions run about once a pair or more, from callgrind runs at two pair
# counts (bench/code_lines.py), on the stand-in, from C (bench_pairs, through the runtime
# hook) and from Python (bench/python_shapes.py nested, through the driver wrapper, with the
# Python walk). Offsets are the library's own: compute them for the very file carried.
#
# usage: bench/code_lines.sh BUILD_DIR LIB [PYTHON]   -> one line OFF:LEN,... on stdout
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: code_lines.sh BUILD_DIR LIB [PYTHON]}" && pwd)
lib=$(cd "$(dirname "${2:?usage: code_lines.sh BUILD_DIR LIB [PYTHON]}")" && pwd)/$(basename "$2")
. "$root/bench/preload_path.sh"
gmt_bench_preloadable "$lib"
py=${3:-$(command -v python3)}
command -v valgrind >/dev/null || { echo "code_lines.sh: valgrind not found" >&2; exit 2; }
[[ -f $lib ]] || { echo "code_lines.sh: no $lib" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export GMT_STANDIN_DEVICES=1 GMT_STANDIN_MEM_BYTES=$((1 << 30)) GMT_STANDIN_RESERVE_BYTES=$((1 << 30))
export GPUMEMTRACE_OUTPUT="$out/r-%p.json" GPUMEMTRACE_LOG=quiet PYTHONHASHSEED=0 GMT_PROBE_SKIP=notimers
for n in 960 1920; do
  LD_PRELOAD=$lib valgrind --tool=callgrind --dump-instr=yes --callgrind-out-file="$out/py-$n" \
    "$py" "$root/bench/python_shapes.py" "$build/standin/libcudart.so" nested $n 13 >/dev/null 2>&1
  LD_PRELOAD=$lib valgrind --tool=callgrind --dump-instr=yes --callgrind-out-file="$out/c-$n" \
    "$build/bench/bench_pairs" 1 $n 4096 13 >/dev/null 2>&1
done
python3 "$root/bench/code_lines.py" "$lib" 0.9 "$out/py-960" "$out/py-1920" 960 \
  "$out/c-960" "$out/c-1920" 960
