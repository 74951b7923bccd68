#pragma once
// A candidate kernel of a run and what is known about it: its code and parameter values, where it
// came from (lineage), and the results of its evaluations. Plain values, copied into snapshots.

#include "model/kinds.h"

#include "protocol.h"

#include <QList>
#include <QString>

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace kforge::model {

// Values of a kernel file's declared `// kforge:param`s that differ from, or pin, the defaults.
using ParamValues = std::map<std::string, std::int64_t>;
QString formatParams(const ParamValues& params); // "BX=16 BY=8", "" when empty
// What changes from one set of values to another: "BX 16 → 32, BY 8 → 4" ("—" for a name one side
// lacks), "" when they are the same.
QString formatParamChanges(const ParamValues& before, const ParamValues& after);

// A cell of the MAP-Elites archive: one level (0..levels-1) per behaviour dimension.
inline constexpr int kDimensions = 3;
using Cell = std::array<int, kDimensions>;

struct Candidate {
    qint64 id = 0;  // unique within its run, increasing in creation order
    QString source; // the whole kernel file: device code plus // kforge: directives
    ParamValues params;
    QList<qint64> parents; // empty for seeds
    int island = 0;
    int generation = 0;
    Origin origin = Origin::Seed;
    std::optional<LlmOperator> llmOperator;     // the operator, for a kernel a language model wrote
    std::optional<TunerStrategy> tunerStrategy; // how the tuner found it, for a kernel the tuner proposed
    QString label; // one line for people: "expert sgemm/tiled_register", "tuner BX=32", "baseline"
    QString key;   // identity for "never evaluate twice": hash of normalised source and params
    bool pinned = false;
    bool vetoed = false;
};

// Fitness: correct first, then speedup over the baseline paired in the same evaluation.
struct Fitness {
    bool correct = false;
    double speedup = 0.0; // 0 when not correct or not timed

    // Strict improvement, as the archive and the promotion rule use it.
    bool betterThan(const Fitness& other) const {
        if (correct != other.correct)
            return correct;
        return speedup > other.speedup;
    }
};

Fitness fitnessOf(const protocol::EvaluateResult& result);

// The identity of a kernel for "never evaluate twice": a hash of the code without comments or
// layout, its launch-plan directives, and the complete parameter values.
QString candidateKey(const QString& source, const ParamValues& completeParams);

// The identity of a kernel template, what one tuner searches: the key of the code and directives
// without parameter values and without the tunable parameters' defaults, so that a kernel baked
// with other defaults (an exported kernel, one the experience library kept) is the same template.
QString templateKey(const QString& source);

} // namespace kforge::model
