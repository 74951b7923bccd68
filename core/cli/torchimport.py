# kforge import: turns a PyTorch operator into a kforge task folder. Run by `kforge import` with a
# Python that has PyTorch; built into kforge as text.
#
# Two forms are understood:
#   KernelBench: `class Model(nn.Module)`, `get_inputs()`, optionally `get_init_inputs()`, and
#                module-level integer constants for the sizes;
#   a function:  `--function NAME` (or a module-level `forward`) with `get_inputs()` giving example
#                inputs, and module-level integer constants for the sizes.
# The task's sizes are the constants that shape some tensor, found by re-running the module with
# each constant changed (on PyTorch's meta device, so KernelBench's multi-GB shapes cost nothing);
# its inputs are the forward's tensor arguments, then the Model's parameters and buffers; its
# outputs are every tensor forward returns. The reference is the module itself (reference.py: the
# file as it was, plus a small adapter). Progress and notes go to stderr. Exit 2 names what cannot
# be imported and why.

import argparse
import ast
import importlib.util
import inspect
import json
import math
import os
import re
import shutil
from fractions import Fraction
import sys


class ImportFailure(Exception):
    pass


def note(text):
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


try:
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils.flop_counter import flop_registry
except Exception as e:  # noqa: BLE001
    sys.stderr.write("kforge import needs PyTorch: %s\n" % e)
    sys.exit(3)

DTYPES = {
    torch.float32: "float32",
    torch.float64: "float64",
    torch.float16: "float16",
    torch.bfloat16: "bfloat16",
    torch.int32: "int32",
    torch.int64: "int64",
    torch.uint8: "uint8",
}
SIZES = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2, "int32": 4, "int64": 8, "uint8": 1}
# Tolerances by output dtype: the reference runs in float64, so they bound the kernel's own error.
TOLERANCES = {
    "float32": (1e-4, 1e-3),
    "float64": (1e-10, 1e-8),
    "float16": (1e-2, 1e-2),
    "bfloat16": (2e-2, 2e-2),
    "int32": (0, 0),
    "int64": (0, 0),
    "uint8": (0, 0),
}
SMALL_ELEMENTS = 1 << 17  # the small variant's tensors together hold at most this many elements
FAMILIES = [  # the first whose operator the forward calls names the task's family
    ("attention", ("scaled_dot_product", "_flash_attention", "_efficient_attention")),
    ("conv", ("convolution", "conv")),
    ("gemm", ("mm", "bmm", "addmm", "matmul", "linear", "baddbmm", "einsum")),
    ("norm", ("layer_norm", "rms_norm", "group_norm", "batch_norm", "instance_norm")),
    ("softmax", ("softmax", "log_softmax")),
    ("reduction", ("sum", "mean", "amax", "amin", "max", "min", "prod", "cumsum", "norm", "var", "std", "argmax")),
]


