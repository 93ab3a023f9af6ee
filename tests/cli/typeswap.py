#!/usr/bin/env python3
"""typeswap.py - every verb that reads a report, on every type-swapped seed.

usage: typeswap.py CLI GENERATOR WORK_DIR SAMPLE_REPORT...

GENERATOR is tests/fuzz/report/typeswap_seeds.py: from the sample reports, and from a merged
report that `gpumemtrace merge` makes of them (so "merged.ranks" and the other merged members
are swapped too), it writes seeds that each have one value's type swapped (an array given as an
object, an object as an array, a number as a string) into WORK_DIR/seeds. The libFuzzer run
(fuzz.report_reader) starts from the same seeds; this runs them through the real verbs, in a
plain build and under ASan+UBSan alike.

A seed may be refused (exit 2 with exactly one line "gpumemtrace: ..." on standard error) or
read (exit 0, or 1 where a verb's limit breaks), never anything else: no crash, no hang, no
sanitizer report, no other status.
"""
import os
import shutil
import subprocess
import sys
import time

SANITIZER_MARKS = ("Sanitizer", "runtime error:", "LeakSanitizer")


def main():
    cli, gen, work, samples = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    merged = os.path.join(work, "merged.json")
    p = subprocess.run([cli, "merge", "-o", merged] + samples, capture_output=True, timeout=60)
    if p.returncode != 0:
        print(f"FAIL: gpumemtrace merge of the samples: status {p.returncode}: {p.stderr!r}")
        return 1
    seeds_dir = os.path.join(work, "seeds")
    subprocess.run([sys.executable, gen, seeds_dir, merged] + samples, check=True, timeout=120)
    seeds = sorted(os.listdir(seeds_dir))
    if len(seeds) < 100:
        print(f"FAIL: only {len(seeds)} seeds generated")
        return 1
    valid = samples[0]
    out = os.path.join(work, "out")
    verbs = {
        "report": lambda s: ["report", s],
        "report-json": lambda s: ["report", "--json", "--device", "0", s],
        "check": lambda s: ["check", s, "--max-leak-bytes", "1", "--max-peak-bytes", "1",
                            "--max-fragmentation", "0.1", "--no-errors"],
        "diff-old": lambda s: ["diff", "--max-growth", "1", s, valid],
        "diff-new": lambda s: ["diff", valid, s],
        "merge": lambda s: ["merge", "-o", out, valid, s],
        "export-perfetto": lambda s: ["export", s, "--format", "perfetto", "-o", out],
        "export-html": lambda s: ["export", s, "--format", "html", "-o", out],
        "symbolize": lambda s: ["symbolize", "-o", out, s],
    }
    failures = []
    loaded = refused = 0
    t0 = time.monotonic()
    for name in seeds:
        path = os.path.join(seeds_dir, name)
        for vname, argv in verbs.items():
            cmd = [cli] + argv(path)
            try:
                p = subprocess.run(cmd, capture_output=True, timeout=30)
            except subprocess.TimeoutExpired:
                failures.append(f"{vname} {name}: did not finish in 30 s")
                continue
            err = p.stderr.decode("utf-8", "replace")
            lines = [ln for ln in err.splitlines() if ln.strip()]
            if any(m in err for m in SANITIZER_MARKS):
                failures.append(f"{vname} {name}: sanitizer report:\n{err[-3000:]}")
            elif p.returncode == 2:
                refused += 1
                if len(lines) != 1 or not lines[0].startswith("gpumemtrace: "):
                    failures.append(f"{vname} {name}: refused without one line: {err[-500:]!r}")
            elif p.returncode in (0, 1):
                loaded += 1
            else:
                failures.append(f"{vname} {name}: status {p.returncode}: {err[-1000:]}")
    took = time.monotonic() - t0
    if failures:
        print(f"FAIL: {len(failures)} of {len(seeds) * len(verbs)} runs\n" +
              "\n".join(failures[:50]))
        print(f"(reproduce: python3 {gen} DIR {merged} {' '.join(samples)})")
        return 1
    print(f"ok: {len(verbs)} verbs x {len(seeds)} type-swapped seeds: {loaded} read, "
          f"{refused} refused with one line, in {took:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
