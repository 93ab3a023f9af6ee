#!/usr/bin/env bash
# Profile-guided build of the preload library (GPUMEMTRACE_PGO, src/CMakeLists.txt), in two
# stages in one build folder: an instrumented build, training runs under it, then the build
# from the profile those runs wrote.
#
# usage: scripts/pgo.sh BUILD TRAIN_BUILD [TARGET] -- [CMAKE_ARGS...]
#   BUILD        the build folder to configure and build (created if absent)
#   TRAIN_BUILD  a test build (scripts/setup.sh's build/): its stand-in CUDA and benchmarks
#                make the training's allocations
#   TARGET       what to build (default: all)
#   CMAKE_ARGS   the configure options of BUILD (its build type, bundle run path, probes...)
#
# The training is the stand-in's C loops (cudaMalloc/cudaFree with stacks on and off, four
# threads, a deep stack, cudaMallocAsync/cudaFreeAsync, the driver API) and the Python shapes
# (bench/python_shapes.py: one call site, and modules nested 24 deep) on every CPython 3.10-3.13
# that pyenv or PATH has: the paths a PyTorch or C program's allocations take. The profile
# belongs to this compiler and this source, so it is made here each time and never committed.
#
# GMT_BUNDLE_PGO (scripts/bundle.sh and bench/probe_lib.sh build through this script): auto
# (the default) builds without a profile, saying so, when TRAIN_BUILD lacks the training's
# programs; 1 requires them; 0 always builds without a profile.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
usage() { echo "usage: scripts/pgo.sh BUILD TRAIN_BUILD [TARGET] -- [CMAKE_ARGS...]" >&2; exit 2; }
(($# >= 2)) || usage
build=$1 train=$2
shift 2
target=all
if (($#)) && [[ $1 != -- ]]; then target=$1; shift; fi
if (($#)); then [[ $1 == -- ]] || usage; shift; fi
mkdir -p "$build"
build=$(cd "$build" && pwd)
mode=${GMT_BUNDLE_PGO:-auto}
case $mode in auto | 0 | 1) ;; *) echo "pgo.sh: GMT_BUNDLE_PGO is auto, 1 or 0" >&2; exit 2 ;; esac
missing=""
for f in bench/bench_pairs bench/bench_async_pairs bench/bench_driver_pairs standin/libcudart.so; do
  [[ -e $train/$f ]] || { missing="$train/$f"; break; }
done
if [[ $mode == 1 && -n $missing ]]; then
  echo "pgo.sh: no $missing to train with (build it: scripts/setup.sh)" >&2
  exit 2
fi
if [[ $mode == 0 || -n $missing ]]; then
  [[ $mode == 0 ]] || echo "pgo.sh: no $missing to train a profile with: built without one" >&2
  cmake -S "$root" -B "$build" -G Ninja "$@" -DGPUMEMTRACE_PGO= >/dev/null
  cmake --build "$build" --target "$target" >/dev/null
  exit 0
fi
train=$(cd "$train" && pwd)

cmake -S "$root" -B "$build" -G Ninja "$@" -DGPUMEMTRACE_PGO=generate >/dev/null
cmake --build "$build" --target "$target" >/dev/null
find "$build" -name '*.gcda' -delete # this folder's own, made by an earlier training
lib="$build/src/libgpumemtrace.so"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GMT_STANDIN_DEVICES=1 GMT_STANDIN_MEM_BYTES=$((1 << 30)) GMT_STANDIN_RESERVE_BYTES=$((1 << 30))
export GPUMEMTRACE_OUTPUT="$work/r-%p.json" GPUMEMTRACE_LOG=quiet
traced() { LD_PRELOAD="$lib" "$@" >/dev/null; }
traced "$train/bench/bench_pairs" 1 200000
GPUMEMTRACE_STACK_DEPTH=0 traced "$train/bench/bench_pairs" 1 200000
traced "$train/bench/bench_pairs" 4 50000
traced "$train/bench/bench_pairs" 1 50000 4096 24
traced "$train/bench/bench_async_pairs" 1 200000
traced "$train/bench/bench_driver_pairs" 1 100000
pys=()
for v in 3.10 3.11 3.12 3.13; do
  p=""
  if command -v pyenv >/dev/null && pre=$(pyenv prefix "$v" 2>/dev/null); then
    p="$pre/bin/python$v"
  fi
  [[ -x $p ]] || p=$(command -v "python$v" || true)
  [[ -n $p ]] && pys+=("$p")
done
((${#pys[@]})) || echo "pgo.sh: no CPython 3.10-3.13 found: trained on the C loops alone" >&2
for py in "${pys[@]}"; do
  traced "$py" "$root/bench/python_shapes.py" "$train/standin/libcudart.so" chain 100000 10 1000
  traced "$py" "$root/bench/python_shapes.py" "$train/standin/libcudart.so" nested 48000 10 20
done
n=$(find "$build" -name '*.gcda' | wc -l)
((n > 0)) || { echo "pgo.sh: the training wrote no profile" >&2; exit 1; }

cmake -S "$root" -B "$build" -G Ninja "$@" -DGPUMEMTRACE_PGO=use >/dev/null
cmake --build "$build" --target "$target" >/dev/null
echo "pgo.sh: $build built from $n profiles (${#pys[@]} Pythons)" >&2
