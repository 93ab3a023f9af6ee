#!/usr/bin/env bash
# top_view.sh - what one `gpumemtrace top --once` view costs on the state file of a job with
# many live allocations: wall time and the reader's peak RSS (docs/PERFORMANCE.md, "top's view
# of a state file with a million live allocations").
#
# usage: bench/top_view.sh [BUILD_DIR] [REPEATS] [COUNT]
#   BUILD_DIR  a build folder (default build/): src/gpumemtrace, src/libgpumemtrace.so,
#              bench/bench_live
#   REPEATS    views timed per setting, interleaved (default 11)
#   COUNT      live allocations in the state file (default 1000000; 4 call sites)
# Environment:
#   GMT_TOP_OLD_CLI=PATH  an older gpumemtrace as the setting "old", interleaved with "new"
#                         (before and after measured side by side on one state file)
#   GMT_TOP_DIR=DIR       where the state file is written (default: a temporary folder)
# Needs python3 (it times each view) and GNU time (/usr/bin/time: the view's own peak RSS; a
# child's ru_maxrss read by python3 would include python3's, which the child had until its exec).
#
# The state file is bench_live's (COUNT blocks of 4096 bytes live when it returns from main),
# written under the tracer with GPUMEMTRACE_STATE; each view reads it as `top --once` does.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
reps=${2:-11}
count=${3:-1000000}
cli=$build/src/gpumemtrace
old=${GMT_TOP_OLD_CLI:-}
for f in "$cli" "$build/src/libgpumemtrace.so" "$build/bench/bench_live" ${old:+"$old"}; do
  [[ -x $f || -f $f ]] || { echo "top_view.sh: no $f (build first)" >&2; exit 2; }
done
. "$root/bench/preload_path.sh"
gmt_bench_preloadable "$build/src/libgpumemtrace.so"
command -v python3 >/dev/null || { echo "top_view.sh: python3 not found" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "top_view.sh: GNU time (/usr/bin/time) not found" >&2; exit 2; }
work=$(mktemp -d "${GMT_TOP_DIR:-${TMPDIR:-/tmp}}/gmt-top-view.XXXXXX")
trap 'rm -rf "$work"' EXIT
state=$work/live.gmt
LD_PRELOAD=$build/src/libgpumemtrace.so GPUMEMTRACE_STATE=$state GPUMEMTRACE_LOG=quiet \
  GPUMEMTRACE_OUTPUT=$work/exit.json "$build/bench/bench_live" "$count" >/dev/null

python3 - "$state" "$reps" "$cli" ${old:+"$old"} <<'EOF'
import os, struct, subprocess, sys, time
state, reps, clis = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
names = ["new", "old"][:len(clis)]
with open(state, "rb") as f:
    h = f.read(312)
arenas = [struct.unpack_from("<4Q", h, 120 + 32 * a) for a in range(6)]
size = os.path.getsize(state)
print(f"top_view.sh: {state}: {size / 2**20:.1f} MiB, of which the live table "
      f"{arenas[4][2] / 2**20:.1f} MiB; {reps} views per setting, interleaved, medians")
res = {n: [] for n in names}
for _ in range(reps):
    for n, cli in zip(names, clis):
        t0 = time.monotonic_ns()
        p = subprocess.run(["/usr/bin/time", "-f", "maxrss_kb %M", cli, "top", "--once", state],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        t1 = time.monotonic_ns()
        if p.returncode != 0:
            sys.exit(f"top_view.sh: {cli} top --once ended with {p.returncode}: {p.stderr}")
        kb = int(p.stderr.split("maxrss_kb ")[-1].split()[0])
        res[n].append(((t1 - t0) / 1e6, kb / 1024))
med = lambda xs: sorted(xs)[len(xs) // 2]
print(f"{'setting':8} {'wall_ms':>9} {'rss_MiB':>9}")
for n in names:
    print(f"{n:8} {med([w for w, _ in res[n]]):9.1f} {med([r for _, r in res[n]]):9.1f}")
EOF
