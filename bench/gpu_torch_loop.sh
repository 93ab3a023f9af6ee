#!/usr/bin/env bash
# gpu_torch_loop.sh - what the tracer adds to a PyTorch training loop, ms a step, on a GPU
# machine: issue 10's PyTorch rows (docs/PERFORMANCE.md, "Session 8").
#
# usage: bench/gpu_torch_loop.sh BUNDLE [REPS] [STEPS]
#   BUNDLE  scripts/bundle.sh's output folder (lib/libgpumemtrace.so)
#   REPS    interleaved repetitions, every setting of every mode once per repetition (default 6)
#   STEPS   measured steps per process, after 5 of warm-up (default 60)
# Environment: GMT_TL_SCRIPT (default bench/gpu/torch_transformer.py; bench/gpu/torch_loop.py
# is the lighter MLP); GMT_TL_MODES (default "nocache async"); GMT_TL_OLD_LIB=PATH adds an
# older libgpumemtrace.so as the setting "old"; GMT_TL_CPUS (default 2-5): taskset's CPUs;
# GMT_TL_SETTINGS (default "native default off", plus "old" with GMT_TL_OLD_LIB): also
# "nopy" (default with GPUMEMTRACE_PYTHON=0), "d8" (GPUMEMTRACE_STACK_DEPTH=8) and, with
# GMT_TL_PROBE_LIB=PATH (bench/probe_lib.sh), "p-none" and "p-NAME" (the probe build, stacks
# off, without the piece NAME of src/core/probe.h; "p-core": every piece of the core), and
# "ab-default", "ab-off", "ab-nopy": one probe-build process alternating blocks of steps
# between the tracer passing every call through and the tracer recording (default, stacks off,
# Python frames off; GMT_TL_AB in torch_transformer.py; "ab-wall": the default with the probe's
# timers off, blocks of two steps), its sample the process's ab_ratio:
# traced over pass-through in the same process, so the host's per-process modes cancel;
# each ab-* process also prints the probe build's timers (torch_transformer.py's probe_*
# lines: what each piece of the event path took a traced step); GMT_TL_RAW=FILE keeps every sample; GMT_TL_BUDGET=SECONDS starts no repetition after that
# long (default: no limit). Needs python3 with PyTorch and a GPU.
#
# Settings: native; default (Python and native stacks on, depth 32); off (stacks off); old.
# Each sample is one process: the median ms of its steps. "ratio/rep" is the median over
# repetitions of a setting's sample divided by native's of the same repetition (the machine
# drifts between repetitions; processes fall into modes). "pairs/step" counts the traced
# allocations of one default process (its report's capture.events.allocs over all its steps,
# warm-up included), and "us/pair" is the median added time a step divided by it.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/gpu/settings.sh
. "$here/gpu/settings.sh"
bundle=$(cd "${1:?usage: gpu_torch_loop.sh BUNDLE [REPS] [STEPS]}" && pwd)
reps=${2:-6}
steps=${3:-60}
lib="$bundle/lib/libgpumemtrace.so"
old=${GMT_TL_OLD_LIB:-}
script=${GMT_TL_SCRIPT:-$here/gpu/torch_transformer.py}
[[ -f $lib ]] || { echo "gpu_torch_loop.sh: no $lib" >&2; exit 2; }
[[ -f $script ]] || { echo "gpu_torch_loop.sh: no $script" >&2; exit 2; }
[[ -z $old || -f $old ]] || { echo "gpu_torch_loop.sh: GMT_TL_OLD_LIB=$old is not a file" >&2; exit 2; }
python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null ||
  { echo "gpu_torch_loop.sh: PyTorch with a GPU is needed" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
raw=${GMT_TL_RAW:-$work/raw.txt}
: >"$raw"
: >"$work/pairs.txt" # stays empty when no default or off setting runs (no us/pair then)
probe=${GMT_TL_PROBE_LIB:-}
if [[ -n ${GMT_TL_SETTINGS:-} ]]; then
  read -r -a settings <<<"$GMT_TL_SETTINGS"
else
  settings=(native default off)
  [[ -n $old ]] && settings+=(old)
fi
for s in "${settings[@]}"; do
  [[ $s == old && -z $old ]] && { echo "gpu_torch_loop.sh: setting old needs GMT_TL_OLD_LIB" >&2; exit 2; }
  [[ ($s == p-* || $s == ab-*) && ! -f $probe ]] && { echo "gpu_torch_loop.sh: setting $s needs GMT_TL_PROBE_LIB" >&2; exit 2; }
done
modes=${GMT_TL_MODES:-nocache async}
export GPUMEMTRACE_LOG=quiet GPUMEMTRACE_OUTPUT="$work/r-%p.json"
start=$(date +%s)
for ((r = 0; r < reps; r++)); do
  if [[ -n ${GMT_TL_BUDGET:-} ]] && (($(date +%s) - start > GMT_TL_BUDGET)); then
    echo "gpu_torch_loop.sh: time budget reached after $r repetitions" >&2
    break
  fi
  for mode in $modes; do
    gmt_alloc_env "$mode" || { echo "gpu_torch_loop.sh: unknown mode $mode" >&2; exit 2; }
    for s in "${settings[@]}"; do
      gmt_setting_env "$s" || { echo "gpu_torch_loop.sh: unknown setting $s" >&2; exit 2; }
      v=$(env "${alloc[@]}" "${pre[@]}" taskset -c "${GMT_TL_CPUS:-2-5}" python3 "$script" "$steps" 2>>"$work/stderr.txt")
      if [[ $s == ab-* ]]; then
        echo "$mode $s $(echo "$v" | awk '$1 == "ab_ratio" {print $2}')" >>"$raw"
        echo "$mode $s-pass $(echo "$v" | awk '$1 == "ms_pass" {print $2}')" >>"$raw"
        echo "$v" | awk -v m="$mode" -v s="$s" '$1 ~ /^probe_/ {print m, s, $0}' >>"$work/probes.txt"
      else
        echo "$mode $s $(echo "$v" | awk '$1 == "ms_per_step" {print $2}')" >>"$raw"
      fi
      n=$(echo "$v" | awk '$1 == "steps" {print $2}')
      if [[ ($s == default || $s == off) && $r == 0 ]]; then
        python3 - "$work" "$mode" "${n:-0}" >>"$work/pairs.txt" <<'PY'
import glob, json, sys
for p in glob.glob(sys.argv[1] + "/r-*.json"):
    try:
        ev = json.load(open(p))["capture"]["events"]
    except Exception:
        continue
    if int(sys.argv[3]) > 0:
        print(sys.argv[2], ev.get("allocs", 0) / int(sys.argv[3]))
PY
      fi
      rm -f "$work"/r-*.json
    done
  done
done
GMT_BENCH_GPU_DIR="$here/gpu" python3 - "$raw" "$work/pairs.txt" "$modes" "${settings[@]}" <<'PY'
import os, statistics, sys
sys.path.insert(0, os.environ["GMT_BENCH_GPU_DIR"])
from samples import load
samples = load(sys.argv[1])
pairs = {}
for line in open(sys.argv[2]):
    m, v = line.split()
    pairs[m] = max(pairs.get(m, 0.0), float(v))
print(f"{'mode':<8} {'setting':<8} {'median':>9} {'+native':>9} {'+%':>7} {'ratio/rep':>10} "
      f"{'min..max':>17} {'pairs/step':>10} {'us/pair':>8} {'n':>3}")
for mode in sys.argv[3].split():
    nat = samples.get((mode, "native"), [])
    for s in sys.argv[4:]:
        v = samples.get((mode, s), [])
        if not v or s.startswith("ab-"):
            continue
        med = statistics.median(v)
        add = med - statistics.median(nat) if nat else float("nan")
        pct = 100 * add / statistics.median(nat) if nat else float("nan")
        per = [a / b for a, b in zip(v, nat) if b > 0]
        ratio = statistics.median(per) if per else float("nan")
        pp = pairs.get(mode, 0.0)
        us = f"{1000 * add / pp:8.2f}" if pp and s != "native" else f"{'':>8}"
        print(f"{mode:<8} {s:<8} {med:9.3f} {add:+9.3f} {pct:+7.2f} {ratio:10.4f} "
              f"{min(v):8.2f}..{max(v):<8.2f} {pp:10.0f} {us} {len(v):3d}")
ab = [s for s in sys.argv[4:] if s.startswith("ab-")]
if ab:
    print(f"{'mode':<8} {'in-process':<11} {'ab_ratio':>9} {'+%':>7} {'min..max':>17} "
          f"{'ms pass':>8} {'us/pair':>8} {'n':>3}")
for mode in sys.argv[3].split():
    for s in ab:
        v = samples.get((mode, s), [])
        if not v:
            continue
        med = statistics.median(v)
        msp = statistics.median(samples.get((mode, s + "-pass"), [0.0]))
        pp = pairs.get(mode, 0.0)
        us = f"{1000 * (med - 1) * msp / pp:8.2f}" if pp else f"{'':>8}"
        print(f"{mode:<8} {s:<11} {med:9.4f} {100 * (med - 1):+7.2f} {min(v):8.4f}..{max(v):<8.4f} "
              f"{msp:8.3f} {us} {len(v):3d}")
PY
if [[ -s $work/probes.txt ]]; then
  echo "the probe build's timers, each in-process sample (traced steps only):"
  sort -s -k1,2 "$work/probes.txt"
fi
echo "gpu_torch_loop.sh: stderr of the runs: $(wc -l <"$work/stderr.txt") lines"
[[ -s $work/stderr.txt ]] && tail -5 "$work/stderr.txt"
exit 0