class OpRecorder(TorchDispatchMode):
    """Every aten call of a forward, with the FLOPs PyTorch's counter assigns it."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        packet = func._overloadpacket
        flops = 0
        if packet in flop_registry:
            try:
                flops = int(flop_registry[packet](*args, **kwargs, out_val=out))
            except Exception:  # noqa: BLE001 - a counter that cannot count this call counts nothing
                flops = 0
        self.calls.append((str(packet).split(".")[-1], flops))
        return out


def load_module(path):
    spec = importlib.util.spec_from_file_location("kforge_imported", path)
    if spec is None or spec.loader is None:
        raise ImportFailure("%s: not a Python file" % path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # noqa: BLE001
        raise ImportFailure("%s does not load: %s: %s" % (path, type(e).__name__, e))
    return module


def constants(path, module, kind=int):
    """Module-level constants of `kind` (int: positive integers) assigned in the file itself, in
    file order."""
    tree = ast.parse(open(path).read(), path)
    names = []
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name) and n.id not in names:
                    v = getattr(module, n.id, None)
                    if isinstance(v, kind) and not isinstance(v, bool) and (kind is not int or v > 0):
                        names.append(n.id)
    return {n: getattr(module, n) for n in names}


class Form:
    """How to build and call the operator for a given set of constants."""

    def __init__(self, module, function):
        self.module = module
        self.model_class = None if function else getattr(module, "Model", None)
        if self.model_class is not None and not (
                isinstance(self.model_class, type) and issubclass(self.model_class, torch.nn.Module)):
            raise ImportFailure("Model is not a torch.nn.Module")
        self.function = None
        if self.model_class is None:
            name = function or "forward"
            self.function = getattr(module, name, None)
            if not callable(self.function):
                raise ImportFailure("the file has no class Model(nn.Module) and no function %s() "
                                    "(name the function with --function)" % name)
            self.function_name = name
        if not callable(getattr(module, "get_inputs", None)):
            raise ImportFailure("the file has no get_inputs() giving the operator's example inputs")
        self.init_inputs = getattr(module, "get_init_inputs", lambda: [])
        target = self.model_class.forward if self.model_class else self.function
        params = [p for p in inspect.signature(target).parameters.values()]
        if self.model_class:
            params = params[1:]  # self
        self.arg_names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]

    def build(self, values, device):
        for k, v in values.items():
            setattr(self.module, k, v)
        torch.manual_seed(0)
        with torch.device(device):
            model = None
            if self.model_class is not None:
                model = self.model_class(*list(self.init_inputs()))
            inputs = list(self.module.get_inputs())
        return model, inputs

    def run(self, model, inputs, record=False):
        recorder = OpRecorder() if record else None
        with torch.no_grad():
            if recorder:
                with recorder:
                    out = model(*inputs) if model is not None else self.function(*inputs)
            else:
                out = model(*inputs) if model is not None else self.function(*inputs)
        return out, recorder.calls if recorder else []


def outputs_of(out):
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        bad = [type(o).__name__ for o in out if not isinstance(o, torch.Tensor)]
        if bad:
            raise ImportFailure("forward returns a %s holding %s: only tensors can be outputs"
                                % (type(out).__name__, ", ".join(sorted(set(bad)))))
        return list(out)
    raise ImportFailure("forward returns %s, not a tensor or a tuple of tensors" % type(out).__name__)


def identifier(name, taken):
    base = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if not base or base[0].isdigit():
        base = "t_" + base
    candidate, k = base, 2
    while candidate in taken:
        candidate, k = "%s_%d" % (base, k), k + 1
    taken.add(candidate)
    return candidate


def snapshot(form, values, device="meta"):
    """Shapes (and FLOPs per call) of every tensor of the operator at `values`."""
    model, inputs = form.build(values, device)
    out, calls = form.run(model, inputs, record=True)
    outs = outputs_of(out)
    state = []
    if model is not None:
        state = list(model.named_parameters()) + list(model.named_buffers())
    return {
        "inputs": inputs,
        "state": state,
        "outputs": outs,
        # A 0-dimensional tensor counts as one element.
        "shapes": [(list(t.shape) or [1]) if isinstance(t, torch.Tensor) else None for t in inputs]
        + [list(t.shape) or [1] for _, t in state] + [list(t.shape) or [1] for t in outs],
        "calls": calls,
    }


def fits(base_value, perturbed, values):
    """Expressions over the constants for a quantity that is `base_value` at `values` and
    perturbed[k] when constant k alone is doubled, most plausible first: a product of powers
    (2 * M * N * K), then a linear form with rational slopes (H - k + 1, floor(H / 2)). The caller
    confirms one against the tripled constants."""
    if any(v is None for v in perturbed.values()):
        return []
    changed = {k: v for k, v in perturbed.items() if v != base_value}
    if not changed:
        return [str(base_value)]
    found = []
    # c * prod(k ** e)
    exps = {}
    for k, v2 in changed.items():
        if base_value <= 0 or v2 <= 0:
            exps = None
            break
        e = math.log2(v2 / base_value)
        if abs(e - round(e)) > 1e-9 or round(e) < 1:
            exps = None
            break
        exps[k] = int(round(e))
    if exps:
        denom = math.prod(values[k] ** e for k, e in exps.items())
        if base_value % denom == 0:
            c = base_value // denom
            factors = ([str(c)] if c != 1 else []) + [" * ".join([k] * e) for k, e in exps.items()]
            found.append(" * ".join(factors))
    # floor((sum(p_k * k) + c) / q)
    slopes = {k: Fraction(v2 - base_value, values[k]) for k, v2 in changed.items()}
    q = math.lcm(*(sl.denominator for sl in slopes.values()))
    if q <= 16:
        ps = {k: int(sl * q) for k, sl in slopes.items()}
        c = q * base_value - sum(p * values[k] for k, p in ps.items())
        terms = []
        for k, p in sorted(ps.items(), key=lambda kp: kp[1] < 0):  # positive terms first
            text = k if abs(p) == 1 else "%d * %s" % (abs(p), k)
            terms.append(("- " if p < 0 else "+ ") + text)
        body = " ".join(terms)
        body = body[2:] if body.startswith("+ ") else "-" + body[2:]
        if c:
            body += " %s %d" % ("+" if c > 0 else "-", abs(c))
        found.append(body if q == 1 else "floor((%s) / %d)" % (body, q))
    return found


def evaluate(expr, values):
    # Our own expressions: + - * / floor() and names, as kforge's expression language reads them.
    return eval(expr, {"__builtins__": {}, "floor": math.floor}, dict(values))


def infer_init(t, name):
    """A kforge initialiser that draws values like the example's."""
    if t.numel() == 0:
        return {"kind": "constant", "value": 0}
    if not t.is_floating_point():
        lo, hi = int(t.min()), int(t.max())
        return {"kind": "constant", "value": lo} if lo == hi else {"kind": "randint", "low": lo, "high": hi}
    x = t.detach().double()
    lo, hi = float(x.min()), float(x.max())
    if lo == hi:
        return {"kind": "constant", "value": lo}
    mean, std = float(x.mean()), float(x.std()) if x.numel() > 1 else 0.0
    # Round numbers where the sample cannot tell them apart from its own.
    if std > 0 and abs(mean) < 4 * std / math.sqrt(x.numel()):
        mean = 0.0
    if abs(std - 1.0) < 0.05:
        std = 1.0
    # Uniform values have std (hi - lo) / sqrt(12) and nothing beyond their range.
    if std > 0 and abs(std - (hi - lo) / math.sqrt(12)) < 0.1 * std:
        span = hi - lo
        pad = span / max(x.numel(), 1)

        def snap(v):  # -4.000127 is -4: a sample never reaches its bounds exactly
            nice = round(v * 2) / 2
            return nice if abs(v - nice) < 0.01 * span else round(v, 6)

        return {"kind": "uniform", "low": snap(lo - pad), "high": snap(hi + pad)}
    return {"kind": "normal", "mean": round(mean, 6), "std": round(std, 6)}


