# Compares ModelNew (model_new.py, kforge's kernel) with the task's PyTorch form on fresh inputs,
# then times both, PyTorch eager and torch.compile, the way kforge times kernels: CUDA events
# around each call, L2 flushed by a 256 MiB read before every call, the median of many calls.
# Written by `kforge export --torch`.   Run:  python3 check.py [--reps N] [--seed S] [--variant NAME]

import argparse
import inspect
import statistics

import torch

from model_new import PLAN, ModelNew, _DTYPES, _binding, _reference


def fresh_inputs(ref, variant, generator):
    """The module's own get_inputs() where it has one (KernelBench), else the task's initialisers."""
    if hasattr(ref, "get_inputs"):
        return [x.cuda() if isinstance(x, torch.Tensor) else x for x in ref.get_inputs()]
    tensors = []
    for spec in variant["inputs"]:
        dtype = _DTYPES[spec["dtype"]]
        init = spec["init"]  # as task.json writes it
        shape = spec["shape"]
        kind = init.get("kind", "normal")
        if kind == "constant":
            t = torch.full(shape, float(init["value"]), dtype=torch.float64)
        elif kind == "arange":
            count = 1
            for d in shape:
                count *= d
            t = (init["start"] + init["step"] * torch.arange(count, dtype=torch.float64)).reshape(shape)
        elif kind == "randint":
            t = torch.randint(int(init["low"]), int(init["high"]) + 1, shape, generator=generator)  # high included
        elif kind == "uniform":
            t = torch.rand(shape, generator=generator, dtype=torch.float64) * (init["high"] - init["low"]) + init["low"]
        else:
            t = torch.randn(shape, generator=generator, dtype=torch.float64) * init["std"] + init["mean"]
        tensors.append(t.to(dtype).cuda())
    return tensors


def reference_call(ref, variant, init_inputs):
    if _binding(ref)[2]:
        model = ref.Model(*init_inputs).cuda()
        return model, model
    fn = ref.reference
    params = inspect.signature(fn).parameters
    values = dict(variant["sizes"], **variant.get("scalars", {}))
    kw = {k: v for k, v in values.items()
          if k in params or any(p.kind == p.VAR_KEYWORD for p in params.values())}
    return (lambda *xs: fn(*xs, **kw)), None


def time_us(fn, args, reps):
    # L2 is flushed by reading 256 MiB (L2 is 60 MiB or less) and waiting: it then holds only clean
    # lines, and the call's misses write back nothing that was not its own.
    flush_src = torch.zeros(64 << 20, dtype=torch.float32, device="cuda")
    for _ in range(3):
        fn(*args)
    samples = []
    for _ in range(reps):
        torch.sum(flush_src)
        torch.cuda.synchronize()
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(*args)
        stop.record()
        stop.synchronize()
        samples.append(start.elapsed_time(stop) * 1000.0)
    return statistics.median(samples)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--seed", type=int, default=None, help="default: a fresh one each run")
    parser.add_argument("--variant", default=PLAN["variants"][0]["name"])
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("check.py needs a CUDA GPU: ModelNew runs a CUDA kernel")
    seed = args.seed if args.seed is not None else int.from_bytes(__import__("os").urandom(4), "little")
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    variant = next((v for v in PLAN["variants"] if v["name"] == args.variant), None)
    if variant is None:
        raise SystemExit("no variant %r: %s" % (args.variant, ", ".join(v["name"] for v in PLAN["variants"])))
    ref = _reference()
    if hasattr(ref, "get_inputs") and variant is not PLAN["variants"][0]:
        raise SystemExit("the module's get_inputs() makes its own sizes: only the %s variant can be checked"
                         % PLAN["variants"][0]["name"])
    init_inputs = ref.get_init_inputs() if hasattr(ref, "get_init_inputs") else []
    reference, model = reference_call(ref, variant, init_inputs)
    new = ModelNew(*init_inputs).cuda()
    if model is not None and new.model is not None:
        new.model.load_state_dict(model.state_dict())  # the same weights on both sides
    inputs = fresh_inputs(ref, variant, generator)

    with torch.no_grad():
        expected = reference(*inputs)
        got = new(*inputs)
        expected = expected if isinstance(expected, (tuple, list)) else (expected,)
        got = got if isinstance(got, (tuple, list)) else (got,)
        ok = True
        for e, g, spec in zip(expected, got, variant["outputs"]):
            close = torch.allclose(g.double(), e.double().reshape(g.shape), atol=spec["atol"], rtol=spec["rtol"])
            worst = (g.double() - e.double().reshape(g.shape)).abs().max().item()
            print("output %-12s %s (max abs difference %.3g; atol %g, rtol %g)"
                  % (spec["name"], "matches" if close else "DIFFERS", worst, spec["atol"], spec["rtol"]))
            ok = ok and close
        if not ok:
            raise SystemExit("ModelNew does not match the PyTorch reference (seed %d)" % seed)

        mine = time_us(new, inputs, args.reps)
        eager = time_us(reference, inputs, args.reps)
        try:
            compiled = time_us(torch.compile(reference), inputs, args.reps)
        except Exception as e:  # noqa: BLE001 - reported, not fatal
            compiled = None
            print("torch.compile failed: %s" % str(e).splitlines()[0])
    print("%s (%s sizes), seed %d, %s, PyTorch %s, median of %d calls, L2 flushed"
          % (PLAN["task"], variant["name"], seed, torch.cuda.get_device_name(), torch.__version__, args.reps))
    print("  ModelNew       %10.2f us" % mine)
    print("  PyTorch eager  %10.2f us   ModelNew is %.3fx over eager" % (eager, eager / mine))
    if compiled is not None:
        print("  torch.compile  %10.2f us   ModelNew is %.3fx over torch.compile" % (compiled, compiled / mine))


if __name__ == "__main__":
    main()
