#include "store/torchexport.h"

#include "torchexport_source.h"
#include "util/text.h"

#include "expression.h"
#include "kernelfile.h"
#include "launchplan.h"

#include <QJsonArray>
#include <QJsonDocument>

namespace kforge::store {

namespace {

using util::q;

// A tensor's dimensions at these sizes.
spec::Expected<QJsonArray> dims(const spec::TensorSpec& t, const spec::Variables& vars) {
    QJsonArray shape;
    for (const auto& d : t.shape) {
        auto v = spec::Expression::evaluateInteger(d, vars);
        if (!v)
            return spec::fail(t.name + ": dimension '" + d + "': " + v.error());
        shape.append(static_cast<qint64>(*v));
    }
    return shape;
}

QString argKind(spec::ArgBinding::Kind kind) {
    switch (kind) {
    case spec::ArgBinding::Kind::Input:
        return QStringLiteral("input");
    case spec::ArgBinding::Kind::Output:
        return QStringLiteral("output");
    case spec::ArgBinding::Kind::Scratch:
        return QStringLiteral("scratch");
    case spec::ArgBinding::Kind::Size:
        return QStringLiteral("size");
    case spec::ArgBinding::Kind::Scalar:
        return QStringLiteral("scalar");
    case spec::ArgBinding::Kind::TensorMap:
        return QStringLiteral("tensor_map");
    }
    return {};
}

spec::Expected<QJsonObject> variantPlan(const spec::TaskBundle& task, const spec::KernelFile& kf,
                                        const model::Candidate& candidate, const std::string& variant) {
    auto sizes = task.spec.sizesFor(variant);
    if (!sizes)
        return spec::fail(sizes.error());
    auto exported = resolveForExport(kf, task.spec, *sizes, candidate.params);
    if (!exported)
        return spec::fail(exported.error());
    const spec::LaunchPlan* plan = &exported->plan;
    // ModelNew launches through CuPy or cuda-python, which encode no TMA descriptors, and through
    // CuPy, which launches no thread block clusters.
    for (const auto& la : plan->launches) {
        if (la.clusterBlocks() > 1)
            return spec::fail("line " + std::to_string(la.line) + ": launch " + la.kernel
                              + " runs in thread block clusters of " + std::to_string(la.clusterBlocks())
                              + " blocks (cluster=), which ModelNew cannot launch: --torch exports only launches "
                                "without clusters");
        for (const auto& a : la.args)
            if (a.kind == spec::ArgBinding::Kind::TensorMap)
                return spec::fail("line " + std::to_string(la.line) + ": launch " + la.kernel + " takes the tensor map "
                                  + a.name + " (// kforge:tensormap, line "
                                  + std::to_string(plan->tensorMaps[static_cast<std::size_t>(a.index)].line)
                                  + "), which ModelNew cannot encode: --torch exports only launches without "
                                    "tensor maps");
    }
    const auto vars = task.spec.variables(*sizes);
    QJsonObject sizesJson;
    for (const auto& [name, value] : *sizes)
        sizesJson.insert(q(name), static_cast<qint64>(value));
    QJsonObject scalars;
    for (const auto& s : task.spec.scalars)
        scalars.insert(q(s.name), s.value);
    // Each input's initialiser as task.json writes it, for check.py's fresh inputs.
    const auto taskJson = task.spec.toJson();
    QJsonArray inputs;
    for (std::size_t i = 0; i < task.spec.inputs.size(); ++i) {
        const auto& t = task.spec.inputs[i];
        auto shape = dims(t, vars);
        if (!shape)
            return spec::fail(shape.error());
        const QJsonObject init =
            QJsonDocument::fromJson(QByteArray::fromStdString(taskJson["inputs"][i]["init"].dump())).object();
        inputs.append(QJsonObject{{QStringLiteral("name"), q(t.name)},
                                  {QStringLiteral("dtype"), q(std::string(spec::dtypeName(t.dtype)))},
                                  {QStringLiteral("shape"), *shape},
                                  {QStringLiteral("init"), init}});
    }
    QJsonArray outputs;
    for (const auto& t : task.spec.outputs) {
        auto shape = dims(t, vars);
        if (!shape)
            return spec::fail(shape.error());
        outputs.append(QJsonObject{{QStringLiteral("name"), q(t.name)},
                                   {QStringLiteral("dtype"), q(std::string(spec::dtypeName(t.dtype)))},
                                   {QStringLiteral("shape"), *shape},
                                   {QStringLiteral("atol"), t.atol},
                                   {QStringLiteral("rtol"), t.rtol}});
    }
    QJsonArray scratch;
    for (const auto& s : plan->scratch)
        scratch.append(QJsonObject{{QStringLiteral("name"), q(s.name)},
                                   {QStringLiteral("dtype"), q(std::string(spec::dtypeName(s.dtype)))},
                                   {QStringLiteral("count"), static_cast<qint64>(s.count)}});
    QJsonArray defines;
    for (const auto& d : plan->defines)
        defines.append(q(d));
    QJsonArray launches;
    for (const auto& la : plan->launches) {
        QJsonArray args;
        for (const auto& a : la.args)
            args.append(QJsonObject{{QStringLiteral("kind"), argKind(a.kind)},
                                    {QStringLiteral("name"), q(a.name)},
                                    {QStringLiteral("index"), a.index},
                                    {QStringLiteral("type"), q(a.elementType)},
                                    {QStringLiteral("value"), a.value}});
        const auto triple = [](const std::array<std::uint64_t, 3>& d) {
            return QJsonArray{static_cast<qint64>(d[0]), static_cast<qint64>(d[1]), static_cast<qint64>(d[2])};
        };
        launches.append(QJsonObject{{QStringLiteral("kernel"), q(la.kernel)},
                                    {QStringLiteral("grid"), triple(la.grid)},
                                    {QStringLiteral("block"), triple(la.block)},
                                    {QStringLiteral("shared_bytes"), static_cast<qint64>(la.smemBytes)},
                                    {QStringLiteral("args"), args}});
    }
    QJsonObject out{{QStringLiteral("name"), q(variant)}, {QStringLiteral("sizes"), sizesJson},
                    {QStringLiteral("scalars"), scalars}, {QStringLiteral("inputs"), inputs},
                    {QStringLiteral("outputs"), outputs}, {QStringLiteral("scratch"), scratch},
                    {QStringLiteral("defines"), defines}, {QStringLiteral("launches"), launches}};
    if (exported->assumedSms > 0) // grids sized for that many SMs; model_new.py runs them as they are
        out.insert(QStringLiteral("multiprocessors_assumed"), static_cast<qint64>(exported->assumedSms));
    return out;
}

} // namespace

spec::DeviceLimits exportLimits() {
    spec::DeviceLimits limits;
    limits.maxSharedBytes = 227 * 1024;
    // Plans with tensor maps and clusters resolve (launch-plan.json lists them); ModelNew refuses
    // them.
    limits.tensorMaps = true;
    limits.maxClusterBlocks = spec::kPortableClusterBlocks;
    return limits;
}

spec::Expected<ExportPlan> resolveForExport(const spec::KernelFile& kf, const spec::TaskSpec& task,
                                            const spec::Sizes& sizes, const model::ParamValues& params) {
    auto plan = spec::LaunchPlan::resolve(kf, task, sizes, params, exportLimits());
    if (plan)
        return ExportPlan{std::move(*plan), 0};
    spec::DeviceLimits gpu = exportLimits();
    gpu.multiprocessors = spec::DeviceLimits::anyCurrentGpu(true).multiprocessors;
    auto sized = spec::LaunchPlan::resolve(kf, task, sizes, params, gpu);
    if (!sized)
        return spec::fail(plan.error());
    return ExportPlan{std::move(*sized), gpu.multiprocessors};
}

spec::Expected<QJsonObject> torchPlan(const spec::TaskBundle& task, const model::Candidate& candidate,
                                      const QString& kernelFile) {
    auto kf = spec::KernelFile::parse(candidate.source.toStdString(), spec::Dialect::Cuda);
    if (!kf)
        return spec::fail(kf.error());
    // The default sizes first: a KernelBench module's get_inputs() makes those.
    std::vector<std::string> names{"default"};
    for (const auto& [name, sizes] : task.spec.variants)
        names.push_back(name);
    QJsonArray variants;
    QJsonArray skipped;
    for (const auto& name : names) {
        auto v = variantPlan(task, *kf, candidate, name);
        if (v)
            variants.append(*v);
        else if (name == "default")
            return spec::fail("the kernel's launch plan at the task's default sizes: " + v.error());
        else
            skipped.append(QStringLiteral("%1: %2").arg(q(name), q(v.error())));
    }
    return QJsonObject{{QStringLiteral("task"), q(task.spec.name)},
                       {QStringLiteral("kernel_file"), kernelFile},
                       {QStringLiteral("variants"), variants},
                       {QStringLiteral("skipped_variants"), skipped}};
}

spec::Expected<std::vector<std::pair<QString, QByteArray>>> torchModuleFiles(const spec::TaskBundle& task,
                                                                             const model::Candidate& candidate,
                                                                             model::Backend backend,
                                                                             const QString& kernelFile) {
    if (backend != model::Backend::Cuda)
        return spec::fail("--torch exports CUDA kernels (ModelNew runs them on PyTorch's CUDA tensors); this run's "
                          "kernels are OpenCL");
    const auto torch = task.referenceSource.find("torch");
    if (torch == task.referenceSource.end())
        return spec::fail("task " + task.spec.name
                          + " has no PyTorch form for ModelNew to stand in for (add \"torch\": \"reference.py\" to "
                            "\"reference\" in its task.json)");
    auto plan = torchPlan(task, candidate, kernelFile);
    if (!plan)
        return spec::fail(plan.error());
    QString module = QString::fromUtf8(kModelNewSource);
    module.replace(QStringLiteral("@PLAN@"), QString::fromUtf8(QJsonDocument(*plan).toJson(QJsonDocument::Compact)));
    return std::vector<std::pair<QString, QByteArray>>{
        {QStringLiteral("model_new.py"), module.toUtf8()},
        {QStringLiteral("check.py"), QByteArray(kCheckSource)},
        {QStringLiteral("reference.py"), QByteArray::fromStdString(torch->second)},
    };
}

} // namespace kforge::store
