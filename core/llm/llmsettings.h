#pragma once
// How a run uses language models: which models on which endpoints, how often an LLM proposes a
// child instead of the tuner, which stage each island works in, and what the run may spend.
// Stored with the run (endpoints included, so a resumed run talks to the same servers); keys are
// never part of it.

#include "expected.h"
#include "llm/llmtypes.h"

#include <QJsonObject>
#include <QList>
#include <QString>
#include <QStringList>

namespace kforge::llm {

// A model the run may ask, and where: "openai:gpt-4.1-mini", "local:qwen2.5-coder=2@0,1".
struct ModelChoice {
    QString endpoint;
    QString model;
    double weight = 1.0; // for weighted selection; the bandit's prior otherwise
    QList<int> islands;  // the islands that use it; empty: every island

    QString spec() const;
    // ENDPOINT:MODEL[=WEIGHT][@ISLAND,ISLAND...]; errors say which part is wrong.
    static spec::Expected<ModelChoice> parse(const QString& spec);
    bool servesIsland(int island) const { return islands.isEmpty() || islands.contains(island); }
};

struct LlmSettings {
    QList<ModelChoice> models;                    // empty: no LLM proposers
    QList<Endpoint> endpoints;                    // those the models name
    QString selection = QStringLiteral("bandit"); // bandit (cost-aware UCB) or weights
    double rate = 0.5;                            // share of children an LLM proposes; the tuner and experts the rest
    double crossoverRate = 0.25;                  // of LLM children: crossover of two parents
    double repairRate = 0.2;                      // of LLM children: repair of a failed kernel, when there is one
    QStringList stages;                           // per island: structure or tuning; empty: the first half structure
    bool personas = true;                         // generation 0: each expert persona proposes a first kernel
    int metaInterval = 3;                         // generations between meta-prompt rewrites; 0: never
    QString helper;                               // ENDPOINT:MODEL that rewrites strategies; empty: the first model
    qint64 budgetTokens = 0;                      // input + output tokens over the run; 0: none
    double budgetUsd = 0.0;                       // money over the run; 0: none
    int maxTokens = 8192;                         // per answer
    double temperature = 0.8;
    int experienceItems = 4; // insights retrieved into each prompt

    bool enabled() const { return !models.isEmpty(); }
    // The stage of an island in a generation (structure first, then tuning, as in EGG).
    QString stageOf(int island, int islands, int generation) const;
    const Endpoint* endpoint(const QString& name) const;

    QJsonObject toJson() const;
    static spec::Expected<LlmSettings> fromJson(const QJsonObject& json);
    // Adds models (ENDPOINT:MODEL[=W][@ISLANDS] each) and a helper (empty: none), with the
    // endpoints they name taken from `known`. Errors name the spec, or the endpoint and the known ones.
    spec::Status useModels(const QStringList& modelSpecs, const QString& helperSpec, const QList<Endpoint>& known);
    spec::Status validate(int islands) const;
};

} // namespace kforge::llm
