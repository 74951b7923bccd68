#include "launchplan.h"

#include <algorithm>
#include <numeric>

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

// Whether the tensor memory accelerator has an element type for `t` (CUtensorMapDataType).
bool tmaSupports(DType t) {
    switch (t) {
    case DType::Float32:
    case DType::Float64:
    case DType::Float16:
    case DType::BFloat16:
    case DType::Int32:
    case DType::Int64:
    case DType::UInt8:
        return true;
    }
    return false;
}

std::string sizesText(const Sizes& sizes) {
    std::string s;
    for (const auto& [name, value] : sizes)
        s += (s.empty() ? "" : ", ") + name + " = " + std::to_string(value);
    return s;
}

// The input or output a tensor map describes, or why there is none. `scratch` lists the plan's
// scratch buffers, to say why those cannot be described.
Expected<const TensorSpec*> tensorMapBuffer(const TensorMapDecl& t, const TaskSpec& task,
                                            const std::vector<ResolvedScratch>& scratch) {
    if (const TensorSpec* in = task.findInput(t.buffer))
        return in;
    if (const TensorSpec* out = task.findOutput(t.buffer))
        return out;
    const std::string who = "tensormap " + t.name + " over " + t.buffer;
    if (std::any_of(scratch.begin(), scratch.end(), [&](const ResolvedScratch& s) { return s.name == t.buffer; }))
        return lineError(t.line, who + ": " + t.buffer
                                     + " is a scratch buffer, which has a length but no shape; a tensor map "
                                       "describes one of the task's inputs or outputs");
    std::string known;
    for (const auto& b : task.inputs)
        known += (known.empty() ? "" : ", ") + b.name;
    for (const auto& b : task.outputs)
        known += (known.empty() ? "" : ", ") + b.name;
    return lineError(t.line, who + ": " + t.buffer + " is not one of the task's inputs or outputs (known: "
                                 + (known.empty() ? "none" : known) + ")");
}

// What is wrong with the byte stride of dimension `d` (innermost first, 0 when it overflowed) of a
// tensor map over `buf`, whose dimensions at the plan's sizes are `outer` (outermost first); "" when
// TMA takes it. `launch` names the launch that binds the map, for the advice.
std::string strideProblem(const TensorMapDecl& t, const TensorSpec& buf, const std::vector<std::uint64_t>& outer,
                          std::size_t d, std::uint64_t stride, const std::string& launch) {
    const std::size_t rank = outer.size();
    const std::uint64_t elementBytes = dtypeSize(buf.dtype);
    if (stride != 0 && stride < kMaxTensorMapStride && stride % kTensorMapAlign == 0)
        return {};
    std::string at; // the dimensions the stride is made of, as the task writes them
    for (std::size_t k = rank - d; k < rank; ++k)
        at += (at.empty() ? "" : ", ") + buf.shape[k] + " = " + std::to_string(outer[k]);
    const std::string what = d == 1 ? std::string("its rows are ")
                                    : "consecutive indices of its dimension " + std::to_string(rank - 1 - d) + " are ";
    const std::string head = "tensormap " + t.name + " over " + t.buffer + ": " + what;
    if (stride == 0 || stride >= kMaxTensorMapStride)
        return head + (stride == 0 ? "more than 2^64" : std::to_string(stride)) + " bytes apart at these sizes (" + at
               + "); TMA allows less than 2^40";
    std::string advice = "guard " + launch + " with when=";
    const std::string& inner = buf.shape[rank - 1];
    if (d == 1 && isIdentifier(inner))
        advice += "mod(" + inner + ", " + std::to_string(kTensorMapAlign / std::gcd(kTensorMapAlign, elementBytes))
                  + ") == 0";
    advice += " and give the other sizes a launch without tensor maps";
    return head + std::to_string(stride) + " bytes apart at these sizes (" + at + "); TMA needs a multiple of "
           + std::to_string(kTensorMapAlign) + " bytes: " + advice;
}

// What is wrong with kernel parameter `a` (`arg` names it in messages) for binding a tensor map,
// or "".
std::string tensorMapArgProblem(const KernelArg& a, const std::string& arg) {
    const std::string declare = "declare it 'const __grid_constant__ CUtensorMap " + a.name + "'";
    if (a.pointer)
        return arg + " names a tensormap but is a pointer; a tensor map is passed by value: " + declare;
    if (a.elementType != "CUtensorMap")
        return arg + " names a tensormap but has type '" + a.elementType + "'; " + declare;
    if (!a.gridConstant)
        return arg
               + " is a CUtensorMap without __grid_constant__: TMA reads the descriptor through the parameter's "
                 "address, which only a __grid_constant__ parameter keeps in kernel parameter memory; "
               + declare;
    return {};
}

