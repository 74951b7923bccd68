// Settings, on any bytes: a run's configuration (stored with every run and read back on resume),
// its language-model settings and endpoints, the user's model and price tables, and the insights
// of an experience library's export, which teams share as files. Each is read or refused with a
// message (naming the file, for the tables and insights); what is read writes back to JSON that
// reads the same, so a resumed run continues with the settings it stored; a model spec reads back
// from what it prints. Links QtCore, like the code it tests, so only full builds have it.

#include "experience/experiencelibrary.h"
#include "fuzzcheck.h"
#include "llm/llmsettings.h"
#include "llm/modeltable.h"
#include "llm/pricetable.h"
#include "search/runconfig.h"

#include <QByteArray>
#include <QCoreApplication>
#include <QJsonDocument>
#include <QJsonObject>
#include <QString>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

using namespace kforge;
using namespace kforge::llm;

namespace {

std::string str(const QJsonObject& o) {
    return QJsonDocument(o).toJson(QJsonDocument::Compact).toStdString();
}

// fromJson then toJson, twice: the second trip must change nothing.
template <typename T> void roundTrips(const QJsonObject& json, const char* what) {
    const spec::Expected<T> first = T::fromJson(json);
    if (!first) {
        KFORGE_FUZZ_CHECK(!first.error().empty(), std::string(what) + " refused without a message");
        return;
    }
    const QJsonObject written = first->toJson();
    const spec::Expected<T> second = T::fromJson(written);
    KFORGE_FUZZ_CHECK(second.ok(), std::string(what) + " does not read back as written: "
                                       + (second ? std::string() : second.error()) + "\n" + str(written));
    KFORGE_FUZZ_CHECK(second->toJson() == written,
                      std::string(what) + " changes on a second trip:\n" + str(written) + "\n" + str(second->toJson()));
}

void checkRunConfig(const QJsonObject& json) {
    roundTrips<search::RunConfig>(json, "a run configuration");
    roundTrips<LlmSettings>(json, "LLM settings");
    if (const auto config = search::RunConfig::fromJson(json)) {
        const spec::Status valid = config->validate();
        KFORGE_FUZZ_CHECK(valid || !valid.error().empty(), "a run configuration refused without a message");
    }
    if (const auto llm = LlmSettings::fromJson(json)) {
        const spec::Status valid = llm->validate(4);
        KFORGE_FUZZ_CHECK(valid || !valid.error().empty(), "LLM settings refused without a message");
    }
}

void checkEndpoint(const QJsonObject& json) {
    QString error;
    const std::optional<Endpoint> e = Endpoint::fromJson(json, &error);
    if (!e) {
        KFORGE_FUZZ_CHECK(!error.isEmpty(), "an endpoint refused without a message");
        return;
    }
    const QJsonObject written = e->toJson(true);
    QString again;
    const std::optional<Endpoint> second = Endpoint::fromJson(written, &again);
    KFORGE_FUZZ_CHECK(second.has_value(), "an endpoint does not read back as written: " + again.toStdString());
    KFORGE_FUZZ_CHECK(second->toJson(true) == written, "an endpoint changes on a second trip: " + str(written));
}

void checkTables(const QJsonObject& json) {
    const QString origin = QStringLiteral("fuzz/llm-models.json");
    const auto models = ModelTable::fromJson(json, origin);
    if (!models)
        KFORGE_FUZZ_CHECK(models.error().rfind(origin.toStdString(), 0) == 0,
                          "a model table's error does not name the file: " + models.error());
    else
        for (const QString& key : json.value(QStringLiteral("models")).toObject().keys())
            (void)models->find(key + QStringLiteral("-2025-01-01"));

    const QString priceOrigin = QStringLiteral("fuzz/llm-prices.json");
    const auto prices = PriceTable::fromJson(json, priceOrigin);
    if (!prices) {
        KFORGE_FUZZ_CHECK(prices.error().rfind(priceOrigin.toStdString(), 0) == 0,
                          "a price table's error does not name the file: " + prices.error());
        return;
    }
    Usage usage;
    usage.inputTokens = 1000000000000LL;
    usage.outputTokens = 1;
    for (const QString& model : prices->models()) {
        KFORGE_FUZZ_CHECK(prices->find(model).has_value(), "a priced model is not found: " + model.toStdString());
        const std::optional<double> cost = prices->cost(model, usage);
        KFORGE_FUZZ_CHECK(cost && std::isfinite(*cost) && *cost >= 0,
                          "a cost that is not a finite amount: " + model.toStdString());
    }
}

// One insight of an experience library's export, which teams share as files.
void checkInsight(const QJsonObject& json) {
    const QString where = QStringLiteral("fuzz/insights.json: insights[0]");
    const auto insight = experience::Insight::fromJson(json, where);
    if (!insight) {
        KFORGE_FUZZ_CHECK(insight.error().rfind(where.toStdString(), 0) == 0,
                          "an insight's error does not name where it is: " + insight.error());
        return;
    }
    const QJsonObject written = insight->toJson();
    const auto again = experience::Insight::fromJson(written, where);
    KFORGE_FUZZ_CHECK(again.ok(), "an insight does not read back as written: " + (again ? std::string() : again.error())
                                      + "\n" + str(written));
    KFORGE_FUZZ_CHECK(again->toJson() == written, "an insight changes on a second trip: " + str(written));
}

void checkModelSpec(const QByteArray& bytes) {
    const QString text = QString::fromUtf8(bytes.left(bytes.indexOf('\n') < 0 ? bytes.size() : bytes.indexOf('\n')));
    const spec::Expected<ModelChoice> choice = ModelChoice::parse(text);
    if (!choice) {
        KFORGE_FUZZ_CHECK(!choice.error().empty(), "a model spec refused without a message");
        return;
    }
    const spec::Expected<ModelChoice> again = ModelChoice::parse(choice->spec());
    KFORGE_FUZZ_CHECK(again && again->spec() == choice->spec(),
                      "a model spec does not read back as printed: " + choice->spec().toStdString());
}

// Settings with an endpoint whose credentials were left out look the endpoint up in the
// configuration files, through the application's paths: an application, and no user's files.
void setUpOnce() {
    static bool done = false;
    if (done)
        return;
    done = true;
    qputenv("XDG_CONFIG_HOME", "/nonexistent/kforge-fuzz");
    static int argc = 1;
    static char name[] = "kforge-fuzz-settings";
    static char* argv[] = {name, nullptr};
    static QCoreApplication app(argc, argv);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    setUpOnce();
    const QByteArray bytes(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size));
    checkModelSpec(bytes);
    const QJsonDocument doc = QJsonDocument::fromJson(bytes);
    if (!doc.isObject())
        return 0; // not a JSON object: each loader says so before any of this is read
    const QJsonObject json = doc.object();
    checkRunConfig(json);
    checkEndpoint(json);
    checkTables(json);
    checkInsight(json);
    return 0;
}
