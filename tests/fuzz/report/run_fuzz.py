#!/usr/bin/env python3
"""Runs a libFuzzer target for a bounded time from a fresh copy of a seed corpus.

usage: run_fuzz.py TARGET CORPUS_DIR SEED_DIR SECONDS [CLI]
Seeds: every file of SEED_DIR plus a few hostile shapes (deep nesting, times out of range), and
the type-swapped seeds typeswap_seeds.py derives from SEED_DIR's valid*.json and, given the
CLI, from a merged report `CLI merge` makes of them (each seed with one array given as an
object, one object as an array or one number as a string: the shape of a past crash). All are
generated into CORPUS_DIR (the build tree), never committed. libFuzzer runs every seed before
it mutates. Exit status: the fuzzer's (0 when it found nothing within the time)."""
import json
import os
import shutil
import subprocess
import sys

target, corpus, seeds, seconds = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
cli = sys.argv[5] if len(sys.argv) > 5 else None
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
# Type-swapped seeds (typeswap_seeds.py), made in a scratch folder beside the corpus.
scratch = corpus.rstrip("/") + "-typeswap"
shutil.rmtree(scratch, ignore_errors=True)
os.makedirs(scratch)
sources = [os.path.join(seeds, n) for n in sorted(os.listdir(seeds)) if n.startswith("valid")]
if cli and sources:
    merged = os.path.join(scratch, "merged.json")
    if subprocess.run([cli, "merge", "-o", merged] + sources, capture_output=True).returncode:
        sys.exit(f"run_fuzz.py: {cli} merge of {sources} failed")
    shutil.copy(merged, os.path.join(corpus, "merged.json"))
    sources.append(merged)
gen = os.path.join(os.path.dirname(os.path.abspath(__file__)), "typeswap_seeds.py")
subprocess.run([sys.executable, gen, os.path.join(scratch, "seeds")] + sources, check=True)
for name in os.listdir(os.path.join(scratch, "seeds")):
    shutil.move(os.path.join(scratch, "seeds", name), os.path.join(corpus, "typeswap." + name))
shutil.rmtree(scratch, ignore_errors=True)
proc = subprocess.run([target, f"-max_total_time={seconds}", "-rss_limit_mb=2048",
                       "-max_len=65536", "-timeout=10", "-print_final_stats=1", corpus])
sys.exit(proc.returncode)