Error unmatchedArg(int line, const std::string& arg, const std::string& known) {
    return lineError(line, arg + " matches nothing the task or the kernel file declares (known: " + known + ")");
}

// A tensor map's layout at the plan's sizes, every bound of cuTensorMapEncodeTiled checked.
// `launch` names the launch that binds it, for the advice on sizes TMA cannot describe.
Expected<ResolvedTensorMap> resolveTensorMap(const TensorMapDecl& t, const TensorSpec& buf, bool input, int index,
                                             const Variables& vars, const std::string& launch) {
    const std::string who = "tensormap " + t.name + " over " + t.buffer;
    ResolvedTensorMap m;
    m.name = t.name;
    m.bufferKind = input ? ArgBinding::Kind::Input : ArgBinding::Kind::Output;
    m.buffer = index;
    m.bufferName = buf.name;
    m.dtype = buf.dtype;
    m.swizzle = t.swizzle;
    m.line = t.line;
    if (!tmaSupports(buf.dtype))
        return lineError(t.line, who + ": TMA has no element type for " + std::string(dtypeName(buf.dtype)));
    const std::size_t rank = buf.shape.size();
    const std::uint64_t elementBytes = dtypeSize(buf.dtype);

    // Shape order is outermost first; the driver takes the innermost dimension first.
    std::vector<std::uint64_t> outer(rank);
    for (std::size_t i = 0; i < rank; ++i) {
        auto v = Expression::evaluateInteger(buf.shape[i], vars);
        if (!v)
            return lineError(t.line, who + ": dimension " + std::to_string(i) + ": " + v.error());
        if (*v < 1 || static_cast<std::uint64_t>(*v) > kMaxTensorMapDim)
            return lineError(t.line, who + ": dimension " + std::to_string(i) + " ('" + buf.shape[i] + "') is "
                                         + std::to_string(*v) + " at these sizes; TMA takes 1 to 2^32 elements");
        outer[i] = static_cast<std::uint64_t>(*v);
    }
    m.dims.assign(outer.rbegin(), outer.rend());

    // Byte strides of a dense row-major tensor: dimension d steps over all of dimensions 0..d-1.
    std::uint64_t stride = elementBytes;
    for (std::size_t d = 1; d < rank; ++d) {
        const bool overflow = __builtin_mul_overflow(stride, m.dims[d - 1], &stride);
        if (const std::string problem = strideProblem(t, buf, outer, d, overflow ? 0 : stride, launch);
            !problem.empty())
            return lineError(t.line, problem);
        m.strides.push_back(stride);
    }

    std::vector<std::uint32_t> box(rank);
    for (std::size_t i = 0; i < rank; ++i) {
        auto v = Expression::evaluateInteger(t.box[i], vars);
        if (!v)
            return lineError(t.line, who + ": box: " + v.error());
        if (*v < 1 || *v > static_cast<std::int64_t>(kMaxTensorMapBox))
            return lineError(t.line, who + ": box extent " + std::to_string(i) + " ('" + t.box[i] + "') is "
                                         + std::to_string(*v) + "; TMA takes 1 to " + std::to_string(kMaxTensorMapBox));
        box[i] = static_cast<std::uint32_t>(*v);
    }
    m.box.assign(box.rbegin(), box.rend());
    const std::uint64_t innerBytes = m.box[0] * elementBytes;
    const std::string innerText = "the box's innermost extent is " + std::to_string(m.box[0]) + " elements of "
                                  + std::string(dtypeName(buf.dtype)) + ", " + std::to_string(innerBytes) + " bytes";
    if (innerBytes % kTensorMapAlign != 0)
        return lineError(t.line, who + ": " + innerText + "; TMA needs a multiple of " + std::to_string(kTensorMapAlign)
                                     + " bytes");
    if (t.swizzle != 0 && innerBytes > static_cast<std::uint64_t>(t.swizzle))
        return lineError(t.line, who + ": " + innerText + "; with swizzle=" + std::to_string(t.swizzle)
                                     + " it may be at most " + std::to_string(t.swizzle) + " bytes");
    return m;
}

