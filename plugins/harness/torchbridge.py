# The PyTorch side of a task's reference. A worker starts this once, with a Python that has
# PyTorch, and keeps it for its lifetime: the worker draws the inputs, writes them as raw files
# into a private folder (shared memory where there is one), and asks here for the reference's
# outputs, which come back as raw files too, so no tensor ever goes through a pipe.
#
# Protocol: JSON lines. First line out: {"kforge": "torch-bridge", "torch": VERSION, "cuda": BOOL}
# or {"kforge": "torch-bridge", "error": MESSAGE}. Then one answer per request:
#   in:  {"id": N, "file": NAME, "source": TEXT, "device": "cpu" | "cuda:K", "sizes": {...},
#         "scalars": {...}, "inputs": [{"name", "dtype", "shape", "path"}], "outputs": [same]}
#   out: {"id": N, "ok": true, "precision": "float64" | "native", "note": TEXT (where and how it ran)}
#        {"id": N, "ok": false, "error": MESSAGE}
# With "op": "time" (no outputs), the reference is timed instead, in the inputs' own precision,
# eager and under torch.compile (or the "modes" the request lists): {"id": N, "ok": true, "eager": STATS, "compile": STATS,
# "eager_samples": [US...], "compile_samples": [US...], "compile_error": TEXT, "note": TEXT}, STATS as the worker's
# timing statistics and the samples every call's time. On a GPU the time
# is the kernels' own, from PyTorch's profiler (CUPTI), with L2 flushed by a 256 MiB read before
# every call, as kforge times kernels; on the CPU it is wall-clock time.
# The reference file defines `reference(*inputs, **kw)` returning a tensor or a tuple of tensors in
# the task's output order; `kw` holds the task's sizes and scalars that its signature names (all of
# them when it takes **kwargs). Floating-point inputs are given in float64 where the reference runs
# that way, for an answer more precise than any kernel under test; the outputs are converted to the
# task's dtypes. The bridge ends when its input closes or the worker that started it is gone.

import hashlib
import inspect
import json
import os
import sys
import threading
import time
import traceback


def say(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


try:
    import torch
except Exception as e:  # noqa: BLE001 - any failure to import is reported the same way
    say({"kforge": "torch-bridge", "error": "cannot import torch: %s" % e})
    sys.exit(1)

DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int32": torch.int32,
    "int64": torch.int64,
    "uint8": torch.uint8,
}

# Full-precision float32 matmuls and convolutions: TF32 would make the reference less exact than
# the kernels it judges.
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False

_modules = {}


def watch_parent():
    parent = os.getppid()
    while True:
        time.sleep(0.5)
        if os.getppid() != parent:
            os._exit(0)


def load(file, source):
    key = hashlib.sha256(source.encode()).hexdigest()
    if key not in _modules:
        namespace = {"__name__": "kforge_reference", "__file__": file}
        exec(compile(source, file, "exec"), namespace)  # the task's trusted reference
        fn = namespace.get("reference")
        if not callable(fn):
            raise LookupError("%s defines no function reference(*inputs, **sizes_and_scalars)" % file)
        _modules[key] = fn
    return _modules[key]


def keywords(fn, values):
    params = inspect.signature(fn).parameters.values()
    if any(p.kind == inspect.Parameter.VAR_KEYWORD for p in params):
        return dict(values)
    names = {p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
    return {k: v for k, v in values.items() if k in names}


def elements(spec):
    count = 1
    for d in spec["shape"]:
        count *= d
    return count


def read(spec, device):
    # Mapped, not read into a copy: at KernelBench's sizes a tensor is gigabytes.
    count = elements(spec)
    if count == 0:
        return torch.empty(spec["shape"], dtype=DTYPES[spec["dtype"]], device=device)
    t = torch.from_file(spec["path"], shared=True, size=count, dtype=DTYPES[spec["dtype"]])
    return t.reshape(spec["shape"]).to(device)


def write(out, spec):
    # Straight into the mapped file, converted to the task's dtype on the way.
    count = elements(spec)
    dtype = DTYPES[spec["dtype"]]
    with open(spec["path"], "wb") as f:
        f.truncate(count * torch.empty((), dtype=dtype).element_size())
    if count:
        src = out.detach().reshape(-1).to(dtype)  # converted where it was computed (the GPU)
        dst = torch.from_file(spec["path"], shared=True, size=count, dtype=dtype)
        dst.copy_(src)
        del dst, src


def short_error(file, e):
    # The last frames inside the reference file say where it failed.
    frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == file]
    where = " (%s:%d)" % (file, frames[-1].lineno) if frames else ""
    return "%s: %s%s" % (type(e).__name__, e, where)


def call(fn, inputs, kw, upcast):
    args = [t.to(torch.float64) if upcast and t.is_floating_point() else t for t in inputs]
    torch.manual_seed(0)
    with torch.no_grad():
        out = fn(*args, **kw)
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)) and all(isinstance(o, torch.Tensor) for o in out):
        return list(out)
    raise TypeError("reference() returned %s, not a tensor or a tuple of tensors" % type(out).__name__)


