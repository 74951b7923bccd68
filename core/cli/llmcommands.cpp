// kforge llm, and the --llm* options of kforge run: language models as proposers.

#include "cli/cli.h"

#include "cli/cliio.h"
#include "util/text.h"

#include "llm/apiformat.h"
#include "llm/apikeys.h"
#include "llm/endpoints.h"
#include "llm/llmsettings.h"
#include "llm/pricetable.h"
#include "store/runexport.h"
#include "store/runstore.h"

#include <QCommandLineParser>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <cstdio>
#include <iostream>
#include <string>
#include <termios.h>
#include <unistd.h>

namespace kforge::cli {

namespace {

using util::q;

QString keySource(const llm::Endpoint& e) {
    if (e.keyEnv.isEmpty())
        return e.keyring ? QStringLiteral("keyring (kforge/%1)").arg(e.name) : QStringLiteral("no key");
    const bool set = !qEnvironmentVariableIsEmpty(e.keyEnv.toLocal8Bit().constData());
    return QStringLiteral("$%1 (%2)%3")
        .arg(e.keyEnv, set ? QStringLiteral("set") : QStringLiteral("not set"),
             e.keyring ? QStringLiteral(", else the keyring") : QString());
}

// Reads one line from stdin without echoing it when stdin is a terminal.
std::string readSecretLine() {
    termios old{};
    const bool tty = ::isatty(STDIN_FILENO) && ::tcgetattr(STDIN_FILENO, &old) == 0;
    if (tty) {
        termios quiet = old;
        quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
        ::tcsetattr(STDIN_FILENO, TCSANOW, &quiet);
    }
    std::string line;
    std::getline(std::cin, line);
    if (tty) {
        ::tcsetattr(STDIN_FILENO, TCSANOW, &old);
        std::fputc('\n', stderr);
    }
    while (!line.empty() && (line.back() == '\r' || line.back() == ' '))
        line.pop_back();
    return line;
}

QString optional(const std::optional<qint64>& v) {
    return v ? QString::number(*v) : QStringLiteral("?");
}

} // namespace

void addLlmOptions(QCommandLineParser& p) {
    p.addOption(
        {QStringLiteral("llm"),
         QStringLiteral("A model that proposes kernels, as ENDPOINT:MODEL[=WEIGHT][@ISLAND,...]; repeat for several\n"
                        "(e.g. --llm openai:gpt-4.1-mini --llm anthropic:claude-sonnet-4-5=2). Endpoints: `kforge llm "
                        "endpoints`."),
         QStringLiteral("MODEL")});
    p.addOption(
        {QStringLiteral("llm-endpoint"),
         QStringLiteral("Define or change an endpoint: NAME=URL[,api=openai|anthropic][,key-env=VAR][,concurrency=N]\n"
                        "[,timeout=S][,retries=N][,stream=0|1][,cache=0|1] (e.g. local=http://127.0.0.1:8000/v1)."),
         QStringLiteral("SPEC")});
    p.addOption({QStringLiteral("llm-rate"), QStringLiteral("Share of children an LLM proposes (default 0.5)."),
                 QStringLiteral("F")});
    p.addOption({QStringLiteral("llm-selection"),
                 QStringLiteral("How the model is chosen: bandit (learns whose children improve most, cost-aware) or "
                                "weights (default bandit)."),
                 QStringLiteral("S")});
    p.addOption(
        {QStringLiteral("llm-stages"),
         QStringLiteral("Stage per island, comma-separated: structure or tuning (default: the first half structure)."),
         QStringLiteral("LIST")});
    p.addOption({QStringLiteral("llm-budget-usd"),
                 QStringLiteral("Money the run may spend on LLM calls; a hard stop (default: none)."),
                 QStringLiteral("USD")});
    p.addOption({QStringLiteral("llm-budget-tokens"),
                 QStringLiteral("Tokens (input + output) the run may spend; a hard stop (default: none)."),
                 QStringLiteral("N")});
    p.addOption({QStringLiteral("llm-max-tokens"), QStringLiteral("Longest answer, in tokens (default 8192)."),
                 QStringLiteral("N")});
    p.addOption({QStringLiteral("llm-temperature"), QStringLiteral("Sampling temperature (default 0.8)."),
                 QStringLiteral("T")});
    p.addOption(
        {QStringLiteral("llm-helper"),
         QStringLiteral("The model that rewrites weak prompt strategies, ENDPOINT:MODEL (default: the first --llm)."),
         QStringLiteral("MODEL")});
    p.addOption({QStringLiteral("llm-meta-interval"),
                 QStringLiteral("Generations between strategy rewrites; 0: never (default 3)."), QStringLiteral("N")});
    p.addOption({QStringLiteral("llm-crossover"),
                 QStringLiteral("Share of LLM children that cross two parents over (default 0.25)."),
                 QStringLiteral("F")});
    p.addOption({QStringLiteral("llm-repair"),
                 QStringLiteral("Share of LLM children that repair a failed kernel (default 0.2)."),
                 QStringLiteral("F")});
    p.addOption({QStringLiteral("no-personas"),
                 QStringLiteral("Do not let the expert personas propose first kernels in generation 0.")});
}

bool applyLlmOptions(const QCommandLineParser& p, llm::LlmSettings& s, QString& error) {
    const QStringList models = p.values(QStringLiteral("llm"));
    const bool anyLlmOption = !models.isEmpty() || p.isSet(QStringLiteral("llm-endpoint"))
                              || p.isSet(QStringLiteral("llm-rate")) || p.isSet(QStringLiteral("llm-budget-usd"))
                              || p.isSet(QStringLiteral("llm-budget-tokens")) || p.isSet(QStringLiteral("llm-helper"));
    if (!anyLlmOption)
        return true;
    if (models.isEmpty()) {
        error = QStringLiteral("the --llm-* options need at least one --llm ENDPOINT:MODEL");
        return false;
    }
    auto known = llm::loadEndpoints();
    if (!known) {
        error = q(known.error());
        return false;
    }
    QList<llm::Endpoint> endpoints = *known;
    for (const QString& spec : p.values(QStringLiteral("llm-endpoint"))) {
        auto e = llm::parseEndpointSpec(spec, endpoints);
        if (!e) {
            error = QStringLiteral("--llm-endpoint: %1").arg(q(e.error()));
            return false;
        }
        endpoints.erase(std::remove_if(endpoints.begin(), endpoints.end(),
                                       [&](const llm::Endpoint& x) { return x.name == e->name; }),
                        endpoints.end());
        endpoints << *e;
    }
    if (auto used = s.useModels(models, p.value(QStringLiteral("llm-helper")), endpoints); !used) {
        error = q(used.error());
        return false;
    }
    auto number = [&](const char* name, auto& target) -> bool {
        if (!p.isSet(QLatin1String(name)))
            return true;
        bool ok = false;
        const double v = p.value(QLatin1String(name)).toDouble(&ok);
        if (!ok) {
            error = QStringLiteral("--%1 must be a number, not '%2'")
                        .arg(QLatin1String(name), p.value(QLatin1String(name)));
            return false;
        }
        target = static_cast<std::remove_reference_t<decltype(target)>>(v);
        return true;
    };
    if (!number("llm-rate", s.rate) || !number("llm-budget-usd", s.budgetUsd)
        || !number("llm-budget-tokens", s.budgetTokens) || !number("llm-max-tokens", s.maxTokens)
        || !number("llm-temperature", s.temperature) || !number("llm-meta-interval", s.metaInterval)
        || !number("llm-crossover", s.crossoverRate) || !number("llm-repair", s.repairRate))
        return false;
    if (p.isSet(QStringLiteral("llm-selection")))
        s.selection = p.value(QStringLiteral("llm-selection"));
    if (p.isSet(QStringLiteral("llm-stages")))
        s.stages = p.value(QStringLiteral("llm-stages")).split(QLatin1Char(','), Qt::SkipEmptyParts);
    s.personas = !p.isSet(QStringLiteral("no-personas"));
    return true;
}

int llmCommand(const QStringList& args) {
    QCommandLineParser p;
    p.setApplicationDescription(
        QStringLiteral(
            "Language models as kernel proposers.\n"
            "  kforge llm endpoints          the endpoints kforge knows and where each key comes from: the built-in\n"
            "                                ones, and yours from %1\n"
            "  kforge llm set-key NAME       store an endpoint's API key in the system keyring (read from stdin)\n"
            "  kforge llm delete-key NAME    remove it\n"
            "  kforge llm prices             the price table (USD per million tokens), overridden by\n"
            "                                %2\n"
            "  kforge llm calls [--run ID]   a run's LLM calls: operator, model, status, tokens, cost, latency\n"
            "  kforge llm show CALL          one call's prompt and answer\n"
            "  kforge llm strategies         a run's prompt strategies, as meta-prompt evolution rewrote them\n"
            "Keys come from the endpoint's environment variable or the keyring, never from a kforge file.")
            .arg(llm::userEndpointsPath(), llm::PriceTable::userPath()));
    addHelpOption(p);
    p.addPositionalArgument(QStringLiteral("action"),
                            QStringLiteral("endpoints, set-key, delete-key, prices, calls, show or strategies"));
    addStoreOption(p);
    p.addOption(
        {QStringLiteral("run"), QStringLiteral("The run (default: the newest in the store)."), QStringLiteral("ID")});
    p.addOption({QStringLiteral("json"), QStringLiteral("Print JSON.")});
    process(p, args, QStringLiteral("llm"));
    const QStringList pos = p.positionalArguments();
    const QString action = pos.value(0, QStringLiteral("endpoints"));
    const bool json = p.isSet(QStringLiteral("json"));

    if (action == QLatin1String("endpoints")) {
        auto endpoints = llm::loadEndpoints();
        if (!endpoints)
            return fail(ExitSetup, q(endpoints.error()));
        if (json) {
            QJsonArray a;
            for (const auto& e : *endpoints)
                a.append(e.toJson());
            out() << QJsonDocument(a).toJson(QJsonDocument::Indented);
            return 0;
        }
        for (const auto& e : *endpoints)
            out() << QStringLiteral("%1  %2  %3  key: %4\n")
                         .arg(e.name, -10)
                         .arg(llm::apiName(e.api), -9)
                         .arg(llm::redactedUrl(e.baseUrl), -32)
                         .arg(keySource(e));
        return 0;
    }
    if (action == QLatin1String("set-key") || action == QLatin1String("delete-key")) {
        if (pos.size() < 2)
            return fail(ExitUsage, QStringLiteral("llm %1 needs the endpoint's name").arg(action));
        const QString& name = pos[1];
        if (action == QLatin1String("delete-key")) {
            if (auto done = llm::deleteKey(name); !done)
                return fail(ExitSetup, q(done.error()));
            out() << "removed the key of " << name << " from the keyring\n";
            return 0;
        }
        err() << "API key for " << name << ": ";
        err().flush();
        const QString key = q(readSecretLine());
        if (key.isEmpty())
            return fail(ExitUsage, QStringLiteral("no key given"));
        if (auto done = llm::storeKey(name, key); !done)
            return fail(ExitSetup, q(done.error()));
        out() << "stored the key of " << name << " in the keyring (service kforge)\n";
        return 0;
    }
    if (action == QLatin1String("prices")) {
        auto table = llm::PriceTable::loadDefault();
        if (!table)
            return fail(ExitSetup, q(table.error()));
        for (const QString& model : table->models()) {
            const auto price = table->find(model);
            QString cache;
            if (price->cachedInputPerMillion)
                cache += QStringLiteral("  cached in $%1").arg(*price->cachedInputPerMillion, 0, 'f', 3);
            if (price->cacheWritePerMillion)
                cache += QStringLiteral("  cache write $%1").arg(*price->cacheWritePerMillion, 0, 'f', 2);
            out() << QStringLiteral("%1  in $%2  out $%3%4 per million tokens\n")
                         .arg(model, -28)
                         .arg(price->inputPerMillion, 0, 'f', 2)
                         .arg(price->outputPerMillion, 0, 'f', 2)
                         .arg(cache);
        }
        return 0;
    }
    if (action != QLatin1String("calls") && action != QLatin1String("show") && action != QLatin1String("strategies"))
        return fail(ExitUsage, QStringLiteral("llm: unknown action '%1' (see kforge llm --help)").arg(action));

    auto store = openExistingStore(storePath(p));
    if (!store)
        return fail(ExitSetup, q(store.error()));
    qint64 runId = 0;
    if (p.isSet(QStringLiteral("run"))) {
        bool ok = false;
        runId = p.value(QStringLiteral("run")).toLongLong(&ok);
        if (!ok || runId <= 0)
            return fail(ExitUsage, QStringLiteral("--run must be a run id"));
    } else {
        auto runs = (*store)->runs();
        if (!runs || runs->isEmpty())
            return fail(ExitSetup, QStringLiteral("%1 holds no run").arg(storePath(p)));
        runId = runs->first().id;
    }

    if (action == QLatin1String("strategies")) {
        auto strategies = (*store)->strategies(runId);
        if (!strategies)
            return fail(ExitSetup, q(strategies.error()));
        for (const auto& st : *strategies) {
            out() << QStringLiteral("strategy %1  %2  from %3%4  generation %5%6\n")
                         .arg(st.id)
                         .arg(st.stage, st.seed,
                              st.parent ? QStringLiteral(" (rewrite of %1)").arg(*st.parent) : QString())
                         .arg(st.generation)
                         .arg(st.retired ? QStringLiteral("  retired") : QString());
            out() << "  " << QString(st.text).replace(QLatin1Char('\n'), QStringLiteral("\n  ")) << "\n";
        }
        return 0;
    }
    auto calls = (*store)->llmCalls(runId);
    if (!calls)
        return fail(ExitSetup, q(calls.error()));
    if (action == QLatin1String("show")) {
        bool ok = false;
        const qint64 id = pos.value(1).toLongLong(&ok);
        for (const auto& c : *calls) {
            if (!ok || c.id != id)
                continue;
            out() << QStringLiteral("call %1: %2 %3 on island %4, generation %5, %6:%7, %8 (%9)\n")
                         .arg(c.id)
                         .arg(c.op, c.stage)
                         .arg(c.island)
                         .arg(c.generation)
                         .arg(c.endpoint, c.model, c.status, c.message);
            out() << "--- system\n"
                  << c.systemPrompt << "\n--- prompt\n"
                  << c.prompt << "\n--- answer\n"
                  << c.answer << "\n";
            return 0;
        }
        return fail(ExitUsage, QStringLiteral("run %1 has no LLM call '%2'").arg(runId).arg(pos.value(1)));
    }
    QJsonArray list;
    for (const auto& c : *calls) {
        if (json) {
            QJsonObject o{{QStringLiteral("id"), c.id},
                          {QStringLiteral("generation"), c.generation},
                          {QStringLiteral("island"), c.island},
                          {QStringLiteral("operator"), c.op},
                          {QStringLiteral("stage"), c.stage},
                          {QStringLiteral("endpoint"), c.endpoint},
                          {QStringLiteral("model"), c.model},
                          {QStringLiteral("status"), c.status},
                          {QStringLiteral("message"), c.message},
                          {QStringLiteral("latency_s"), c.latencySeconds},
                          {QStringLiteral("attempts"), c.attempts}};
            o.insert(QStringLiteral("input_tokens"), c.inputTokens ? QJsonValue(*c.inputTokens) : QJsonValue());
            o.insert(QStringLiteral("output_tokens"), c.outputTokens ? QJsonValue(*c.outputTokens) : QJsonValue());
            o.insert(QStringLiteral("cached_input_tokens"),
                     c.cachedInputTokens ? QJsonValue(*c.cachedInputTokens) : QJsonValue());
            o.insert(QStringLiteral("cache_write_tokens"),
                     c.cacheWriteTokens ? QJsonValue(*c.cacheWriteTokens) : QJsonValue());
            o.insert(QStringLiteral("cost_usd"), c.costUsd ? QJsonValue(*c.costUsd) : QJsonValue());
            o.insert(QStringLiteral("candidate"), c.candidateId ? QJsonValue(*c.candidateId) : QJsonValue());
            list.append(o);
            continue;
        }
        out() << QStringLiteral("%1  gen %2 isl %3  %4 %5  %6:%7  %8  tokens %9/%10  %11  %12s%13\n")
                     .arg(c.id, 4)
                     .arg(c.generation)
                     .arg(c.island)
                     .arg(c.op, -9)
                     .arg(c.stage, -9)
                     .arg(c.endpoint, c.model)
                     .arg(c.status, -10)
                     .arg(optional(c.inputTokens), optional(c.outputTokens))
                     .arg(c.costUsd ? QStringLiteral("$%1").arg(*c.costUsd, 0, 'f', 5) : QStringLiteral("$?"))
                     .arg(c.latencySeconds, 0, 'f', 1)
                     .arg(c.candidateId ? QStringLiteral("  -> #%1").arg(*c.candidateId) : QString());
    }
    if (json) {
        out() << QJsonDocument(list).toJson(QJsonDocument::Indented);
        return 0;
    }
    out() << QStringLiteral("%1 calls, %2\n").arg(calls->size()).arg(store::LlmSpend::of(*calls).text());
    return 0;
}

} // namespace kforge::cli
