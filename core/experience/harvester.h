#pragma once
// What a run teaches the experience library: a child that clearly beat or lost to its parent
// (a seed or expert against the baseline), and every pin, veto and hand edit a person made. Plain
// values in, an insight out, so the prose and the thresholds are tested without a run.

#include "experience/experiencelibrary.h"
#include "model/candidate.h"

#include <QString>

#include <optional>

namespace kforge::experience {

// Where the insights of a run come from.
struct HarvestContext {
    QString family;
    QString task;
    QString backend;
    QString storePath;
    qint64 runId = 0;

    QString originOf(qint64 candidate) const; // "<store>#run<id>/candidate<id>"
};

// An origin written by HarvestContext::originOf, read back; null for any other text.
struct RunCandidate {
    QString storePath;
    qint64 runId = 0;
    qint64 candidate = 0;
};
std::optional<RunCandidate> parseOrigin(const QString& origin);

// A kernel as the harvest sees it.
struct KernelOutcome {
    qint64 id = 0;
    QString label;
    model::Origin origin = model::Origin::Seed;
    QString source; // baked: its parameter values as defaults
    bool evaluated = false;
    model::Fitness fitness;
    QString bottleneck; // the roofline's bound, or empty
    QString device;     // where it ran
    QString message;    // the result's message (why it failed)
};

// A change is remembered when it made the kernel this much faster or slower; noise is not.
inline constexpr double kClearChange = 1.10;

// The insight from a child measured against its parent, or nothing when the change was noise,
// the parent is not a correct timed kernel, or the child is a seed, an experience kernel or not
// evaluated.
std::optional<Insight> changeInsight(const KernelOutcome& parent, const KernelOutcome& child,
                                     const HarvestContext& context);

enum class HumanAction { Pin, Veto, Edit };
// The insight from a person's action. For an edit, `kernel` is the edited kernel (its label and
// source) and `before` the source it was edited from; for a pin or veto, `kernel` is the candidate.
Insight humanInsight(HumanAction action, const KernelOutcome& kernel, const QString& before, const QString& reason,
                     const HarvestContext& context);

} // namespace kforge::experience
