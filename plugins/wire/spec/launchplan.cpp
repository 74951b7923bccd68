#include "launchplan.h"

#include <algorithm>

namespace kforge::spec {

namespace {

Error lineError(int line, const std::string& what) {
    return Error{"line " + std::to_string(line) + ": " + what};
}

bool isIntegerType(const std::string& t) {
    static const char* ints[] = {"int",           "unsigned int", "uint",           "long",
                                 "unsigned long", "ulong",        "long long",      "unsigned long long",
                                 "size_t",        "int32_t",      "uint32_t",       "int64_t",
                                 "uint64_t",      "short",        "unsigned short", "ushort",
                                 "unsigned",      "char",         "uchar",          "unsigned char"};
    for (const char* i : ints)
        if (t == i)
            return true;
    return false;
}

std::string bytesText(std::uint64_t b) {
    if (b >= (1ull << 30) && b % (1ull << 30) == 0)
        return std::to_string(b >> 30) + " GiB";
    return std::to_string(b) + " bytes";
}

bool isFloatType(const std::string& t) {
    return t == "float" || t == "double" || t == "half" || t == "__half";
}

} // namespace

Expected<LaunchPlan> LaunchPlan::resolve(const KernelFile& kf, const TaskSpec& task, const Sizes& sizes,
                                         const std::map<std::string, std::int64_t>& overrides,
                                         const DeviceLimits& limits) {
    LaunchPlan plan;
    Variables vars = task.variables(sizes);

    for (const auto& [name, value] : overrides)
        if (!kf.findParam(name))
            return fail("parameter '" + name + "' is not declared by the kernel (declare it with '// kforge:param')");
    for (const auto& p : kf.params) {
        if (vars.count(p.name) || task.findInput(p.name) || task.findOutput(p.name))
            return lineError(p.line,
                             "param " + p.name + " has the name of one of the task's sizes, scalars or buffers");
        std::int64_t value = p.value;
        if (auto it = overrides.find(p.name); it != overrides.end()) {
            value = it->second;
            if (!p.choices.empty() && std::find(p.choices.begin(), p.choices.end(), value) == p.choices.end())
                return lineError(p.line, "param " + p.name + " = " + std::to_string(value)
                                             + " is not one of its declared choices");
        }
        plan.params[p.name] = value;
        vars[p.name] = static_cast<double>(value);
        plan.defines.push_back("-D" + p.name + "=" + std::to_string(value));
    }

    if (kf.launches.size() > kMaxLaunches)
        return lineError(kf.launches[kMaxLaunches].line,
                         "more than " + std::to_string(kMaxLaunches) + " launches (the limit per plan)");
    if (kf.scratch.size() > kMaxScratch)
        return lineError(kf.scratch[kMaxScratch].line,
                         "more than " + std::to_string(kMaxScratch) + " scratch buffers (the limit per plan)");
    std::uint64_t scratchBytes = 0;
    for (const auto& s : kf.scratch) {
        if (vars.count(s.name) || task.findInput(s.name) || task.findOutput(s.name))
            return lineError(s.line,
                             "scratch " + s.name + " has the name of one of the task's sizes, parameters or buffers");
        auto n = Expression::evaluateInteger(s.count, vars);
        if (!n)
            return lineError(s.line, "scratch " + s.name + ": " + n.error());
        if (*n <= 0)
            return lineError(s.line, "scratch " + s.name + ": size evaluates to " + std::to_string(*n));
        const std::uint64_t count = static_cast<std::uint64_t>(*n);
        std::uint64_t bytes = 0;
        if (__builtin_mul_overflow(count, static_cast<std::uint64_t>(dtypeSize(s.dtype)), &bytes)
            || bytes > kMaxScratchBytes)
            return lineError(s.line, "scratch " + s.name + ": " + std::to_string(count) + " elements of "
                                         + std::string(dtypeName(s.dtype)) + " exceed the limit of "
                                         + bytesText(kMaxScratchBytes) + " of scratch memory");
        if (__builtin_add_overflow(scratchBytes, bytes, &scratchBytes) || scratchBytes > kMaxScratchBytes)
            return lineError(s.line, "scratch " + s.name + ": the scratch buffers need " + std::to_string(scratchBytes)
                                         + " bytes together, more than the limit of " + bytesText(kMaxScratchBytes));
        plan.scratch.push_back({s.name, s.dtype, count});
    }

    for (const auto& l : kf.launches) {
        ResolvedLaunch r;
        r.kernel = l.kernel;
        r.line = l.line;
        const std::string who = "launch " + l.kernel;
        if (l.grid.size() != l.block.size())
            return lineError(l.line, who + ": grid has " + std::to_string(l.grid.size()) + " dimensions but block has "
                                         + std::to_string(l.block.size()));
        r.dims = static_cast<int>(l.grid.size());
        std::uint64_t threads = 1;
        std::uint64_t blocks = 1;
        for (int d = 0; d < r.dims; ++d) {
            auto g = Expression::evaluateInteger(l.grid[static_cast<std::size_t>(d)], vars);
            if (!g)
                return lineError(l.line, who + ": grid: " + g.error());
            auto b = Expression::evaluateInteger(l.block[static_cast<std::size_t>(d)], vars);
            if (!b)
                return lineError(l.line, who + ": block: " + b.error());
            if (*g <= 0 || *b <= 0)
                return lineError(l.line, who + ": grid and block sizes must be positive (dimension " + std::to_string(d)
                                             + " is grid " + std::to_string(*g) + ", block " + std::to_string(*b)
                                             + ")");
            r.grid[static_cast<std::size_t>(d)] = static_cast<std::uint64_t>(*g);
            r.block[static_cast<std::size_t>(d)] = static_cast<std::uint64_t>(*b);
            if (r.block[static_cast<std::size_t>(d)] > limits.maxBlockDims[static_cast<std::size_t>(d)])
                return lineError(l.line, who + ": block dimension " + std::to_string(d) + " is " + std::to_string(*b)
                                             + ", the device allows at most "
                                             + std::to_string(limits.maxBlockDims[static_cast<std::size_t>(d)]));
            if (r.grid[static_cast<std::size_t>(d)] > limits.maxGridDims[static_cast<std::size_t>(d)])
                return lineError(l.line, who + ": grid dimension " + std::to_string(d) + " is " + std::to_string(*g)
                                             + ", the device allows at most "
                                             + std::to_string(limits.maxGridDims[static_cast<std::size_t>(d)]));
            // Each factor is below 2^32 (checked above against the device's limits), the products
            // are checked as they grow.
            if (__builtin_mul_overflow(threads, r.block[static_cast<std::size_t>(d)], &threads)
                || __builtin_mul_overflow(blocks, r.grid[static_cast<std::size_t>(d)], &blocks))
                return lineError(l.line, who + ": the launch's size overflows");
        }
        std::uint64_t items = 0;
        const bool overflow = __builtin_mul_overflow(blocks, threads, &items);
        if (overflow || items > kMaxWorkItems)
            return lineError(
                l.line, who + ": grid x block is " + (overflow ? std::string("more than 2^64") : std::to_string(items))
                            + " work items; at most " + std::to_string(kMaxWorkItems) + " per launch are allowed");
        if (threads > limits.maxBlockThreads)
            return lineError(l.line, who + ": a block of " + std::to_string(threads)
                                         + " threads exceeds the device's limit of "
                                         + std::to_string(limits.maxBlockThreads));
        if (!l.smem.empty() && limits.maxSharedBytes == 0)
            return lineError(l.line,
                             who
                                 + ": smem= is not supported by this backend (dynamic shared memory is CUDA-only; "
                                   "declare __local arrays in OpenCL kernels)");
        if (!l.smem.empty()) {
            auto s = Expression::evaluateInteger(l.smem, vars);
            if (!s)
                return lineError(l.line, who + ": smem: " + s.error());
            if (*s < 0 || static_cast<std::uint64_t>(*s) > limits.maxSharedBytes)
                return lineError(l.line, who + ": smem=" + std::to_string(*s) + " bytes is outside 0.."
                                             + std::to_string(limits.maxSharedBytes));
            r.smemBytes = static_cast<std::uint64_t>(*s);
        }

        const KernelSignature* sig = kf.findKernel(l.kernel);
        for (const auto& a : sig->args) {
            ArgBinding b;
            b.name = a.name;
            b.elementType = a.elementType;
            const std::string arg = "kernel " + sig->name + ": parameter '" + a.name + "'";
            auto bindBuffer = [&](ArgBinding::Kind kind, int index, DType dtype) -> Status {
                b.kind = kind;
                b.index = index;
                if (!a.pointer)
                    return lineError(sig->line, arg + " names a buffer but is not a pointer");
                if (!ctypeMatches(dtype, a.elementType))
                    return lineError(sig->line, arg + " is " + a.elementType + "* but the buffer holds "
                                                    + std::string(dtypeName(dtype)));
                return success();
            };
            Status st = success();
            bool found = true;
            if (const TensorSpec* in = task.findInput(a.name)) {
                st = bindBuffer(ArgBinding::Kind::Input, static_cast<int>(in - task.inputs.data()), in->dtype);
                if (st && !a.isConst)
                    st = lineError(sig->line, arg + " is an input and must be declared const");
            } else if (const TensorSpec* out = task.findOutput(a.name)) {
                st = bindBuffer(ArgBinding::Kind::Output, static_cast<int>(out - task.outputs.data()), out->dtype);
            } else {
                auto sc = std::find_if(plan.scratch.begin(), plan.scratch.end(),
                                       [&](const auto& s) { return s.name == a.name; });
                if (sc != plan.scratch.end()) {
                    st = bindBuffer(ArgBinding::Kind::Scratch, static_cast<int>(sc - plan.scratch.begin()), sc->dtype);
                } else if (plan.params.count(a.name)) {
                    // Parameters are compile-time defines, which would rewrite the argument's name.
                    st = lineError(sig->line, arg
                                                  + " has the name of a kforge:param, which is a compile-time constant "
                                                    "(-D"
                                                  + a.name + "=...): use " + a.name
                                                  + " in the code and drop the argument");
                } else if (sizes.count(a.name) || task.findScalar(a.name)) {
                    b.kind = sizes.count(a.name) ? ArgBinding::Kind::Size : ArgBinding::Kind::Scalar;
                    b.value = vars.at(a.name);
                    if (a.pointer)
                        st = lineError(sig->line, arg + " names a value but is a pointer");
                    else if (!isIntegerType(a.elementType) && !isFloatType(a.elementType))
                        st =
                            lineError(sig->line, arg + " has type '" + a.elementType + "', which cannot hold a number");
                    else if (isIntegerType(a.elementType) && b.kind == ArgBinding::Kind::Scalar
                             && task.findScalar(a.name)->dtype != DType::Int32
                             && task.findScalar(a.name)->dtype != DType::Int64)
                        st = lineError(sig->line, arg + " is an integer but scalar '" + a.name + "' is "
                                                      + std::string(dtypeName(task.findScalar(a.name)->dtype)));
                } else {
                    found = false;
                }
            }
            if (!found) {
                std::string known;
                auto add = [&](const std::string& n) { known += (known.empty() ? "" : ", ") + n; };
                for (const auto& t : task.inputs)
                    add(t.name);
                for (const auto& t : task.outputs)
                    add(t.name);
                for (const auto& s : plan.scratch)
                    add(s.name);
                for (const auto& [n, v] : sizes)
                    add(n);
                for (const auto& s : task.scalars)
                    add(s.name);
                for (const auto& [n, v] : plan.params)
                    add(n);
                return lineError(sig->line,
                                 arg + " matches nothing the task or the kernel file declares (known: " + known + ")");
            }
            if (!st)
                return Error{st.error()};
            r.args.push_back(b);
        }
        plan.launches.push_back(std::move(r));
    }

    // Every output must be written by some launch.
    for (std::size_t i = 0; i < task.outputs.size(); ++i) {
        bool bound = false;
        for (const auto& r : plan.launches)
            for (const auto& a : r.args)
                bound |= a.kind == ArgBinding::Kind::Output && a.index == static_cast<int>(i);
        if (!bound)
            return fail("no launched kernel takes output '" + task.outputs[i].name + "' as a parameter");
    }
    return plan;
}

} // namespace kforge::spec
