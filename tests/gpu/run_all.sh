#!/usr/bin/env bash
# run_all.sh BUNDLE OUTDIR - runs every gpumemtrace GPU case (see README.md) on this machine's GPU.
#
# BUNDLE: BUNDLE/bin/gpumemtrace, BUNDLE/lib/libgpumemtrace.so,
#         BUNDLE/share/gpumemtrace/report.schema.json (a relocatable bundle, or the build tree
#         seen through symlinks, as ctest_gpu.sh makes it).
# OUTDIR: gets build/ (the compiled CUDA programs' logs), one folder per case with its reports,
#         program output and result.json, and summary.txt.
#
# Prints one line per case (PASS/FAIL/SKIP name: ...) and then "N passed, M failed, K skipped".
# Exit status: 0 when nothing failed, 1 when something failed, 77 when there is no GPU
# (nvidia-smi fails), 2 on bad usage.
#
# Environment: GMT_GPU_CASES="a b ..." runs only those cases; GMT_GPU_BUDGET (seconds, default
# 540) bounds the whole run, cases that no longer fit are skipped; GMT_GPU_CASE_TIMEOUT (default
# 120); GMT_GPU_ARCH (default sm_90); NVCC; GMT_GPU_KEEP_BUILD=1 keeps the binaries.
set -u

