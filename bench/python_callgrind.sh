#!/usr/bin/env bash
# Instructions per cudaMalloc+cudaFree pair made from Python through ctypes, on the stand-in,
# counted by valgrind's callgrind on the calling thread (Python's main thread), with the
# native stack and Python frames on: the driver-path capture (ctypes calls the stand-in
# cudart's own cudaMalloc, so no runtime hook brackets it) and the Python walk.
#
# usage: bench/python_callgrind.sh [BUILD_DIR] [RUNS] [LIB ...]
#   LIB: libgpumemtrace.so files to compare (default BUILD_DIR's); "native" runs untraced.
#   Each setting runs RUNS times (default 3) with 2,000 and with 6,000 pairs in a call chain
#   ten Python frames deep; the difference of the calling thread's totals divided by 4,000 is
#   one pair, start-up and exit cancelled out. A whole-process count is not used: the writer
#   thread's share of it follows wall time, which valgrind stretches.
# PYTHON (default python3 resolved to the interpreter itself: valgrind must not trace a
# launcher script such as a pyenv shim). The programs are bench/python_shapes.py's (chain, nested).
# GMT_PYCG_SHAPE=nested: instead of the loop, callables nested 24 deep allocating at every
# level (a model's module calls, each entered from C), 480 and 1,440 pairs. Besides the
# thread's total, each traced run prints the self cost a pair of the tracer's Python walk
# (pyframes.c) and native unwinder (unwind.c), which the exit report's share (written on this
# thread, following wall time under valgrind) does not blur: the total moves by some 200
# between runs of one library, these by some 30.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
runs=${2:-3}
shift $(($# > 2 ? 2 : $#))
libs=("$@")
((${#libs[@]})) || libs=(native "$build/src/libgpumemtrace.so")
. "$root/bench/preload_path.sh"
gmt_bench_preloadable "${libs[@]}"
cudart="$build/standin/libcudart.so"
command -v valgrind >/dev/null || { echo "python_callgrind.sh: valgrind not found" >&2; exit 2; }
[[ -f $cudart ]] || { echo "python_callgrind.sh: build $build first (no $cudart)" >&2; exit 2; }
py=${PYTHON:-$(python3 -c 'import sys; print(sys.executable)')}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
shape=${GMT_PYCG_SHAPE:-loop}
case $shape in
  loop) shape_arg=chain n1=2000 n2=6000 ;;
  nested) shape_arg=nested n1=480 n2=1440 ;;
  *) echo "python_callgrind.sh: GMT_PYCG_SHAPE=$shape: want loop or nested" >&2; exit 2 ;;
esac
export GMT_STANDIN_DEVICES=1 GMT_STANDIN_MEM_BYTES=$((1 << 30)) GMT_STANDIN_RESERVE_BYTES=$((1 << 30))
export GPUMEMTRACE_OUTPUT="$out/r-%p.json" GPUMEMTRACE_LOG=quiet PYTHONHASHSEED=0

main_thread() { # lib pairs -> the calling thread's instruction total
  local f="$out/cg-$2"
  rm -f "$f"*
  if [[ $1 == native ]]; then
    valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$f" \
      "$py" "$root/bench/python_shapes.py" "$cudart" "$shape_arg" "$2" >/dev/null 2>&1
  else
    LD_PRELOAD="$1" valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$f" \
      "$py" "$root/bench/python_shapes.py" "$cudart" "$shape_arg" "$2" >/dev/null 2>&1
  fi
  awk '/^totals:/ {print $2; exit}' "$f-01"
}

self_cost() { # file -> "pyframes unwind": self instructions of those source files
  callgrind_annotate --inclusive=no --auto=no --threshold=100 "$1" 2>/dev/null |
    awk '/^ *[0-9,]+ / {c = $1; gsub(",", "", c)
      if ($0 ~ /core\/pyframes\.c:/) p += c; else if ($0 ~ /core\/unwind\.c:/) u += c}
      END {printf "%d %d", p, u}'
}

echo "python $("$py" -c 'import platform; print(platform.python_version())'), shape $shape, $runs runs a setting"
printf '%-60s %s\n' "setting" "instructions a pair (calling thread), each run"
for lib in "${libs[@]}"; do
  vals=()
  for ((r = 0; r < runs; r++)); do
    a=$(main_thread "$lib" $n1)
    read -r pa ua <<<"$(self_cost "$out/cg-$n1-01")"
    b=$(main_thread "$lib" $n2)
    read -r pb ub <<<"$(self_cost "$out/cg-$n2-01")"
    v=$(((b - a) / (n2 - n1)))
    [[ $lib != native ]] &&
      v+=" (walk $(((pb - pa) / (n2 - n1))), unwinder $(((ub - ua) / (n2 - n1))))"
    vals+=("$v")
    rm -f "$out"/r-*.json
  done
  printf '%-60s %s\n' "$lib" "${vals[*]}"
done
