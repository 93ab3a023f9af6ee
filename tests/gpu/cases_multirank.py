"""Multi-rank GPU cases (issue 11), registered into check.py's CASES by register().

ddp_two_gpus    needs 2 GPUs: `gpumemtrace run` around `torchrun --nproc_per_node=2` of a small
                DDP training script (ddp_train.py) with NCCL. Each rank writes its own report
                (%r) on its own device; NCCL's buffers appear among the peak owners, attributed
                to libnccl; each rank's cudaMalloc count and bytes agree with its
                torch.cuda.memory_stats(); `gpumemtrace merge` gives per-rank peaks, their
                imbalance (max/mean) and the leak groups common to both ranks (the retaining
                line among them); the merged HTML page carries both ranks' timelines.
ranks_one_gpu   what one GPU allows: the same script, two ranks on cuda:0 with the gloo backend
                (NCCL refuses two ranks on one GPU): the same per-rank and merge checks.
nccl_one_process
                a one-process NCCL group (world size 1) on one GPU: NCCL's buffers are in the
                peak owners, attributed to libnccl.
Standard library only.
"""
import glob
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MIB = 1 << 20
NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                "NVSHMEM_DISABLE_NVLS": "1", "OMP_NUM_THREADS": "1"}


def _frames(rep, sid):
    st = (rep.get("stacks") or {}).get(str(sid)) or []
    return (st.get("frames") or []) if isinstance(st, dict) else st


def _from_nccl(rep, g):
    lib = g.get("library") or ""
    return "nccl" in lib or any("libnccl" in (f.get("module") or "")
                                 for f in _frames(rep, g.get("stack_id")))


def _retain_line():
    with open(os.path.join(HERE, "ddp_train.py")) as f:
        for n, line in enumerate(f, 1):
            if "# TAG:retain" in line:
                return n
    return -1


def _names_retain(rep, sid, line):
    return any(f.get("type") == "python" and (f.get("file") or "").endswith("ddp_train.py")
               and f.get("line") == line for f in _frames(rep, sid))


def _torchrun(c, m, name, backend, devices, nproc=2):
    pattern = os.path.join(c.out, "rank-%r.json")
    argv = [c.cli, "run", "-o", pattern, "--", sys.executable, "-m", "torch.distributed.run",
            "--standalone", f"--nproc_per_node={nproc}", os.path.join(HERE, "ddp_train.py"),
            backend, devices, c.out]
    r = c.run(name, argv, trace=False, extra_env=NO_MULTICAST, timeout=110)
    if r.rc != 0:
        raise m.Fatal(f"expected torchrun to exit 0 got {r.rc} ({r.tail()})")
    files = sorted(os.path.basename(f) for f in glob.glob(os.path.join(c.out, "rank-*.json"))
                   if not f.endswith(".torch.json"))
    c.expect("report files (one per rank, none from the launcher)", files,
             [f"rank-{i}.json" for i in range(nproc)])
    reps = {}
    for i in range(nproc):
        path = os.path.join(c.out, f"rank-{i}.json")
        if os.path.exists(path):
            reps[i] = c.load(r, path)
            # torchrun's WORLD_SIZE beside RANK (session 44)
            c.expect(f"rank-{i}.json process.world_size", reps[i]["process"].get("world_size"),
                     nproc)
    return r, reps


def _per_rank(c, reps, want_device):
    retain = _retain_line()
    for rank, rep in reps.items():
        c.expect(f"rank-{rank}.json process.rank", rep["process"].get("rank"), rank)
        devs = sorted(d["device"] for d in rep.get("devices", [])
                      if d.get("device", -1) >= 0 and d.get("allocs", 0) > 0)
        c.expect(f"rank {rank} allocates on device {want_device(rank)} only", devs,
                 [want_device(rank)])
        with open(os.path.join(c.out, f"rank-{rank}.torch.json")) as f:
            t = json.load(f)
        apis = (rep.get("summary") or {}).get("apis") or {}
        cm = apis.get("cudaMalloc") or {}
        # The caching allocator gets every segment by cudaMalloc and frees none before exit.
        c.expect(f"rank {rank} cudaMalloc allocations = torch num_device_alloc",
                 cm.get("allocs", 0), t["num_device_alloc"])
        c.expect(f"rank {rank} cudaMalloc bytes = torch reserved_bytes.all.peak",
                 cm.get("bytes", 0), t["reserved_peak"])
        peak_groups = [g for p in rep.get("peak", []) for g in p.get("groups", [])]
        c.expect_true(f"rank {rank}: the retaining line ddp_train.py:{retain} in a leak group",
                      any(_names_retain(rep, g["stack_id"], retain)
                          for g in (rep.get("leaks") or {}).get("groups", [])),
                      [g.get("api") for g in (rep.get("leaks") or {}).get("groups", [])][:6])
        c.details[f"rank{rank}"] = {"torch": t, "cudaMalloc": cm,
                                    "peak_groups": len(peak_groups)}


