#!/usr/bin/env python3
"""Does torch.compile pick a different kernel each time it compiles a task?

torch.compile's time for one task has been seen to take one of two values in different processes
(bias_gelu at 4096 x 4096 on an H200: 30.3 us or 38.3-38.9 us). Inductor benchmarks a few Triton
configurations of each generated kernel the first time it runs and keeps the fastest (a 1-D
pointwise kernel has two, a 2-D one six), and writes the choice to its cache, so every later
process on the same host reuses it. If that benchmark's pick varies, the yardstick does too.

This probe compiles the task's reference K times in one process, each with its own empty Inductor
cache (so each compile benchmarks afresh), prints the configurations each one chose (Inductor's
.best_config files) and times each compiled function the way the bridge times torch.compile
(torchbridge.py's own time_gpu: CUPTI kernel time, L2 flushed before every call),
with eager beside them. Run on a GPU host with PyTorch:

    python3 tests/gpu/compile-choice.py bias_gelu [--compiles 6] [--reps 50] [--size M=4096 ...]
"""

import argparse
import glob
import json
import os
import random
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "plugins", "harness"))
import torchbridge  # noqa: E402 - the worker's bridge: its timing, flush and PyTorch settings (TF32 off)


def task_inputs(task, sizes, device):
    def dim(d):
        return int(d) if isinstance(d, int) else int(eval(str(d), {"__builtins__": {}}, dict(sizes)))

    inputs = []
    for spec in task["inputs"]:
        shape = [dim(d) for d in spec["shape"]]
        dtype = torchbridge.DTYPES[spec["dtype"]]
        init = spec.get("init", {})
        if dtype.is_floating_point:
            low, high = float(init.get("low", -1.0)), float(init.get("high", 1.0))
            t = torch.empty(shape, dtype=torch.float32, device=device).uniform_(low, high).to(dtype)
        else:
            low, high = int(init.get("low", 0)), int(init.get("high", 100))
            t = torch.randint(low, high + 1, shape, dtype=dtype, device=device)
        inputs.append(t)
    return inputs


def kernel_times(fn, inputs, kw, device, reps):
    """The median as the bridge times torch.compile, and the kernels one call runs."""
    from torch.profiler import ProfilerActivity, profile
    stats, _ = torchbridge.time_gpu(fn, inputs, kw, device, reps)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn(*inputs, **kw)
        torch.cuda.synchronize()
    return stats["median_us"], [e.name for e in torchbridge.gpu_kernels(prof)]


def chosen_configs(cache):
    out = []
    for path in sorted(glob.glob(os.path.join(cache, "**", "*.best_config"), recursive=True)):
        try:
            with open(path) as fh:
                cfg = json.load(fh)
        except (OSError, ValueError):
            continue
        keep = {k: v for k, v in cfg.items() if k.isupper() or k in ("num_warps", "num_stages")}
        out.append(os.path.basename(path).split(".")[0][:8] + " " + json.dumps(keep, sort_keys=True))
    return out


def print_triton_sources(cache):
    """The @triton.jit functions of the generated code in an Inductor cache folder."""
    for path in sorted(glob.glob(os.path.join(cache, "**", "*.py"), recursive=True)):
        try:
            with open(path) as fh:
                text = fh.read()
        except OSError:
            continue
        if "@triton.jit" not in text:
            continue
        print("--- %s" % os.path.relpath(path, cache))
        for block in text.split("\n\n\n"):
            if "@triton.jit" in block or "triton_heuristics." in block:
                print(block.strip() + "\n")