def family_of(calls, given):
    if given:
        return given
    names = [c for c, _ in calls]
    for family, ops in FAMILIES:
        if any(any(op in n for op in ops) for n in names):
            return family
    return "elementwise"


def main():
    ap = argparse.ArgumentParser(prog="kforge import")
    ap.add_argument("file")
    ap.add_argument("--out", required=True)
    ap.add_argument("--name", required=True)
    ap.add_argument("--family", default="")
    ap.add_argument("--function", default="")
    ap.add_argument("--atol", type=float, default=None)
    ap.add_argument("--rtol", type=float, default=None)
    ap.add_argument("--force", action="store_true")
    a = ap.parse_args()

    path = os.path.abspath(a.file)
    if not os.path.isfile(path):
        raise ImportFailure("%s: no such file" % a.file)
    module = load_module(path)
    form = Form(module, a.function)
    values = constants(path, module)
    # Floating-point constants (a scale, a slope, an epsilon) become the task's scalars: kernels get
    # them as arguments, the reference as the module's globals.
    float_constants = constants(path, module, float)

    note("reading shapes on the meta device")
    try:
        base = snapshot(form, values)
    except ImportFailure:
        raise
    except Exception as e:  # noqa: BLE001
        meta_error = ImportFailure("the operator does not run on PyTorch's meta device (%s: %s); kforge needs "
                                   "its shapes without computing it" % (type(e).__name__, e))
        try:  # on the CPU, the real reason may show (a number returned, not a tensor)
            snapshot(form, values, "cpu")
        except ImportFailure:
            raise
        except Exception:  # noqa: BLE001
            pass
        raise meta_error
    if not base["outputs"]:
        raise ImportFailure("forward returns no tensor")
    # Which constants shape what: each doubled alone, and tripled to confirm what doubling showed.
    def same_layout(p):
        return p is not None and len(p["shapes"]) == len(base["shapes"]) and all(
            (s is None) == (q is None) and (s is None or len(s) == len(q)) for s, q in zip(base["shapes"], p["shapes"]))

    perturbed, confirm = {}, {}
    for k, v in values.items():
        for factor, into in ((2, perturbed), (3, confirm)):
            try:
                into[k] = snapshot(form, {**values, k: factor * v})
            except Exception:  # noqa: BLE001 - a constant that cannot change is not a size
                into[k] = None
    usable = {k: p for k, p in perturbed.items() if same_layout(p) and same_layout(confirm[k])}

    def confirmed(expr, index, dim):
        # The expression must also predict the tripled constants' shapes.
        for k in usable:
            if re.search(r"\b%s\b" % re.escape(k), expr):
                if evaluate(expr, {**values, k: 3 * values[k]}) != confirm[k]["shapes"][index][dim]:
                    return False
        return True
    sizes_used = set()
    shape_exprs = []
    for i, shape in enumerate(base["shapes"]):
        if shape is None:
            shape_exprs.append(None)
            continue
        exprs = []
        for d, dim in enumerate(shape):
            # Small constants that change a dimension in ways no simple expression follows (a
            # stride, a dilation) are held at their values: the fit is tried again without them.
            e = None
            for held in (set(), {k for k in usable if values[k] <= 8}):
                free = {k: p["shapes"][i][d] for k, p in usable.items() if k not in held}
                if held and len(free) == len(usable):
                    break
                e = next((f for f in fits(dim, free, values) if confirmed(f, i, d)), None)
                if e is not None:
                    break
            if e is None:
                e = str(dim)  # fixed: the small variant checks it still holds
            exprs.append(e)
            sizes_used.update(k for k in values if re.search(r"\b%s\b" % re.escape(k), e))
        shape_exprs.append(exprs)
    sizes = {k: v for k, v in values.items() if k in sizes_used}

    # Inputs: forward's arguments (tensors are buffers, numbers are scalars), then the state.
    taken = set(sizes)
    tensors_in, scalars, forward_args, state_names = [], {}, [], []
    for n, v in float_constants.items():
        scalars[identifier(n, taken)] = {"dtype": "float32", "value": v}
    names = form.arg_names
    for i, x in enumerate(base["inputs"]):
        label = names[i] if i < len(names) else "arg%d" % i
        if isinstance(x, torch.Tensor):
            if x.dtype not in DTYPES:
                raise ImportFailure("input '%s' is %s; kforge tensors are %s" % (label, x.dtype, ", ".join(DTYPES.values())))
            n = identifier(label, taken)
            tensors_in.append((n, x, shape_exprs[i]))
            forward_args.append(["input", n])
        elif isinstance(x, bool) or not isinstance(x, (int, float)):
            raise ImportFailure("get_inputs() gives %s for '%s': inputs must be tensors or numbers" % (type(x).__name__, label))
        else:
            n = identifier(label, taken)
            scalars[n] = {"dtype": "int32" if isinstance(x, int) else "float32", "value": x}
            forward_args.append(["scalar", n])
    k0 = len(base["inputs"])
    for j, (sname, t) in enumerate(base["state"]):
        if t.dtype not in DTYPES:
            raise ImportFailure("the Model's '%s' is %s; kforge tensors are %s" % (sname, t.dtype, ", ".join(DTYPES.values())))
        n = identifier(sname, taken)
        tensors_in.append((n, t, shape_exprs[k0 + j]))
        state_names.append([sname, n])
    k1 = k0 + len(base["state"])
    outputs = []
    for j, t in enumerate(base["outputs"]):
        if t.dtype not in DTYPES:
            raise ImportFailure("output %d is %s; kforge tensors are %s" % (j, t.dtype, ", ".join(DTYPES.values())))
        outputs.append(("out" if len(base["outputs"]) == 1 else "out%d" % j, t, shape_exprs[k1 + j]))

    # The small variant: the sizes scaled down, odd where the module allows, checked by running it.
    def elements(vals):
        return sum(math.prod(evaluate(e, vals) for e in exprs) for exprs in shape_exprs if exprs)

    small, small_note = None, ""
    if sizes and elements(sizes) > SMALL_ELEMENTS:
        for odd in (True, False):
            f = 2
            while f <= 1 << 20:
                trial = {k: (max(3, v // f) | 1 if odd else max(4, v // f)) if v > 16 else v for k, v in sizes.items()}
                if elements(trial) <= SMALL_ELEMENTS:
                    break
                f *= 2
            try:
                snap = snapshot(form, {**values, **trial})
                if all(s is None or [evaluate(e, {**values, **trial}) for e in exprs] == s
                       for exprs, s in zip(shape_exprs, snap["shapes"])):
                    small = trial
                    break
                small_note = "the shapes at smaller sizes do not follow the expressions found"
            except Exception as e:  # noqa: BLE001
                small_note = "the module does not run at smaller sizes (%s: %s)" % (type(e).__name__, e)
        if small is None:
            note("no small variant: " + small_note)
    elif sizes:
        small = dict(sizes)

    # A real run where it is affordable (the small variant, else the defaults when small enough):
    # randomness, in-place changes and aliased outputs are errors; it also gives the values the
    # initialisers are inferred from.
    check_vals = {**values, **small} if small else values
    real = None
    if elements(check_vals if small else sizes) <= 1 << 26:
        note("running the operator on the CPU at %s" % ("the small sizes" if small and small != sizes else "its sizes"))
        model, inputs = form.build(check_vals, "cpu")
        before = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
        torch.manual_seed(1)
        out1 = outputs_of(form.run(model, inputs)[0])
        for i, (x, b) in enumerate(zip(inputs, before)):
            if isinstance(x, torch.Tensor) and not torch.equal(x, b):
                raise ImportFailure("forward changes its input '%s' in place: kforge kernels read their inputs and "
                                    "write separate outputs" % (names[i] if i < len(names) else i))
        for j, o in enumerate(out1):
            for i, x in enumerate(inputs):
                if isinstance(x, torch.Tensor) and o.untyped_storage().data_ptr() == x.untyped_storage().data_ptr():
                    raise ImportFailure("output %d is input '%s' itself (an in-place or aliasing forward): kforge "
                                        "kernels write separate outputs" % (j, names[i] if i < len(names) else i))
        torch.manual_seed(2)
        out2 = outputs_of(form.run(model, [b.clone() if isinstance(b, torch.Tensor) else b for b in before])[0])
        if any(not torch.equal(p, q) for p, q in zip(out1, out2)):
            raise ImportFailure("forward is random (the same inputs gave different outputs: dropout, torch.rand...): "
                                "a reference must be a function of its inputs")
        real = (model, inputs)
    else:
        note("too large to run on the CPU and no small variant: not checked for randomness or in-place changes, "
             "initialisers assumed normal(0, 1)")

    # Initialisers follow the example at the task's own sizes where that fits in memory (a
    # layer's initial weights depend on its width), else at the small sizes.
    sample = real
    if small and small != sizes and elements(sizes) <= 1 << 24:
        sample = form.build(values, "cpu")

    def init_for(kind, index, name, dtype):
        if sample is None:
            floating = dtype in ("float32", "float64", "float16", "bfloat16")
            return {"kind": "normal", "mean": 0.0, "std": 1.0} if floating else {"kind": "constant", "value": 0}
        model, inputs = sample
        if kind == "input":
            return infer_init(inputs[index], name)
        return infer_init(dict(list(model.named_parameters()) + list(model.named_buffers()))[name], name)

    spec_inputs = []
    arg_index = 0
    for kind, n in forward_args:
        if kind == "input":
            t, exprs = next((t, e) for m, t, e in tensors_in if m == n)
            spec_inputs.append({"name": n, "dtype": DTYPES[t.dtype], "shape": exprs,
                                "init": init_for("input", arg_index, n, DTYPES[t.dtype])})
        arg_index += 1
    for sname, n in state_names:
        t, exprs = next((t, e) for m, t, e in tensors_in if m == n)
        spec_inputs.append({"name": n, "dtype": DTYPES[t.dtype], "shape": exprs,
                            "init": init_for("state", 0, sname, DTYPES[t.dtype])})
    spec_outputs = []
    for n, t, exprs in outputs:
        atol, rtol = TOLERANCES[DTYPES[t.dtype]]
        spec_outputs.append({"name": n, "dtype": DTYPES[t.dtype], "shape": exprs,
                             "atol": a.atol if a.atol is not None else atol,
                             "rtol": a.rtol if a.rtol is not None else rtol})

    # FLOPs: PyTorch's counter, call by call, as expressions over the sizes.
    flops_note = ""
    calls = base["calls"]
    terms = []
    aligned = all([c for c, _ in p["calls"]] == [c for c, _ in calls] for p in usable.values())
    for ci, (op, fl) in enumerate(calls):
        if fl == 0:
            continue
        def confirmed_flops(e):
            return not any(
                re.search(r"\b%s\b" % re.escape(k), e) and (
                    len(confirm[k]["calls"]) != len(calls)
                    or evaluate(e, {**values, k: 3 * values[k]}) != confirm[k]["calls"][ci][1]) for k in usable)

        e = next((f for f in fits(fl, {k: p["calls"][ci][1] for k, p in usable.items()}, values)
                  if confirmed_flops(f)), None) if aligned else None
        if e is None:
            terms = None
            break
        terms.append(e)
    if terms is None:
        flops = str(sum(fl for _, fl in calls))
        flops_note = "FLOPs fixed at the default sizes' count (no expression over the sizes fits)"
    elif terms:
        flops = " + ".join(terms)
    else:
        exprs = [e for e in shape_exprs if e]
        largest = max(range(len(exprs)), key=lambda i: math.prod(evaluate(x, values) for x in exprs[i]))
        flops = " * ".join(exprs[largest]) or "1"
        flops_note = ("PyTorch's FLOP counter counts matmuls, convolutions and attention only; "
                      "one operation per element of the largest tensor assumed")
    compulsory = [(SIZES[s["dtype"]], s["shape"]) for s in spec_inputs + spec_outputs]
    bytes_expr = " + ".join("%d * %s" % (b, " * ".join("(%s)" % e for e in shape) if shape else "1")
                            for b, shape in compulsory)

    out_dir = os.path.abspath(a.out)
    if os.path.exists(out_dir):
        if not a.force:
            raise ImportFailure("%s exists (give --force to replace it)" % out_dir)
        shutil.rmtree(out_dir)
    os.makedirs(out_dir)
    source = open(path).read()
    shutil.copyfile(path, os.path.join(out_dir, "model.py"))
    adapter = {
        "sizes": sorted(values) + sorted(float_constants),
        "forward": forward_args,
        "state": state_names,
        "model": form.model_class is not None,
        "function": getattr(form, "function_name", ""),
    }
    with open(os.path.join(out_dir, "reference.py"), "w") as f:
        f.write(source.rstrip("\n") + "\n\n\n" + ADAPTER.replace("{{KFORGE_SPEC}}", repr(adapter)))
    doc = (module.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
    task = {
        "name": a.name,
        "title": a.name.replace("_", " "),
        "family": family_of(calls, a.family),
        "description": doc or "Imported from %s with kforge import; PyTorch is the reference." % os.path.basename(path),
        "sizes": sizes,
        "inputs": spec_inputs,
        "outputs": spec_outputs,
        "flops": flops,
        "bytes": bytes_expr,
        "reference": {"torch": "reference.py"},
        "imported": {"from": path, "form": "KernelBench" if form.model_class else "function",
                     "constants": values, "notes": [n for n in (flops_note, small_note if small is None else "") if n]},
    }
    if scalars:
        task["scalars"] = scalars
    if small and small != sizes:
        task["variants"] = {"small": small}
    with open(os.path.join(out_dir, "task.json"), "w") as f:
        json.dump(task, f, indent=2)
        f.write("\n")
    for n in task["imported"]["notes"]:
        note("note: " + n)


ADAPTER = '''# ---- kforge: the reference form of the operator above (written by kforge import) ----
# reference(*tensors, **sizes_and_scalars) runs it on the task's inputs in task.json's order: the
# forward's tensors, then the Model's parameters and buffers.
_KFORGE = {{KFORGE_SPEC}}
_kforge_models = {}


def reference(*tensors, **kw):
    import torch

    g = globals()
    for k in _KFORGE["sizes"]:
        if k in kw:
            g[k] = kw[k]
    tensors = list(tensors)
    args = []
    for kind, name in _KFORGE["forward"]:
        args.append(tensors.pop(0) if kind == "input" else kw[name])
    if not _KFORGE["model"]:
        return g[_KFORGE["function"]](*args)
    device = tensors[0].device if tensors else (args[0].device if args and hasattr(args[0], "device") else "cpu")
    key = (str(device), tuple(kw.get(k) for k in _KFORGE["sizes"]))
    model = _kforge_models.get(key)
    if model is None:
        with torch.device(device):
            model = Model(*list(g.get("get_init_inputs", lambda: [])()))
        _kforge_models[key] = model
    # Back in the module's own shapes (a 0-dimensional buffer travels as one element).
    shapes = dict(list(model.named_parameters()) + list(model.named_buffers()))
    state = {sname: tensors.pop(0).reshape(shapes[sname].shape) for sname, _ in _KFORGE["state"]}
    return torch.func.functional_call(model, state, tuple(args))
'''


if __name__ == "__main__":
    try:
        main()
    except ImportFailure as e:
        sys.stderr.write("kforge import: %s\n" % e)
        sys.exit(2)
