#!/usr/bin/env bash
# The main job: trace examples/leak (a program that leaks from two call sites) and print the
# report. Real GPU when nvidia-smi and nvcc work, stand-in CUDA otherwise.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
build=$(cd "$build" && pwd)
out=$(mktemp -d)
cli="$build/src/gpumemtrace"
if nvidia-smi >/dev/null 2>&1 && command -v nvcc >/dev/null 2>&1; then
  echo "demo: GPU found: building examples/leak.cu with nvcc -cudart shared"
  nvcc -O1 -g -cudart shared -Xlinker --export-dynamic -o "$out/leak" "$root/examples/leak.cu"
  prog="$out/leak"
else
  echo "demo: no GPU here: running examples/leak_standin against the stand-in CUDA runtime"
  prog="$build/examples/leak_standin"
fi
"$cli" run -o "$out/report.json" -- "$prog"
"$cli" report "$out/report.json"
echo "demo: report at $out/report.json"
