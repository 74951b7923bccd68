# The driver-API side of torchbridge.py without a GPU: its ctypes copies of cuda.h's structures,
# the tensor maps it encodes over PyTorch's tensors (and the ones it refuses), the cluster launches,
# the opt-in to dynamic shared memory, and how a kernel's launch arguments are marshalled, all
# against a stand-in for libcuda that records every call. Run by tst_torchbridge with the Python
# that has PyTorch:
#   python3 torchbridge_driver.py PLUGINS/harness
# Prints one line per check; exits non-zero on the first that fails, naming it.

import ctypes
import io
import sys

sys.path.insert(0, sys.argv[1])
sys.stdin = io.StringIO("")  # the bridge watches its input only when run as the worker runs it
import torch  # noqa: E402
import torchbridge as tb  # noqa: E402

CUDA_ERROR_INVALID_VALUE = 1
RealDriver = tb.Driver  # the checks that go through kernel_call put a stand-in in its place


class FakeCuda:
    """Records the driver calls; each returns `fail.get(name, 0)`."""

    def __init__(self):
        self.calls = []
        self.fail = {}

    def __getattr__(self, name):
        if not name.startswith("cu"):
            raise AttributeError(name)

        def call(*args):
            self.calls.append((name, args))
            if name == "cuGetErrorString":
                args[1]._obj.value = b"CUDA_ERROR_INVALID_VALUE"
            return self.fail.get(name, 0)

        return call

    def last(self, name):
        return next(args for n, args in reversed(self.calls) if n == name)


def driver():
    d = RealDriver.__new__(RealDriver)  # no context: nothing here touches a GPU
    d.c = ctypes
    d.lib = FakeCuda()
    return d


def value(arg):
    return arg.value if hasattr(arg, "value") else arg


def check(name, condition, detail=""):
    if not condition:
        sys.exit("FAIL %s %s" % (name, detail))
    print("ok   %s" % name)


def raises(name, fn, mentions):
    try:
        fn()
    except RuntimeError as e:
        check(name, mentions in str(e), "(said: %s)" % e)
        return
    check(name, False, "(nothing was raised)")


def bf16_map(dims, box, index=0, kind="input"):
    return {kind: index, "name": "tA", "line": 12, "element_bytes": 2, "data_type": 9,
            "dims": dims, "strides": [dims[0] * 2], "box": box, "swizzle": 3, "interleave": 0,
            "l2_promotion": 2, "oob_fill": 0}


def structures():
    # cuda.h (CUDA 12/13) on x86-64: sizeof and offsets, as a C compiler lays them out.
    C, A = tb.LaunchConfig, tb.LaunchAttribute
    check("CUlaunchConfig is 56 bytes", ctypes.sizeof(C) == 56, ctypes.sizeof(C))
    check("CUlaunchConfig's hStream, attrs and numAttrs at 32, 40, 48",
          (C.stream.offset, C.attrs.offset, C.num_attrs.offset) == (32, 40, 48))
    check("CUlaunchAttribute is 72 bytes, its value at 8", ctypes.sizeof(A) == 72 and A.value.offset == 8)


def tensor_maps():
    d = driver()
    a = torch.zeros(64, 128, dtype=torch.bfloat16)  # dims innermost first: 128 x 64
    holder = d.tensor_map(bf16_map([128, 64], [64, 32]), a, "tensormap tA (line 12)")
    args = d.lib.last("cuTensorMapEncodeTiled")
    check("the map is written to 128 bytes, 128-byte aligned",
          ctypes.sizeof(holder) == 128 and ctypes.addressof(holder) % 128 == 0
          and args[0]._obj is holder)
    check("element type, rank and address are passed as given",
          [value(args[1]), value(args[2]), value(args[3])] == [9, 2, a.data_ptr()])
    check("dims, strides, box and element strides",
          [list(args[4]), list(args[5]), list(args[6]), list(args[7])] == [[128, 64], [256], [64, 32], [1, 1]])
    check("interleave, swizzle, L2 promotion and fill in cuTensorMapEncodeTiled's order",
          [value(x) for x in args[8:12]] == [0, 3, 2, 0])

    before = len(d.lib.calls)
    raises("a map over a transposed (non-contiguous) tensor is refused",
           lambda: d.tensor_map(bf16_map([64, 128], [32, 64]), a.t(), "tensormap tA (line 12)"),
           "tensormap tA (line 12): the tensor map spans 16384 bytes of a non-contiguous tensor")
    raises("a map spanning more than the tensor holds is refused",
           lambda: d.tensor_map(bf16_map([128, 65], [64, 32]), a, "tensormap tA (line 12)"),
           "spans 16640 bytes of a contiguous tensor of 16384 bytes")
    raises("a map over an address that is not 16-byte aligned is refused",
           lambda: d.tensor_map(bf16_map([120, 64], [64, 32]), a.view(-1)[1:1 + 120 * 64].view(64, 120),
                                "tensormap tA (line 12)"),
           "the tensor's address is not 16-byte aligned")
    check("a refused map never reaches the driver", len(d.lib.calls) == before)
    d.lib.fail["cuTensorMapEncodeTiled"] = CUDA_ERROR_INVALID_VALUE
    raises("the driver's refusal is an error naming the map and the driver's reason",
           lambda: d.tensor_map(bf16_map([128, 64], [64, 32]), a, "tensormap tA (line 12)"),
           "cuTensorMapEncodeTiled (tensormap tA (line 12)) failed with CUDA_ERROR_INVALID_VALUE (1)")


