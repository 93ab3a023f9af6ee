#!/usr/bin/env bash
# ctest_gpu.sh OUTDIR LIB CLI SCHEMA [BUNDLE] - the ctest `gpu.all` (label gpu).
#
# Exits 77 (ctest shows "skipped") when there is no GPU. Otherwise runs run_all.sh against
# BUNDLE when one is given (cmake -DGMT_GPU_BUNDLE=DIR), else against the build tree, seen as a
# bundle through a temporary folder of symlinks: bin/gpumemtrace -> CLI,
# lib/libgpumemtrace.so -> LIB, share/gpumemtrace/report.schema.json -> SCHEMA.
set -u
if [ $# -lt 4 ]; then
    echo "usage: $0 OUTDIR LIB CLI SCHEMA [BUNDLE]" >&2
    exit 2
fi
OUTDIR=$1 LIB=$2 CLI=$3 SCHEMA=$4 BUNDLE=${5:-}
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "no GPU (nvidia-smi missing or failing): all GPU cases skipped"
    exit 77
fi
# GMT_GPU_MIN_GPUS=N (the two-GPU ctest): skipped unless nvidia-smi lists at least N GPUs.
want=${GMT_GPU_MIN_GPUS:-1}
have=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
if [ "$have" -lt "$want" ]; then
    echo "needs $want GPUs, nvidia-smi lists $have: skipped"
    exit 77
fi
HERE=$(cd "$(dirname "$0")" && pwd)
if [ -z "$BUNDLE" ]; then
    BUNDLE=$(mktemp -d "${TMPDIR:-/tmp}/gmt-bundle.XXXXXX") || exit 1
    trap 'rm -rf "$BUNDLE"' EXIT
    mkdir -p "$BUNDLE/bin" "$BUNDLE/lib" "$BUNDLE/share/gpumemtrace"
    ln -s "$CLI" "$BUNDLE/bin/gpumemtrace"
    ln -s "$LIB" "$BUNDLE/lib/libgpumemtrace.so"
    ln -s "$SCHEMA" "$BUNDLE/share/gpumemtrace/report.schema.json"
fi
rm -rf "$OUTDIR"
"$HERE/run_all.sh" "$BUNDLE" "$OUTDIR"
