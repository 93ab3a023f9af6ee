#!/usr/bin/env python3
"""The report schema accepts a v2 report with and without the optional fields other modules
fill in (a group's library, summary.libraries, capture.python, capture.state_file,
process.recovered, leaks.growth_status, Python frames, build ids, inlined frames) and still
accepts version 1; it rejects what the accounting rule forbids (address space among the leak
groups, a v2 report without leaks.address_space or errors[].recovered, a v1-style stack in a
v2 report) and a growth_status no writer gives; a merged report's `merged` object is typed,
in the form an older merge wrote and with the flags that say whose figures are short.

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
    for status in ("judged", "no_samples", "damaged", "not_judged", "too_few_samples"):
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
    # a merged report's `merged` object (docs/multirank.md): valid as merge writes it, with a
    # rank's unknown times null and the totals and status it keeps; its fields typed
    m = copy.deepcopy(rep)
    m["merged"] = {"ranks": [
        {"rank": 0, "file": "r0.json", "pid": 7, "hostname": "n1", "peak_bytes": 10,
         "leaked_bytes": 0, "reason": "exit", "start_time": 1.5, "end_time": 2.5,
         "duration_s": 1.0, "dropped": 0, "allocation_sites_total": 3,
         "growth_suspects_total": 1, "growth_status": "judged"},
        {"rank": 1, "file": "r1.json", "pid": 8, "hostname": "n1", "peak_bytes": 12,
         "leaked_bytes": 4, "reason": None, "start_time": None, "end_time": None,
         "duration_s": None}],
        "imbalance": 1.09, "stack_id_stride": 5,
        "common_leaks": [{"stack_id": 1, "ranks": 2, "min_bytes": 1, "max_bytes": 4,
                          "total_bytes": 5}]}
    ok.validate(m)
    for what, mutate in (
            ("merged.ranks as an object", lambda x: x.update(ranks={})),
            ("a rank's peak_bytes as a string",
             lambda x: x["ranks"][0].update(peak_bytes="10")),
            ("a rank's negative allocation_sites_total",
             lambda x: x["ranks"][0].update(allocation_sites_total=-1)),
            ("a rank's growth_status as a number",
             lambda x: x["ranks"][0].update(growth_status=3)),
            ("a rank without its file", lambda x: x["ranks"][0].pop("file")),
            ("a stack_id_stride of 0", lambda x: x.update(stack_id_stride=0)),
            ("merged without common_leaks", lambda x: x.pop("common_leaks"))):
        rejected(what, lambda r, mutate=mutate: (r.update(merged=copy.deepcopy(m["merged"])),
                                                 mutate(r["merged"])))
    # what merge writes since it says whose figures are short (each rank's drops by reason,
    # peak_short, leaks_cut; the imbalance's status, common_leaks_cut): valid beside the older
    # form above (which a reader still meets), "unknown" with the imbalance still a number;
    # typed, so a reader may rely on them
    m["merged"].update(imbalance_status="unknown", common_leaks_cut=True)
    m["merged"]["ranks"][0].update(dropped_by_kind={"table_full": 0, "stacks": 0},
                                   peak_short=False, leaks_cut=True)
    m["merged"]["ranks"][1].update(dropped=301, dropped_by_kind={
        "table_full": 1, "stacks": 0, "failure_records": 300}, peak_short=True, leaks_cut=False)
    ok.validate(m)
    m["merged"]["imbalance_status"] = "judged"
    ok.validate(m)
    for what, mutate in (
            ("an imbalance_status no merge writes",
             lambda x: x.update(imbalance_status="maybe")),
            ("a null imbalance (a reader of older merges does arithmetic on it)",
             lambda x: x.update(imbalance=None)),
            ("common_leaks_cut as a number", lambda x: x.update(common_leaks_cut=1)),
            ("a rank's peak_short as a string",
             lambda x: x["ranks"][1].update(peak_short="yes")),
            ("a rank's leaks_cut as null", lambda x: x["ranks"][0].update(leaks_cut=None)),
            ("a rank's negative dropped_by_kind count",
             lambda x: x["ranks"][1]["dropped_by_kind"].update(table_full=-1)),
            ("a rank's dropped_by_kind as a number",
             lambda x: x["ranks"][1].update(dropped_by_kind=301))):
        rejected(what, lambda r, mutate=mutate: (r.update(merged=copy.deepcopy(m["merged"])),
                                                 mutate(r["merged"])))
    print("PASS schema variants")


if __name__ == "__main__":
    main()
