#!/usr/bin/env python3
"""The report schema accepts a v2 report with and without the optional fields other modules
fill in (a group's library, summary.libraries, capture.python, capture.state_file,
process.recovered, leaks.growth_status, Python frames, build ids, inlined frames) and still
accepts version 1; it rejects what the accounting rule forbids (address space among the leak
groups, a v2 report without leaks.address_space or errors[].recovered, a v1-style stack in a
v2 report) and a growth_status no writer gives.

usage: schema_variants.py REPORT.json SCHEMA.json V1_REPORT.json
"""
import copy
import json
import sys

import jsonschema


def main():
    rep = json.load(open(sys.argv[1]))
    schema = json.load(open(sys.argv[2]))
    v1 = json.load(open(sys.argv[3]))
    ok = jsonschema.Draft202012Validator(schema)
    ok.validate(rep)
    ok.validate(v1)
    full = copy.deepcopy(rep)
    for g in full["leaks"]["groups"] + full["leaks"]["address_space"]["groups"]:
        g["library"] = "libcublasLt.so.13"
    full["summary"]["libraries"] = [{"library": "train", "peak_bytes": 10, "exit_bytes": 5},
                                    {"library": None, "peak_bytes": 1, "exit_bytes": 0}]
    full["capture"]["python"] = {"status": "captured", "version": "3.12.3"}
    full["capture"]["state_file"] = "/dev/shm/state"
    full["process"].update(recovered=True, reason="signal", signal=None)
    key = next(iter(full["stacks"]))
    st = full["stacks"][key]
    st["python"] = "captured"
    st["frames"][0].update(build_id="0123abcd", file="x.c", line=3,
                           inlined=[{"symbol": "f", "file": "a.h", "line": 2}])
    st["frames"].insert(0, {"type": "python", "file": "train.py", "function": "step",
                            "line": 12})
    full["leaks"]["growth_suspects"] = [{
        "stack_id": int(key), "device": 0, "kind": "device", "api": "cudaMalloc",
        "library": None, "growth_bytes": 100, "live_bytes": 300,
        "samples": [[0.5, 200], [1.0, 250], [1.5, 300]]}]
    ok.validate(full)
    for status in ("judged", "no_samples", "damaged", "not_judged"):
        full["leaks"]["growth_status"] = status
        ok.validate(full)
    del full["leaks"]["growth_status"]  # reports written before the field
    ok.validate(full)

    def rejected(what, mutate):
        bad = copy.deepcopy(rep)
        mutate(bad)
        if ok.is_valid(bad):
            print(f"FAIL: the schema accepts {what}")
            sys.exit(1)

    rejected("a vmm_reserve group among the leaks",
             lambda r: r["leaks"]["groups"][0].update(kind="vmm_reserve"))
    rejected("a v2 report without leaks.address_space",
             lambda r: r["leaks"].pop("address_space"))
    rejected("a v2 report without process.start_time_ns",
             lambda r: r["process"].pop("start_time_ns"))
    rejected("an error without recovered", lambda r: r["errors"][0].pop("recovered"))
    rejected("a plain-array stack in a v2 report",
             lambda r: r["stacks"].update({key: r["stacks"][key]["frames"]}))
    rejected("a growth suspect with no samples",
             lambda r: r["leaks"].update(growth_suspects=[{
                 "stack_id": 1, "device": 0, "kind": "device", "api": "cudaMalloc",
                 "growth_bytes": 1, "live_bytes": 1, "samples": []}]))
    rejected("a growth_status no writer gives",
             lambda r: r["leaks"].update(growth_status="none"))
    print("PASS schema variants")


if __name__ == "__main__":
    main()
