# settings.sh - sourced by the GPU benchmarks (gpu_torch_loop.sh, gpu_torch_pairs.sh,
# gpu_probe.sh, gpu_bench.sh, gpu_callgrind.sh): the environment of each tracer setting and of
# each PyTorch allocator mode, and the empty CUPTI probe, written once.
#
# gmt_setting_env SETTING  sets the array pre to the environment that setting runs with, from
#   the caller's $lib (the bundle's library), $old (an older library) and $probe (the probe
#   build, bench/probe_lib.sh); returns 1 for a setting it does not know. Settings:
#   native; default (stacks and Python frames on, depth 32); off (stacks off); cupti and
#   cupti-off (GPUMEMTRACE_BACKEND=cupti, stacks on and off); old; nopy
#   (Python frames off); d8 (depth 8); p-none, p-core and p-NAME (the probe build with stacks
#   off: nothing, every piece of the core, the piece NAME of src/core/probe.h skipped);
#   ab-default, ab-off, ab-nopy (the probe build, GMT_TL_AB=0: bench/gpu/torch_transformer.py
#   alternates pass-through and recording inside one process, timing each piece); ab-wall (the
#   same as ab-default with the probe's timers off and blocks of two steps: the wall time the
#   tracer adds, without the timers' own; docs/PERFORMANCE.md, "Session 11").
# gmt_alloc_env MODE  sets the array alloc to PyTorch's allocator environment: nocache
#   (PYTORCH_NO_CUDA_MEMORY_CACHING=1) or async (backend:cudaMallocAsync); returns 1 else.

# Every piece of the core (probe.h), skipped by the setting p-core.
GMT_PROBE_CORE=ctxdev,devline,table,stackent,shards,clock

gmt_setting_env() {
  case $1 in
    native) pre=() ;;
    default) pre=(LD_PRELOAD="$lib") ;;
    off) pre=(LD_PRELOAD="$lib" GPUMEMTRACE_STACK_DEPTH=0) ;;
    old) pre=(LD_PRELOAD="$old") ;;
    cupti) pre=(LD_PRELOAD="$lib" GPUMEMTRACE_BACKEND=cupti) ;;
    cupti-off) pre=(LD_PRELOAD="$lib" GPUMEMTRACE_BACKEND=cupti GPUMEMTRACE_STACK_DEPTH=0) ;;
    nopy) pre=(LD_PRELOAD="$lib" GPUMEMTRACE_PYTHON=0) ;;
    d8) pre=(LD_PRELOAD="$lib" GPUMEMTRACE_STACK_DEPTH=8) ;;
    p-none) pre=(LD_PRELOAD="$probe" GPUMEMTRACE_STACK_DEPTH=0) ;;
    p-core) pre=(LD_PRELOAD="$probe" GPUMEMTRACE_STACK_DEPTH=0 GMT_PROBE_SKIP="$GMT_PROBE_CORE") ;;
    p-*) pre=(LD_PRELOAD="$probe" GPUMEMTRACE_STACK_DEPTH=0 GMT_PROBE_SKIP="${1#p-}") ;;
    ab-default) pre=(LD_PRELOAD="$probe" GMT_TL_AB=0) ;;
    ab-off) pre=(LD_PRELOAD="$probe" GMT_TL_AB=0 GPUMEMTRACE_STACK_DEPTH=0) ;;
    ab-nopy) pre=(LD_PRELOAD="$probe" GMT_TL_AB=0 GPUMEMTRACE_PYTHON=0) ;;
    ab-wall) pre=(LD_PRELOAD="$probe" GMT_TL_AB=1024 GMT_TL_AB_BLOCK=2) ;; # 1024: "notimers"
    *) return 1 ;;
  esac
}

gmt_alloc_env() {
  case $1 in
    nocache) alloc=(PYTORCH_NO_CUDA_MEMORY_CACHING=1) ;;
    async) alloc=(PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync) ;;
    *) return 1 ;;
  esac
}

# gmt_build_cupti_empty CUDA_HOME SRC OUT  builds bench/gpu/cupti_empty.c (SRC), an empty CUPTI
#   callback on the driver calls the tracer hooks (the driver's and CUPTI's dispatch alone),
#   into OUT; returns 1 without cupti.h and libcupti.so under CUDA_HOME or when it fails.
gmt_build_cupti_empty() {
  local inc so
  inc=$(dirname "$(find "$1/" -name cupti.h 2>/dev/null | head -1)")
  so=$(find "$1/" -name 'libcupti.so' 2>/dev/null | head -1)
  [[ -n $so && -d $inc ]] || return 1
  cc -shared -fPIC -O2 -I"$1/include" -I"$inc" -o "$3" "$2" -L"$(dirname "$so")" -lcupti \
    -Wl,-rpath,"$(dirname "$so")"
}
