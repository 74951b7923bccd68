#include "search/runloader.h"

#include "util/text.h"

#include "task/taskcatalog.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QStringDecoder>

namespace kforge::search {

namespace {

using util::q;

spec::Expected<StoredRun> readStoredRun(store::RunStore& store, const store::RunRecord& run) {
    auto candidates = store.candidates(run.id);
    if (!candidates)
        return spec::fail(candidates.error());
    auto evaluations = store.evaluations(run.id);
    if (!evaluations)
        return spec::fail(evaluations.error());
    auto events = store.events(run.id);
    if (!events)
        return spec::fail(events.error());

    StoredRun stored;
    stored.generation = run.generation;
    stored.wallSeconds = run.wallSeconds;
    for (model::Candidate c : *candidates) {
        // Flags are replayed from the events, at the generation they were set.
        c.pinned = false;
        c.vetoed = false;
        stored.batches[c.generation].push_back(c.id);
        stored.candidates.push_back(std::move(c));
    }
    for (const auto& record : *evaluations) {
        stored.results[{record.candidateId, record.purpose}] = record.result;
        if (record.purpose == model::EvaluationPurpose::Search) {
            if (!record.roofline.isEmpty())
                stored.roofline[record.candidateId] = diagnose::Roofline::fromJson(record.roofline);
            stored.findings[record.candidateId] = diagnose::findingsFromJson(record.findings);
        }
        if (record.purpose != model::EvaluationPurpose::Yardstick)
            ++stored.evaluations;
    }
    if (auto reviews = store.reviews(run.id))
        for (const auto& r : *reviews)
            stored.reviews[r.candidateId] = r.state;
    for (const auto& record : *events) {
        using K = model::EventKind;
        if (record.kind == K::Pin || record.kind == K::Unpin || record.kind == K::Veto)
            stored.humanEvents[record.generation].push_back(record);
    }
    // Evaluations whose generation never completed are kept but the generation is not re-proposed.
    return stored;
}

// A user's own kernel to start from, checked the way every kernel file is (launch plan, parameters).
spec::Expected<model::Candidate> readSeedKernel(const QString& path, model::Backend backend) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return spec::fail(
            QStringLiteral("seed kernel %1: cannot be read: %2").arg(path, f.errorString()).toStdString());
    QStringDecoder decoder(QStringDecoder::Utf8);
    const QString source = decoder.decode(f.readAll());
    if (decoder.hasError())
        return spec::fail(QStringLiteral("seed kernel %1: not UTF-8 text").arg(path).toStdString());
    if (auto parsed = spec::KernelFile::parse(source.toStdString(), backend); !parsed)
        return spec::fail(QStringLiteral("seed kernel %1: %2 (as a %3 kernel file)")
                              .arg(path, q(parsed.error()), model::backendTitle(backend))
                              .toStdString());
    model::Candidate c;
    c.source = source;
    c.origin = model::Origin::Seed;
    c.label = QStringLiteral("seed kernel %1").arg(QFileInfo(path).fileName());
    return c;
}

// The stored run to resume, locked, with its configuration and the setup's new budgets.
spec::Status resume(const EngineSetup& setup, LoadedRun& out) {
    qint64 id = setup.resumeRun;
    if (id == 0) {
        auto runs = out.store->runs();
        if (!runs)
            return spec::fail(runs.error());
        if (runs->isEmpty())
            return spec::fail(setup.storePath.toStdString() + ": holds no run to resume");
        id = runs->first().id;
    }
    auto run = out.store->run(id);
    if (!run)
        return spec::fail(run.error());
    // Before anything of the run is touched: a second session would replay and extend it beside
    // the first, recording every generation twice.
    auto lock = store::RunLock::acquire(setup.storePath, id);
    if (!lock)
        return spec::fail(lock.error());
    out.lock = std::move(*lock);
    out.run = *run;
    auto config = RunConfig::fromJson(out.run.config);
    if (!config)
        return spec::fail(setup.storePath.toStdString() + ": run " + std::to_string(id) + ": " + config.error());
    out.config = *config;
    if (setup.budgetEvaluations >= 0)
        out.config.budgetEvaluations = setup.budgetEvaluations;
    if (setup.budgetSeconds >= 0.0)
        out.config.budgetSeconds = setup.budgetSeconds;
    if (setup.llmBudgetUsd >= 0.0)
        out.config.llm.budgetUsd = setup.llmBudgetUsd;
    if (setup.llmBudgetTokens >= 0.0)
        out.config.llm.budgetTokens = static_cast<qint64>(setup.llmBudgetTokens);
    if (setup.workerPlaces)
        out.config.workerPlaces = *setup.workerPlaces;
    if (setup.devices)
        out.config.devices = *setup.devices;
    if (setup.slurmArgs)
        out.config.slurmArgs = *setup.slurmArgs;
    if (setup.workers > 0)
        out.config.workers = setup.workers;
    if (auto valid = out.config.validate(); !valid)
        return spec::fail(valid.error());
    out.run.config = out.config.toJson();
    return spec::success();
}

} // namespace

