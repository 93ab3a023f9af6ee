#!/usr/bin/env bash
# live_exit.sh - the exit with many live allocations: how long the tracer takes to write its
# exit report, and what the whole traced run adds in wall time and memory (docs/PERFORMANCE.md,
# "Issue 10: the exit report with a million live allocations").
#
# usage: bench/live_exit.sh [BUILD_DIR] [REPEATS] [COUNT]
#   BUILD_DIR  a build folder (default build/): src/libgpumemtrace.so, bench/bench_live
#              ("-" when GMT_LIVE_LIB and GMT_LIVE_PROG name both)
#   REPEATS    interleaved repetitions, every setting once per repetition (default 5)
#   COUNT      live allocations at exit (default 1000000)
# Environment:
#   GMT_LIVE_LIB=PATH      the library to preload instead (a bundle's lib/libgpumemtrace.so)
#   GMT_LIVE_PROG=PATH     the program instead of BUILD_DIR/bench/bench_live; on a GPU machine
#                          `nvcc -O2 -x cu bench/bench_live.c -cudart shared -o live` (the real
#                          shared libcudart, as PyTorch loads it)
#   GMT_LIVE_OLD_LIB=PATH  an older libgpumemtrace.so as the setting "old", interleaved with
#                          the others (before and after measured side by side)
#   GMT_LIVE_TRACED_ENV="VAR=VALUE ..."  more environment for the traced settings
#                          (GPUMEMTRACE_BACKEND=hooks, GPUMEMTRACE_STACK_DEPTH=0, ...)
#   GMT_LIVE_SITES (default 4), GMT_LIVE_BYTES (default 4096): call sites, block size
#   GMT_LIVE_RAW=FILE      keeps every sample, one line per run
# Needs python3 (it times each run and reads the child's rusage and the report).
#
# Each run: bench_live allocates COUNT blocks with cudaMallocAsync from SITES call sites, keeps
# them live and returns from main. Per run: wall (spawn to reaped), alloc (the allocating loop,
# as the program timed it), exit (the return from main to reaped: the tracer's exit report and
# the process teardown), report (the report's own report_write_ms) and max RSS (the child's
# ru_maxrss). The table has the medians and, for the traced settings, what they add to native.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
reps=${2:-5}
count=${3:-1000000}
lib=${GMT_LIVE_LIB:-$build/src/libgpumemtrace.so}
prog=${GMT_LIVE_PROG:-$build/bench/bench_live}
old=${GMT_LIVE_OLD_LIB:-}
sites=${GMT_LIVE_SITES:-4}
bytes=${GMT_LIVE_BYTES:-4096}
[[ -f $lib ]] || { echo "live_exit.sh: no library $lib (build first, or set GMT_LIVE_LIB)" >&2; exit 2; }
[[ -x $prog ]] || { echo "live_exit.sh: no program $prog (build first, or set GMT_LIVE_PROG)" >&2; exit 2; }
[[ -z $old || -f $old ]] || { echo "live_exit.sh: GMT_LIVE_OLD_LIB=$old is not a file" >&2; exit 2; }
command -v python3 >/dev/null || { echo "live_exit.sh: python3 not found" >&2; exit 2; }
lib=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")
. "$root/bench/preload_path.sh"
gmt_bench_preloadable "$lib" ${old:+"$old"}
[[ -z $old ]] || old=$(cd "$(dirname "$old")" && pwd)/$(basename "$old")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
raw=${GMT_LIVE_RAW:-$work/raw.txt}
: >"$raw"

# One run: LIB ("" = native), then the command. Prints "wall alloc exit report rss_kb".
cat >"$work/run1.py" <<'EOF'
import glob, json, os, subprocess, sys, time
lib, outdir, extra = sys.argv[1], sys.argv[2], sys.argv[3]
cmd = sys.argv[4:]
env = dict(os.environ)
env.pop("LD_PRELOAD", None)
if lib:
    env["LD_PRELOAD"] = lib
    for kv in extra.split():
        k, _, v = kv.partition("=")
        env[k] = v
env["GPUMEMTRACE_OUTPUT"] = os.path.join(outdir, "r-%p.json")
env.setdefault("GPUMEMTRACE_LOG", "quiet")
with open(os.path.join(outdir, "stderr.txt"), "ab") as err:
    t0 = time.monotonic_ns()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=err)
    _, status, ru = os.wait4(p.pid, 0)
    t1 = time.monotonic_ns()
    p.returncode = os.waitstatus_to_exitcode(status)
    out = p.stdout.read().decode(errors="replace")
if p.returncode != 0:
    sys.exit(f"live_exit.sh: {cmd[0]} exited with {p.returncode}; its stderr is in the runs' log")
facts = dict(line.split(None, 1) for line in out.splitlines() if " " in line)
report = "-"
for path in glob.glob(os.path.join(outdir, "r-*.json")):
    with open(path) as f:
        ms = json.load(f).get("report_write_ms")
    report = f"{ms:.1f}" if isinstance(ms, (int, float)) else report
    os.unlink(path)
exit_ms = (t1 - int(facts["main_end_ns"])) / 1e6
print(f"{(t1 - t0) / 1e6:.1f} {float(facts['alloc_ms']):.1f} {exit_ms:.1f} {report} {ru.ru_maxrss}")
EOF

settings="native traced"
[[ -n $old ]] && settings="$settings old"
for ((r = 0; r < reps; r++)); do
  for s in $settings; do
    case $s in
      native) l="" ;;
      traced) l=$lib ;;
      old) l=$old ;;
    esac
    if ! v=$(python3 "$work/run1.py" "$l" "$work" "${GMT_LIVE_TRACED_ENV:-}" "$prog" "$count" "$bytes" "$sites"); then
      tail -20 "$work/stderr.txt" >&2
      exit 1
    fi
    echo "$s $v" >>"$raw"
  done
done

median() { # setting column -> the median of that column ("-" when it has no numbers)
  awk -v s="$1" -v c="$2" '$1 == s && $c != "-" {print $c}' "$raw" | sort -g |
    awk '{a[NR]=$1} END {if (!NR) print "-"; else print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'
}
echo "live_exit.sh: $count live allocations of $bytes bytes from $sites call sites, $reps interleaved repetitions, medians"
echo "program: $prog"
echo "traced:  $lib${GMT_LIVE_TRACED_ENV:+ ($GMT_LIVE_TRACED_ENV)}${old:+; old: $old}"
printf "%-8s %10s %10s %10s %10s %10s %11s %10s %10s\n" setting wall_ms alloc_ms exit_ms \
  report_ms rss_MB +wall_ms +exit_ms +rss_MB
nw=$(median native 2)
ne=$(median native 4)
nr=$(median native 6)
for s in $settings; do
  awk -v s="$s" -v w="$(median "$s" 2)" -v a="$(median "$s" 3)" -v e="$(median "$s" 4)" \
    -v rep="$(median "$s" 5)" -v rss="$(median "$s" 6)" -v nw="$nw" -v ne="$ne" -v nr="$nr" \
    -v n="$count" 'BEGIN {
      printf "%-8s %10.1f %10.1f %10.1f %10s %10.1f", s, w, a, e, rep, rss / 1024
      if (s == "native") printf " %11s %10s %10s\n", "-", "-", "-"
      else printf " %+11.1f %+10.1f %+10.1f  (%.0f B per live allocation)\n", w - nw, e - ne,
        (rss - nr) / 1024, (rss - nr) * 1024 / n
    }'
done
