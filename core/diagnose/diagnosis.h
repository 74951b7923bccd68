#pragma once
// Diagnosis: structured findings from an evaluation — compile log, resource usage, verification
// failures, integrity checks, timing, profile metrics and the roofline. The rules are data
// (resources/diagnose/rules.json, found through ResourceLocator; a user's own file can add or
// replace rules), so an expert can add one without recompiling. A rule is a muparser condition
// over named facts, a message template, and a suggested direction.

#include "diagnose/finding.h"
#include "diagnose/roofline.h"
#include "expected.h"
#include "protocol.h"
#include "taskspec.h"

#include <QJsonObject>
#include <QString>
#include <QStringList>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kforge::diagnose {

// Named numbers a rule's condition and message can use. factsOf() documents every name.
using Facts = std::map<std::string, double>;
// Named words a rule's message can use beside the numbers (never its condition). labelsOf()
// documents every name.
using Labels = std::map<std::string, QString>;

// The facts of one evaluation: status_ok, status_compile_error, ..., registers, shared_bytes,
// local_bytes (spill), occupancy, mismatches, unwritten, unwritten_fraction, non_finite,
// first_mismatch_row/col, max_abs_error, max_rel_error, rows/cols of the first mismatching output,
// inputs_changed, constant_output, speedup, spread, median_us, and from the roofline: intensity,
// memory_fraction, compute_fraction, fraction_of_bound, bound_memory/compute/latency,
// split_tf32_fraction (of the third of the TF32 roof a 3xTF32 kernel can reach; 0 where that does
// not apply, see Roofline::splitTf32Fraction); from a profile: achieved_occupancy, sm_throughput,
// dram_throughput. A fact that is unknown is absent; a rule that needs it does not fire.
Facts factsOf(const protocol::EvaluateResult& result, const spec::TaskSpec& task, const spec::Sizes& sizes,
              const std::optional<Roofline>& roofline);

// The words of one evaluation: peak, the name of the compute roof the roofline holds the kernel to
// ("FP32", "TF32 tensor (mma.sync)"...). Absent where unknown; a message names it "?".
Labels labelsOf(const std::optional<Roofline>& roofline);

// The candidate's compiled resources as its limiting kernel has them, under the names factsOf()
// gives them: registers, shared_bytes and local_bytes the largest, occupancy the smallest over its
// kernels (workers report them per program, "registers", or per kernel, "row_max.registers").
Facts limitingResources(const protocol::EvaluateResult& result);

struct Rule; // defined in diagnosis.cpp

class Diagnosis {
public:
    // The built-in rules (resources/diagnose/rules.json) plus, when present, the user's
    // <app data>/diagnose/rules.json (a rule with the same id replaces the built-in one).
    static spec::Expected<Diagnosis> builtIn();
    static spec::Expected<Diagnosis> load(const QStringList& files);
    // Errors name the origin and the rule: "rules.json: rules[3] (register-spills): when: ...".
    static spec::Expected<Diagnosis> fromJson(const QJsonObject& json, const QString& origin);

    Diagnosis();
    ~Diagnosis();
    Diagnosis(const Diagnosis&);
    Diagnosis& operator=(const Diagnosis&);

    QStringList ruleIds() const;

    // Every finding for the evaluation: the worker's own diagnostics with a source line (compile
    // errors, launch-plan problems) as findings first, then each rule that fires, most severe first.
    Findings diagnose(const protocol::EvaluateResult& result, const spec::TaskSpec& task, const spec::Sizes& sizes,
                      const std::optional<Roofline>& roofline) const;
    // The rules alone over given facts (for tests and for tools).
    Findings apply(const Facts& facts, const Labels& labels = {}) const;

private:
    std::vector<Rule> m_rules;
};

} // namespace kforge::diagnose
