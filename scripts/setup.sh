#!/usr/bin/env bash
# One command from a fresh clone: installs the Debian packages, builds gpumemtrace (library,
# CLI, tests) into build/, then runs the main job: a leaking example traced and summarised.
# On a machine with an NVIDIA GPU and nvcc the example is real CUDA; elsewhere it runs against
# the stand-in CUDA runtime the tests build.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build
bash scripts/demo.sh build
