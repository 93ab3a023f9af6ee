#!/usr/bin/env python3
"""Runs a libFuzzer target for a bounded time from a fresh copy of a seed corpus.

usage: run_fuzz.py TARGET CORPUS_DIR SEED_DIR SECONDS
Seeds: every file of SEED_DIR plus a few hostile shapes (deep nesting, times out of range). Exit
status: the fuzzer's (0 when it found nothing within the time)."""
import json
import os
import shutil
import subprocess
import sys

target, corpus, seeds, seconds = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
shutil.rmtree(corpus, ignore_errors=True)
os.makedirs(corpus)
for name in os.listdir(seeds):
    shutil.copy(os.path.join(seeds, name), os.path.join(corpus, name))
with open(os.path.join(corpus, "deep.json"), "w") as f:
    f.write("[" * 5000)
with open(os.path.join(corpus, "deep_obj.json"), "w") as f:
    f.write('{"schema":"gpumemtrace.report","version":1,"tool":' + '{"a":' * 2000)
# Times beyond what pprof's int64 nanoseconds hold (found by this fuzzer: a float-to-integer
# conversion out of range is undefined behaviour): every run replays them first.
for name in sorted(os.listdir(seeds)):
    if not name.startswith("valid"):
        continue
    with open(os.path.join(seeds, name)) as f:
        rep = json.load(f)
    for i, (start, duration) in enumerate([(1.75e21, 1e300), (-1e30, 1.8e29), (1e308, -1)]):
        rep["process"].update(start_time=start, end_time=-start, duration_s=duration)
        with open(os.path.join(corpus, f"huge_time_{i}_{name}"), "w") as f:
            json.dump(rep, f)
proc = subprocess.run([target, f"-max_total_time={seconds}", "-rss_limit_mb=2048",
                       "-max_len=65536", "-timeout=10", "-print_final_stats=1", corpus])
sys.exit(proc.returncode)
