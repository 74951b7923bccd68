# ModelNew: a kernel found by kforge, as a drop-in PyTorch module (KernelBench's convention).
# Written by `kforge export --torch`; PLAN below was resolved by kforge for each size variant of the
# task, so no host compiler and no kforge are needed: the kernel is compiled at first use by NVRTC
# through CuPy (or cuda-python's cuda.core when CuPy is absent) and launched on PyTorch's current
# stream with the task's launch plan. Inputs of other sizes than the plan's are refused, naming them.
#
#   from model_new import ModelNew
#   model = ModelNew(*get_init_inputs()).cuda()   # the same init inputs as Model
#   out = model(*inputs)

import json
import os

import torch
import torch.nn as nn

_HERE = os.path.dirname(os.path.abspath(__file__))
PLAN = json.loads(r"""@PLAN@""")

_DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int32": torch.int32,
    "int64": torch.int64,
    "uint8": torch.uint8,
}


def _reference():
    """The task's PyTorch form (reference.py beside this file): its Model, where it has one."""
    import importlib.util
    import sys

    if "kforge_reference" in sys.modules:
        return sys.modules["kforge_reference"]
    spec = importlib.util.spec_from_file_location("kforge_reference", os.path.join(_HERE, "reference.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules["kforge_reference"] = module  # torch.compile looks its functions' module up by name
    spec.loader.exec_module(module)
    return module


def _binding(ref):
    """How the task's inputs come from a call: a module imported by `kforge import` says so in
    _KFORGE (the forward's tensors, then the Model's parameters and buffers); a hand-written task's
    reference takes its inputs in order."""
    k = getattr(ref, "_KFORGE", None)
    if k:
        return k["forward"], k["state"], bool(k["model"])
    return [["input", i["name"]] for i in PLAN["variants"][0]["inputs"]], [], False


def _scalar(ctype, value):
    """A size or scalar argument in the C type the kernel declares."""
    import numpy as np

    t = ctype.replace("const", "").replace("__restrict__", "").strip()
    if t in ("float",):
        return np.float32(value)
    if t in ("double",):
        return np.float64(value)
    if t in ("long", "long long", "int64_t", "long int", "ptrdiff_t", "ssize_t"):
        return np.int64(value)
    if t in ("unsigned long", "unsigned long long", "uint64_t", "size_t"):
        return np.uint64(value)
    if t in ("unsigned", "unsigned int", "uint32_t"):
        return np.uint32(value)
    return np.int32(value)


class _CupyKernels:
    def __init__(self, source, defines, names):
        import cupy

        self.cupy = cupy
        options = ("--std=c++17",) + tuple(d.replace(" ", "") for d in defines)
        self.module = cupy.RawModule(code=source, options=options, name_expressions=names)
        self.functions = {n: self.module.get_function(n) for n in names}

    def launch(self, name, grid, block, shared, args):
        cupy = self.cupy
        stream = cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
        converted = [cupy.asarray(a) if isinstance(a, torch.Tensor) else a for a in args]
        function = self.functions[name]
        if shared > 48 * 1024 and function.max_dynamic_shared_size_bytes < shared:
            function.max_dynamic_shared_size_bytes = shared  # opt in above the default 48 KiB
        with stream:
            self.functions[name](tuple(grid), tuple(block), tuple(converted), shared_mem=shared)


class _CudaCoreKernels:
    def __init__(self, source, defines, names):
        from cuda.core.experimental import Device, LaunchConfig, Program, ProgramOptions, launch

        self.device = Device(torch.cuda.current_device())
        self.device.set_current()
        self.LaunchConfig, self.launchFn = LaunchConfig, launch
        arch = "sm_%d%d" % torch.cuda.get_device_capability()
        defs = [d.replace("-D", "", 1).replace(" ", "") for d in defines]
        program = Program(source, code_type="c++", options=ProgramOptions(std="c++17", arch=arch, define_macro=defs))
        self.module = program.compile("cubin", name_expressions=names)
        self.functions = {n: self.module.get_kernel(n) for n in names}

    def launch(self, name, grid, block, shared, args):
        stream = self.device.create_stream(torch.cuda.current_stream())
        config = self.LaunchConfig(grid=tuple(grid), block=tuple(block), shmem_size=shared)
        converted = [a.data_ptr() if isinstance(a, torch.Tensor) else a for a in args]
        self.launchFn(stream, config, self.functions[name], *converted)


def _compile(source, defines, names):
    try:
        return _CupyKernels(source, defines, names)
    except ImportError:
        pass
    try:
        return _CudaCoreKernels(source, defines, names)
    except ImportError:
        raise RuntimeError("ModelNew compiles its kernel with NVRTC through CuPy or cuda-python: install one "
                           "(pip install cupy-cuda12x, or cuda-python)")


class ModelNew(nn.Module):
    def __init__(self, *init_inputs):
        super().__init__()
        # The Model's own parameters and buffers are the kernel's inputs: kept here, initialised as
        # Model initialises them (the same init inputs, the same random state give the same values).
        ref = _reference()
        self._forward, self._state, has_model = _binding(ref)
        self.model = ref.Model(*init_inputs) if has_model and self._state else None
        with open(os.path.join(_HERE, PLAN["kernel_file"]), encoding="utf-8") as f:
            self._source = f.read()
        self._kernels = {}  # by variant, compiled at first use

    def _variant(self, tensors):
        """The plan whose sizes the input tensors have (a parameter or buffer by its element count:
        a 0-dimensional one travels as one element)."""
        seen = [tuple(t.shape) for t in tensors]
        first_state = len(seen) - len(self._state)
        for v in PLAN["variants"]:
            if len(v["inputs"]) == len(seen) and all(
                    tuple(i["shape"]) == s or (k >= first_state and _count(i["shape"]) == _count(s))
                    for k, (i, s) in enumerate(zip(v["inputs"], seen))):
                return v
        wanted = "; ".join("%s sizes: %s" % (v["name"], ", ".join("%s %s" % (i["name"], tuple(i["shape"]))
                                                                  for i in v["inputs"])) for v in PLAN["variants"])
        raise ValueError("ModelNew's kernel was resolved for these input shapes only (%s), not %s"
                         % (wanted, ", ".join(str(s) for s in seen)))

    def forward(self, *args):
        tensors = []
        for (kind, _), a in zip(self._forward, args):
            if kind == "input":
                tensors.append(a)
        if self.model is not None:
            state = dict(list(self.model.named_parameters()) + list(self.model.named_buffers()))
            tensors += [state[name].detach() for name, _ in self._state]
        device = tensors[0].device if tensors else torch.device("cuda")
        if device.type != "cuda":
            raise ValueError("ModelNew runs a CUDA kernel: give it CUDA tensors (not %s)" % device)
        plan = self._variant(tensors)
        with torch.cuda.device(device):
            return self._run(plan, tensors, device)

    def _run(self, plan, tensors, device):
        inputs = []
        for t, spec in zip(tensors, plan["inputs"]):
            inputs.append(t.to(_DTYPES[spec["dtype"]]).contiguous().reshape(-1))
        outputs = [torch.empty(_count(o["shape"]), dtype=_DTYPES[o["dtype"]], device=device) for o in plan["outputs"]]
        scratch = [torch.zeros(s["count"], dtype=_DTYPES[s["dtype"]], device=device) for s in plan["scratch"]]
        key = (plan["name"], device.index)
        if key not in self._kernels:
            names = sorted({la["kernel"] for la in plan["launches"]})
            self._kernels[key] = _compile(self._source, plan["defines"], names)
        kernels = self._kernels[key]
        pools = {"input": inputs, "output": outputs, "scratch": scratch}
        for la in plan["launches"]:
            args = [pools[a["kind"]][a["index"]] if a["kind"] in pools else _scalar(a["type"], a["value"])
                    for a in la["args"]]
            kernels.launch(la["kernel"], la["grid"], la["block"], la["shared_bytes"], args)
        shaped = [out.reshape(o["shape"]) for out, o in zip(outputs, plan["outputs"])]
        return shaped[0] if len(shaped) == 1 else tuple(shaped)


def _count(shape):
    n = 1
    for d in shape:
        n *= int(d)
    return n
