#pragma once
// Writes a run store with many candidates, as a long search would leave it (lineage, results with
// compile facts, findings, roofline points, migrations, an LLM call), for the views' tests and the
// open-a-big-run benchmark. Deterministic: the same arguments give the same store.

#include "store/runstore.h"

#include <QJsonArray>
#include <QJsonObject>

#include <random>

namespace kforgetest {

// `secondModel`: every fifth candidate ran on this GPU model instead (a run that mixes models).
inline kforge::spec::Status writeSyntheticRun(const QString& path, int candidates, int islands = 4,
                                              qint64* runId = nullptr, const char* secondModel = nullptr) {
    using namespace kforge;
    auto opened = store::RunStore::open(path);
    if (!opened)
        return spec::fail(opened.error());
    auto& db = **opened;
    store::RunRecord run;
    run.name = QStringLiteral("synthetic");
    run.task = QStringLiteral("sgemm");
    run.taskDir = QStringLiteral("/nowhere/sgemm");
    run.backend = model::Backend::Cuda;
    run.variant = QStringLiteral("default");
    run.config = QJsonObject{{QStringLiteral("islands"), islands}};
    run.state = model::RunState::Finished;
    auto id = db.createRun(run);
    if (!id)
        return spec::fail(id.error());
    if (runId)
        *runId = *id;
    // Sources that fall into different behaviour cells.
    const QStringList bodies = {
        QStringLiteral("  c[i] = a[i] * b[i];\n"),
        QStringLiteral("  __shared__ float tile[256];\n  tile[threadIdx.x] = a[i];\n  __syncthreads();\n  c[i] = "
                       "tile[threadIdx.x];\n"),
        QStringLiteral("  float4 v = reinterpret_cast<const float4*>(a)[i];\n  c[i] = v.x + "
                       "__shfl_down_sync(0xffffffff, v.y, 1);\n"),
        QStringLiteral("  for (int k = 0; k < 8; ++k) c[i * 8 + k] = __ldg(&a[i * 8 + k]);\n"),
    };
    std::mt19937_64 rng(42);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    const int chunk = 2000;
    for (int first = 1; first <= candidates; first += chunk) {
        store::RunStore::Transaction tx(db);
        for (int n = first; n < first + chunk && n <= candidates; ++n) {
            model::Candidate c;
            c.id = n;
            c.generation = (n - 1) / (islands * 8);
            c.island = (n - 1) % islands;
            c.origin = n <= islands ? model::Origin::Seed : (n % 5 == 0 ? model::Origin::Llm : model::Origin::Tuner);
            if (n > islands)
                c.parents = {std::max<qint64>(1, n - islands * 4)};
            if (c.origin == model::Origin::Tuner)
                c.tunerStrategy = n % 3 == 0 ? model::TunerStrategy::Model : model::TunerStrategy::Neighbour;
            c.params = {{"BLOCK", 32 << (n % 4)}};
            c.label =
                c.origin == model::Origin::Seed ? QStringLiteral("baseline") : QStringLiteral("variant %1").arg(n);
            c.source = QStringLiteral("// kforge:param BLOCK 32 64 128 256\n__global__ void k(const float* a, const "
                                      "float* b, float* c) {\n"
                                      "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n%1}\n// %2\n")
                           .arg(bodies[n % bodies.size()])
                           .arg(n);
            c.key = QStringLiteral("k%1").arg(n);
            if (auto s = db.insertCandidate(*id, c); !s)
                return s;
            protocol::EvaluateResult r;
            r.id = n;
            const bool ok = n % 7 != 3;
            r.status =
                ok ? protocol::Status::Ok : (n % 2 ? protocol::Status::Incorrect : protocol::Status::CompileError);
            r.message = ok ? "ok" : "output c differs from the reference";
            r.device = secondModel && n % 5 == 0 ? secondModel : "NVIDIA H200";
            r.compile.push_back(
                {"candidate", r.status != protocol::Status::CompileError, 0.2, "", {{"registers", 32.0 + n % 64}}});
            QJsonObject roofline;
            QJsonArray findings;
            if (ok) {
                const double speedup = 0.5 + 2.5 * unit(rng) * (1.0 + c.generation / 50.0);
                r.baselineTiming = protocol::TimingStats{"cupti-activity", 20, 100.0, 100.0, 99.0, 101.0, 0.01};
                r.candidateTiming = protocol::TimingStats{
                    "cupti-activity", 20, 100.0 / speedup, 100.0 / speedup, 99.0 / speedup, 101.0 / speedup, 0.01};
                r.speedup = speedup;
                r.timingMode = "default";
                const double intensity = 0.25 * (1 << (n % 6));
                roofline = {
                    {QStringLiteral("intensity"), intensity},
                    {QStringLiteral("achieved_flops_per_s"), 1e12 * speedup * intensity},
                    {QStringLiteral("achieved_bytes_per_s"), 1e12 * speedup},
                    {QStringLiteral("bound"), intensity < 8 ? QStringLiteral("memory") : QStringLiteral("compute")}};
                findings.append(QJsonObject{{QStringLiteral("rule"), QStringLiteral("uncoalesced")},
                                            {QStringLiteral("kind"), QStringLiteral("memory")},
                                            {QStringLiteral("severity"), QStringLiteral("warning")},
                                            {QStringLiteral("message"), QStringLiteral("strided global loads")},
                                            {QStringLiteral("line"), 4}});
            } else {
                protocol::OutputCheck check;
                check.name = "c";
                check.checked = 1024;
                check.mismatches = 17;
                check.maxAbsError = 0.5;
                check.maxRelError = 0.25;
                check.firstMismatch = 3;
                r.outputs.push_back(check);
            }
            // Stored as the engine stores it (a deterministic spread over the cells here).
            std::optional<model::Cell> cell;
            if (r.status != protocol::Status::CompileError)
                cell = model::Cell{n % 4, (n / 4) % 4, (n / 16) % 4};
            if (auto e =
                    db.insertEvaluation(*id, n, kforge::model::EvaluationPurpose::Search, r, findings, roofline, cell);
                !e)
                return spec::fail(e.error());
        }
        if (auto s = tx.commit(); !s)
            return s;
    }
    for (int g = 3; g < candidates / (islands * 8); g += 3)
        if (auto e = db.insertEvent(*id, g, model::EventKind::Migration,
                                    {{QStringLiteral("from"), g % islands},
                                     {QStringLiteral("to"), (g + 1) % islands},
                                     {QStringLiteral("candidate"), g * islands * 8},
                                     {QStringLiteral("speedup"), 1.5},
                                     {QStringLiteral("accepted"), true}});
            !e)
            return spec::fail(e.error());
    if (auto e = db.insertEvent(*id, 0, model::EventKind::Ceilings,
                                {{QStringLiteral("device"), QStringLiteral("NVIDIA H200")},
                                 {QStringLiteral("dram_bytes_per_s"), 4.0e12},
                                 {QStringLiteral("fp32_flops_per_s"), 6.0e13}});
        !e)
        return spec::fail(e.error());
    return spec::success();
}

} // namespace kforgetest