def _merge(c, m, reps, labels):
    files = [os.path.join(c.out, f"rank-{i}.json") for i in sorted(reps)]
    merged = os.path.join(c.out, "merged.json")
    p = subprocess.run([c.cli, "merge"] + files + ["-o", merged], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, env=c.env(), timeout=60)
    text = p.stdout.decode("utf-8", "replace")
    c.save("merge.txt", text)
    if not c.expect("gpumemtrace merge exit status", p.returncode, 0):
        return
    with open(merged) as f:
        mj = json.load(f)
    ranks = mj["merged"]["ranks"]
    peaks = [x["peak_bytes"] for x in ranks]
    c.expect("merged ranks", [x["rank"] for x in ranks], sorted(reps))
    c.expect("merged per-rank peaks = each report's summary.peak_bytes", peaks,
             [reps[i]["summary"]["peak_bytes"] for i in sorted(reps)])
    want = max(peaks) / (sum(peaks) / len(peaks))
    c.expect_true("imbalance = max/mean of the peaks",
                  abs(mj["merged"]["imbalance"] - want) < 1e-6, (mj["merged"]["imbalance"], want))
    # each rank's own drops, whether its peak is short and its leak list cut (session 40): a
    # real job drops nothing, so the imbalance is judged and a peak limit per GPU is checked
    c.expect("merged.imbalance_status", mj["merged"].get("imbalance_status"), "judged")
    c.expect("merged ranks' peak_short", [x.get("peak_short") for x in ranks],
             [False] * len(ranks))
    c.expect("merged ranks' dropped_by_kind sums = their dropped",
             [sum((x.get("dropped_by_kind") or {"?": -1}).values()) for x in ranks],
             [x["dropped"] for x in ranks])
    if c.schema is not None:
        errs = list(c.jsonschema.Draft202012Validator(c.schema).iter_errors(mj))
        c.expect("schema errors in the merged report", [e.message for e in errs[:3]], [])
    p = subprocess.run([c.cli, "check", merged, "--max-peak-bytes", "1T"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=c.env(), timeout=60)
    out = p.stdout.decode("utf-8", "replace")
    c.expect("check --max-peak-bytes 1T of the merged report", (p.returncode, out.startswith(
        "PASS ")), (0, True))
    c.expect("merged world_size, missing_ranks", (mj["merged"].get("world_size"),
                                                   mj["merged"].get("missing_ranks")),
             (len(reps), []))
    if len(reps) > 1:
        # one rank's report alone: the others named missing, and check fails the job
        lone = os.path.join(c.out, "lone.json")
        p = subprocess.run([c.cli, "merge", files[0], "-o", lone], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, env=c.env(), timeout=60)
        with open(lone) as f:
            lj = json.load(f)
        c.expect("merge of rank 0 alone: missing_ranks",
                 lj["merged"].get("missing_ranks"), list(range(1, len(reps))))
        p = subprocess.run([c.cli, "check", lone, "--max-peak-bytes", "1T"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=c.env(),
                           timeout=60)
        out = p.stdout.decode("utf-8", "replace")
        c.expect("check of rank 0 alone fails on the missing ranks",
                 (p.returncode, "have no report in the merge" in out), (1, True))
    retain = _retain_line()
    common = mj["merged"].get("common_leaks") or []
    c.expect_true("the retaining line among the leak groups common to all ranks",
                  any(_names_retain(mj, g["stack_id"], retain) for g in common),
                  len(common))
    html = os.path.join(c.out, "merged.html")
    p = subprocess.run([c.cli, "export", merged, "--format", "html", "-o", html],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=c.env(), timeout=60)
    c.expect("export merged html exit status", p.returncode, 0)
    if os.path.exists(html):
        with open(html, errors="replace") as f:
            page = f.read()
        for label in labels:
            c.expect_true(f"merged HTML page carries the timeline of {label!r}", label in page,
                          len(page))
    c.note(f"peaks {peaks}, imbalance {mj['merged']['imbalance']:.3f}, "
           f"{len(common)} common leak groups")


def ddp_two_gpus(c, m):
    if m.gpu_count() < 2:
        raise m.Skip(f"needs 2 GPUs, nvidia-smi lists {m.gpu_count()}")
    _, reps = _torchrun(c, m, "ddp2", "nccl", "local")
    _per_rank(c, reps, lambda r: r)
    for rank, rep in reps.items():
        pg = [g for p in rep.get("peak", []) for g in p.get("groups", [])]
        nb = sum(g.get("bytes", 0) for g in pg if _from_nccl(rep, g))
        c.expect_true(f"rank {rank}: NCCL's buffers among the peak owners", nb > 0, nb)
        libs = {x.get("library") for x in (rep.get("summary") or {}).get("libraries", [])}
        c.expect_true(f"rank {rank}: summary.libraries names libnccl",
                      any("nccl" in (l or "") for l in libs), sorted(str(l) for l in libs))
    _merge(c, m, reps, ["rank 0 GPU 0", "rank 1 GPU 1"])


def ranks_one_gpu(c, m):
    _, reps = _torchrun(c, m, "ranks1", "gloo", "zero")
    _per_rank(c, reps, lambda r: 0)
    _merge(c, m, reps, ["rank 0 GPU 0", "rank 1 GPU 0"])


def nccl_one_process(c, m):
    _, reps = _torchrun(c, m, "nccl1", "nccl", "local", nproc=1)
    rep = reps.get(0)
    if rep is None:
        return
    _per_rank(c, reps, lambda r: 0)
    pg = [g for p in rep.get("peak", []) for g in p.get("groups", [])]
    nb = sum(g.get("bytes", 0) for g in pg if _from_nccl(rep, g))
    c.expect_true("NCCL's buffers among the peak owners", nb > 0, nb)
    libs = [x.get("library") for x in (rep.get("summary") or {}).get("libraries", [])]
    c.expect_true("summary.libraries names libnccl", any("nccl" in (l or "") for l in libs),
                  libs)
    c.note(f"NCCL bytes at the peak {nb}; libraries {libs[:5]}")


CASE_FNS = {"ddp_two_gpus": ddp_two_gpus, "ranks_one_gpu": ranks_one_gpu,
            "nccl_one_process": nccl_one_process}


def register(m):
    for name, fn in CASE_FNS.items():
        m.CASES[name] = (lambda f: (lambda c: f(c, m)))(fn)