if [ $# -ne 2 ]; then
    echo "usage: $0 BUNDLE OUTDIR" >&2
    exit 2
fi
START=$(date +%s)
BUDGET=${GMT_GPU_BUDGET:-540}
CASE_TIMEOUT=${GMT_GPU_CASE_TIMEOUT:-120}
ARCH=${GMT_GPU_ARCH:-sm_90}
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BUNDLE=$(cd "$1" 2>/dev/null && pwd) || { echo "run_all.sh: no bundle folder $1" >&2; exit 2; }
mkdir -p "$2" || exit 2
OUT=$(cd "$2" && pwd)
SUMMARY=$OUT/summary.txt
: >"$SUMMARY"
ulimit -c 0 2>/dev/null # no core dumps in OUTDIR
export NCCL_NVLS_ENABLE=0
PY=${PYTHON:-python3}

ALL_CASES="static_vs_shared auto_vs_cupti mallocasync vmm oom injection sanitizer_leaks torch_default
torch_expandable torch_nocache profiler_coexist cupy jax two_gpus torchrun_nccl
vmm_leak_gpu torch_expandable_sums torch_growth torch_snapshot_agree torch_oom_recovered
torch_os_exit torch_exec torch_signal_storm torch_sigterm_busy pools_many graph_memory
py_torch_retain py_torch_modules py_torch_expandable py_torch_compile py_torch_graph_backward py_torch_dataloader
py_jax py_cupy cli_verbs torch_sigkill_state torch_state_helper_first torch_state_race cap_runtime_stack_cupti sym_plain sym_torch
ddp_two_gpus ranks_one_gpu nccl_one_process soak_async"
CASES=${GMT_GPU_CASES:-$ALL_CASES}

say() { echo "$*"; echo "$*" >>"$SUMMARY"; }

if ! nvidia-smi -L >"$OUT/nvidia-smi.txt" 2>&1; then
    n=0
    for c in $CASES; do say "SKIP $c: nvidia-smi failed (no GPU)"; n=$((n + 1)); done
    say "all GPU cases skipped: nvidia-smi failed: $(head -c 300 "$OUT/nvidia-smi.txt" | tr '\n' ' ')"
    say "0 passed, 0 failed, $n skipped"
    exit 77
fi
{
    nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv 2>&1
    echo "bundle: $BUNDLE"
    "$BUNDLE/bin/gpumemtrace" --version 2>&1
    uname -a
    "$PY" --version 2>&1
} >>"$OUT/nvidia-smi.txt"

# ---- build the CUDA programs (in parallel; a failed build fails only the cases that need it) ----
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
CUDA_HOME_GUESS=$(cd "$(dirname "$NVCC")/.." 2>/dev/null && pwd)
B=$OUT/build
mkdir -p "$B"
# -Xlinker --export-dynamic (= gcc's -rdynamic) puts main's functions in the dynamic symbol
# table, so stacks name load_weights / make_scratch.
NVFLAGS="-O1 -g -arch=$ARCH -Xlinker --export-dynamic"
STUBS=""
for d in "$CUDA_HOME_GUESS/lib64/stubs" "$CUDA_HOME_GUESS/targets/x86_64-linux/lib/stubs"; do
    [ -d "$d" ] && STUBS="$STUBS -L$d"
done
build() { # build NAME nvcc-args...
    local name=$1
    shift
    (timeout 240 "$NVCC" $NVFLAGS "$@" >"$B/$name.log" 2>&1 || { rm -f "$B/$name"; exit 1; }) &
}
if [ -x "$NVCC" ]; then
    LEAK=$REPO/examples/leak.cu
    build leak_static -o "$B/leak_static" "$LEAK"
    build leak_shared -cudart shared -o "$B/leak_shared" "$LEAK"
    build leak_reset_o -cudart shared -c -Dmain=gmt_leak_main -o "$B/leak_reset_o.o" "$LEAK"
    build pool_static -o "$B/pool_static" "$HERE/pool.cu"
    build pool_shared -cudart shared -o "$B/pool_shared" "$HERE/pool.cu"
    build pools_many -cudart shared -o "$B/pools_many" "$HERE/pools_many.cu"
    build graph_mem -cudart shared -o "$B/graph_mem" "$HERE/graph_mem.cu"
    build vmm -o "$B/vmm" "$HERE/vmm.cu" $STUBS -lcuda
    build vmm_leak -o "$B/vmm_leak" "$HERE/vmm_leak.cu" $STUBS -lcuda
    build oom_static -o "$B/oom_static" "$HERE/oom.cu"
    build oom_shared -cudart shared -o "$B/oom_shared" "$HERE/oom.cu"
    # sym_plain: the ordinary build (plain -g, no --export-dynamic), not NVFLAGS.
    (timeout 240 "$NVCC" -g -arch="$ARCH" -o "$B/sym_plain" "$HERE/sym_plain.cu" \
        >"$B/sym_plain.log" 2>&1 || rm -f "$B/sym_plain") &
    wait
    if [ -f "$B/leak_reset_o.o" ]; then
        timeout 240 "$NVCC" $NVFLAGS -cudart shared -o "$B/leak_reset" "$HERE/leak_reset_main.cu" \
            "$B/leak_reset_o.o" >"$B/leak_reset.log" 2>&1 || rm -f "$B/leak_reset"
    else
        echo "leak_reset_o.o was not built" >"$B/leak_reset.log"
    fi
else
    echo "nvcc not found (NVCC=$NVCC)" | tee "$B/nvcc.log" >&2
    for n in leak_static leak_shared leak_reset pool_static pool_shared pools_many graph_mem vmm vmm_leak oom_static oom_shared \
        sym_plain; do
        echo "nvcc not found at $NVCC" >"$B/$n.log"
    done
fi
# torch_state_race's linkat() delay, preloaded before the tracer (a host compiler, not nvcc)
CC_HOST=${CC:-$(command -v cc || command -v gcc || echo cc)}
timeout 60 "$CC_HOST" -shared -fPIC -O1 -o "$B/slow_name.so" "$REPO/tests/integration/progs/slow_name.c" \
    -ldl >"$B/slow_name.so.log" 2>&1 || rm -f "$B/slow_name.so"
for f in "$B"/*.log; do # keep logs small
    [ "$(stat -c %s "$f")" -gt 204800 ] && truncate -s 204800 "$f"
done

# ---- the cases ----
pass=0 fail=0 skip=0
for c in $CASES; do
    dir=$OUT/$c
    rm -rf "$dir"
    mkdir -p "$dir"
    left=$((BUDGET - ($(date +%s) - START)))
    t=$CASE_TIMEOUT
    [ "$left" -lt $((t + 5)) ] && t=$((left - 5))
    if [ "$t" -lt 20 ]; then
        line="SKIP $c: time budget of ${BUDGET}s spent (GMT_GPU_BUDGET)"
    else
        timeout -k 10 "$t" "$PY" "$HERE/check.py" "$c" --bundle "$BUNDLE" --out "$dir" \
            --build "$B" --timeout "$t" >"$dir/check.out" 2>"$dir/check.err"
        rc=$?
        line=$(grep -E "^(PASS|FAIL|SKIP) $c: " "$dir/check.out" | tail -n 1)
        if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
            line="FAIL $c: expected to finish within ${t}s got a timeout (timeout exit $rc)"
        elif [ -z "$line" ]; then
            why=$(tail -n 3 "$dir/check.err" 2>/dev/null | tr '\n' ' ' | cut -c1-300)
            line="FAIL $c: expected a verdict from check.py got exit status $rc ($why)"
        elif [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ] && [ "$rc" -ne 77 ]; then
            line="FAIL $c: expected check.py exit 0/1/77 got $rc (${line})"
        fi
    fi
    say "$line"
    case $line in
    PASS*) pass=$((pass + 1)) ;;
    SKIP*) skip=$((skip + 1)) ;;
    *) fail=$((fail + 1)) ;;
    esac
    # keep OUTDIR small: no core files, no big logs
    find "$dir" -name 'core*' -type f -delete 2>/dev/null
    find "$dir" -type f -size +200k ! -name '*.json' -exec truncate -s 204800 {} + 2>/dev/null
done

if [ "${GMT_GPU_KEEP_BUILD:-0}" != 1 ]; then # binaries are not results
    find "$B" -type f ! -name '*.log' -delete 2>/dev/null
fi
say "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