def prepare(req):
    """The request's file name, device, reference function, keyword arguments and inputs."""
    file = req.get("file") or "reference.py"
    device = req.get("device", "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        device = "cpu"
    fn = load(file, req["source"])
    kw = keywords(fn, {**req.get("sizes", {}), **req.get("scalars", {})})
    inputs = [read(spec, device) for spec in req["inputs"]]
    return file, device, fn, kw, inputs


def answer(req):
    file, device, fn, kw, inputs = prepare(req)
    precision, note = "float64", ""
    if any(t.is_floating_point() for t in inputs):
        try:
            outputs = call(fn, inputs, kw, True)
        except Exception as e:  # noqa: BLE001 - fall back to the inputs' own precision
            precision, note = "native", "float64 failed (%s); computed in the inputs' precision" % short_error(file, e)
            if device != "cpu":
                torch.cuda.empty_cache()  # what float64 held, e.g. after running out of memory
            outputs = call(fn, inputs, kw, False)
    else:
        precision = "native"
        outputs = call(fn, inputs, kw, False)
    wanted = req["outputs"]
    if len(outputs) != len(wanted):
        raise ValueError("reference() returned %d tensor(s); the task has %d output(s) (%s)" %
                         (len(outputs), len(wanted), ", ".join(o["name"] for o in wanted)))
    for out, spec in zip(outputs, wanted):
        count = elements(spec)
        if out.numel() != count:
            raise ValueError("output '%s' has %d elements (shape %s); the task says %d (shape %s)" %
                             (spec["name"], out.numel(), list(out.shape), count, spec["shape"]))
        write(out, spec)
    done = "PyTorch %s reference on %s in %s" % (torch.__version__, device,
                                                  "float64" if precision == "float64" else "the inputs' precision")
    return {"ok": True, "precision": precision, "note": done + ("; " + note if note else "")}


def statistics(samples, method):
    s = sorted(samples)
    n = len(s)
    median = s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2

    def q(p):
        return s[min(n - 1, int(p * (n - 1) + 0.5))]

    return {"method": method, "count": n, "median_us": median, "mean_us": sum(s) / n, "min_us": s[0],
            "max_us": s[-1], "spread": (q(0.75) - q(0.25)) / median if median > 0 else 0.0}


def gpu_kernels(prof):
    return sorted((e for e in prof.events()
                   if e.device_type == torch.autograd.DeviceType.CUDA
                   and not e.name.startswith(("Memcpy", "Memset"))),
                  key=lambda e: e.time_range.start)


def time_gpu(fn, args, kw, device, reps):
    # The cache flush reads 256 MiB (L2 is 60 MiB or less) and waits: L2 then holds only clean lines,
    # so the call's misses write nothing back that was not its own, as in kforge's timed runs. The
    # flush's kernels are told apart by position: each call's group of kernels starts with them.
    flush_src = torch.zeros(64 << 20, dtype=torch.float32, device=device)

    def flush():
        torch.sum(flush_src)
        torch.cuda.synchronize()

    flush()
    try:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            flush()
        flush_names = [e.name for e in gpu_kernels(prof)]
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(reps):
                flush()
                fn(*args, **kw)
            torch.cuda.synchronize()
        kernels = gpu_kernels(prof)
        f = len(flush_names)
        if kernels and len(kernels) % reps == 0 and len(kernels) // reps > f:
            k = len(kernels) // reps
            groups = [kernels[i * k:(i + 1) * k] for i in range(reps)]
            if all([e.name for e in g[:f]] == flush_names for g in groups):
                samples = [sum(e.time_range.elapsed_us() for e in g[f:]) for g in groups]
                return statistics(samples, "torch-profiler (CUPTI kernel time, L2 flushed)"), samples
    except Exception:  # noqa: BLE001 - the profiler is optional: CUDA events instead
        pass
    samples = []
    for _ in range(reps):
        flush()
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(*args, **kw)
        stop.record()
        stop.synchronize()
        samples.append(start.elapsed_time(stop) * 1000.0)
    return statistics(samples, "cuda-events (L2 flushed)"), samples


def time_cpu(fn, args, kw, reps):
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn(*args, **kw)
        samples.append((time.perf_counter() - t0) * 1e6)
    return statistics(samples, "wall-clock (CPU)"), samples


def time_reference(req):
    file, device, fn, kw, inputs = prepare(req)
    reps = int(req.get("reps", 20))
    out = {"ok": True}
    note = ["PyTorch %s on %s" % (torch.__version__, device)]
    with torch.no_grad():
        for mode in req.get("modes", ["eager", "compile"]):
            try:
                f = fn if mode == "eager" else torch.compile(fn)
                for _ in range(3):  # warm-up; compiles under torch.compile
                    f(*inputs, **kw)
                stats, samples = time_gpu(f, inputs, kw, device, reps) if device != "cpu" else time_cpu(f, inputs, kw, reps)
                out[mode], out[mode + "_samples"] = stats, samples
            except Exception as e:  # noqa: BLE001 - a mode that fails is reported, not fatal
                out[mode + "_error"] = short_error(file, e)
                note.append("%s failed: %s" % ("torch.compile" if mode == "compile" else "eager", short_error(file, e)))
    out["note"] = "; ".join(note)
    return out


def main():
    threading.Thread(target=watch_parent, daemon=True).start()
    say({"kforge": "torch-bridge", "torch": torch.__version__, "cuda": torch.cuda.is_available()})
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
        except ValueError as e:
            say({"id": 0, "ok": False, "error": "unreadable request: %s" % e})
            continue
        try:
            out = time_reference(req) if req.get("op") == "time" else answer(req)
        except Exception as e:  # noqa: BLE001 - every failure is an answer, never the bridge's end
            out = {"ok": False, "error": short_error(req.get("file") or "reference.py", e)}
        out["id"] = req.get("id", 0)
        say(out)
        # The worker's kernels need the GPU's memory more than PyTorch's cache does.
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.empty_cache()


main()