def launches():
    d = driver()
    params = (ctypes.c_void_p * 1)()
    d.launch(7, [3, 2, 1], [128, 1, 1], 1024, 0, params, "line 5, kernel k")
    check("a launch without a cluster goes through cuLaunchKernel",
          [value(x) for x in d.lib.last("cuLaunchKernel")[1:8]] == [3, 2, 1, 128, 1, 1, 1024])
    d.launch(7, [4, 1, 1], [384, 1, 1], 200000, 0, params, "line 5, kernel k", cluster=[2, 1, 1])
    config = d.lib.last("cuLaunchKernelEx")[0]._obj
    attr = config.attrs[0]
    check("a cluster launch goes through cuLaunchKernelEx with one cluster attribute",
          [config.grid_x, config.block_x, config.smem, config.num_attrs, attr.id, list(attr.value.cluster_dim)]
          == [4, 384, 200000, 1, tb.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, [2, 1, 1]])
    d.lib.fail["cuLaunchKernelEx"] = CUDA_ERROR_INVALID_VALUE
    raises("a refused launch names where it came from", lambda: d.launch(
        7, [4, 1, 1], [384, 1, 1], 0, 0, params, "line 5, kernel k", cluster=[2, 1, 1]),
        "cuLaunchKernelEx (line 5, kernel k) failed")


def shared_memory_opt_in():
    # A kernel's static shared memory counts toward the 48 KiB it may use without opting in, so a
    # launch that asks for any dynamic shared memory opts in (for exactly that many bytes).
    d = driver()
    d.function(5, "k", 0)
    check("a launch without dynamic shared memory does not opt in",
          not any(n == "cuFuncSetAttribute" for n, _ in d.lib.calls))
    for smem in (48 * 1024, 100 * 1024):
        d.lib.calls.clear()
        d.function(5, "k", smem)
        opt_in = [[value(a[1]), value(a[2])] for n, a in d.lib.calls if n == "cuFuncSetAttribute"]
        check("smem=%d opts in to %d dynamic bytes" % (smem, smem),
              opt_in == [[tb.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem]], opt_in)
    d.lib.fail["cuFuncSetAttribute"] = CUDA_ERROR_INVALID_VALUE
    raises("a refused opt-in is an error naming the kernel", lambda: d.function(5, "k", 300 * 1024),
           "cuFuncSetAttribute(k)")


def kernel_arguments():
    fake = driver()
    tb.Driver = lambda device: fake  # kernel_call makes its own; this one has no GPU behind it
    a = torch.zeros(64, 128, dtype=torch.bfloat16)
    req = {
        "kernel": {"image": "00", "scratch": [256], "tensor_maps": [bf16_map([128, 64], [64, 32], 0, "output")],
                   "launches": [{"function": "k", "grid": [1, 1, 1], "block": [32, 1, 1], "smem": 0, "line": 9,
                                 "args": [{"input": 0}, {"tensor_map": 0}, {"scratch": 0}, {"bytes": "2a000000"}]}]},
        "output_specs": [{"name": "c", "dtype": "bfloat16", "shape": [64, 128]}],
    }
    run, outputs = tb.kernel_call(req, [a], "cpu")
    encoded = fake.lib.last("cuTensorMapEncodeTiled")
    check("a map over an output is encoded over the output tensor the bridge made",
          value(encoded[3]) == outputs[0].data_ptr())
    (_, _, _, _, params, holders, where, _), = run.keep[3]
    scratch = run.keep[1][0]
    check("arguments: the input's address, the map itself, the scratch's address, the literal bytes",
          [bytes(holders[0].raw), holders[1] is run.keep[2][0], bytes(holders[2].raw), bytes(holders[3].raw)]
          == [a.data_ptr().to_bytes(8, "little"), True, scratch.data_ptr().to_bytes(8, "little"), b"\x2a\0\0\0"])
    check("the parameter array points at each argument's bytes",
          [params[i] for i in range(4)] == [ctypes.addressof(h) for h in holders] and where == "line 9, kernel k")


