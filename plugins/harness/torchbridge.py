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


def read(spec, device):
    count = 1
    for d in spec["shape"]:
        count *= d
    t = torch.from_file(spec["path"], shared=False, size=count, dtype=DTYPES[spec["dtype"]])
    return t.reshape(spec["shape"]).to(device)


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


def answer(req):
    file = req.get("file") or "reference.py"
    device = req.get("device", "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        device = "cpu"
    fn = load(file, req["source"])
    kw = keywords(fn, {**req.get("sizes", {}), **req.get("scalars", {})})
    inputs = [read(spec, device) for spec in req["inputs"]]
    precision, note = "float64", ""
    if any(t.is_floating_point() for t in inputs):
        try:
            outputs = call(fn, inputs, kw, True)
        except Exception as e:  # noqa: BLE001 - fall back to the inputs' own precision
            precision, note = "native", "float64 failed (%s); computed in the inputs' precision" % short_error(file, e)
            outputs = call(fn, inputs, kw, False)
    else:
        precision = "native"
        outputs = call(fn, inputs, kw, False)
    wanted = req["outputs"]
    if len(outputs) != len(wanted):
        raise ValueError("reference() returned %d tensor(s); the task has %d output(s) (%s)" %
                         (len(outputs), len(wanted), ", ".join(o["name"] for o in wanted)))
    for out, spec in zip(outputs, wanted):
        count = 1
        for d in spec["shape"]:
            count *= d
        if out.numel() != count:
            raise ValueError("output '%s' has %d elements (shape %s); the task says %d (shape %s)" %
                             (spec["name"], out.numel(), list(out.shape), count, spec["shape"]))
        flat = out.detach().reshape(-1).to(DTYPES[spec["dtype"]]).contiguous().cpu()
        flat.view(torch.uint8).numpy().tofile(spec["path"])
    done = "PyTorch %s reference on %s in %s" % (torch.__version__, device,
                                                  "float64" if precision == "float64" else "the inputs' precision")
    return {"ok": True, "precision": precision, "note": done + ("; " + note if note else "")}


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
            out = answer(req)
        except Exception as e:  # noqa: BLE001 - every failure is an answer, never the bridge's end
            out = {"ok": False, "error": short_error(req.get("file") or "reference.py", e)}
        out["id"] = req.get("id", 0)
        say(out)


main()
