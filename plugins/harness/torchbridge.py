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
# A "time" request on a GPU may also carry "kernel": a verified CUDA kernel's launch plan as the
# worker resolved it ({"image": CUBIN in hex, "launches": [{"function", "grid", "block", "cluster"
# (where it has one), "smem", "line", "args": [{"input"|"output"|"scratch": INDEX} or {"bytes": HEX}
# or {"tensor_map": INDEX}]}], "scratch": [BYTES...], "tensor_maps": [{"input"|"output": INDEX,
# "name", "line", "element_bytes", and cuTensorMapEncodeTiled's arguments as the worker passes them:
# "data_type", "dims", "strides", "box", "swizzle", "interleave", "l2_promotion", "oob_fill"}]})
# and "output_specs" ([{"name", "dtype", "shape", "atol", "rtol"}]). The kernel is then launched here
# through the driver API, every run of it on poisoned outputs and checked against eager's, and it is
# timed side by side with eager and torch.compile in one process: shuffled rounds, every call after
# the same flush, so that the three see the same GPU. The answer adds "kernel" (STATS) and "kernel_samples". A worker sends
# such a request to a bridge of its own that ends after it: the kernel's device code never runs
# in a process that later computes references.
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


def l2_flush(device):
    """The cache flush before every timed call: a read of 256 MiB (L2 is 60 MiB or less), then a
    wait. L2 then holds only clean lines, so the call's misses write nothing back that was not its
    own, as in kforge's timed runs."""
    src = torch.zeros(64 << 20, dtype=torch.float32, device=device)

    def flush():
        torch.sum(src)
        torch.cuda.synchronize()

    return flush


def time_gpu(fn, args, kw, device, reps):
    # The flush's kernels are told apart by position: each call's group of kernels starts with them.
    flush = l2_flush(device)
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


CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8


CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4  # cuda.h's CUlaunchAttributeID


def launch_structs():
    """cuda.h's CUlaunchAttribute and CUlaunchConfig, for cuLaunchKernelEx."""
    import ctypes

    class Value(ctypes.Union):  # CUlaunchAttributeValue: 64 bytes, 8-byte aligned
        _fields_ = [("pad", ctypes.c_char * 64), ("align", ctypes.c_uint64), ("cluster_dim", ctypes.c_uint * 3)]

    class Attribute(ctypes.Structure):
        _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", Value)]

    class Config(ctypes.Structure):
        _fields_ = [("grid_x", ctypes.c_uint), ("grid_y", ctypes.c_uint), ("grid_z", ctypes.c_uint),
                    ("block_x", ctypes.c_uint), ("block_y", ctypes.c_uint), ("block_z", ctypes.c_uint),
                    ("smem", ctypes.c_uint), ("stream", ctypes.c_void_p), ("attrs", ctypes.POINTER(Attribute)),
                    ("num_attrs", ctypes.c_uint)]

    return Attribute, Config


LaunchAttribute, LaunchConfig = launch_structs()