def poisoned_and_checked_runs():
    fake = driver()
    tb.Driver = lambda device: fake
    tb.torch.cuda.current_stream = lambda: type("Stream", (), {"cuda_stream": 0})()
    req = {"kernel": {"image": "00", "launches": [
               {"function": "k", "grid": [1, 1, 1], "block": [32, 1, 1], "args": [{"output": 0}, {"output": 1}]}]},
           "output_specs": [{"name": "y", "dtype": "float32", "shape": [3, 5]},
                            {"name": "n", "dtype": "int32", "shape": [7]}]}
    run, outputs = tb.kernel_call(req, [], "cpu")
    run.poison()
    fills = [(value(a[0]), value(a[1]), value(a[2])) for n, a in fake.lib.calls if n == "cuMemsetD8Async"]
    check("before each run every output byte is poisoned with 0xFF, by memsets",
          fills == [(outputs[0].data_ptr(), 0xFF, 60), (outputs[1].data_ptr(), 0xFF, 28)] and run.launches == 1)

    specs = [{"name": "y", "atol": 1e-3, "rtol": 0}, {"name": "n"}]
    want = [torch.ones(3, 5), torch.arange(7, dtype=torch.int32)]
    tb.compare_outputs([want[0] + 1.5e-3, want[1].clone()], want, specs, "")  # within twice the tolerance
    y = want[0].clone()
    y[2, 4] = float("nan")
    raises("a float output left unwritten in a timed run is found, and the run named",
           lambda: tb.compare_outputs([y, want[1]], want, specs, "in its run 7 there"),
           "the kernel's output 'y' in PyTorch's process differs from eager's in its run 7 there (max abs error inf)")
    raises("an integer output must be equal",
           lambda: tb.compare_outputs([want[0], want[1] + 1], want, specs, "in its run 2 there"),
           "output 'n' in PyTorch's process differs from eager's in its run 2 there")


class Event:
    def __init__(self, name, us):
        self.name = name
        self.time_range = type("Range", (), {"elapsed_us": lambda _self: us})()


def split_calls():
    # Per call: the flush's kernel, then the call's own, then (the kernel's) checks, not timed.
    flush = [Event("flush", 500.0)]
    kernels = (flush + [Event("k", 10.0), Event("cmp", 90.0), Event("cmp2", 80.0)]
               + flush + [Event("eager", 12.0)]
               + flush + [Event("k", 11.0), Event("cmp", 90.0), Event("cmp2", 80.0)])
    order = ["kernel", "eager", "kernel"]
    counts, timed = {"kernel": 3, "eager": 1}, {"kernel": 1, "eager": 1}
    check("a call's time is its own kernels', not the checks after them",
          tb.split_calls(kernels, order, ["flush"], counts, timed) == {"kernel": [10.0, 11.0], "eager": [12.0]})
    check("without checks every kernel of a call counts",
          tb.split_calls(kernels[4:6], ["eager"], ["flush"], {"eager": 1}) == {"eager": [12.0]})
    check("a call short of its checks' kernels does not line up",
          tb.split_calls(kernels[:-1], order, ["flush"], counts, timed) is None)
    check("a call timed by none of its kernels is refused",
          tb.split_calls(kernels, order, ["flush"], counts, {"kernel": 0, "eager": 1}) is None)
    # Shuffled rounds (eager first in round 1, the kernel first in round 2): the i-th time of each
    # call is from round i, so that the evaluator can pair them round by round.
    rounds = (flush + [Event("eager", 20.0)] + flush + [Event("k", 10.0)]
              + flush + [Event("k", 11.0)] + flush + [Event("eager", 23.0)])
    check("each call's times are in the order of the rounds",
          tb.split_calls(rounds, ["eager", "kernel", "kernel", "eager"], ["flush"], {"kernel": 1, "eager": 1})
          == {"kernel": [10.0, 11.0], "eager": [20.0, 23.0]})


structures()
tensor_maps()
launches()
shared_memory_opt_in()
kernel_arguments()
poisoned_and_checked_runs()
split_calls()
print("all checks passed")
