#!/usr/bin/env bash
# gpu_probe.sh - where the tracer's cost goes on a GPU machine that has no profiler: the probe
# build (-DGPUMEMTRACE_PROBES=ON, core/probe.h) takes one piece of the event path out at a
# time (GMT_PROBE_SKIP), and each setting runs interleaved with the native program and the
# product library (docs/PERFORMANCE.md, "Probes on the H200").
#
# usage: bench/gpu_probe.sh BUNDLE PROBE_LIB [REPS]
#   BUNDLE     scripts/bundle.sh's output folder (lib/libgpumemtrace.so: the product)
#   PROBE_LIB  the probe build's libgpumemtrace.so (`bash bench/probe_lib.sh DIR` builds one
#              into DIR with the bundle's options; put it beside the bundle's libraries so
#              that its $ORIGIN run path finds them)
#   REPS       interleaved repetitions (default 7)
# Rows: 16thr (16 threads x 5000 cudaMalloc+cudaFree, 4-64 KiB, us per call one thread sees)
# and async (one thread, cudaMallocAsync+cudaFreeAsync, us per pair), all traced settings
# with stacks off (GPUMEMTRACE_STACK_DEPTH=0): the walk is measured by gpu_bench.sh.
# Settings: native; off (the product); p-none (the probe build, nothing skipped: what the
# probe checks cost); p-NAME (p-none without the piece NAME of core/probe.h); p-core (every
# piece but the hooks: ctxdev, devline, table, stackent, shards, clock); p-record (no event
# reaches the core: interposition, describe and the nesting bracket alone); native-spinN (the
# untraced program busy for N ns after every call, outside CUDA: bench/gpu/pairs.c);
# native-q-Q (the untraced program asking for the current device after every cudaMalloc, Q one
# of ctxdev, ctxcur, rtdev: what each way of asking costs among 16 threads).
# Environment: GMT_BENCH_RAW=FILE keeps every sample; NVCC; GMT_PROBE_SETTINGS (a subset);
# GMT_PROBE_ROWS (default "16thr async").
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/gpu/settings.sh
. "$here/gpu/settings.sh"
bundle=$(cd "${1:?usage: gpu_probe.sh BUNDLE PROBE_LIB [REPS]}" && pwd)
probe=${2:?usage: gpu_probe.sh BUNDLE PROBE_LIB [REPS]}
reps=${3:-7}
lib="$bundle/lib/libgpumemtrace.so"
[[ -f $lib ]] || { echo "gpu_probe.sh: no $lib" >&2; exit 2; }
[[ -f $probe ]] || { echo "gpu_probe.sh: no probe library $probe" >&2; exit 2; }
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[[ -x $nvcc ]] || { echo "gpu_probe.sh: nvcc not found (set NVCC)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
raw=${GMT_BENCH_RAW:-$work/raw.txt}
: >"$raw"
"$nvcc" -x c++ -O2 -cudart shared -o "$work/pairs" "$here/gpu/pairs.c" -ldl -lpthread || exit 1
export GPUMEMTRACE_OUTPUT="$work/r-%p.json" GPUMEMTRACE_LOG=quiet

run() { # setting, then the command; prints the command's number
  local s=$1 pre=()
  shift
  case $s in
    native-spin*) pre=(PAIRS_SPIN_NS="${s#native-spin}") ;;
    native-q-*) pre=(PAIRS_QUERY="${s#native-q-}") ;;
    *) gmt_setting_env "$s" || { echo "gpu_probe.sh: unknown setting $s" >&2; exit 2; } ;;
  esac
  env "${pre[@]}" "$@" 2>>"$work/stderr.txt" | awk '$1 ~ /^(us_per_pair|us_per_call)$/ {print $2}'
  rm -f "$work"/r-*.json
}

settings=${GMT_PROBE_SETTINGS:-"native off p-none p-record p-core p-ctxdev p-devline p-timeline p-table p-stackent p-shards p-clock"}
for ((r = 0; r < reps; r++)); do
  for s in $settings; do
    for row in ${GMT_PROBE_ROWS:-16thr async}; do
      case $row in
        16thr) echo "16thr $s $(run "$s" "$work/pairs" threads 16 5000)" >>"$raw" ;;
        async) echo "async $s $(run "$s" "$work/pairs" async 20000)" >>"$raw" ;;
      esac
    done
  done
done

GMT_BENCH_GPU_DIR="$here/gpu" python3 - "$raw" $settings <<'PY'
import os, statistics, sys
sys.path.insert(0, os.environ["GMT_BENCH_GPU_DIR"])
from samples import load
# Samples in run order: the n-th sample of every setting belongs to repetition n, so each is
# also compared with native of its own repetition (the machine drifts between repetitions).
samples = load(sys.argv[1])
settings = sys.argv[2:]
print(f"{'row':<6} {'setting':<15} {'median':>9} {'+native':>9} {'q1':>9} {'ratio/rep':>10} {'n':>3}")
for row in ["16thr", "async"]:
    nat = samples.get((row, "native"), [])
    for s in settings:
        v = samples.get((row, s), [])
        if not v:
            continue
        med, q1 = statistics.median(v), sorted(v)[len(v) // 4]
        add = med - statistics.median(nat) if nat else float("nan")
        per = [a / b for a, b in zip(v, nat) if b > 0]
        ratio = f"{statistics.median(per):10.3f}" if per else f"{'-':>10}"
        print(f"{row:<6} {s:<15} {med:9.3f} {add:+9.3f} {q1:9.3f} {ratio} {len(v):3d}")
PY
echo "gpu_probe.sh: stderr of the runs: $(wc -l <"$work/stderr.txt") lines"
[[ -s $work/stderr.txt ]] && head -5 "$work/stderr.txt"
exit 0
