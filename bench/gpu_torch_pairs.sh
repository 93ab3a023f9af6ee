#!/usr/bin/env bash
# gpu_torch_pairs.sh - what the tracer adds to one PyTorch tensor allocation and release, with
# Python and native frames, on a GPU machine (docs/PERFORMANCE.md, "Session 5").
#
# usage: bench/gpu_torch_pairs.sh BUNDLE [REPS] [PAIRS]
#   BUNDLE  scripts/bundle.sh's output folder (lib/libgpumemtrace.so)
#   REPS    interleaved repetitions, every setting once per repetition (default 10)
#   PAIRS   pairs per process (default 20000)
# Environment: GMT_TP_OLD_LIB=PATH adds an older libgpumemtrace.so as the setting "old";
# GMT_TP_MODES (default "nocache async"): PYTORCH_NO_CUDA_MEMORY_CACHING=1 and/or
# PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync; GMT_TP_CPUS (default 2-5): taskset's CPUs;
# GMT_TP_RAW=FILE keeps every sample. Needs python3 with PyTorch and a GPU.
#
# Each sample is one short process running bench/gpu/torch_pairs.py: the median µs per pair of
# its ten chunks. Processes fall into modes (on the H200: 3.1-4.4 or 5.4-8.4 µs a pair with the
# async allocator, untraced too), so compare many processes and look at the fast mode as well
# as the medians.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/gpu/settings.sh
. "$here/gpu/settings.sh"
bundle=$(cd "${1:?usage: gpu_torch_pairs.sh BUNDLE [REPS] [PAIRS]}" && pwd)
reps=${2:-10}
pairs=${3:-20000}
lib="$bundle/lib/libgpumemtrace.so"
old=${GMT_TP_OLD_LIB:-}
[[ -f $lib ]] || { echo "gpu_torch_pairs.sh: no $lib" >&2; exit 2; }
[[ -z $old || -f $old ]] || { echo "gpu_torch_pairs.sh: GMT_TP_OLD_LIB=$old is not a file" >&2; exit 2; }
python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null ||
  { echo "gpu_torch_pairs.sh: PyTorch with a GPU is needed" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
raw=${GMT_TP_RAW:-$work/raw.txt}
: >"$raw"
settings=(native default off)
[[ -n $old ]] && settings+=(old)
export GPUMEMTRACE_LOG=quiet GPUMEMTRACE_OUTPUT="$work/r-%p.json"
for ((r = 0; r < reps; r++)); do
  for mode in ${GMT_TP_MODES:-nocache async}; do
    gmt_alloc_env "$mode" || { echo "gpu_torch_pairs.sh: unknown mode $mode" >&2; exit 2; }
    for s in "${settings[@]}"; do
      gmt_setting_env "$s"
      v=$(env "${alloc[@]}" "${pre[@]}" taskset -c "${GMT_TP_CPUS:-2-5}" python3 "$here/gpu/torch_pairs.py" "$pairs" 2>>"$work/stderr.txt")
      echo "$mode $s $(echo "$v" | awk '$1 == "us_per_pair" {print $2}')" >>"$raw"
      rm -f "$work"/r-*.json
    done
  done
done
python3 - "$raw" "${settings[@]}" <<'PY'
import collections, statistics, sys
v = collections.defaultdict(list)
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) == 3:
        v[(p[0], p[1])].append(float(p[2]))
for mode in ["nocache", "async"]:
    nat = v[(mode, "native")]
    if not nat:
        continue
    for s in sys.argv[2:]:
        x = sorted(v[(mode, s)])
        if not x:
            continue
        half = x[: max(1, len(x) // 2)]
        print(f"{mode:<8} {s:<8} n={len(x)} min {x[0]:.2f} median {statistics.median(x):.2f} "
              f"max {x[-1]:.2f} us/pair | added: median {statistics.median(x) - statistics.median(nat):+.2f}, "
              f"fastest half {statistics.median(half) - statistics.median(sorted(nat)[: max(1, len(nat) // 2)]):+.2f}")
PY
