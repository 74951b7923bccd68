#include "llm/modeltable.h"

#include "llm/modelname.h"
#include "llm/userconfig.h"
#include "util/jsonreader.h"
#include "util/numbers.h"
#include "util/resourcelocator.h"

#include <QFileInfo>
#include <QJsonValue>

#include <optional>

namespace kforge::llm {

spec::Expected<ModelTable> ModelTable::loadDefault(const QString& userFile) {
    const QString relative = QStringLiteral("llm/models.json");
    const QString path = util::ResourceLocator::find(relative);
    if (path.isEmpty())
        return spec::fail(
            util::ResourceLocator::notFound(relative, QStringLiteral("table of model parameters")).toStdString());
    return withUserFile(load(path), userFile);
}

spec::Expected<ModelTable> ModelTable::load(const QString& path) {
    return loadModelTableFile<ModelTable>(path, QStringLiteral("model parameters"));
}

spec::Expected<ModelTable> ModelTable::fromJson(const QJsonObject& json, const QString& origin) {
    const util::JsonReader reader(origin, QStringLiteral("."));
    for (auto it = json.begin(); it != json.end(); ++it)
        if (!it.key().startsWith(QLatin1Char('_')) && it.key() != QLatin1String("models"))
            return reader.error(QString(),
                                QStringLiteral("unknown key \"%1\" (expected models, _comment)").arg(it.key()));
    if (!json.value(QStringLiteral("models")).isObject())
        return reader.error(QString(), QStringLiteral("missing \"models\": an object of model name -> parameters"));
    ModelTable table;
    const QJsonObject models = json.value(QStringLiteral("models")).toObject();
    for (auto it = models.begin(); it != models.end(); ++it) {
        const QString path = QStringLiteral("models.") + it.key();
        if (it.key().trimmed().isEmpty() || !it.value().isObject())
            return reader.error(path, QStringLiteral("expected a model name and an object of its parameters"));
        const QJsonObject entry = it.value().toObject();
        if (auto e = reader.checkKeys(entry, path,
                                      {QStringLiteral("maxTokensField"), QStringLiteral("temperature"),
                                       QStringLiteral("reasoningEffort"), QStringLiteral("thinkingBudget")}))
            return *e;
        ModelParams p;
        const QJsonValue field = entry.value(QStringLiteral("maxTokensField"));
        if (!field.isUndefined()) {
            if (field.toString() != QLatin1String("max_tokens")
                && field.toString() != QLatin1String("max_completion_tokens"))
                return reader.error(reader.keyPath(path, QStringLiteral("maxTokensField")),
                                    QStringLiteral("expected \"max_tokens\" or \"max_completion_tokens\""));
            p.maxCompletionTokens = field.toString() == QLatin1String("max_completion_tokens");
        }
        const QJsonValue temperature = entry.value(QStringLiteral("temperature"));
        if (!temperature.isUndefined() && !temperature.isBool())
            return reader.error(reader.keyPath(path, QStringLiteral("temperature")),
                                QStringLiteral("expected true or false (whether a temperature is sent)"));
        p.temperature = temperature.toBool(true);
        const QJsonValue effort = entry.value(QStringLiteral("reasoningEffort"));
        if (!effort.isUndefined()) {
            static const QStringList efforts = {QStringLiteral("minimal"), QStringLiteral("low"),
                                                QStringLiteral("medium"), QStringLiteral("high")};
            if (!efforts.contains(effort.toString()))
                return reader.error(reader.keyPath(path, QStringLiteral("reasoningEffort")),
                                    QStringLiteral("expected minimal, low, medium or high"));
            p.reasoningEffort = effort.toString();
        }
        const QJsonValue budget = entry.value(QStringLiteral("thinkingBudget"));
        if (!budget.isUndefined()) {
            const std::optional<int> b = util::wholeNumber<int>(budget.toDouble(-1.0));
            if (!budget.isDouble() || !b || (*b != 0 && (*b < 1024 || *b > 128000)))
                return reader.error(reader.keyPath(path, QStringLiteral("thinkingBudget")),
                                    QStringLiteral("expected 0 (off) or a whole number of tokens from 1024 to 128000"));
            p.thinkingBudget = *b;
        }
        table.m_models[it.key().trimmed()] = p;
    }
    return table;
}

QString ModelTable::userPath() {
    return userConfigFileToRead(QStringLiteral("llm-models.json"), QStringLiteral("the model parameters"));
}

void ModelTable::merge(const ModelTable& other) {
    for (const auto& [model, params] : other.m_models)
        m_models[model] = params;
}

ModelParams ModelTable::find(const QString& model) const {
    const ModelParams* p = findModelEntry(m_models, model);
    return p ? *p : ModelParams{};
}

} // namespace kforge::llm
