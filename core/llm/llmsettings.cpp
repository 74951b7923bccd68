#include "llm/llmsettings.h"

#include "llm/apiformat.h"
#include "llm/endpoints.h"
#include "util/numbers.h"
#include "util/secretenvironment.h"

#include <QJsonArray>
#include <QRegularExpression>

#include <cmath>
#include <optional>
#include <type_traits>

namespace kforge::llm {

namespace {

spec::Error bad(const QString& what) {
    return spec::Error{"LLM settings: " + what.toStdString()};
}

} // namespace

QString ModelChoice::spec() const {
    QString s = endpoint + QLatin1Char(':') + model;
    if (weight != 1.0)
        s += QLatin1Char('=') + QString::number(weight);
    if (!islands.isEmpty()) {
        QStringList ids;
        for (int i : islands)
            ids << QString::number(i);
        s += QLatin1Char('@') + ids.join(QLatin1Char(','));
    }
    return s;
}

spec::Expected<ModelChoice> ModelChoice::parse(const QString& text) {
    // endpoint:model[=weight][@islands]; model names may hold ':' (ollama's "qwen2.5-coder:7b").
    static const QRegularExpression re(QStringLiteral(R"(^([A-Za-z0-9_.-]+):([^=@]+?)(?:=([^@]*))?(?:@(.*))?$)"));
    const QString trimmed = text.trimmed();
    const auto m = re.match(trimmed);
    if (!m.hasMatch())
        return spec::fail("model '" + text.toStdString()
                          + "': expected ENDPOINT:MODEL[=WEIGHT][@ISLAND,...], e.g. openai:gpt-4.1-mini");
    // Control characters (a tab, a NUL pasted from elsewhere) are in no model's or island's name.
    static const QRegularExpression control(QStringLiteral(R"([\x00-\x1f\x7f])"));
    if (trimmed.contains(control))
        return spec::fail("model '" + text.toStdString() + "': holds a control character");
    ModelChoice c;
    c.endpoint = m.captured(1);
    c.model = m.captured(2).trimmed();
    if (c.model.isEmpty())
        return spec::fail("model '" + text.toStdString() + "': the model name after '" + c.endpoint.toStdString()
                          + ":' is empty");
    if (m.capturedLength(3) > 0) {
        bool ok = false;
        c.weight = m.captured(3).toDouble(&ok);
        if (!ok || !std::isfinite(c.weight) || c.weight <= 0.0)
            return spec::fail("model '" + text.toStdString() + "': the weight '" + m.captured(3).toStdString()
                              + "' must be a positive number");
    }
    if (m.capturedLength(4) > 0) {
        for (const QString& part : m.captured(4).split(QLatin1Char(','))) {
            bool ok = false;
            const int island = part.trimmed().toInt(&ok);
            if (!ok || island < 0)
                return spec::fail("model '" + text.toStdString() + "': '" + part.toStdString()
                                  + "' is not an island number");
            c.islands << island;
        }
    }
    return c;
}

QString LlmSettings::stageOf(int island, int islands, int generation) const {
    if (island >= 0 && island < stages.size())
        return stages.at(island);
    if (islands <= 1) // one island alternates: structure, then tuning of what it found
        return generation % 2 == 1 ? QStringLiteral("structure") : QStringLiteral("tuning");
    return island < (islands + 1) / 2 ? QStringLiteral("structure") : QStringLiteral("tuning");
}

const Endpoint* LlmSettings::endpoint(const QString& name) const {
    for (const auto& e : endpoints)
        if (e.name == name)
            return &e;
    return nullptr;
}

QJsonObject LlmSettings::toJson() const {
    QJsonArray modelList;
    for (const auto& m : models)
        modelList.append(m.spec());
    QJsonArray endpointList;
    for (const auto& e : endpoints)
        endpointList.append(e.toJson());
    return QJsonObject{
        {QStringLiteral("models"), modelList},
        {QStringLiteral("endpoints"), endpointList},
        {QStringLiteral("selection"), selection},
        {QStringLiteral("rate"), rate},
        {QStringLiteral("crossover_rate"), crossoverRate},
        {QStringLiteral("repair_rate"), repairRate},
        {QStringLiteral("stages"), QJsonArray::fromStringList(stages)},
        {QStringLiteral("personas"), personas},
        {QStringLiteral("meta_interval"), metaInterval},
        {QStringLiteral("helper"), helper},
        {QStringLiteral("budget_tokens"), budgetTokens},
        {QStringLiteral("budget_usd"), budgetUsd},
        {QStringLiteral("max_tokens"), maxTokens},
        {QStringLiteral("temperature"), temperature},
        {QStringLiteral("experience_items"), experienceItems},
    };
}

spec::Expected<LlmSettings> LlmSettings::fromJson(const QJsonObject& json) {
    static const QStringList known = QString::fromLatin1("models endpoints selection rate crossover_rate repair_rate "
                                                         "stages personas meta_interval helper budget_tokens "
                                                         "budget_usd max_tokens temperature experience_items")
                                         .split(QLatin1Char(' '));
    for (auto it = json.begin(); it != json.end(); ++it)
        if (!known.contains(it.key()))
            return bad(QStringLiteral("unknown key '%1' (known: %2)").arg(it.key(), known.join(QStringLiteral(", "))));
    LlmSettings s;
    for (const auto& v : json.value(QLatin1String("models")).toArray()) {
        auto m = ModelChoice::parse(v.toString());
        if (!m)
            return bad(QString::fromStdString(m.error()));
        s.models << *m;
    }
    const QJsonArray endpoints = json.value(QLatin1String("endpoints")).toArray();
    for (qsizetype i = 0; i < endpoints.size(); ++i) {
        QString error;
        auto e = Endpoint::fromJson(endpoints.at(i).toObject(), &error);
        if (!e)
            return bad(QStringLiteral("endpoints[%1]: %2").arg(i).arg(error));
        if (e->credentialsLeftOut) {
            // Never stored: the configured endpoint of that name gives them back when it is the
            // same server (else calls go without them and the endpoint says what it refused).
            if (auto configured = loadEndpoints())
                if (const Endpoint* same = findEndpoint(*configured, e->name);
                    same && redactedUrl(same->baseUrl) == e->baseUrl) {
                    e->baseUrl = same->baseUrl;
                    e->credentialsLeftOut = false;
                }
        }
        // A resumed run's endpoint may name a key variable no loaded file does.
        util::registerSecretVariable(e->keyEnv);
        s.endpoints << *e;
    }
    auto number = [&](const char* key, auto& target) -> spec::Status {
        const QJsonValue v = json.value(QLatin1String(key));
        if (v.isUndefined())
            return spec::success();
        if (!v.isDouble())
            return bad(QStringLiteral("'%1' must be a number").arg(QLatin1String(key)));
        const auto value = util::numberAs<std::remove_reference_t<decltype(target)>>(v.toDouble());
        if (!value)
            return bad(QStringLiteral("'%1' must be a whole number, not %2")
                           .arg(QLatin1String(key), QString::number(v.toDouble(), 'g', 15)));
        target = *value;
        return spec::success();
    };
    // A braced list is evaluated left to right: the first bad key is the one reported.
    for (const spec::Status& read :
         {number("rate", s.rate), number("crossover_rate", s.crossoverRate), number("repair_rate", s.repairRate),
          number("meta_interval", s.metaInterval), number("budget_tokens", s.budgetTokens),
          number("budget_usd", s.budgetUsd), number("max_tokens", s.maxTokens), number("temperature", s.temperature),
          number("experience_items", s.experienceItems)})
        if (!read)
            return spec::Error{read.error()};
    s.selection = json.value(QLatin1String("selection")).toString(s.selection);
    s.helper = json.value(QLatin1String("helper")).toString();
    s.personas = json.value(QLatin1String("personas")).toBool(true);
    for (const auto& v : json.value(QLatin1String("stages")).toArray())
        s.stages << v.toString();
    return s;
}

spec::Status LlmSettings::validate(int islands) const {
    if (selection != QLatin1String("bandit") && selection != QLatin1String("weights"))
        return bad(QStringLiteral("selection must be bandit or weights, not '%1'").arg(selection));
    for (const auto& [name, value] :
         {std::pair{"rate", rate}, std::pair{"crossover rate", crossoverRate}, std::pair{"repair rate", repairRate}})
        if (value < 0.0 || value > 1.0)
            return bad(QStringLiteral("the %1 must be between 0 and 1, not %2").arg(QLatin1String(name)).arg(value));
    if (budgetTokens < 0 || budgetUsd < 0.0)
        return bad(QStringLiteral("budgets cannot be negative"));
    if (maxTokens < 64 || maxTokens > 200000)
        return bad(QStringLiteral("max tokens must be between 64 and 200000, not %1").arg(maxTokens));
    if (temperature < 0.0 || temperature > 2.0)
        return bad(QStringLiteral("the temperature must be between 0 and 2, not %1").arg(temperature));
    const auto calls = [&](const Endpoint& e) {
        const auto helperModel =
            helper.isEmpty() ? spec::Expected<ModelChoice>(spec::Error{""}) : ModelChoice::parse(helper);
        return std::any_of(models.begin(), models.end(), [&](const ModelChoice& m) { return m.endpoint == e.name; })
               || (helperModel && helperModel->endpoint == e.name);
    };
    for (const auto& e : endpoints)
        if (e.api == Api::Anthropic && temperature > 1.0 && calls(e))
            return bad(QStringLiteral("the temperature must be between 0 and 1 for endpoint \"%1\" (the Anthropic "
                                      "Messages API's range), not %2")
                           .arg(e.name)
                           .arg(temperature));
    if (metaInterval < 0)
        return bad(QStringLiteral("the meta-prompt interval cannot be negative"));
    for (qsizetype i = 0; i < stages.size(); ++i)
        if (stages[i] != QLatin1String("structure") && stages[i] != QLatin1String("tuning"))
            return bad(
                QStringLiteral("stage of island %1 must be structure or tuning, not '%2'").arg(i).arg(stages[i]));
    if (stages.size() > islands)
        return bad(QStringLiteral("%1 stages given for %2 islands").arg(stages.size()).arg(islands));
    auto checkModel = [&](const ModelChoice& m) -> spec::Status {
        if (!endpoint(m.endpoint))
            return bad(
                QStringLiteral("model %1 names the endpoint '%2', which is not configured").arg(m.spec(), m.endpoint));
        for (int i : m.islands)
            if (i >= islands)
                return bad(
                    QStringLiteral("model %1 names island %2, but the run has %3").arg(m.spec()).arg(i).arg(islands));
        return spec::success();
    };
    for (const auto& m : models)
        if (auto ok = checkModel(m); !ok)
            return ok;
    for (int island = 0; island < islands && !models.isEmpty(); ++island) {
        if (std::none_of(models.begin(), models.end(), [&](const ModelChoice& m) { return m.servesIsland(island); }))
            return bad(QStringLiteral("no model serves island %1").arg(island));
    }
    if (!helper.isEmpty()) {
        auto h = ModelChoice::parse(helper);
        if (!h)
            return bad(QStringLiteral("helper: %1").arg(QString::fromStdString(h.error())));
        if (auto ok = checkModel(*h); !ok)
            return ok;
    }
    return spec::success();
}

spec::Status LlmSettings::useModels(const QStringList& modelSpecs, const QString& helperSpec,
                                    const QList<Endpoint>& known) {
    const auto use = [&](const QString& name) -> spec::Status {
        if (endpoint(name))
            return spec::success();
        const Endpoint* found = findEndpoint(known, name);
        if (!found) {
            QStringList names;
            for (const auto& e : known)
                names << e.name;
            return spec::fail(QStringLiteral("no endpoint '%1' (known: %2; define it as %1=URL: --llm-endpoint on the "
                                             "command line, Endpoints in New Run)")
                                  .arg(name, names.join(QStringLiteral(", ")))
                                  .toStdString());
        }
        endpoints << *found;
        return spec::success();
    };
    for (const QString& text : modelSpecs) {
        auto m = ModelChoice::parse(text);
        if (!m)
            return spec::fail(m.error()); // names the spec
        if (auto s = use(m->endpoint); !s)
            return s;
        models << *m;
    }
    if (!helperSpec.isEmpty()) {
        auto h = ModelChoice::parse(helperSpec);
        if (!h)
            return spec::fail("the helper " + h.error());
        if (auto s = use(h->endpoint); !s)
            return s;
        helper = helperSpec;
    }
    return spec::success();
}

} // namespace kforge::llm
