#include "diagnose/roofline.h"

#include "expression.h"

#include <QStringList>

#include <algorithm>

namespace kforge::diagnose {

namespace {

double get(const std::map<std::string, double>& m, const char* key) {
    auto it = m.find(key);
    return it == m.end() ? 0.0 : it->second;
}

// Below this share of both roofs a kernel is limited by neither: launch overhead, too little
// parallelism, or dependency chains.
constexpr double kLatencyFraction = 0.10;

} // namespace

Ceilings Ceilings::fromWorker(const std::map<std::string, double>& c, const QString& device) {
    Ceilings out;
    out.device = device;
    out.dramBytes = get(c, "dram_bytes_per_s");
    out.l2Bytes = get(c, "l2_bytes_per_s");
    out.fp32Flops = get(c, "fp32_flops_per_s");
    out.fp16TensorFlops = get(c, "fp16_tensor_flops_per_s");
    out.bf16TensorFlops = get(c, "bf16_tensor_flops_per_s");
    out.tf32TensorFlops = get(c, "tf32_tensor_flops_per_s");
    out.fp16WgmmaFlops = get(c, "fp16_wgmma_flops_per_s");
    out.bf16WgmmaFlops = get(c, "bf16_wgmma_flops_per_s");
    out.tf32WgmmaFlops = get(c, "tf32_wgmma_flops_per_s");
    out.cacheBytes = get(c, "cache_bytes");
    return out;
}

QJsonObject Ceilings::toJson() const {
    QJsonObject json{{QStringLiteral("device"), device},
                     {QStringLiteral("dram_bytes_per_s"), dramBytes},
                     {QStringLiteral("l2_bytes_per_s"), l2Bytes},
                     {QStringLiteral("fp32_flops_per_s"), fp32Flops},
                     {QStringLiteral("fp16_tensor_flops_per_s"), fp16TensorFlops},
                     {QStringLiteral("bf16_tensor_flops_per_s"), bf16TensorFlops}};
    if (tf32TensorFlops > 0.0)
        json.insert(QStringLiteral("tf32_tensor_flops_per_s"), tf32TensorFlops);
    if (fp16WgmmaFlops > 0.0)
        json.insert(QStringLiteral("fp16_wgmma_flops_per_s"), fp16WgmmaFlops);
    if (bf16WgmmaFlops > 0.0)
        json.insert(QStringLiteral("bf16_wgmma_flops_per_s"), bf16WgmmaFlops);
    if (tf32WgmmaFlops > 0.0)
        json.insert(QStringLiteral("tf32_wgmma_flops_per_s"), tf32WgmmaFlops);
    if (cacheBytes > 0.0)
        json.insert(QStringLiteral("cache_bytes"), cacheBytes);
    return json;
}

double Ceilings::fastestFlops() const {
    return std::max(
        {fp32Flops, tf32TensorFlops, fp16TensorFlops, bf16TensorFlops, fp16WgmmaFlops, bf16WgmmaFlops, tf32WgmmaFlops});
}

namespace {

// The code without its comments: a comment that mentions wgmma does not make a kernel use it.
QString withoutComments(const QString& source) {
    QString code;
    code.reserve(source.size());
    for (qsizetype i = 0; i < source.size(); ++i) {
        if (source[i] == u'/' && i + 1 < source.size() && source[i + 1] == u'/') {
            while (i < source.size() && source[i] != u'\n')
                ++i;
        } else if (source[i] == u'/' && i + 1 < source.size() && source[i + 1] == u'*') {
            const qsizetype end = source.indexOf(QStringLiteral("*/"), i + 2);
            i = end < 0 ? source.size() : end + 1;
            continue;
        }
        if (i < source.size())
            code += source[i];
    }
    return code;
}

TensorInstructions tensorInstructionsOfCode(const QString& code) {
    if (code.contains(QStringLiteral("wgmma.mma_async")))
        return TensorInstructions::Wgmma;
    if (code.contains(QStringLiteral("mma.sync")) || code.contains(QStringLiteral("wmma::"))
        || code.contains(QStringLiteral("mma_sync(")))
        return TensorInstructions::MmaSync;
    return TensorInstructions::None;
}

} // namespace

TensorUse tensorUseOf(const QString& source) {
    if (source.isEmpty())
        return {};
    const QString code = withoutComments(source);
    TensorUse use;
    use.instructions = tensorInstructionsOfCode(code);
    // PTX names the operand type (mma.sync...f32.tf32.tf32.f32, wgmma...f32.tf32.tf32), WMMA the
    // fragment precision (wmma::precision::tf32).
    use.tf32 = (use.instructions == TensorInstructions::MmaSync || use.instructions == TensorInstructions::Wgmma)
               && (code.contains(QStringLiteral(".tf32")) || code.contains(QStringLiteral("precision::tf32")));
    return use;
}

TensorInstructions tensorInstructionsOf(const QString& source) {
    return tensorUseOf(source).instructions;
}

bool usesTf32TensorCores(const QString& source) {
    return tensorUseOf(source).tf32;
}

QString peakTitle(const QString& peakName) {
    if (peakName == QLatin1String("fp32"))
        return QStringLiteral("FP32");
    for (const char* type : {"tf32", "fp16", "bf16"}) {
        const QString upper = QString::fromLatin1(type).toUpper();
        if (peakName == QLatin1String(type) + QStringLiteral("_tensor"))
            return upper + QStringLiteral(" tensor (mma.sync)");
        if (peakName == QLatin1String(type) + QStringLiteral("_wgmma"))
            return upper + QStringLiteral(" tensor (wgmma)");
    }
    return peakName;
}

QString splitTf32Note(double splitTf32Fraction) {
    if (!heldToSplitTf32Third(splitTf32Fraction))
        return {};
    return QStringLiteral(" (%1% of the third of the TF32 roof that a 3xTF32 kernel can reach)")
        .arg(splitTf32Fraction * 100.0, 0, 'f', 0);
}

QString Ceilings::summary() const {
    QStringList parts;
    auto rate = [](double v, const QString& unit) {
        if (v >= 1e12)
            return QStringLiteral("%1 T%2").arg(v / 1e12, 0, 'f', 2).arg(unit);
        return QStringLiteral("%1 G%2").arg(v / 1e9, 0, 'f', 1).arg(unit);
    };
    if (dramBytes > 0.0)
        parts << QStringLiteral("DRAM ") + rate(dramBytes, QStringLiteral("B/s"));
    if (fp32Flops > 0.0)
        parts << QStringLiteral("FP32 ") + rate(fp32Flops, QStringLiteral("FLOP/s"));
    const QString mma = hasWgmmaRoofs() ? QStringLiteral(" (mma.sync)") : QString();
    if (tf32TensorFlops > 0.0)
        parts << QStringLiteral("tf32 tensor%1 ").arg(mma) + rate(tf32TensorFlops, QStringLiteral("FLOP/s"));
    if (fp16TensorFlops > 0.0)
        parts << QStringLiteral("fp16 tensor%1 ").arg(mma) + rate(fp16TensorFlops, QStringLiteral("FLOP/s"));
    if (bf16TensorFlops > 0.0)
        parts << QStringLiteral("bf16 tensor%1 ").arg(mma) + rate(bf16TensorFlops, QStringLiteral("FLOP/s"));
    if (fp16WgmmaFlops > 0.0)
        parts << QStringLiteral("fp16 tensor (wgmma) ") + rate(fp16WgmmaFlops, QStringLiteral("FLOP/s"));
    if (bf16WgmmaFlops > 0.0)
        parts << QStringLiteral("bf16 tensor (wgmma) ") + rate(bf16WgmmaFlops, QStringLiteral("FLOP/s"));
    if (tf32WgmmaFlops > 0.0)
        parts << QStringLiteral("tf32 tensor (wgmma) ") + rate(tf32WgmmaFlops, QStringLiteral("FLOP/s"));
    return parts.join(QStringLiteral(", "));
}

Ceilings Ceilings::fromJson(const QJsonObject& j) {
    Ceilings c;
    c.device = j.value(QStringLiteral("device")).toString();
    c.dramBytes = j.value(QStringLiteral("dram_bytes_per_s")).toDouble();
    c.l2Bytes = j.value(QStringLiteral("l2_bytes_per_s")).toDouble();
    c.fp32Flops = j.value(QStringLiteral("fp32_flops_per_s")).toDouble();
    c.fp16TensorFlops = j.value(QStringLiteral("fp16_tensor_flops_per_s")).toDouble();
    c.bf16TensorFlops = j.value(QStringLiteral("bf16_tensor_flops_per_s")).toDouble();
    c.tf32TensorFlops = j.value(QStringLiteral("tf32_tensor_flops_per_s")).toDouble();
    c.fp16WgmmaFlops = j.value(QStringLiteral("fp16_wgmma_flops_per_s")).toDouble();
    c.bf16WgmmaFlops = j.value(QStringLiteral("bf16_wgmma_flops_per_s")).toDouble();
    c.tf32WgmmaFlops = j.value(QStringLiteral("tf32_wgmma_flops_per_s")).toDouble();
    c.cacheBytes = j.value(QStringLiteral("cache_bytes")).toDouble();
    return c;
}

QJsonObject Roofline::toJson() const {
    QJsonObject json{{QStringLiteral("flops"), flops},
                     {QStringLiteral("bytes"), bytes},
                     {QStringLiteral("seconds"), seconds},
                     {QStringLiteral("intensity"), intensity},
                     {QStringLiteral("achieved_flops_per_s"), achievedFlops},
                     {QStringLiteral("achieved_bytes_per_s"), achievedBytes},
                     {QStringLiteral("peak_flops_per_s"), peakFlops},
                     {QStringLiteral("peak_name"), peakName},
                     {QStringLiteral("peak_bytes_per_s"), peakBytes},
                     {QStringLiteral("bound_seconds"), boundSeconds},
                     {QStringLiteral("fraction_of_bound"), fractionOfBound},
                     {QStringLiteral("compute_fraction"), computeFraction},
                     {QStringLiteral("memory_fraction"), memoryFraction},
                     {QStringLiteral("bound"), bound},
                     {QStringLiteral("from_profile"), fromProfile},
                     {QStringLiteral("written_bytes"), writtenBytes}};
    if (splitTf32Fraction > 0.0)
        json.insert(QStringLiteral("split_tf32_fraction"), splitTf32Fraction);
    return json;
}

Roofline Roofline::fromJson(const QJsonObject& j) {
    Roofline r;
    r.flops = j.value(QStringLiteral("flops")).toDouble();
    r.bytes = j.value(QStringLiteral("bytes")).toDouble();
    r.seconds = j.value(QStringLiteral("seconds")).toDouble();
    r.intensity = j.value(QStringLiteral("intensity")).toDouble();
    r.achievedFlops = j.value(QStringLiteral("achieved_flops_per_s")).toDouble();
    r.achievedBytes = j.value(QStringLiteral("achieved_bytes_per_s")).toDouble();
    r.peakFlops = j.value(QStringLiteral("peak_flops_per_s")).toDouble();
    r.peakName = j.value(QStringLiteral("peak_name")).toString();
    r.peakBytes = j.value(QStringLiteral("peak_bytes_per_s")).toDouble();
    r.boundSeconds = j.value(QStringLiteral("bound_seconds")).toDouble();
    r.fractionOfBound = j.value(QStringLiteral("fraction_of_bound")).toDouble();
    r.computeFraction = j.value(QStringLiteral("compute_fraction")).toDouble();
    r.memoryFraction = j.value(QStringLiteral("memory_fraction")).toDouble();
    r.bound = j.value(QStringLiteral("bound")).toString();
    r.fromProfile = j.value(QStringLiteral("from_profile")).toBool();
    r.writtenBytes = j.value(QStringLiteral("written_bytes")).toDouble();
    r.splitTf32Fraction = j.value(QStringLiteral("split_tf32_fraction")).toDouble();
    return r;
}

spec::Expected<Roofline> computeRoofline(const spec::TaskSpec& task, const spec::Sizes& sizes,
                                         const protocol::EvaluateResult& result, const Ceilings& ceilings,
                                         TensorInstructions instructions, bool tf32) {
    if (result.status != protocol::Status::Ok || !result.candidateTiming || result.candidateTiming->medianUs <= 0.0)
        return spec::fail("no roofline: the candidate was not timed");
    Roofline r;
    r.seconds = result.candidateTiming->medianUs * 1e-6;
    const auto vars = task.variables(sizes);
    auto flops = spec::Expression::evaluate(task.flops, vars);
    if (!flops)
        return spec::fail("no roofline: the task's FLOP formula: " + flops.error());
    auto bytes = spec::Expression::evaluate(task.bytes, vars);
    if (!bytes)
        return spec::fail("no roofline: the task's byte formula: " + bytes.error());
    r.flops = *flops;
    r.bytes = *bytes;
    for (const auto& output : task.outputs)
        if (const auto n = task.elementCount(output, sizes))
            r.writtenBytes += static_cast<double>(*n) * static_cast<double>(spec::dtypeSize(output.dtype));
    r.writtenBytes = std::min(r.writtenBytes, r.bytes);
    // Measured traffic and work replace the formulas when the candidate was profiled.
    bool flopsMeasured = false;
    if (result.profile && result.profile->status == "ok") {
        const auto& m = result.profile->metrics;
        const double dram = get(m, "dram_bytes");
        const double measuredFlops =
            get(m, "fp32_flops") + get(m, "fp64_flops") + get(m, "fp16_flops") + get(m, "tensor_flops");
        if (dram > 0.0) {
            r.bytes = dram;
            r.writtenBytes = 0.0; // what reached DRAM while the kernel ran
            r.fromProfile = true;
        }
        if (measuredFlops > 0.0) {
            r.flops = measuredFlops;
            r.fromProfile = true;
            flopsMeasured = true;
        }
    }
    r.intensity = r.bytes > 0.0 ? r.flops / r.bytes : 0.0;
    r.achievedFlops = r.flops / r.seconds;
    r.achievedBytes = r.bytes / r.seconds;

    // The compute roof that applies: tensor cores for half-precision inputs and for float32 inputs
    // the kernel puts on the tensor cores as TF32 (the roof of the kernel's instructions, else the
    // faster one), FP32 otherwise.
    r.peakName = QStringLiteral("fp32");
    r.peakFlops = ceilings.fp32Flops;
    const auto tensorRoof = [&](const char* type, double mma, double wgmma) {
        const bool useWgmma = wgmma > 0.0
                              && (instructions == TensorInstructions::Wgmma
                                  || (instructions != TensorInstructions::MmaSync && wgmma > mma) || mma <= 0.0);
        if (useWgmma) {
            r.peakName = QStringLiteral("%1_wgmma").arg(QLatin1String(type));
            r.peakFlops = wgmma;
        } else if (mma > 0.0) {
            r.peakName = QStringLiteral("%1_tensor").arg(QLatin1String(type));
            r.peakFlops = mma;
        }
    };
    if (tf32)
        tensorRoof("tf32", ceilings.tf32TensorFlops, ceilings.tf32WgmmaFlops);
    for (const auto& input : task.inputs) {
        if (input.dtype == spec::DType::Float16)
            tensorRoof("fp16", ceilings.fp16TensorFlops, ceilings.fp16WgmmaFlops);
        else if (input.dtype == spec::DType::BFloat16)
            tensorRoof("bf16", ceilings.bf16TensorFlops, ceilings.bf16WgmmaFlops);
    }
    r.peakBytes = ceilings.dramBytes;
    if (!ceilings.valid())
        return r; // achieved figures only
    const double computeSeconds = r.flops / r.peakFlops;
    const double memorySeconds = r.bytes / r.peakBytes;
    r.boundSeconds = std::max(computeSeconds, memorySeconds);
    r.fractionOfBound = r.boundSeconds / r.seconds;
    r.computeFraction = r.achievedFlops / r.peakFlops;
    if (r.peakName.startsWith(QLatin1String("tf32_")) && !flopsMeasured)
        r.splitTf32Fraction = kSplitTf32Products * r.computeFraction;
    r.memoryFraction = r.achievedBytes / r.peakBytes;
    if (r.computeFraction < kLatencyFraction && r.memoryFraction < kLatencyFraction)
        r.bound = QStringLiteral("latency");
    else
        r.bound = computeSeconds >= memorySeconds ? QStringLiteral("compute") : QStringLiteral("memory");
    return r;
}

} // namespace kforge::diagnose
