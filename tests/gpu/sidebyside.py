#!/usr/bin/env python3
# Times CUDA kernel files side by side with a task's PyTorch form (eager and torch.compile) in one
# process, on the same buffers, on a GPU host with PyTorch and CuPy. A developer's tool for the last
# few percent: when `kforge eval --pytorch` says a kernel is 2% behind torch.compile, this tells
# whether the kernel is (the two timed alike, here) or the timing paths differ (the worker's against
# the torch bridge's). Every call gets a cache flush as the torch bridge's (a read of 256 MiB of
# zeros, then a wait); times are CUPTI kernel times from torch.profiler; each round runs every variant once
# in a shuffled order; medians are reported, with the ratio torch.compile's time / the variant's
# (above 1: faster than torch.compile).
#
#   python3 tests/gpu/sidebyside.py --task rmsnorm \
#       --kernel resources/experts/norm/rmsnorm_register_row.cu \
#       --kernel resources/experts/norm/rmsnorm_register_row.cu:BLOCK=256,VPT=4 [--rounds 50]
#
# Kernels are compiled by CuPy's NVRTC with the worker's options (-std=c++17 -lineinfo, each
# parameter a -D define) and launched as their `// kforge:launch` lines say (grid, block, smem,
# when; scratch buffers zeroed before every call). Not supported here: tensor maps and clusters
# (use `kforge eval` for those). `// kforge:require` lines are checked against the parameters, and
# outputs against PyTorch's with the task's tolerances before anything is timed. Runs only kernel
# files you trust: this is no sandbox.

import argparse
import inspect
import json
import math
import os
import random
import re
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

FUNCS = {"cdiv": lambda a, b: math.ceil(a / b), "round_up": lambda a, b: math.ceil(a / b) * b,
         "mod": math.fmod, "min": min, "max": max, "ceil": math.ceil, "floor": math.floor,
         "log2": math.log2, "sqrt": math.sqrt, "abs": abs}


def die(message):
    sys.stderr.write("sidebyside: %s\n" % message)
    sys.exit(2)


def evaluate(text, names, where):
    # kforge's expression syntax is C-like; && || and ?: become Python's.
    if "?" in text:
        die("%s: '%s': the ?: operator is not supported here (use kforge eval)" % (where, text))
    expr = text.replace("&&", " and ").replace("||", " or ")
    try:
        return eval(expr, {"__builtins__": {}}, {**FUNCS, **names})  # noqa: S307 - the user's own kernel file
    except Exception as e:  # noqa: BLE001
        die("%s: cannot evaluate '%s': %s" % (where, text, e))


def split_top(text):
    # "cdiv(N, 128), cdiv(M, BM)" -> the two dimensions
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        depth += {"(": 1, ")": -1}.get(c, 0)
        if c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return parts + [text[start:]]


def launch_keys(text, where):
    # key=(balanced group) or key=rest of the line up to the next " key=".
    keys, i = {}, 0
    while True:
        m = re.compile(r"\s*(\w+)=").match(text, i)
        if not m:
            break
        key, i = m.group(1), m.end()
        if text[i:i + 1] == "(":
            depth, j = 0, i
            for j in range(i, len(text)):
                depth += {"(": 1, ")": -1}.get(text[j], 0)
                if depth == 0:
                    break
            if depth:
                die("%s: %s=( is not closed" % (where, key))
            keys[key], i = text[i + 1:j], j + 1
        else:
            nxt = re.compile(r"\s\w+=").search(text, i)
            end = nxt.start() if nxt else len(text)
            keys[key], i = text[i:end].strip(), end
    return keys


def parse_kernel(path, overrides):
    source = open(path).read()
    params, launches, scratch, requirements = {}, [], [], []
    for n, line in enumerate(source.splitlines(), 1):
        m = re.match(r"\s*//\s*kforge:(\w+)\s*(.*)", line)
        if not m:
            continue
        verb, rest = m.groups()
        if verb == "param":
            p = re.match(r"(\w+)\s*(?:in\s*\{[^}]*\}\s*)?=\s*(-?\d+)", rest)
            params[p.group(1)] = int(p.group(2))
        elif verb == "launch":
            name = rest.split()[0]
            keys = launch_keys(rest[len(name):], "%s line %d" % (path, n))
            if keys.get("cluster", "1").replace(" ", "") not in ("1", "1,1", "1,1,1"):
                die("%s line %d: clusters are not supported here (use kforge eval)" % (path, n))
            launches.append((name, keys, n))
        elif verb == "scratch":
            s = re.match(r"(\w+)\s+(\w+)\s*(?:\[(.*)\])?", rest)
            scratch.append((s.group(1), s.group(2), s.group(3) or "1", n))
        elif verb == "require":
            requirements.append((rest, n))
        elif verb == "tensormap":
            die("%s line %d: tensor maps are not supported here (use kforge eval)" % (path, n))
    for k, v in overrides.items():
        if k not in params:
            die("%s: no parameter %s (declared: %s)" % (path, k, ", ".join(sorted(params)) or "none"))
        params[k] = v
    for condition, n in requirements:
        if not evaluate(condition, params, "%s line %d" % (path, n)):
            die("%s line %d: require '%s' does not hold for %s" % (path, n, condition,
                                                                   ", ".join("%s=%d" % kv for kv in sorted(params.items()))))
    return source, params, launches, scratch