class Driver:
    """The few driver API calls a kernel launch needs, in PyTorch's own context."""

    def __init__(self, device):
        import ctypes
        self.c = ctypes
        try:
            self.lib = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise RuntimeError("the NVIDIA driver's libcuda.so.1 cannot be loaded: %s" % e)
        torch.cuda.set_device(device)
        torch.zeros(1, device=device)  # PyTorch's context, made current on this thread
        ctx = ctypes.c_void_p()
        self.check(self.lib.cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
        if not ctx.value:
            raise RuntimeError("PyTorch made no CUDA context current")

    def check(self, result, what):
        if result != 0:
            text = self.c.c_char_p()
            self.lib.cuGetErrorString(result, self.c.byref(text))
            raise RuntimeError("%s failed with %s (%d)" % (what, (text.value or b"?").decode(), result))

    def load(self, image):
        module = self.c.c_void_p()
        self.check(self.lib.cuModuleLoadData(self.c.byref(module), self.c.c_char_p(image)), "cuModuleLoadData")
        return module

    def function(self, module, name, smem):
        fn = self.c.c_void_p()
        self.check(self.lib.cuModuleGetFunction(self.c.byref(fn), module, name.encode()),
                   "cuModuleGetFunction(%s)" % name)
        if smem > 0:  # past 48 KiB with its static shared memory, a kernel must opt in
            self.check(self.lib.cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                   self.c.c_int(smem)), "cuFuncSetAttribute(%s)" % name)
        return fn

    def launch(self, fn, grid, block, smem, stream, params, where, cluster=None):
        c = self.c
        if cluster is None:
            self.check(self.lib.cuLaunchKernel(fn, c.c_uint(grid[0]), c.c_uint(grid[1]), c.c_uint(grid[2]),
                                               c.c_uint(block[0]), c.c_uint(block[1]), c.c_uint(block[2]),
                                               c.c_uint(smem), c.c_void_p(stream), params, None),
                       "cuLaunchKernel (%s)" % where)
            return
        # A thread block cluster is a launch attribute, which only the extensible launch takes.
        attr = LaunchAttribute(id=CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
        attr.value.cluster_dim[:] = [int(x) for x in cluster]
        config = LaunchConfig(*[int(x) for x in grid], *[int(x) for x in block], smem, stream, c.pointer(attr), 1)
        self.check(self.lib.cuLaunchKernelEx(c.byref(config), fn, params, None), "cuLaunchKernelEx (%s)" % where)

    def tensor_map(self, m, tensor, where):
        """A CUtensorMap encoded as the worker encodes map `m`, over `tensor`: 128 bytes, 128-byte
        aligned, in a buffer that must outlive the launches."""
        c = self.c
        rank = len(m["dims"])
        span = int(m["element_bytes"])
        for d in m["dims"]:
            span *= int(d)
        have = tensor.numel() * tensor.element_size()
        if not tensor.is_contiguous() or span > have:
            raise RuntimeError("%s: the tensor map spans %d bytes of a %s tensor of %d bytes" % (
                where, span, "contiguous" if tensor.is_contiguous() else "non-contiguous", have))
        if tensor.data_ptr() % 16:
            raise RuntimeError("%s: the tensor's address is not 16-byte aligned" % where)
        u64, u32 = c.c_uint64, c.c_uint32
        raw = c.create_string_buffer(128 + 128)
        holder = (u64 * 16).from_address(c.addressof(raw) + (-c.addressof(raw)) % 128)
        holder.raw = raw  # the memory lives as long as the view
        self.check(self.lib.cuTensorMapEncodeTiled(
            c.byref(holder), c.c_int(int(m["data_type"])), u32(rank), c.c_void_p(tensor.data_ptr()),
            (u64 * rank)(*[int(d) for d in m["dims"]]), (u64 * max(rank - 1, 1))(*[int(d) for d in m["strides"]]),
            (u32 * rank)(*[int(b) for b in m["box"]]), (u32 * rank)(*([1] * rank)), c.c_int(int(m["interleave"])),
            c.c_int(int(m["swizzle"])), c.c_int(int(m["l2_promotion"])), c.c_int(int(m["oob_fill"]))),
            "cuTensorMapEncodeTiled (%s)" % where)
        return holder

    def fill(self, ptr, byte, count, stream):
        self.check(self.lib.cuMemsetD8Async(self.c.c_uint64(ptr), self.c.c_ubyte(byte), self.c.c_size_t(count),
                                            self.c.c_void_p(stream)), "cuMemsetD8Async")


def kernel_call(req, inputs, device):
    """A function that runs the request's kernel once, and the outputs it writes."""
    import struct
    spec = req["kernel"]
    drv = Driver(device)
    module = drv.load(bytes.fromhex(spec["image"]))
    outputs = [torch.empty(o["shape"], dtype=DTYPES[o["dtype"]], device=device) for o in req["output_specs"]]
    scratch = [torch.empty(max(int(n), 1), dtype=torch.uint8, device=device) for n in spec.get("scratch", [])]
    maps = []
    for m in spec.get("tensor_maps", []):
        kind = "output" if "output" in m else "input"
        tensor = (outputs if kind == "output" else inputs)[int(m[kind])]
        maps.append(drv.tensor_map(m, tensor, "tensormap %s (line %d)" % (m.get("name", "?"), m.get("line", 0))))
    launches = []
    for l in spec["launches"]:
        where = "line %d, kernel %s" % (l.get("line", 0), l["function"])
        holders = []
        for a in l["args"]:
            if "tensor_map" in a:
                holders.append(maps[int(a["tensor_map"])])
                continue
            if "bytes" in a:
                raw = bytes.fromhex(a["bytes"])
            else:
                kind = next(k for k in ("input", "output", "scratch") if k in a)
                t = {"input": inputs, "output": outputs, "scratch": scratch}[kind][int(a[kind])]
                raw = struct.pack("<Q", t.data_ptr())
            holders.append(drv.c.create_string_buffer(raw, len(raw)))
        params = (drv.c.c_void_p * max(len(holders), 1))(*[drv.c.addressof(h) for h in holders])
        fn = drv.function(module, l["function"], int(l.get("smem", 0)))
        launches.append((fn, l["grid"], l["block"], int(l.get("smem", 0)), params, holders, where, l.get("cluster")))

    def run():
        stream = torch.cuda.current_stream().cuda_stream
        for t, n in zip(scratch, spec.get("scratch", [])):
            drv.fill(t.data_ptr(), 0, int(n), stream)  # as the worker does before every run
        for fn, grid, block, smem, params, _, where, cluster in launches:
            drv.launch(fn, grid, block, smem, stream, params, where, cluster)

    def poison():
        # Every output byte 0xFF (NaN in every float type) before each run, as the worker poisons
        # outputs: a run must write all of its outputs again. A memset, not a kernel: the
        # profile's kernel list is unchanged by it.
        stream = torch.cuda.current_stream().cuda_stream
        for t in outputs:
            drv.fill(t.data_ptr(), 0xFF, t.numel() * t.element_size(), stream)

    run.poison = poison
    run.launches = len(launches)
    run.keep = (module, scratch, maps, launches)  # alive as long as the function
    return run, outputs


def split_calls(kernels, order, flush_names, counts, timed=None):
    """Each call's kernel times from the profile of shuffled calls, each after the flush; None
    when the kernels do not line up with the calls. A call of `name` runs counts[name] kernels,
    of which the first timed[name] (all, by default) are its own and the rest checks that follow
    it, which are not timed."""
    timed = timed or counts
    samples = {name: [] for name in counts}
    pos, f = 0, len(flush_names)
    for name in order:
        if [e.name for e in kernels[pos:pos + f]] != flush_names:
            return None
        pos += f
        group = kernels[pos:pos + counts[name]]
        if len(group) != counts[name] or not 0 < timed[name] <= counts[name]:
            return None
        samples[name].append(sum(e.time_range.elapsed_us() for e in group[:timed[name]]))
        pos += counts[name]
    return samples if pos == len(kernels) else None


def compare_outputs(outputs, expected, specs, when):
    """The kernel's outputs against eager's, with twice the task's tolerances (both differ from the
    exact answer the worker checked against)."""
    for got, want, o in zip(outputs, expected, specs):
        if got.is_floating_point():
            ok = torch.allclose(got.double(), want.double(), atol=2 * float(o.get("atol", 0)),
                                rtol=2 * float(o.get("rtol", 0)))
        else:
            ok = torch.equal(got, want)
        if not ok:
            diff = (got.double() - want.double()).abs()
            raise RuntimeError("the kernel's output '%s' in PyTorch's process differs from eager's %s (max abs "
                               "error %.3g)" % (o["name"], when, diff.nan_to_num(float("inf")).max().item()))


def time_beside(req):
    import random
    from torch.profiler import ProfilerActivity, profile
    file, device, fn, kw, inputs = prepare(req)
    if device == "cpu":
        raise RuntimeError("a kernel is timed beside PyTorch only on a GPU, and PyTorch sees none")
    reps = int(req.get("reps", 20))
    # The kernel reads PyTorch's own input tensors, as the three must for one comparison (on an
    # H200, a memory-bound kernel reading a freshly allocated copy ran 4% slower); they are compared
    # with a copy at the end, so that a kernel that wrote them is not timed beside PyTorch.
    run, outputs = kernel_call(req, inputs, device)
    copies = [t.clone() for t in inputs]
    with torch.no_grad():
        # The kernel does here what it did in the worker: every run on poisoned outputs, and every
        # run's outputs checked (against eager's here), the timed ones too, so that a kernel cannot
        # do less in the runs timed beside PyTorch than in the one checked first.
        expected = [want.reshape(got.shape).to(got.dtype)
                    for got, want in zip(outputs, call(fn, inputs, kw, False))]
        run.poison()
        run()
        torch.cuda.synchronize()
        compare_outputs(outputs, expected, req["output_specs"], "")
        runs = [1]

        def checked():
            runs[0] += 1
            compare_outputs(outputs, expected, req["output_specs"], "in its run %d there" % runs[0])

        calls = {"kernel": run, "eager": lambda: fn(*inputs, **kw)}
        note = ["PyTorch %s on %s" % (torch.__version__, device)]
        if "compile" in req.get("modes", ["eager", "compile"]):
            try:
                compiled = torch.compile(fn)
                for _ in range(3):  # compiles
                    compiled(*inputs, **kw)
                calls["compile"] = lambda: compiled(*inputs, **kw)
            except Exception as e:  # noqa: BLE001 - reported, not fatal
                note.append("torch.compile failed: %s" % short_error(file, e))
        flush = l2_flush(device)

        def profiled(f):
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                f()
                torch.cuda.synchronize()
            return gpu_kernels(prof)

        before = {"kernel": run.poison}  # memsets: no kernels in the profile
        after = {"kernel": checked}      # kernels that follow the call's own, not timed

        def whole(name, between=lambda: None):
            """A call of `name` with what goes before and after it; `between` (the flush) runs
            after the poison and before the call."""
            def f():
                before.get(name, lambda: None)()
                between()
                calls[name]()
                after.get(name, lambda: None)()
            return f

        for name in calls:
            for _ in range(3):
                whole(name)()
        flush_names = [e.name for e in profiled(flush)]
        counts = {name: len(profiled(whole(name))) for name in calls}
        timed = {name: len(profiled(f)) for name, f in calls.items()}
        if timed["kernel"] != run.launches:
            raise RuntimeError("the kernel's %d launches ran %d kernels" % (run.launches, timed["kernel"]))
        order = []
        rnd = random.Random(reps)
        for _ in range(reps):
            names = list(calls)
            rnd.shuffle(names)
            order += names
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for name in order:
                whole(name, flush)()
            torch.cuda.synchronize()
        samples = split_calls(gpu_kernels(prof), order, flush_names, counts, timed)
    for t, copy, spec in zip(inputs, copies, req["inputs"]):
        if not torch.equal(t.reshape(-1).view(torch.uint8), copy.reshape(-1).view(torch.uint8)):  # NaNs too
            raise RuntimeError("the kernel changed input '%s' in PyTorch's process" % spec["name"])
    if samples is None:
        raise RuntimeError("the profile of the interleaved calls could not be told apart call by call")
    method = "torch-profiler (CUPTI kernel time, L2 flushed), side by side in one process"
    out = {"ok": True}
    for name, s in samples.items():
        out[name], out[name + "_samples"] = statistics(s, method), s
    note.append("the kernel timed beside PyTorch in its process: %d shuffled rounds, each of its runs on poisoned "
                "outputs and checked against eager's" % reps)
    out["note"] = "; ".join(note)
    return out


def time_reference(req):
    if req.get("kernel"):
        return time_beside(req)
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


# The worker runs this file with `python -c`; imported (by tests/gpu's probes), it only defines.
if __name__ == "__main__":
    main()
