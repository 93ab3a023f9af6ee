"""GPU case of the CLI's verbs (issue 8), registered into check.py's CASES by register().

cli_verbs: a real PyTorch run (torch_alloc.py), traced twice (framework cache on, and off with
--no-framework-cache), then every verb on those reports: report (text and --json), check
(a limit that holds: exit 0; one that cannot: exit 1), diff, merge (-o, and the merged file
read back by report and check), export in every format (each parsed), and the HTML page saved
as cli_page.html, with a headless-Chromium screenshot cli_page.png when chromium is installed
(else the coordinator takes one from the saved page). Standard library only.
"""
import gzip
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def _cli(c, name, args, want_rc):
    """Runs `gpumemtrace ARGS`, saves its output as CASEDIR/cli_NAME.txt, checks the status."""
    p = subprocess.run([c.cli] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=c.env(), cwd=c.out, timeout=max(5, min(60, c.remaining())))
    out = p.stdout.decode("utf-8", "replace")
    err = p.stderr.decode("utf-8", "replace")
    c.save(f"cli_{name}.txt", out + ("\n--- stderr\n" + err if err else ""))
    c.expect(f"gpumemtrace {' '.join(args[:2])} ({name}) exit status", p.returncode, want_rc)
    return out


def cli_verbs(c):
    runs = {}
    for name, flags in (("cached", []), ("nocache", ["--no-framework-cache"])):
        res = os.path.join(c.out, f"cli_{name}.torch.json")
        pattern = os.path.join(c.out, f"cli_{name}.json")
        argv = [c.cli, "run", "-o", pattern] + flags + ["--", sys.executable,
                                                        os.path.join(HERE, "torch_alloc.py"), res]
        r = c.run(f"cli_{name}", argv, trace=False, timeout=50)
        c.program_ok(r)
        c.load(r, pattern)
        runs[name] = pattern
    a, b = runs["cached"], runs["nocache"]

    text = _cli(c, "report", ["report", a], 0)
    c.expect_true("report text to have a Leaks line", "Leaks:" in text, text[:300])
    with open(a) as f:
        status = ((json.load(f).get("capture") or {}).get("python") or {}).get("status")
    if status == "captured":
        c.expect_true("report text to name a Python frame (-> ... .py:N)", ".py:" in text,
                      text[:500])
    else:
        c.note(f"capture.python.status {status!r}: no Python frames to show")
    js = json.loads(_cli(c, "report_json", ["report", "--json", a], 0) or "{}")
    c.expect_true("report --json leaks.total_bytes > 0",
                  js.get("leaks", {}).get("total_bytes", 0) > 0, js.get("leaks"))

    # allocation sites with the framework's cache off: every tensor a cudaMalloc, so the top
    # site allocated more than once, and the sites' counts are the devices' allocations
    with open(b) as f:
        rb = json.load(f)
    sites = rb.get("allocation_sites") or []
    dev_allocs = sum(d.get("allocs", 0) for d in rb.get("devices") or [])
    site_allocs = sum(x.get("allocs", 0) for x in sites)
    c.expect_true("nocache: allocation_sites listed, the top one allocating more than once",
                  bool(sites) and sites[0].get("allocs", 0) > 1, sites[:2])
    if rb.get("allocation_sites_total", 0) <= len(sites):
        c.expect("nocache: sum of allocation_sites allocs == sum of devices[].allocs",
                 site_allocs, dev_allocs)
    else:
        c.expect_true("nocache: listed allocation_sites allocs <= devices' allocs",
                      site_allocs <= dev_allocs, (site_allocs, dev_allocs))
    text_b = _cli(c, "report_nocache", ["report", b], 0)
    c.expect_true("report text to list the allocation sites", "Allocation sites" in text_b,
                  text_b[-600:])
    c.note(f"nocache: {rb.get('allocation_sites_total')} allocation sites, top "
           f"{sites[0].get('allocs') if sites else None} allocations; {site_allocs} listed of "
           f"{dev_allocs} device allocations")

    _cli(c, "check_pass", ["check", a, "--max-leak-bytes", "100GiB", "--max-peak-bytes", "200GiB"], 0)
    fail = _cli(c, "check_fail", ["check", a, "--max-leak-bytes", "0",
                                  "--junit", os.path.join(c.out, "cli_junit.xml")], 1)
    c.expect_true("check FAIL line", fail.startswith("FAIL "), fail[:200])

    diff = _cli(c, "diff", ["diff", a, b], 0)
    c.expect_true("diff to list peak per device", "Peak per device" in diff, diff[:300])

    merged = os.path.join(c.out, "cli_merged.json")
    m = _cli(c, "merge", ["merge", a, b, "-o", merged], 0)
    c.expect_true("merge to print the imbalance", "peak imbalance" in m, m[:300])
    _cli(c, "report_merged", ["report", merged], 0)
    with open(a) as f:
        ta = json.load(f).get("allocation_sites_total", 0)
    with open(merged) as f:
        c.expect("merged allocation_sites_total == the two runs' sum",
                 json.load(f).get("allocation_sites_total"), ta + rb.get("allocation_sites_total", 0))
    _cli(c, "check_merged", ["check", merged, "--max-leak-bytes", "100GiB"], 0)

    outs = {}
    for fmt in ("folded", "speedscope", "perfetto", "prometheus", "pprof", "html"):
        path = os.path.join(c.out, f"cli_export.{fmt}")
        _cli(c, "export_" + fmt, ["export", a, "--format", fmt, "-o", path], 0)
        outs[fmt] = path
        c.expect_true(f"export {fmt} file to be non-empty",
                      os.path.exists(path) and os.path.getsize(path) > 0, path)
    try:
        for fmt in ("speedscope", "perfetto"):
            with open(outs[fmt]) as f:
                json.load(f)
        with gzip.open(outs["pprof"]) as f:
            c.expect_true("pprof to hold leaked_space", b"leaked_space" in f.read(), "")
    except Exception as e:  # a parse error is a failure of the case, not of the harness
        c.failures.append(f"expected the exports to parse got {e}")
    page = os.path.join(c.out, "cli_page.html")
    if os.path.exists(outs["html"]):
        shutil.copy(outs["html"], page)
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or \
        shutil.which("google-chrome")
    if browser and os.path.exists(page):
        prof = os.path.join(c.out, "cli_chromium_profile")
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                        "--disable-background-networking", "--disable-component-update",
                        "--disable-sync", "--user-data-dir=" + prof, "--hide-scrollbars",
                        "--window-size=1280,2400", "--virtual-time-budget=5000",
                        "--screenshot=" + os.path.join(c.out, "cli_page.png"), "file://" + page],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=max(5, min(40, c.remaining())))
        shutil.rmtree(prof, ignore_errors=True)
        c.note("screenshot cli_page.png" if os.path.exists(os.path.join(c.out, "cli_page.png"))
               else "chromium made no screenshot")
    else:
        c.note("no chromium here: screenshot cli_page.html elsewhere")


def register(mod):
    """mod: check.py's module; its case() decorator adds a function to CASES."""
    mod.case(cli_verbs)
