// The LLM settings of a run: model specs from the command line, the JSON stored with the run, and
// the checks that name what is wrong before a run starts; where the user's LLM files are read
// from, and the key variables that loading endpoints marks secret.

#include "llm/endpoints.h"
#include "llm/llmsettings.h"
#include "llm/pricetable.h"
#include "llm/userconfig.h"
#include "search/runconfig.h"
#include "util/numbers.h"
#include "util/secretenvironment.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <cstdint>
#include <limits>

using namespace kforge;
using namespace kforge::search;
using namespace kforge::llm;

namespace {

LlmSettings twoModels() {
    LlmSettings s;
    llm::Endpoint local;
    local.name = QStringLiteral("local");
    local.baseUrl = QStringLiteral("http://127.0.0.1:8000/v1");
    s.endpoints << local;
    s.models << *ModelChoice::parse(QStringLiteral("local:qwen2.5-coder:7b=2@0"))
             << *ModelChoice::parse(QStringLiteral("local:gpt-4.1-mini@1,2"));
    return s;
}

QJsonObject twoModelsJson() {
    return twoModels().toJson();
}

bool writeFile(const QString& path, const QByteArray& text) {
    QFile file(path);
    if (!QDir().mkpath(QFileInfo(path).absolutePath()) || !file.open(QIODevice::WriteOnly))
        return false;
    return file.write(text) == text.size();
}

const QByteArray kUserEndpoints = R"({"endpoints": [{"name": "mine", "api": "openai",
    "baseUrl": "http://127.0.0.1:9/v1", "keyEnv": "KFORGE_TEST_MINE_CREDENTIAL"}]})";

} // namespace