// cluster= of launch `l` into r.cluster, once r.grid and r.dims are known: every extent positive,
// at most the device's blocks per cluster, each grid extent a multiple of the cluster's. A cluster
// of one block is no cluster, on every backend.
Status resolveCluster(const LaunchDecl& l, const Variables& vars, const DeviceLimits& limits, ResolvedLaunch& r) {
    const std::string who = "launch " + l.kernel;
    for (std::size_t d = 0; d < l.cluster.size(); ++d) {
        auto c = Expression::evaluateInteger(l.cluster[d], vars);
        if (!c)
            return lineError(l.line, who + ": cluster: " + c.error());
        if (*c <= 0)
            return lineError(l.line, who + ": cluster sizes must be positive (dimension " + std::to_string(d) + " is "
                                         + std::to_string(*c) + ")");
        r.cluster[d] = static_cast<std::uint64_t>(*c);
    }
    std::uint64_t blocks = 1;
    bool overflow = false;
    for (const std::uint64_t c : r.cluster)
        overflow |= __builtin_mul_overflow(blocks, c, &blocks);
    if (!overflow && blocks == 1)
        return success();
    const std::string text = "cluster=" + extentsText(r.cluster, r.dims);
    if (limits.maxClusterBlocks == 0)
        return lineError(l.line, who + ": " + text
                                     + " is not supported by this backend (thread block clusters need a CUDA GPU of "
                                       "compute capability 9.0 or newer; leave cluster= out, or give cluster=(1))");
    if (overflow || blocks > limits.maxClusterBlocks)
        return lineError(l.line, who + ": " + text + " is "
                                     + (overflow ? std::string("more than 2^64") : std::to_string(blocks))
                                     + " blocks per cluster; the device allows at most "
                                     + std::to_string(limits.maxClusterBlocks) + " (the portable cluster size)");
    std::size_t d = 0;
    while (d < static_cast<std::size_t>(r.dims) && r.grid[d] % r.cluster[d] == 0)
        ++d;
    if (d == static_cast<std::size_t>(r.dims))
        return success();
    return lineError(l.line, who + ": grid=" + extentsText(r.grid, r.dims) + " is not a multiple of " + text
                                 + " (dimension " + std::to_string(d) + ": " + std::to_string(r.grid[d])
                                 + " blocks in clusters of " + std::to_string(r.cluster[d])
                                 + "; round the grid up with round_up(..., " + std::to_string(r.cluster[d])
                                 + ") and have the kernel skip the extra blocks' work)");
}

} // namespace

DeviceLimits DeviceLimits::anyCurrentGpu(bool hopper) {
    DeviceLimits limits;
    limits.maxSharedBytes = 227 * 1024;
    limits.multiprocessors = 132;
    limits.tensorMaps = hopper;
    limits.maxClusterBlocks = hopper ? kPortableClusterBlocks : 0;
    return limits;
}

