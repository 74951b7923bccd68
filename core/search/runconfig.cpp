#include "search/runconfig.h"

#include "eval/placement.h"
#include "util/numbers.h"

#include <QJsonArray>
#include <QJsonValue>

#include <optional>

namespace kforge::search {

QJsonObject RunConfig::toJson() const {
    return QJsonObject{
        {QStringLiteral("task"), task},
        {QStringLiteral("backend"), model::backendName(backend)},
        {QStringLiteral("variant"), variant},
        {QStringLiteral("islands"), islands},
        {QStringLiteral("children_per_island"), childrenPerIsland},
        {QStringLiteral("migration_interval"), migrationInterval},
        {QStringLiteral("migrants"), migrants},
        {QStringLiteral("exploitation"), exploitation},
        {QStringLiteral("tuner_restart"), tunerRestart},
        {QStringLiteral("expert_rate"), expertRate},
        {QStringLiteral("budget_evaluations"), budgetEvaluations},
        {QStringLiteral("budget_seconds"), budgetSeconds},
        // JSON numbers are doubles: keep the whole 64-bit seed as text.
        {QStringLiteral("seed"), QString::number(seed)},
        {QStringLiteral("workers"), workers},
        {QStringLiteral("device"), device},
        {QStringLiteral("worker_places"), QJsonArray::fromStringList(workerPlaces)},
        {QStringLiteral("devices"), devices},
        {QStringLiteral("slurm_args"), slurmArgs},
        {QStringLiteral("eval_timeout_seconds"), evalTimeoutSeconds},
        {QStringLiteral("confirm_best"), confirmBest},
        {QStringLiteral("descriptors"), descriptors},
        {QStringLiteral("review_speedup"), reviewSpeedup},
        {QStringLiteral("review_ceiling"), reviewCeiling},
        {QStringLiteral("memory_review_ceiling"), memoryReviewCeiling},
        {QStringLiteral("reject_ceiling"), rejectCeiling},
        {QStringLiteral("pytorch"), pytorch},
        {QStringLiteral("pytorch_rounds"), pytorchRounds},
        {QStringLiteral("seed_kernels"), QJsonArray::fromStringList(seedKernels)},
        {QStringLiteral("llm"), llm.toJson()},
    };
}

namespace {

template <typename T> bool readNumber(const QJsonObject& json, const char* key, T& target, std::string& error) {
    const QJsonValue v = json.value(QLatin1String(key));
    if (v.isUndefined())
        return true;
    if (!v.isDouble()) {
        error = std::string("run configuration: '") + key + "' must be a number";
        return false;
    }
    const std::optional<T> value = util::numberAs<T>(v.toDouble());
    if (!value) {
        error = std::string("run configuration: '") + key + "' must be a whole number, not "
                + QString::number(v.toDouble(), 'g', 15).toStdString();
        return false;
    }
    target = *value;
    return true;
}

bool readString(const QJsonObject& json, const char* key, QString& target, std::string& error) {
    const QJsonValue v = json.value(QLatin1String(key));
    if (v.isUndefined())
        return true;
    if (!v.isString()) {
        error = std::string("run configuration: '") + key + "' must be a string";
        return false;
    }
    target = v.toString();
    return true;
}

} // namespace

spec::Expected<RunConfig> RunConfig::fromJson(const QJsonObject& json) {
    RunConfig c;
    std::string e;
    QString backend;
    const bool ok =
        readString(json, "task", c.task, e) && readString(json, "backend", backend, e)
        && readString(json, "variant", c.variant, e) && readNumber(json, "islands", c.islands, e)
        && readNumber(json, "children_per_island", c.childrenPerIsland, e)
        && readNumber(json, "migration_interval", c.migrationInterval, e) && readNumber(json, "migrants", c.migrants, e)
        && readNumber(json, "exploitation", c.exploitation, e) && readNumber(json, "tuner_restart", c.tunerRestart, e)
        && readNumber(json, "expert_rate", c.expertRate, e)
        && readNumber(json, "budget_evaluations", c.budgetEvaluations, e)
        && readNumber(json, "budget_seconds", c.budgetSeconds, e) && readNumber(json, "workers", c.workers, e)
        && readNumber(json, "device", c.device, e) && readNumber(json, "eval_timeout_seconds", c.evalTimeoutSeconds, e)
        && readString(json, "descriptors", c.descriptors, e) && readNumber(json, "review_speedup", c.reviewSpeedup, e)
        && readNumber(json, "review_ceiling", c.reviewCeiling, e)
        && readNumber(json, "memory_review_ceiling", c.memoryReviewCeiling, e)
        && readNumber(json, "reject_ceiling", c.rejectCeiling, e)
        && readNumber(json, "pytorch_rounds", c.pytorchRounds, e) && readString(json, "devices", c.devices, e)
        && readString(json, "slurm_args", c.slurmArgs, e);
    if (!ok)
        return spec::fail(e);
    if (json.contains(QLatin1String("backend"))) {
        const auto parsed = model::parseBackend(backend);
        if (!parsed)
            return spec::fail("run configuration: backend must be opencl or cuda, not '" + backend.toStdString() + "'");
        c.backend = *parsed;
    }
    // Configurations written before the roofline rules (no reject_ceiling) stored the old default
    // of 10x as if it were a choice; only a value someone actually chose is kept.
    if (!json.contains(QLatin1String("reject_ceiling")) && c.reviewSpeedup == 10.0)
        c.reviewSpeedup = 0.0;
    const QJsonValue seed = json.value(QLatin1String("seed"));
    if (seed.isString()) {
        bool parsed = false;
        c.seed = seed.toString().toULongLong(&parsed);
        if (!parsed)
            return spec::fail("run configuration: 'seed' must be a non-negative integer, not '"
                              + seed.toString().toStdString() + "'");
    } else if (!seed.isUndefined()) {
        const auto whole = seed.isDouble() ? util::wholeNumber<std::uint64_t>(seed.toDouble()) : std::nullopt;
        if (!whole)
            return spec::fail("run configuration: 'seed' must be a non-negative integer");
        c.seed = *whole;
    }
    const QJsonValue confirm = json.value(QLatin1String("confirm_best"));
    if (confirm.isBool())
        c.confirmBest = confirm.toBool();
    else if (!confirm.isUndefined())
        return spec::fail("run configuration: 'confirm_best' must be true or false");
    const QJsonValue pytorch = json.value(QLatin1String("pytorch"));
    if (pytorch.isBool())
        c.pytorch = pytorch.toBool();
    else if (!pytorch.isUndefined())
        return spec::fail("run configuration: 'pytorch' must be true or false");
    const QJsonValue seeds = json.value(QLatin1String("seed_kernels"));
    if (seeds.isArray()) {
        for (const auto& v : seeds.toArray()) {
            if (!v.isString())
                return spec::fail("run configuration: 'seed_kernels' must list file names");
            c.seedKernels << v.toString();
        }
    } else if (!seeds.isUndefined()) {
        return spec::fail("run configuration: 'seed_kernels' must be a list of file names");
    }
    const QJsonValue places = json.value(QLatin1String("worker_places"));
    if (places.isArray()) {
        for (const auto& v : places.toArray()) {
            if (!v.isString())
                return spec::fail("run configuration: 'worker_places' must list places such as \"local\" or "
                                  "\"ssh://host\"");
            c.workerPlaces << v.toString();
        }
    } else if (!places.isUndefined()) {
        return spec::fail("run configuration: 'worker_places' must be a list");
    }
    const QJsonValue llm = json.value(QLatin1String("llm"));
    if (llm.isObject()) {
        auto settings = llm::LlmSettings::fromJson(llm.toObject());
        if (!settings)
            return spec::fail("run configuration: " + settings.error());
        c.llm = *settings;
    } else if (!llm.isUndefined()) {
        return spec::fail("run configuration: 'llm' must be an object");
    }
    if (auto valid = c.validate(); !valid)
        return spec::fail(valid.error());
    return c;
}

spec::Status RunConfig::validate() const {
    auto bad = [](const std::string& what) { return spec::fail("run configuration: " + what); };
    if (islands < 1 || islands > 64)
        return bad("islands must be between 1 and 64, not " + std::to_string(islands));
    if (childrenPerIsland < 1 || childrenPerIsland > 256)
        return bad("children per island must be between 1 and 256, not " + std::to_string(childrenPerIsland));
    if (migrationInterval < 0)
        return bad("the migration interval cannot be negative");
    if (migrants < 0)
        return bad("migrants cannot be negative");
    if (exploitation < 0.0 || exploitation > 1.0)
        return bad("exploitation must be between 0 and 1");
    if (tunerRestart < 0.0 || tunerRestart > 1.0)
        return bad("the tuner's restart chance must be between 0 and 1");
    if (expertRate < 0.0 || expertRate > 1.0)
        return bad("the expert rate must be between 0 and 1");
    if (budgetEvaluations < 0)
        return bad("the evaluation budget cannot be negative");
    if (budgetSeconds < 0.0)
        return bad("the time budget cannot be negative");
    if (workers < 1 || workers > 64)
        return bad("workers must be between 1 and 64, not " + std::to_string(workers));
    if (device < 0)
        return bad("the device index cannot be negative");
    if (const std::string problem = protocol::pytorchRoundsProblem(pytorchRounds); !problem.empty())
        return bad("PyTorch's paired rounds: " + problem);
    for (const QString& place : workerPlaces)
        if (auto p = eval::parseWorkerPlace(place); !p)
            return bad(p.error());
    if (auto srun = eval::srunArguments({}, {}, QStringLiteral("worker"), QStringLiteral("check"), slurmArgs); !srun)
        return bad(srun.error());
    if (!devices.isEmpty() && devices != QLatin1String("all"))
        if (auto d = eval::parseDevices(devices, -1); !d)
            return bad(d.error());
    if (reviewSpeedup < 0.0 || reviewCeiling < 0.0 || memoryReviewCeiling < 0.0)
        return bad("review thresholds cannot be negative");
    if (rejectCeiling < 1.0)
        return bad("the reject ceiling must be at least 1 (a share of a measured roof that no kernel can reach)");
    if (evalTimeoutSeconds <= 0.0)
        return bad("the evaluation timeout must be positive");
    if (auto valid = llm.validate(islands); !valid)
        return bad(valid.error());
    return spec::success();
}

} // namespace kforge::search