spec::Expected<LoadedRun> loadRun(const EngineSetup& setup) {
    LoadedRun out;
    auto store = store::RunStore::open(setup.storePath);
    if (!store)
        return spec::fail(store.error());
    out.store = std::move(*store);

    const bool resuming = setup.resuming();
    out.config = setup.config;
    if (resuming) {
        if (auto resumed = resume(setup, out); !resumed)
            return spec::fail(resumed.error());
    } else if (auto valid = out.config.validate(); !valid) {
        return spec::fail(valid.error());
    }
    const RunConfig& config = out.config;

    // The task: by the folder it was loaded from when resuming (it may not be a built-in one).
    auto taskDir = task::TaskCatalog::resolve(resuming && !out.run.taskDir.isEmpty() ? out.run.taskDir : config.task);
    if (!taskDir && resuming)
        taskDir = task::TaskCatalog::resolve(config.task);
    if (!taskDir)
        return spec::fail(taskDir.error());
    auto bundle = spec::loadTaskDir(taskDir->toStdString());
    if (!bundle)
        return spec::fail(bundle.error());
    out.task = std::move(*bundle);
    const std::string backend = model::backendName(config.backend).toStdString();
    // A task without a baseline kernel is measured against PyTorch eager, so it needs a PyTorch form.
    if (!out.task.baselineSource.count(backend) && !out.task.referenceSource.count("torch"))
        return spec::fail("task " + out.task.spec.name + " has no " + backend
                          + " baseline to start from and no PyTorch form to measure against (its task.json names "
                            "neither)");
    if (config.variant != QLatin1String("default") && !out.task.spec.variants.count(config.variant.toStdString()))
        return spec::fail("task " + out.task.spec.name + " has no size variant '" + config.variant.toStdString() + "'");
    if (auto sizes = out.task.spec.sizesFor(config.variant.toStdString()))
        out.sizes = *sizes;
    if (auto diagnosis = diagnose::Diagnosis::builtIn())
        out.diagnosis = std::move(*diagnosis);
    else
        out.notices << QStringLiteral("diagnosis rules: %1 (evaluations get no findings)").arg(q(diagnosis.error()));

    auto space = config.descriptors.isEmpty() ? DescriptorSpace::builtIn() : DescriptorSpace::load(config.descriptors);
    if (!space)
        return spec::fail(space.error());
    out.space = *space;

    if (setup.useExperts) {
        const auto library = propose::ExpertLibrary::load(
            setup.expertRoots.isEmpty() ? propose::ExpertLibrary::defaultRoots() : setup.expertRoots);
        for (const QString& problem : library.problems())
            out.notices << QStringLiteral("expert library: %1").arg(problem);
        out.experts = library.forTask(q(out.task.spec.name), config.backend);
    }
    if (setup.useExperience) {
        const QString path =
            setup.experiencePath.isEmpty() ? experience::ExperienceLibrary::defaultPath() : setup.experiencePath;
        QDir().mkpath(QFileInfo(path).absolutePath());
        if (auto library = experience::ExperienceLibrary::open(path))
            out.experience = std::move(*library);
        else
            out.notices << QStringLiteral("experience library: %1 (the run neither starts from it nor adds to it)")
                               .arg(q(library.error()));
    }

    if (resuming) {
        auto stored = readStoredRun(*out.store, out.run);
        if (!stored)
            return spec::fail(stored.error());
        out.stored = std::move(*stored);
        return out;
    }
    for (const QString& path : config.seedKernels) {
        auto seed = readSeedKernel(path, config.backend);
        if (!seed)
            return spec::fail(seed.error());
        out.seedKernels.push_back(std::move(*seed));
    }
    out.run.name = QStringLiteral("%1 on %2").arg(q(out.task.spec.name), model::backendName(config.backend));
    out.run.task = q(out.task.spec.name);
    out.run.taskDir = *taskDir;
    out.run.backend = config.backend;
    out.run.variant = config.variant;
    out.run.config = config.toJson();
    out.run.state = RunState::Starting;
    auto id = out.store->createRun(out.run);
    if (!id)
        return spec::fail(id.error());
    auto lock = store::RunLock::acquire(setup.storePath, *id);
    if (!lock)
        return spec::fail(lock.error());
    out.lock = std::move(*lock);
    out.run.id = *id;
    out.run.generation = -1;
    return out;
}

} // namespace kforge::search