class TestLlmSettings : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QDir(userConfigDir()).removeRecursively();
    }
    void cleanupTestCase() { QDir(userConfigDir()).removeRecursively(); }

    void userFilesAreWhereTheReadmeSays() {
        const QString config = QStandardPaths::writableLocation(QStandardPaths::GenericConfigLocation);
        QCOMPARE(userConfigDir(), QDir(config).filePath(QStringLiteral("kforge")));
        QCOMPARE(userEndpointsPath(), QDir(config).filePath(QStringLiteral("kforge/llm-endpoints.json")));
        QCOMPARE(PriceTable::userPath(), QDir(config).filePath(QStringLiteral("kforge/llm-prices.json")));
        QCOMPARE(userEndpointsFile(), QString());
    }

    void findUserConfigFile_data() {
        QTest::addColumn<QStringList>("files");    // relative to the config folder; "stray/" is a stray folder
        QTest::addColumn<QString>("read");         // "" for none
        QTest::addColumn<QStringList>("warnings"); // each a part of one warning, in order
        const QString name = QStringLiteral("llm-endpoints.json");
        QTest::newRow("documented") << QStringList{name} << name << QStringList{};
        QTest::newRow("none") << QStringList{} << QString() << QStringList{};
        QTest::newRow("old location")
            << QStringList{QStringLiteral("kforge/") + name} << QStringLiteral("kforge/") + name
            << QStringList{QStringLiteral("CONFIG/kforge/llm-endpoints.json is read from an old location: move it to "
                                          "CONFIG/llm-endpoints.json")};
        QTest::newRow("both") << QStringList{name, QStringLiteral("kforge/") + name} << name
                              << QStringList{QStringLiteral("CONFIG/kforge/llm-endpoints.json is not read: "
                                                            "CONFIG/llm-endpoints.json is read instead")};
        QTest::newRow("built-in name") << QStringList{QStringLiteral("endpoints.json")} << QString()
                                       << QStringList{QStringLiteral(
                                              "CONFIG/endpoints.json is not read: LLM endpoints belong in "
                                              "CONFIG/llm-endpoints.json")};
        QTest::newRow("singular, old folder")
            << QStringList{QStringLiteral("kforge/llm-endpoint.json")} << QString()
            << QStringList{QStringLiteral("CONFIG/kforge/llm-endpoint.json is not read")};
        QTest::newRow("underscore") << QStringList{QStringLiteral("llm_endpoints.json"), name} << name
                                    << QStringList{QStringLiteral("CONFIG/llm_endpoints.json is not read")};
        QTest::newRow("wrong folder") << QStringList{QStringLiteral("stray/") + name} << QString()
                                      << QStringList{QStringLiteral("stray/llm-endpoints.json is not read: LLM "
                                                                    "endpoints belong in CONFIG/llm-endpoints.json")};
    }
    void findUserConfigFile() {
        QFETCH(QStringList, files);
        QFETCH(QString, read);
        QFETCH(QStringList, warnings);
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const QString config = tmp.filePath(QStringLiteral("kforge"));
        for (const QString& f : files)
            QVERIFY(writeFile(f.startsWith(QLatin1String("stray/")) ? tmp.filePath(f) : QDir(config).filePath(f),
                              kUserEndpoints));
        const UserConfigFile found =
            llm::findUserConfigFile(config, QStringLiteral("llm-endpoints.json"), QStringLiteral("LLM endpoints"),
                                    {tmp.filePath(QStringLiteral("stray"))});
        QCOMPARE(found.expected, QDir(config).filePath(QStringLiteral("llm-endpoints.json")));
        QCOMPARE(found.path, read.isEmpty() ? QString() : QDir(config).filePath(read));
        QStringList got = found.warnings;
        got.replaceInStrings(config, QStringLiteral("CONFIG"));
        QCOMPARE(got.size(), warnings.size());
        for (qsizetype i = 0; i < warnings.size(); ++i)
            QVERIFY2(got.at(i).contains(warnings.at(i)), qPrintable(got.at(i)));
    }

    void loadsTheDocumentedAndTheOldLocation() {
        const QString documented = userEndpointsPath();
        const QString old = QDir(userConfigDir()).filePath(QStringLiteral("kforge/llm-endpoints.json"));
        QVERIFY(writeFile(old, kUserEndpoints));
        QTest::ignoreMessage(
            QtWarningMsg,
            qPrintable(QStringLiteral("%1 is read from an old location: move it to %2.").arg(old, documented)));
        auto endpoints = loadEndpoints();
        QVERIFY2(endpoints.ok(), endpoints.ok() ? "" : endpoints.error().c_str());
        QVERIFY(findEndpoint(*endpoints, QStringLiteral("mine")));
        QVERIFY(QFile::remove(old));

        QVERIFY(writeFile(documented, kUserEndpoints));
        endpoints = loadEndpoints();
        QVERIFY2(endpoints.ok(), endpoints.ok() ? "" : endpoints.error().c_str());
        QVERIFY(findEndpoint(*endpoints, QStringLiteral("mine")));
        QVERIFY(QFile::remove(documented));

        QVERIFY(writeFile(PriceTable::userPath(), R"({"models": {"kforge-test-model": {"input": 1, "output": 2}}})"));
        auto prices = PriceTable::loadDefault();
        QVERIFY2(prices.ok(), prices.ok() ? "" : prices.error().c_str());
        QVERIFY(prices->find(QStringLiteral("kforge-test-model")));
        QVERIFY(QFile::remove(PriceTable::userPath()));
    }

    void endpointKeyVariablesAreSecret() {
        // Whatever their names: the workers must not inherit them.
        QVERIFY(!util::isSecretVariable(QStringLiteral("KFORGE_TEST_FILE_CREDENTIAL")));
        QTemporaryDir tmp;
        const QString file = tmp.filePath(QStringLiteral("endpoints.json"));
        QVERIFY(writeFile(file, QByteArray(kUserEndpoints).replace("MINE", "FILE")));
        QVERIFY(loadEndpointsFile(file).ok());
        QVERIFY(util::isSecretVariable(QStringLiteral("KFORGE_TEST_FILE_CREDENTIAL")));
        QVERIFY(!util::isSecretVariable(QStringLiteral("KFORGE_TEST_STORED_CREDENTIAL")));
        QJsonObject json = twoModelsJson();
        QJsonArray endpoints = json.value(QStringLiteral("endpoints")).toArray();
        QJsonObject first = endpoints.at(0).toObject();
        first[QStringLiteral("keyEnv")] = QStringLiteral("KFORGE_TEST_STORED_CREDENTIAL");
        endpoints[0] = first;
        json[QStringLiteral("endpoints")] = endpoints;
        auto settings = LlmSettings::fromJson(json);
        QVERIFY2(settings.ok(), settings.ok() ? "" : settings.error().c_str());
        QVERIFY(util::isSecretVariable(QStringLiteral("KFORGE_TEST_STORED_CREDENTIAL")));
    }

    void modelSpecs_data() {
        QTest::addColumn<QString>("spec");
        QTest::addColumn<QString>("endpoint");
        QTest::addColumn<QString>("model");
        QTest::addColumn<double>("weight");
        QTest::addColumn<QList<int>>("islands");
        QTest::newRow("plain") << "openai:gpt-4.1-mini"
                               << "openai"
                               << "gpt-4.1-mini" << 1.0 << QList<int>{};
        QTest::newRow("colon in model") << "ollama:qwen2.5-coder:32b"
                                        << "ollama"
                                        << "qwen2.5-coder:32b" << 1.0 << QList<int>{};
        QTest::newRow("weight and islands") << "anthropic:claude-sonnet-4-5=2.5@0,3"
                                            << "anthropic"
                                            << "claude-sonnet-4-5" << 2.5 << QList<int>{0, 3};
        QTest::newRow("slash in model") << "mine:Qwen/Qwen2.5-Coder-32B-Instruct"
                                        << "mine"
                                        << "Qwen/Qwen2.5-Coder-32B-Instruct" << 1.0 << QList<int>{};
    }

    void modelSpecs() {
        QFETCH(QString, spec);
        auto m = ModelChoice::parse(spec);
        QVERIFY2(m, m ? "" : m.error().c_str());
        QTEST(m->endpoint, "endpoint");
        QTEST(m->model, "model");
        QTEST(m->weight, "weight");
        QTEST(m->islands, "islands");
        auto again = ModelChoice::parse(m->spec());
        QVERIFY(again);
        QCOMPARE(again->spec(), m->spec());
    }

    void badModelSpecs_data() {
        QTest::addColumn<QString>("spec");
        QTest::addColumn<QString>("message");
        QTest::newRow("no endpoint") << "gpt-4o"
                                     << "expected ENDPOINT:MODEL";
        QTest::newRow("empty model") << "openai:"
                                     << "expected ENDPOINT:MODEL";
        QTest::newRow("zero weight") << "openai:gpt-4o=0"
                                     << "the weight '0' must be a positive number";
        QTest::newRow("bad weight") << "openai:gpt-4o=lots"
                                    << "the weight 'lots' must be a positive number";
        QTest::newRow("bad island") << "openai:gpt-4o@one"
                                    << "'one' is not an island number";
        QTest::newRow("blank model") << "openai:   =2"
                                     << "the model name after 'openai:' is empty";
        QTest::newRow("infinite weight") << "openai:gpt-4o=inf"
                                         << "the weight 'inf' must be a positive number";
        QTest::newRow("NaN weight") << "openai:gpt-4o=nan"
                                    << "the weight 'nan' must be a positive number";
        QTest::newRow("control character")
            << QStringLiteral("openai:gpt-4o@4") + QChar(0) + QStringLiteral("1") << "holds a control character";
    }

    void badModelSpecs() {
        QFETCH(QString, spec);
        QFETCH(QString, message);
        auto m = ModelChoice::parse(spec);
        QVERIFY(!m);
        QVERIFY2(QString::fromStdString(m.error()).contains(message), m.error().c_str());
    }

    void roundTripsThroughRunConfig() {
        RunConfig c;
        c.task = QStringLiteral("softmax");
        c.islands = 3;
        c.llm = twoModels();
        c.llm.budgetUsd = 1.5;
        c.llm.budgetTokens = 2000000;
        c.llm.stages = {QStringLiteral("tuning"), QStringLiteral("structure")};
        c.llm.helper = QStringLiteral("local:gpt-4.1-mini");
        QVERIFY(c.validate());
        auto back = RunConfig::fromJson(c.toJson());
        QVERIFY2(back, back ? "" : back.error().c_str());
        QCOMPARE(back->llm.toJson(), c.llm.toJson());
        QCOMPARE(back->llm.endpoints.size(), 1);
        QCOMPARE(back->llm.models.at(0).model, QStringLiteral("qwen2.5-coder:7b"));
    }

    void runConfigNamesItsBackend() {
        RunConfig c;
        c.backend = kforge::model::Backend::Cuda;
        auto back = RunConfig::fromJson(c.toJson());
        QVERIFY2(back, back ? "" : back.error().c_str());
        QCOMPARE(back->backend, kforge::model::Backend::Cuda);
        for (const QString& bad : {QStringLiteral("metal"), QString()}) {
            QJsonObject json = c.toJson();
            json.insert(QStringLiteral("backend"), bad);
            const auto refused = RunConfig::fromJson(json);
            QVERIFY(!refused);
            QVERIFY2(QString::fromStdString(refused.error())
                         .contains(QStringLiteral("backend must be opencl or cuda, not '%1'").arg(bad)),
                     refused.error().c_str());
        }
    }

    void runConfigKeepsPyTorchRounds() {
        RunConfig c;
        c.pytorchRounds = 120;
        auto back = RunConfig::fromJson(c.toJson());
        QVERIFY2(back, back ? "" : back.error().c_str());
        QCOMPARE(back->pytorchRounds, 120);
        QJsonObject json = c.toJson();
        json.insert(QStringLiteral("pytorch_rounds"), 3);
        const auto refused = RunConfig::fromJson(json);
        QVERIFY(!refused);
        QVERIFY2(QString::fromStdString(refused.error())
                     .contains(QStringLiteral("PyTorch's paired rounds: 3 is not between 6 and 1000")),
                 refused.error().c_str());
    }

    void badJson_data() {
        QTest::addColumn<QJsonObject>("json");
        QTest::addColumn<QString>("message");
        QTest::newRow("unknown key") << QJsonObject{{QStringLiteral("budget"), 3}} << "unknown key 'budget'";
        QTest::newRow("text budget") << QJsonObject{{QStringLiteral("budget_usd"), QStringLiteral("3")}}
                                     << "'budget_usd' must be a number";
        QTest::newRow("bad model") << QJsonObject{{QStringLiteral("models"), QJsonArray{QStringLiteral("gpt-4o")}}}
                                   << "expected ENDPOINT:MODEL";
        QTest::newRow("bad endpoint") << QJsonObject{{QStringLiteral("endpoints"),
                                                      QJsonArray{QJsonObject{
                                                          {QStringLiteral("name"), QStringLiteral("x")},
                                                          {QStringLiteral("api"), QStringLiteral("grpc")}}}}}
                                      << "endpoints[0]";
        // Whole numbers only, and only those the setting's integer holds: a cast of 1e300 to an
        // int is undefined, not a large number.
        QTest::newRow("huge max_tokens") << QJsonObject{{QStringLiteral("max_tokens"), 1e300}}
                                         << "'max_tokens' must be a whole number, not 1e+300";
        QTest::newRow("fractional meta interval")
            << QJsonObject{{QStringLiteral("meta_interval"), 2.5}} << "'meta_interval' must be a whole number, not 2.5";
        QTest::newRow("endpoint concurrency past int")
            << QJsonObject{{QStringLiteral("endpoints"),
                            QJsonArray{QJsonObject{{QStringLiteral("name"), QStringLiteral("x")},
                                                   {QStringLiteral("api"), QStringLiteral("openai")},
                                                   {QStringLiteral("baseUrl"), QStringLiteral("http://127.0.0.1:1/v1")},
                                                   {QStringLiteral("maxConcurrent"), 4294967297.0}}}}}
            << "maxConcurrent: expected a whole number";
    }

    // util::wholeNumber, which every integer setting is read through: whole numbers the type
    // holds, to its very limits, and nothing else.
    void wholeNumberBounds() {
        using kforge::util::wholeNumber;
        QCOMPARE(wholeNumber<int>(2147483647.0).value_or(0), 2147483647);
        QVERIFY(!wholeNumber<int>(2147483648.0));
        QCOMPARE(wholeNumber<int>(-2147483648.0).value_or(0), std::numeric_limits<int>::min());
        QVERIFY(!wholeNumber<int>(-2147483649.0));
        QVERIFY(!wholeNumber<int>(2.5));
        QVERIFY(!wholeNumber<int>(std::numeric_limits<double>::quiet_NaN()));
        QVERIFY(!wholeNumber<int>(std::numeric_limits<double>::infinity()));
        QVERIFY(!wholeNumber<qint64>(9223372036854775808.0)); // 2^63, what 2^63 - 1 rounds to
        QCOMPARE(wholeNumber<qint64>(-9223372036854775808.0).value_or(0), std::numeric_limits<qint64>::min());
        QVERIFY(!wholeNumber<std::uint64_t>(-1.0));
        QVERIFY(!wholeNumber<std::uint64_t>(18446744073709551616.0)); // 2^64
        QCOMPARE(wholeNumber<std::uint64_t>(18446744073709549568.0).value_or(0),
                 std::uint64_t{18446744073709549568u}); // the largest double below 2^64
        QCOMPARE(wholeNumber<std::uint64_t>(-0.0).value_or(1), std::uint64_t{0});
    }

    void runConfigNumbersAreWholeAndFit_data() {
        QTest::addColumn<QString>("key");
        QTest::addColumn<double>("value");
        QTest::addColumn<QString>("message");
        QTest::newRow("islands 2.5") << "islands" << 2.5 << "'islands' must be a whole number, not 2.5";
        QTest::newRow("islands past int") << "islands" << 3e9 << "'islands' must be a whole number, not 3000000000";
        QTest::newRow("budget 1e300") << "budget_evaluations" << 1e300
                                      << "'budget_evaluations' must be a whole number, not 1e+300";
        QTest::newRow("negative seed") << "seed" << -1.0 << "'seed' must be a non-negative integer";
        QTest::newRow("seed past 2^64") << "seed" << 1e20 << "'seed' must be a non-negative integer";
    }

    void runConfigNumbersAreWholeAndFit() {
        QFETCH(QString, key);
        QFETCH(double, value);
        QFETCH(QString, message);
        QJsonObject json = RunConfig().toJson();
        json.insert(key, value);
        const auto c = RunConfig::fromJson(json);
        QVERIFY(!c);
        QVERIFY2(QString::fromStdString(c.error()).contains(message), c.error().c_str());
        // The largest seed a double holds exactly is read as it is.
        json.insert(key, RunConfig().toJson().value(key));
        json.insert(QStringLiteral("seed"), 9007199254740992.0);
        const auto fine = RunConfig::fromJson(json);
        QVERIFY2(fine, fine ? "" : fine.error().c_str());
        QCOMPARE(fine->seed, std::uint64_t{9007199254740992});
    }

    void badJson() {
        QFETCH(QJsonObject, json);
        QFETCH(QString, message);
        auto s = LlmSettings::fromJson(json);
        QVERIFY(!s);
        QVERIFY2(QString::fromStdString(s.error()).contains(message), s.error().c_str());
        QVERIFY(QString::fromStdString(s.error()).startsWith(QLatin1String("LLM settings: ")));
    }

    void invalidSettings_data() {
        QTest::addColumn<QString>("change");
        QTest::addColumn<QString>("message");
        QTest::newRow("rate") << "rate"
                              << "the rate must be between 0 and 1";
        QTest::newRow("selection") << "selection"
                                   << "selection must be bandit or weights";
        QTest::newRow("unknown endpoint") << "endpoint"
                                          << "names the endpoint 'elsewhere', which is not configured";
        QTest::newRow("island out of range") << "island"
                                             << "names island 7, but the run has 3";
        QTest::newRow("island without model") << "uncovered"
                                              << "no model serves island 2";
        QTest::newRow("stage") << "stage"
                               << "stage of island 0 must be structure or tuning";
        QTest::newRow("max tokens") << "tokens"
                                    << "max tokens must be between 64 and 200000";
        QTest::newRow("helper") << "helper"
                                << "helper: ";
    }

    void invalidSettings() {
        QFETCH(QString, change);
        QFETCH(QString, message);
        LlmSettings s = twoModels();
        QVERIFY(s.validate(3));
        if (change == QLatin1String("rate"))
            s.repairRate = 1.5, s.rate = 2.0;
        else if (change == QLatin1String("selection"))
            s.selection = QStringLiteral("greedy");
        else if (change == QLatin1String("endpoint"))
            s.models << *ModelChoice::parse(QStringLiteral("elsewhere:m"));
        else if (change == QLatin1String("island"))
            s.models << *ModelChoice::parse(QStringLiteral("local:m@7"));
        else if (change == QLatin1String("uncovered"))
            s.models[1].islands = {1};
        else if (change == QLatin1String("stage"))
            s.stages = {QStringLiteral("fast")};
        else if (change == QLatin1String("tokens"))
            s.maxTokens = 10;
        else if (change == QLatin1String("helper"))
            s.helper = QStringLiteral("nonsense");
        auto valid = s.validate(3);
        QVERIFY(!valid);
        QVERIFY2(QString::fromStdString(valid.error()).contains(message), valid.error().c_str());
    }

    void stagesAreStructureFirst() {
        LlmSettings s;
        QCOMPARE(s.stageOf(0, 4, 5), QStringLiteral("structure"));
        QCOMPARE(s.stageOf(1, 4, 5), QStringLiteral("structure"));
        QCOMPARE(s.stageOf(2, 4, 5), QStringLiteral("tuning"));
        QCOMPARE(s.stageOf(1, 3, 0), QStringLiteral("structure"));
        QCOMPARE(s.stageOf(2, 3, 0), QStringLiteral("tuning"));
        // One island alternates, structure first.
        QCOMPARE(s.stageOf(0, 1, 1), QStringLiteral("structure"));
        QCOMPARE(s.stageOf(0, 1, 2), QStringLiteral("tuning"));
        s.stages = {QStringLiteral("tuning")};
        QCOMPARE(s.stageOf(0, 4, 1), QStringLiteral("tuning"));
        QCOMPARE(s.stageOf(1, 4, 1), QStringLiteral("structure"));
    }
};

QTEST_GUILESS_MAIN(TestLlmSettings)
#include "tst_llmsettings.moc"