def print_ptx_memory_ops(folders):
    """Each Triton kernel's global loads and stores, cache policies and thread count, from its PTX."""
    import collections
    import re

    pattern = re.compile(r"(ld\.global|st\.global|createpolicy|red\.global|atom\.global|\.maxntid|\.reqntid)")
    operands = re.compile(r"%\w+|\[.*?\]|\{.*?\}|(?<![\w.])(0[xX][0-9a-fA-F]+|-?\d+)\b")  # registers, addresses
    # Autotuning compiles one PTX per configuration, each under its own cache folder with the same
    # file name: every distinct one is listed, with its folder, and a folder read twice is skipped.
    seen = set()
    for folder in folders:
        for path in sorted(glob.glob(os.path.join(folder, "**", "*.ptx"), recursive=True)):
            try:
                with open(path) as fh:
                    text = fh.read()
            except OSError:
                continue
            if text in seen:
                continue
            seen.add(text)
            lines = text.splitlines()
            ops = collections.Counter()
            for line in lines:
                if pattern.search(line):
                    text = " ".join(line.split())
                    ops[text if text.startswith(".") else operands.sub("_", text)] += 1  # thread counts kept
            print("--- ptx %s (%s)" % (os.path.basename(path), os.path.basename(os.path.dirname(path))))
            for op, n in ops.most_common():
                print("    %3d x %s" % (n, op))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("task")
    ap.add_argument("--tasks", default=os.path.join(HERE, "..", "..", "tasks"), help="the tasks folder")
    ap.add_argument("--compiles", type=int, default=6, help="fresh compiles, each with an empty cache")
    ap.add_argument("--reps", type=int, default=50, help="timed calls per compiled function")
    ap.add_argument("--size", action="append", default=[], metavar="NAME=VALUE", help="override a size")
    ap.add_argument("--show-source", action="store_true",
                    help="print the first compile's Triton kernels, and their PTX loads and stores")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("compile-choice: no CUDA device visible to PyTorch")

    folder = os.path.join(args.tasks, args.task)
    with open(os.path.join(folder, "task.json")) as fh:
        task = json.load(fh)
    sizes = dict(task.get("sizes", {}))
    for s in args.size:
        name, _, value = s.partition("=")
        sizes[name] = int(value)
    reference = os.path.join(folder, "reference.py")
    with open(reference) as fh:
        fn = torchbridge.load(reference, fh.read())  # loaded as the bridge loads it
    import inspect
    names = set(inspect.signature(fn).parameters)
    kw = {k: v for k, v in {**sizes, **task.get("scalars", {})}.items() if k in names}

    device = "cuda:0"
    torch.manual_seed(1)
    inputs = task_inputs(task, sizes, device)
    try:
        from torch._inductor.runtime.cache_dir_utils import temporary_cache_dir
    except ImportError:  # older PyTorch: point Inductor at the folder by its environment variable
        import contextlib

        @contextlib.contextmanager
        def temporary_cache_dir(folder):
            old = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = folder
            try:
                yield
            finally:
                if old is None:
                    os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
                else:
                    os.environ["TORCHINDUCTOR_CACHE_DIR"] = old

    print("%s %s; PyTorch %s; %s" % (args.task, sizes, torch.__version__, torch.cuda.get_device_name(0)))
    with torch.no_grad():
        for _ in range(3):
            fn(*inputs, **kw)
        eager_us, eager_kernels = kernel_times(fn, inputs, kw, device, args.reps)
        print("eager: %.2f us  (%s)" % (eager_us, ", ".join(eager_kernels)))
        compiled = []
        for k in range(args.compiles):
            cache = tempfile.mkdtemp(prefix="kforge-compile-choice-")
            with temporary_cache_dir(cache):
                torch._dynamo.reset()
                f = torch.compile(fn)
                for _ in range(3):  # compiles and benchmarks Inductor's configurations
                    f(*inputs, **kw)
                compiled.append((k, f, chosen_configs(cache)))
                if k == 0 and args.show_source:
                    print_triton_sources(cache)
                    print_ptx_memory_ops([cache, os.environ.get("TRITON_CACHE_DIR", cache)])
        # Timed in shuffled order, after every compile, so that drift does not follow the index.
        order = list(range(len(compiled)))
        random.Random(7).shuffle(order)
        results = {}
        for k in order:
            results[k] = kernel_times(compiled[k][1], inputs, kw, device, args.reps)
        for k, _, configs in compiled:
            us, kernels = results[k]
            print("compile %d: %.2f us  (%s)" % (k, us, ", ".join(kernels)))
            for c in configs or ["(no .best_config written: a single configuration, or none benchmarked)"]:
                print("    " + c)


if __name__ == "__main__":
    main()
