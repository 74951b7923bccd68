#pragma once
// Builds the prompts of the LLM proposers from the templates (prompttemplate.h): one system text and
// one user message per request, for five operators — initialisation by an expert persona, mutation
// and crossover guided by diagnostics, repair of a failed kernel, and the meta operator that
// rewrites a weak strategy text — in one of the two stages of the search (algorithmic structure
// first, hardware tuning after). The same context always gives the same bytes, so prompts can be
// compared against golden files and cached.
//
// Also loads the texts prompts are made of: the expert personas (resources/skills) and the initial
// strategy texts of each stage (resources/llm/strategies.json).

#include "llm/llmtypes.h"
#include "llm/prompttemplate.h"
#include "model/kinds.h"
#include "taskspec.h"

#include <QList>
#include <QString>
#include <QStringList>

#include <map>
#include <optional>

namespace kforge::llm {

using Operator = model::LlmOperator;
enum class Stage { Structure, Tuning };

// The kind of device a prompt describes: `kind` when given; else gpu for CUDA, cpu for an OpenCL
// device named as PoCL names its CPU devices ("cpu-<arch>-<model>", "pthread-<model>"), "" unknown.
// The templates say nothing about a device's hardware that its kind does not support.
QString deviceKindOf(const QString& kind, const QString& backend, const QString& device);

using model::llmOperatorName;
using model::parseLlmOperator;
QString stageName(Stage stage); // "structure", "tuning"
std::optional<Stage> parseStage(const QString& name);

// One kernel as a prompt shows it: a parent to improve, or the failed kernel to repair.
struct KernelContext {
    qint64 id = 0;
    QString label;
    QString status;       // "correct", "incorrect", "compile_error", "unparsable", ...
    double speedup = 0.0; // against the baseline; 0 when unknown
    QString params;       // "BX=16 BY=8"
    QString source;       // the kernel file, verbatim (for "unparsable": the code the answer held, if any)
    QStringList findings; // one line each, "line 12: ..." when it has a line
    QString compileLog;
    QString roofline;   // one line: "memory-bound, 62% of DRAM 4.5 TB/s"
    QString parseError; // why the answer that should have held this kernel could not be used
};

struct PromptContext {
    Operator op = Operator::Mutate;
    Stage stage = Stage::Structure;

    const spec::TaskBundle* task = nullptr;
    QString variant;    // the task's size variant; "" for its default sizes
    spec::Sizes sizes;  // the sizes in use; empty: those of `variant`
    QString backend;    // "cuda" / "opencl"
    QString device;     // the name the run's workers report: "NVIDIA H200", "cpu-haswell-AMD EPYC 7B13"
    QString deviceKind; // gpu, cpu or accelerator, as the worker's probe says; "" unknown (see deviceKindOf)
    QString ceilings;   // one line: "DRAM 4.5 TB/s, FP32 60 TFLOP/s, ..."

    QList<KernelContext> parents; // mutate/repair 1, crossover 2, init 0 (the task's baseline is shown)

    QString strategy;
    QString personaName;
    QString personaSkill;   // rendered as a template with the prompt's values (is_cuda, device_is_cpu, ...)
    QStringList experience; // retrieved insight summaries, best first; each may hold a short diff

    // meta only
    QString weakStrategy;
    QString weakStats;
    QString bestStrategy;
    QString bestStats;
};

struct Prompt {
    QString system;
    QList<Message> messages; // one user message
    QString templateName;    // the operator's template, e.g. "mutate"
};

class PromptBuilder {
public:
    // Retrieved experience is useful in small doses: more crowds out the kernel being changed.
    static constexpr int kMaxExperienceItems = 5;
    static constexpr int kMaxExperienceChars = 6000; // all items together
    // A compile log is cut after this many characters: the first errors are the ones that matter.
    static constexpr int kMaxCompileLogChars = 6000;
    static constexpr int kMaxFindings = 20;

    explicit PromptBuilder(PromptTemplates templates);
    static spec::Expected<PromptBuilder> builtIn();

    // Errors: a missing task or backend, the wrong number of parents for the operator, or a
    // template error (naming the file and line).
    spec::Expected<Prompt> build(const PromptContext& context) const;

    // The variables build() hands to the templates for this context (for tests and for people
    // writing their own templates).
    spec::Expected<std::map<QString, QString>> values(const PromptContext& context) const;

    const PromptTemplates& templates() const { return m_templates; }

private:
    spec::Expected<QString> renderKernel(const KernelContext& kernel, const QString& role,
                                         const QString& backend) const;

    PromptTemplates m_templates;
};

// An expert persona of the initialisation operator.
struct Persona {
    QString id;    // file name without ".md": "memory"
    QString name;  // the file's first line without "# "
    QString skill; // the rest of the file
};
// resources/skills/*.md, each replaced by a file of the same name in <app data>/skills;
// sorted by id. Errors name the file.
spec::Expected<QList<Persona>> loadPersonas();
spec::Expected<QList<Persona>> loadPersonas(const QStringList& dirs); // later folders override earlier ones

// An initial text of a prompt's "strategy" section, which the meta operator then evolves.
struct StrategySeed {
    QString id;
    Stage stage = Stage::Structure;
    QString text;
};
// resources/llm/strategies.json. Errors name the file and the JSON path ("strategies[2].stage: ...").
spec::Expected<QList<StrategySeed>> loadStrategySeeds();
spec::Expected<QList<StrategySeed>> loadStrategySeeds(const QString& file);

} // namespace kforge::llm