def signature(source, name):
    m = re.search(r"__global__\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?%s\s*\(([^)]*)\)" % re.escape(name),
                  source)
    if not m:
        die("kernel %s: no __global__ definition found" % name)
    args = []
    for a in m.group(1).split(","):
        a = a.strip()
        words = re.findall(r"[A-Za-z_]\w*", a)
        args.append((words[-1], "*" in a, " ".join(w for w in words[:-1] if w not in ("const", "__restrict__",
                                                                                        "restrict"))))
    return args


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--task", required=True, help="a built-in task name or a task folder")
    ap.add_argument("--variant", default=None, help="a size variant of the task (default: its default sizes)")
    ap.add_argument("--kernel", action="append", default=[], help="FILE or FILE:NAME=VALUE,... (repeatable)")
    ap.add_argument("--rounds", type=int, default=50, help="rounds of every variant (default 50)")
    ap.add_argument("--no-eager", action="store_true", help="leave PyTorch eager out")
    args = ap.parse_args()

    import cupy as cp
    import torch
    from torch.profiler import ProfilerActivity, profile

    task_dir = args.task if os.path.isdir(args.task) else os.path.join(ROOT, "tasks", args.task)
    spec = json.load(open(os.path.join(task_dir, "task.json")))
    sizes = dict(spec["sizes"])
    if args.variant:
        if args.variant not in spec.get("variants", {}):
            die("task %s has no variant %s" % (spec["name"], args.variant))
        sizes.update(spec["variants"][args.variant])
    scalars = {k: v["value"] for k, v in spec.get("scalars", {}).items()}
    dtypes = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
              "float64": torch.float64, "int32": torch.int32, "int64": torch.int64, "uint8": torch.uint8}
    dev = "cuda"
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    gen = torch.Generator(device=dev).manual_seed(1)

    def shape_of(t):
        return [int(evaluate(str(d), sizes, "shape of " + t["name"])) for d in t["shape"]]

    inputs = {}
    for t in spec["inputs"]:
        init = t.get("init", {"kind": "uniform", "low": -1, "high": 1})
        kind = init.get("kind", "uniform")
        x = torch.empty(shape_of(t), device=dev, dtype=torch.float64)
        if kind == "uniform":
            x.uniform_(init.get("low", -1.0), init.get("high", 1.0), generator=gen)
        elif kind == "normal":
            x.normal_(init.get("mean", 0.0), init.get("std", 1.0), generator=gen)
        elif kind == "constant":
            x.fill_(init["value"])
        elif kind == "randint":
            x = torch.randint(int(init["low"]), int(init["high"]), x.shape, device=dev, generator=gen).double()
        elif kind == "arange":
            x = (init.get("start", 0) + init.get("step", 1) * torch.arange(x.numel(), device=dev)).double().view(x.shape)
        else:
            die("input %s: init kind %s is not known here" % (t["name"], kind))
        inputs[t["name"]] = x.to(dtypes[t["dtype"]])
    namespace = {}
    exec(open(os.path.join(task_dir, spec["reference"]["torch"])).read(), namespace)  # noqa: S102 - the task's own file
    reference = namespace["reference"]
    sig = inspect.signature(reference)
    kw = {k: v for k, v in {**sizes, **scalars}.items()
          if k in sig.parameters or any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())}
    ordered = [inputs[t["name"]] for t in spec["inputs"]]
    expected = reference(*ordered, **kw)
    expected = expected if isinstance(expected, tuple) else (expected,)
    compiled = torch.compile(reference)

    variants = {"torch.compile": lambda: compiled(*ordered, **kw)}
    if not args.no_eager:
        variants["eager"] = lambda: reference(*ordered, **kw)

    for item in args.kernel:
        path, _, over = item.partition(":")
        overrides = {}
        for kv in filter(None, over.split(",")):
            k, _, v = kv.partition("=")
            overrides[k.strip()] = int(v)
        source, params, launches, scratch_decls = parse_kernel(path, overrides)
        names = {**sizes, **params}
        outputs = {t["name"]: torch.empty(shape_of(t), device=dev, dtype=dtypes[t["dtype"]]) for t in spec["outputs"]}
        scratch = {}
        for name, dtype, count, n in scratch_decls:
            scratch[name] = torch.zeros(int(evaluate(count, names, "%s line %d" % (path, n))), device=dev,
                                        dtype=dtypes[dtype])
        options = ("-std=c++17", "-lineinfo") + tuple("-D%s=%d" % kv for kv in params.items())
        module = cp.RawModule(code=source, options=options, backend="nvrtc")
        plan = []
        for name, keys, n in launches:
            where = "%s line %d" % (path, n)
            if "when" in keys and not evaluate(keys["when"], names, where):
                continue
            dims = lambda text: tuple(int(evaluate(d, names, where)) for d in split_top(text))  # noqa: E731
            grid, block = dims(keys["grid"]), dims(keys["block"])
            smem = int(evaluate(keys["smem"], names, where)) if "smem" in keys else 0
            values = []
            for arg, pointer, ctype in signature(source, name):
                if pointer:
                    t = inputs.get(arg, outputs.get(arg, scratch.get(arg)))
                    if t is None:
                        die("%s: kernel %s's pointer %s is no input, output or scratch buffer" % (where, name, arg))
                    values.append(cp.uint64(t.data_ptr()))  # the pointer's 8 bytes
                else:
                    v = {**sizes, **scalars, **params}.get(arg)
                    if v is None:
                        die("%s: kernel %s's argument %s matches nothing" % (where, name, arg))
                    values.append(cp.float32(v) if "float" in ctype else cp.float64(v) if "double" in ctype
                                  else cp.int64(v) if ("long" in ctype or "size_t" in ctype) else cp.int32(v))
            fn = module.get_function(name)
            if smem > 0:  # past 48 KiB with its static shared memory, a kernel must opt in
                fn.max_dynamic_shared_size_bytes = smem
            plan.append((fn, grid + (1,) * (3 - len(grid)), block + (1,) * (3 - len(block)), smem, tuple(values)))
        if not plan:
            die("%s: no launch applies at these sizes" % path)

        def launch(plan=plan, scratch=scratch):
            for t in scratch.values():
                t.zero_()
            for fn, grid, block, smem, values in plan:
                fn(grid, block, values, shared_mem=smem)

        launch()
        torch.cuda.synchronize()
        for t, want in zip(spec["outputs"], expected):
            got = outputs[t["name"]].float()
            want = want.float()
            if not torch.allclose(got, want, atol=t.get("atol", 1e-5), rtol=t.get("rtol", 1e-5)):
                die("%s: output %s is wrong (max abs error %.3g)" % (item, t["name"], (got - want).abs().max().item()))
        variants[item] = launch

    # The bridge's flush reads 256 MiB with torch.sum; a kernel of its own name here, so that a
    # task whose PyTorch form is a sum is not taken for the flush.
    flush_src = torch.zeros(64 << 20, dtype=torch.float32, device=dev)
    flush_sink = torch.zeros(1, dtype=torch.int32, device=dev)
    flush_kernel = cp.RawKernel(r"""
extern "C" __global__ void sidebyside_flush(const uint4* data, unsigned long long count, unsigned int* sink) {
    unsigned int x = 0;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < count;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        const uint4 v = data[i];
        x |= v.x | v.y | v.z | v.w;
    }
    if (x != 0)
        *sink = x;
}""", "sidebyside_flush")
    sms = torch.cuda.get_device_properties(0).multi_processor_count

    def flush():
        flush_kernel((2 * sms,), (512,), (cp.uint64(flush_src.data_ptr()), cp.uint64(flush_src.numel() // 4),
                                          cp.uint64(flush_sink.data_ptr())))
        torch.cuda.synchronize()

    for fn in variants.values():  # compiled and warm
        fn()
    torch.cuda.synchronize()
    flush_names = {"sidebyside_flush"}
    rnd = random.Random(7)
    order = []
    for _ in range(args.rounds):
        names = list(variants)
        rnd.shuffle(names)
        order += names
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for name in order:
            flush()
            variants[name]()
            torch.cuda.synchronize()
    kernels = sorted((e for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA
                      and not e.name.startswith(("Memcpy", "Memset"))), key=lambda e: e.time_range.start)
    groups, current = [], None
    for e in kernels:
        if e.name in flush_names:
            if current is None or current:
                current = []
                groups.append(current)
            continue
        if current is not None and "FillFunctor" not in e.name:  # scratch zeroing
            current.append(e)
    if len(groups) != len(order):
        die("could not tell the calls apart in the profile (%d groups for %d calls)" % (len(groups), len(order)))
    times = {name: [] for name in variants}
    for name, group in zip(order, groups):
        times[name].append(sum(e.time_range.elapsed_us() for e in group))
    props = torch.cuda.get_device_properties(0)
    print("%s, torch %s, task %s%s, %d rounds" % (props.name, torch.__version__, spec["name"],
                                                  " (%s)" % args.variant if args.variant else "", args.rounds))
    compiled_us = statistics.median(times["torch.compile"])
    for name in variants:
        s = sorted(times[name])
        m = statistics.median(s)
        print("  %-60s median %9.2f us  (q25 %.2f, q75 %.2f)  torch.compile / this %.4f" %
              (name[-60:], m, s[len(s) // 4], s[3 * len(s) // 4], compiled_us / m))


if __name__ == "__main__":
    main()
