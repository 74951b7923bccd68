#pragma once
// Reading a stored run for people: one-line run summaries, a run report (its best candidates and
// what happened), and the export of a candidate as files that reproduce it outside kforge.

#include "store/runstore.h"

#include <QJsonObject>
#include <QString>
#include <QStringList>

namespace kforge::store {

QJsonObject runToJson(const RunRecord& run);
QString formatRunLine(const RunRecord& run); // "3  sgemm on opencl  finished  1.84x  200 evals  ..."

struct RunReport {
    QString text;
    QJsonObject json;
};
// What a run's LLM calls cost, as reported: tokens the servers counted and known costs; calls
// whose usage or price is unknown are counted apart, never as free.
struct LlmSpend {
    qint64 calls = 0;
    qint64 inputTokens = 0;
    qint64 outputTokens = 0;
    double usd = 0.0;
    qint64 unknownCost = 0;

    static LlmSpend of(const QList<LlmCallRecord>& calls);
    QString text() const; // "1200 input and 340 output tokens reported, $0.0010 known cost (2 calls of unknown cost)"
    QJsonObject toJson() const;
};

// `runId` 0 means the newest run; `top` how many of the best correct candidates to list.
Expected<RunReport> describeRun(RunStore& store, qint64 runId, int top);

// Writes candidate `candidateId` (0: the run's confirmed best) of run `runId` (0: the newest) to
// `outDir`: the kernel file with its parameter values as defaults, launch-plan.json (resolved at
// the run's sizes), result.json (its evaluations) and report.md. Returns the files written.
// `torch`: also a drop-in PyTorch module for it (store/torchexport.h: ModelNew and check.py).
Expected<QStringList> exportCandidate(RunStore& store, qint64 runId, qint64 candidateId, const QString& outDir,
                                      bool torch = false);

// The kernel file with `// kforge:param` defaults replaced by `params`, so that it evaluates to
// the same kernel without overrides.
QString bakeParams(const QString& source, const model::ParamValues& params);

} // namespace kforge::store