Expected<LaunchPlan> LaunchPlan::resolve(const KernelFile& kf, const TaskSpec& task, const Sizes& sizes,
                                         const std::map<std::string, std::int64_t>& overrides,
                                         const DeviceLimits& limits) {
    LaunchPlan plan;
    Variables vars = task.variables(sizes);

    if (auto st = kf.checkOverrides(overrides); !st)
        return Error{st.error()};
    for (const auto& p : kf.params) {
        if (vars.count(p.name) || task.findInput(p.name) || task.findOutput(p.name))
            return lineError(p.line,
                             "param " + p.name + " has the name of one of the task's sizes, scalars or buffers");
        const auto it = overrides.find(p.name);
        const std::int64_t value = it != overrides.end() ? it->second : p.value;
        plan.params[p.name] = value;
        vars[p.name] = static_cast<double>(value);
        plan.defines.push_back("-D" + p.name + "=" + std::to_string(value));
    }
    // The device's multiprocessor count, for grids sized to the device (persistent kernels); a size,
    // scalar or parameter of that name keeps its own meaning.
    if (limits.multiprocessors > 0 && !vars.count("SMS"))
        vars["SMS"] = static_cast<double>(limits.multiprocessors);

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

    // Tensor maps: names, buffers and ranks are checked for every declaration; the layout at these
    // sizes only where a launch that runs binds the map.
    if (kf.tensorMaps.size() > kMaxTensorMaps)
        return lineError(kf.tensorMaps[kMaxTensorMaps].line,
                         "more than " + std::to_string(kMaxTensorMaps) + " tensor maps (the limit per kernel file)");
    for (const auto& t : kf.tensorMaps) {
        const std::string who = "tensormap " + t.name;
        if (vars.count(t.name) || task.findInput(t.name) || task.findOutput(t.name))
            return lineError(t.line, who + " has the name of one of the task's sizes, scalars, buffers or parameters");
        auto buf = tensorMapBuffer(t, task, plan.scratch);
        if (!buf)
            return Error{buf.error()};
        const std::size_t rank = (*buf)->shape.size();
        if (rank < 1 || rank > kMaxTensorMapRank)
            return lineError(t.line, who + " over " + t.buffer + ": " + t.buffer + " has " + std::to_string(rank)
                                         + " dimensions; TMA takes 1 to " + std::to_string(kMaxTensorMapRank));
        if (t.box.size() != rank)
            return lineError(t.line, who + ": box has " + std::to_string(t.box.size()) + " dimensions but " + t.buffer
                                         + " has " + std::to_string(rank)
                                         + " (give one extent per dimension, outermost first)");
        for (const auto& e : t.box)
            if (auto st = Expression::check(e, vars); !st)
                return lineError(t.line, who + ": box: " + st.error());
    }
    std::map<std::string, int> tensorMapIndex; // name -> index into plan.tensorMaps

    std::string dropped; // the launches when= left out, for the message when none is left
    for (const auto& l : kf.launches) {
        ResolvedLaunch r;
        r.kernel = l.kernel;
        r.line = l.line;
        const std::string who = "launch " + l.kernel;
        if (l.grid.size() != l.block.size())
            return lineError(l.line, who + ": grid has " + std::to_string(l.grid.size()) + " dimensions but block has "
                                         + std::to_string(l.block.size()));
        // A cluster may leave out trailing dimensions (one block in each), never add one the grid lacks.
        if (l.cluster.size() > l.grid.size())
            return lineError(l.line, who + ": cluster has " + std::to_string(l.cluster.size())
                                         + " dimensions but grid has " + std::to_string(l.grid.size()));
        if (!l.when.empty()) {
            auto w = Expression::evaluate(l.when, vars);
            if (!w)
                return lineError(l.line, who + ": when: " + w.error());
            if (*w == 0.0) {
                // Left out at these sizes, but a typo is still an error at every size.
                for (const auto* part : {&l.grid, &l.block, &l.cluster})
                    for (const auto& e : *part)
                        if (auto st = Expression::check(e, vars); !st)
                            return lineError(l.line, who
                                                         + (part == &l.grid    ? ": grid: "
                                                            : part == &l.block ? ": block: "
                                                                               : ": cluster: ")
                                                         + st.error());
                if (!l.smem.empty())
                    if (auto st = Expression::check(l.smem, vars); !st)
                        return lineError(l.line, who + ": smem: " + st.error());
                dropped += (dropped.empty() ? "" : "; ") + std::string("line ") + std::to_string(l.line) + ": " + who
                           + " when=" + l.when;
                continue;
            }
        }
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
        if (auto st = resolveCluster(l, vars, limits, r); !st)
            return Error{st.error()};
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
            if (const TensorMapDecl* tm = kf.findTensorMap(a.name)) {
                b.kind = ArgBinding::Kind::TensorMap;
                if (!limits.tensorMaps) {
                    st = lineError(tm->line, "tensormap " + tm->name
                                                 + ": needs the tensor memory accelerator of a CUDA GPU of compute "
                                                   "capability 9.0 or newer, which this device does not have");
                } else if (const std::string problem = tensorMapArgProblem(a, arg); !problem.empty()) {
                    st = lineError(sig->line, problem);
                } else if (auto it = tensorMapIndex.find(tm->name); it != tensorMapIndex.end()) {
                    b.index = it->second;
                } else {
                    const TensorSpec* in = task.findInput(tm->buffer);
                    const TensorSpec* buf = in ? in : task.findOutput(tm->buffer);
                    const int index = static_cast<int>(in ? in - task.inputs.data() : buf - task.outputs.data());
                    auto m = resolveTensorMap(*tm, *buf, in != nullptr, index, vars,
                                              "launch " + l.kernel + " (line " + std::to_string(l.line) + ")");
                    if (!m)
                        return Error{m.error()};
                    b.index = static_cast<int>(plan.tensorMaps.size());
                    tensorMapIndex[tm->name] = b.index;
                    plan.tensorMaps.push_back(std::move(*m));
                }
            } else if (const TensorSpec* in = task.findInput(a.name)) {
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
                for (const auto& t : kf.tensorMaps)
                    add(t.name);
                for (const auto& [n, v] : sizes)
                    add(n);
                for (const auto& s : task.scalars)
                    add(s.name);
                for (const auto& [n, v] : plan.params)
                    add(n);
                return unmatchedArg(sig->line, arg, known);
            }
            if (!st)
                return Error{st.error()};
            r.args.push_back(b);
        }
        plan.launches.push_back(std::move(r));
    }

    if (plan.launches.empty())
        return fail("no launch of the plan applies at these sizes (" + sizesText(sizes) + "): " + dropped);

    // Every output must be written by some launch, through a pointer or a tensor map.
    for (std::size_t i = 0; i < task.outputs.size(); ++i) {
        bool bound = false;
        for (const auto& r : plan.launches)
            for (const auto& a : r.args) {
                bound |= a.kind == ArgBinding::Kind::Output && a.index == static_cast<int>(i);
                if (a.kind == ArgBinding::Kind::TensorMap) {
                    const ResolvedTensorMap& m = plan.tensorMaps[static_cast<std::size_t>(a.index)];
                    bound |= m.bufferKind == ArgBinding::Kind::Output && m.buffer == static_cast<int>(i);
                }
            }
        if (!bound)
            return fail("no launched kernel takes output '" + task.outputs[i].name
                        + "' as a parameter (or a tensor map over it)");
    }
    return plan;
}

} // namespace kforge::spec
