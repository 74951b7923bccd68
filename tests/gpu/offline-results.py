#!/usr/bin/env python3
"""Turns the output folder of tests/gpu/offline-search.sh into a markdown table: per task, the
baseline and the confirmed best kernel's median times (both from the best's re-measurement, where
the baseline was timed in the same call), the speedup, and how close the best gets to the roofline
bound given by the task's FLOP and byte formulas and the device's measured ceilings.

    python3 tests/gpu/offline-results.py OUT_DIR [--tasks-dir tasks]
"""
import argparse
import json
import math
import os
import sqlite3
import sys


def evaluate(expr, sizes):
    env = {"ceil": math.ceil, "floor": math.floor, "cdiv": lambda a, b: -(-a // b),
           "round_up": lambda a, b: -(-a // b) * b, "min": min, "max": max}
    env.update(sizes)
    return float(eval(expr, {"__builtins__": {}}, env))


def peak_flops(task, ceilings):
    dtypes = {t["dtype"] for t in task["inputs"]}
    if "float16" in dtypes:
        return ceilings.get("fp16_tensor_flops_per_s"), "fp16 tensor (mma.sync)"
    if "bfloat16" in dtypes:
        return ceilings.get("bf16_tensor_flops_per_s"), "bf16 tensor (mma.sync)"
    return ceilings.get("fp32_flops_per_s"), "FP32 FFMA"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--tasks-dir", default="tasks")
    args = ap.parse_args()

    ceilings = {}
    path = os.path.join(args.out, "ceilings.jsonl")
    with open(path) if os.path.exists(path) else open(os.devnull) as f:
        for line in f:
            j = json.loads(line)
            if j.get("type") == "ceilings" and j.get("ok"):
                ceilings = j["ceilings"]
    store = os.path.join(args.out, "runs.kforge")
    if not os.path.exists(store):
        sys.exit(f"{store}: no such run store")
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    rows = []
    for run_id, task_name, variant, best, best_speedup, evals, wall in db.execute(
            "SELECT id, task, variant, best_candidate, best_speedup, evaluations, wall_seconds FROM runs ORDER BY id"):
        with open(os.path.join(args.tasks_dir, task_name, "task.json")) as f:
            task = json.load(f)
        sizes = dict(task["sizes"])
        if variant not in ("", "default"):
            sizes.update(task["variants"][variant])
        label = db.execute("SELECT label FROM candidates WHERE run_id=? AND id=?", (run_id, best)).fetchone()
        confirm = db.execute("SELECT result_json FROM evaluations WHERE run_id=? AND candidate_id=? AND purpose='confirm' "
                             "ORDER BY id DESC LIMIT 1", (run_id, best)).fetchone()
        if not confirm:
            continue
        r = json.loads(confirm[0])
        t = r["timing"]
        cand_us = t["candidate"]["median_us"]
        base_us = t["baseline"]["median_us"]
        flops = evaluate(task["flops"], sizes)
        nbytes = evaluate(task["bytes"], sizes)
        peak, peak_name = peak_flops(task, ceilings)
        bandwidth = ceilings.get("dram_bytes_per_s")
        if not bandwidth:
            sys.exit(f"{args.out}: no measured ceilings (ceilings.jsonl): the roofline needs them")
        bound_s = max(flops / peak if peak else 0.0, nbytes / bandwidth)
        bound_kind = "compute" if peak and flops / peak > nbytes / bandwidth else "memory"
        rows.append((task_name, variant, label[0] if label else "?", base_us, cand_us, t["speedup"], best_speedup,
                     100.0 * bound_s / (cand_us * 1e-6), 100.0 * bound_s / (base_us * 1e-6), bound_kind, peak_name,
                     flops / (cand_us * 1e-6) / 1e12, nbytes / (cand_us * 1e-6) / 1e12, evals, wall))

    print("| task | best kernel | baseline us | best us | speedup | best % of roofline | baseline % | bound | TFLOP/s | TB/s | evals | wall s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (task, variant, label, base_us, cand_us, speedup, _, pct, base_pct, kind, peak_name, tflops, tbs, evals, wall) in rows:
        print(f"| {task} | {label} | {base_us:.2f} | {cand_us:.2f} | {speedup:.3f}x | {pct:.1f}% | {base_pct:.1f}% | "
              f"{kind} ({'DRAM' if kind == 'memory' else peak_name}) | {tflops:.2f} | {tbs:.2f} | {evals} | {wall:.0f} |")
    print()
    print("Ceilings (measured by the worker's micro-kernels): " + ", ".join(
        f"{k} = {v / 1e12:.2f} T" for k, v in sorted(ceilings.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
