#include "diagnose/diagnosis.h"

#include "util/jsonreader.h"

#include "util/resourcelocator.h"

#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonParseError>
#include <QJsonValue>
#include <QRegularExpression>

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

namespace kforge::diagnose {

// One rule of a rules file, checked and pre-parsed when the file is read: `needs` holds the facts
// its condition reads, so that a rule over an unknown fact stays silent instead of guessing.
struct Rule {
    QString id;
    QString kind;
    QString severity;
    std::string when;
    std::vector<std::string> needs;
    QString message;
    QStringList evidence;
    QString direction;
};

namespace {

constexpr int kVersion = 1;

// Every fact factsOf() can produce. Rules are validated against this list when they are read, so
// a misspelt fact is an error rather than a rule that never fires.
const std::set<std::string>& knownFacts() {
    static const std::set<std::string> facts{
        // status of the evaluation, each 0 or 1
        "status_ok", "status_compile_error", "status_runtime_error", "status_timeout", "status_incorrect",
        "status_rejected",
        // compile resources of the candidate, the largest over its kernels
        "registers", "shared_bytes", "local_bytes", "occupancy",
        // verification, summed (counts) or the largest (errors) over the outputs and runs
        "checked", "mismatches", "unwritten", "unwritten_fraction", "non_finite", "mismatch_fraction", "max_abs_error",
        "max_rel_error",
        // the first mismatch of the first output that has one, and that output's shape
        "first_mismatch_index", "first_mismatch_row", "first_mismatch_col", "first_got", "first_expected", "rows",
        "cols",
        // integrity checks, each 0 (passed) or 1 (failed)
        "inputs_changed", "constant_output", "timed_runs_failed", "side_effects", "faster_on_repeats",
        // timing
        "speedup", "spread", "median_us", "baseline_us",
        // roofline
        "intensity", "achieved_gb_per_s", "achieved_gflop_per_s", "peak_gb_per_s", "peak_gflop_per_s",
        "memory_fraction", "compute_fraction", "fraction_of_bound", "bound_memory", "bound_compute", "bound_latency",
        "split_tf32_fraction",
        // hardware profile
        "achieved_occupancy", "sm_throughput", "dram_throughput"};
    return facts;
}

// Every label labelsOf() can give.
const std::set<std::string>& knownLabels() {
    static const std::set<std::string> labels{"peak"};
    return labels;
}

const QStringList& knownKinds() {
    static const QStringList kinds{QStringLiteral("compile"),   QStringLiteral("correctness"),
                                   QStringLiteral("integrity"), QStringLiteral("resources"),
                                   QStringLiteral("memory"),    QStringLiteral("compute"),
                                   QStringLiteral("latency"),   QStringLiteral("timing")};
    return kinds;
}

const QStringList& knownSeverities() {
    static const QStringList severities{QStringLiteral("error"), QStringLiteral("warning"), QStringLiteral("info")};
    return severities;
}

int severityRank(const QString& severity) {
    const qsizetype i = knownSeverities().indexOf(severity);
    return i < 0 ? static_cast<int>(knownSeverities().size()) : static_cast<int>(i);
}

// Identifiers a muparser expression reads as variables: names not preceded by a digit or a dot
// (the exponent of 1e5) and not followed by "(" (min, max, abs...).
std::vector<std::string> variablesOf(const std::string& expression) {
    static const QRegularExpression identifier(QStringLiteral(R"((?<![\w.])[A-Za-z_]\w*+(?!\s*\())"));
    std::vector<std::string> names;
    auto it = identifier.globalMatch(QString::fromStdString(expression));
    while (it.hasNext()) {
        std::string name = it.next().captured(0).toStdString();
        if (std::find(names.begin(), names.end(), name) == names.end())
            names.push_back(std::move(name));
    }
    return names;
}

bool isMuparserConstant(const std::string& name) {
    return name == "_pi" || name == "_e";
}

// "{fact}" or "{fact%}" in a message template.
const QRegularExpression& placeholder() {
    static const QRegularExpression re(QStringLiteral(R"(\{([A-Za-z_]\w*)(%?)\})"));
    return re;
}

// Whole numbers without decimals, large numbers rounded, others to three significant digits.
QString formatNumber(double v) {
    if (!std::isfinite(v))
        return QString::number(v);
    if (std::fabs(v - std::round(v)) < 1e-9 && std::fabs(v) < 1e15)
        return QString::number(static_cast<qint64>(std::llround(v)));
    if (std::fabs(v) >= 1000.0)
        return QString::number(static_cast<qint64>(std::llround(v)));
    return QString::number(v, 'g', 3);
}

// A fraction as a percentage: "41%", "86%", small ones with a decimal ("2.5%", "0.0051%").
QString formatPercent(double fraction) {
    const double p = fraction * 100.0;
    if (std::fabs(p) >= 10.0 || std::fabs(p - std::round(p)) < 1e-9)
        return QString::number(static_cast<qint64>(std::llround(p))) + QLatin1Char('%');
    if (std::fabs(p) >= 1.0)
        return QString::number(p, 'f', 1) + QLatin1Char('%');
    return QString::number(p, 'g', 2) + QLatin1Char('%');
}

QString render(const QString& text, const Facts& facts, const Labels& labels) {
    QString out;
    qsizetype last = 0;
    auto it = placeholder().globalMatch(text);
    while (it.hasNext()) {
        const auto m = it.next();
        out += text.mid(last, m.capturedStart() - last);
        const std::string name = m.captured(1).toStdString();
        if (const auto fact = facts.find(name); fact != facts.end())
            out += m.captured(2).isEmpty() ? formatNumber(fact->second) : formatPercent(fact->second);
        else if (const auto label = labels.find(name); label != labels.end() && m.captured(2).isEmpty())
            out += label->second;
        else
            out += QStringLiteral("?");
        last = m.capturedEnd();
    }
    out += text.mid(last);
    return out;
}

// Reads the rules, keeping the path of the entry being read so that every error names it
// ("rules[3] (register-spills): when: ...").
class Reader : public util::JsonReader {
public:
    explicit Reader(QString origin) : JsonReader(std::move(origin), QStringLiteral(": ")) {}

    std::optional<spec::Error> templateFacts(const QString& text, const QString& path, const QString& key) const {
        auto it = placeholder().globalMatch(text);
        while (it.hasNext()) {
            const auto m = it.next();
            const QString name = m.captured(1);
            if (knownLabels().count(name.toStdString())) {
                if (!m.captured(2).isEmpty())
                    return error(path, QStringLiteral("%1: {%2%} makes a percentage of a word").arg(key, name));
                continue;
            }
            if (!knownFacts().count(name.toStdString()))
                return error(path, QStringLiteral("%1: unknown fact \"%2\" in {%2}").arg(key, name));
        }
        return std::nullopt;
    }

    std::optional<spec::Error> rule(const QJsonValue& v, qsizetype index, Rule* out) const {
        QString path = QStringLiteral("rules[%1]").arg(index);
        if (!v.isObject())
            return error(path, QStringLiteral("expected an object with \"id\", \"kind\", \"severity\", \"when\" and "
                                              "\"message\""));
        const QJsonObject o = v.toObject();
        // The id first, so that every later error names the rule.
        if (auto e = string(o, path, QStringLiteral("id"), true, &out->id))
            return e;
        path += QStringLiteral(" (%1)").arg(out->id);
        if (auto e = checkKeys(o, path,
                               {QStringLiteral("id"), QStringLiteral("kind"), QStringLiteral("severity"),
                                QStringLiteral("when"), QStringLiteral("message"), QStringLiteral("evidence"),
                                QStringLiteral("direction")}))
            return e;
        QString when;
        if (auto e = string(o, path, QStringLiteral("kind"), true, &out->kind))
            return e;
        if (auto e = string(o, path, QStringLiteral("severity"), true, &out->severity))
            return e;
        if (auto e = string(o, path, QStringLiteral("when"), true, &when))
            return e;
        if (auto e = string(o, path, QStringLiteral("message"), true, &out->message))
            return e;
        if (auto e = string(o, path, QStringLiteral("direction"), false, &out->direction))
            return e;
        if (!knownKinds().contains(out->kind))
            return error(path, QStringLiteral("kind: unknown kind \"%1\" (expected %2)")
                                   .arg(out->kind, knownKinds().join(QStringLiteral(", "))));
        if (!knownSeverities().contains(out->severity))
            return error(path, QStringLiteral("severity: unknown severity \"%1\" (expected %2)")
                                   .arg(out->severity, knownSeverities().join(QStringLiteral(", "))));

        out->when = when.toStdString();
        for (const std::string& name : variablesOf(out->when)) {
            if (isMuparserConstant(name))
                continue;
            if (!knownFacts().count(name))
                return error(
                    path, QStringLiteral("when: unknown fact \"%1\" in '%2'").arg(QString::fromStdString(name), when));
            out->needs.push_back(name);
        }
        spec::Variables all;
        for (const std::string& name : knownFacts())
            all[name] = 1.0;
        if (auto st = spec::Expression::check(out->when, all); !st)
            return error(path, QStringLiteral("when: %1").arg(QString::fromStdString(st.error())));

        if (auto e = templateFacts(out->message, path, QStringLiteral("message")))
            return e;
        if (auto e = templateFacts(out->direction, path, QStringLiteral("direction")))
            return e;
        const QJsonValue evidence = o.value(QLatin1String("evidence"));
        if (!evidence.isUndefined()) {
            if (!evidence.isArray())
                return error(path, QStringLiteral("evidence: expected an array of fact names"));
            const QJsonArray list = evidence.toArray();
            for (qsizetype i = 0; i < list.size(); ++i) {
                const QString name = list.at(i).toString();
                if (!list.at(i).isString() || !knownFacts().count(name.toStdString()))
                    return error(path, QStringLiteral("evidence[%1]: unknown fact \"%2\"")
                                           .arg(i)
                                           .arg(list.at(i).isString() ? name : QStringLiteral("(not a string)")));
                out->evidence << name;
            }
        }
        return std::nullopt;
    }
};

spec::Expected<QJsonObject> readJsonFile(const QString& path) {
    return util::JsonReader::readObjectFile(path, QStringLiteral("the diagnosis rules"),
                                            QStringLiteral("a JSON object with \"version\" and \"rules\""));
}

void setFlag(Facts& facts, const char* name, bool value) {
    facts[name] = value ? 1.0 : 0.0;
}

void maxInto(Facts& facts, const std::string& name, double value) {
    auto [it, inserted] = facts.emplace(name, value);
    if (!inserted)
        it->second = std::max(it->second, value);
}

// The evaluated dimensions of an output, or nothing when a shape does not evaluate.
std::optional<std::vector<std::int64_t>> dimsOf(const spec::TensorSpec& t, const spec::TaskSpec& task,
                                                const spec::Sizes& sizes) {
    const spec::Variables vars = task.variables(sizes);
    std::vector<std::int64_t> dims;
    for (const std::string& d : t.shape) {
        auto n = spec::Expression::evaluateInteger(d, vars);
        if (!n || *n <= 0)
            return std::nullopt;
        dims.push_back(*n);
    }
    return dims;
}

} // namespace

Facts limitingResources(const protocol::EvaluateResult& result) {
    // Resources come per program ("registers") or per kernel ("row_max.registers"); the worst
    // kernel is the one that limits.
    static const std::vector<std::string> resourceFacts{"registers", "shared_bytes", "local_bytes", "occupancy"};
    Facts facts;
    for (const auto& c : result.compile) {
        if (c.role != "candidate")
            continue;
        for (const auto& [key, value] : c.resources) {
            const auto dot = key.rfind('.');
            const std::string fact = dot == std::string::npos ? key : key.substr(dot + 1);
            if (std::find(resourceFacts.begin(), resourceFacts.end(), fact) == resourceFacts.end())
                continue;
            // Occupancy limits from below: the kernel with the lowest one is the bottleneck.
            if (fact == "occupancy") {
                auto [it, inserted] = facts.emplace(fact, value);
                if (!inserted)
                    it->second = std::min(it->second, value);
            } else {
                maxInto(facts, fact, value);
            }
        }
    }
    return facts;
}

Facts factsOf(const protocol::EvaluateResult& result, const spec::TaskSpec& task, const spec::Sizes& sizes,
              const std::optional<Roofline>& roofline) {
    using protocol::Status;
    Facts facts;
    setFlag(facts, "status_ok", result.status == Status::Ok);
    setFlag(facts, "status_compile_error", result.status == Status::CompileError);
    setFlag(facts, "status_runtime_error", result.status == Status::RuntimeError);
    setFlag(facts, "status_timeout", result.status == Status::Timeout);
    setFlag(facts, "status_incorrect", result.status == Status::Incorrect);
    setFlag(facts, "status_rejected", result.status == Status::Rejected);

    facts.merge(limitingResources(result));

    if (!result.outputs.empty()) {
        double checked = 0, mismatches = 0, unwritten = 0, nonFinite = 0, maxAbs = 0, maxRel = 0;
        for (const auto& o : result.outputs) {
            checked += static_cast<double>(o.checked);
            mismatches += static_cast<double>(o.mismatches);
            unwritten += static_cast<double>(o.unwritten);
            nonFinite += static_cast<double>(o.nonFinite);
            maxAbs = std::max(maxAbs, o.maxAbsError);
            maxRel = std::max(maxRel, o.maxRelError);
        }
        facts["checked"] = checked;
        facts["mismatches"] = mismatches;
        facts["unwritten"] = unwritten;
        facts["non_finite"] = nonFinite;
        facts["max_abs_error"] = maxAbs;
        facts["max_rel_error"] = maxRel;
        if (checked > 0) {
            facts["unwritten_fraction"] = unwritten / checked;
            facts["mismatch_fraction"] = mismatches / checked;
        }
        const auto first = std::find_if(result.outputs.begin(), result.outputs.end(),
                                        [](const protocol::OutputCheck& o) { return o.firstMismatch.has_value(); });
        if (first != result.outputs.end()) {
            facts["first_got"] = first->firstGot;
            facts["first_expected"] = first->firstExpected;
            std::uint64_t index = *first->firstMismatch;
            const spec::TensorSpec* spec = task.findOutput(first->name);
            const auto dims = spec ? dimsOf(*spec, task, sizes) : std::nullopt;
            if (dims) {
                std::uint64_t elements = 1;
                for (std::int64_t d : *dims)
                    elements *= static_cast<std::uint64_t>(d);
                index %= elements; // an index past one run's output counts over the runs
                // A 1-D output is one row; a higher one has rows along its first dimension and
                // columns along its last.
                const std::uint64_t rows = dims->size() >= 2 ? static_cast<std::uint64_t>(dims->front()) : 1;
                const std::uint64_t cols = dims->empty() ? 1 : static_cast<std::uint64_t>(dims->back());
                const std::uint64_t perRow = elements / rows;
                facts["rows"] = static_cast<double>(rows);
                facts["cols"] = static_cast<double>(cols);
                const std::uint64_t row = index / perRow; // a whole row number
                facts["first_mismatch_row"] = static_cast<double>(row);
                facts["first_mismatch_col"] = static_cast<double>(index % cols);
            }
            facts["first_mismatch_index"] = static_cast<double>(index);
        }
    }

    static const std::vector<std::pair<std::string, const char*>> checkFacts{
        {"inputs_unchanged", "inputs_changed"},
        {"depends_on_inputs", "constant_output"},
        {"timed_runs_verified", "timed_runs_failed"},
        {"no_side_effects", "side_effects"},
        {"fresh_inputs_speed", "faster_on_repeats"}};
    for (const auto& c : result.checks)
        for (const auto& [check, fact] : checkFacts)
            if (c.name == check)
                setFlag(facts, fact, !c.passed);

    if (result.candidateTiming && result.candidateTiming->count > 0) {
        facts["median_us"] = result.candidateTiming->medianUs;
        facts["spread"] = result.candidateTiming->spread;
    }
    if (result.baselineTiming && result.baselineTiming->count > 0)
        facts["baseline_us"] = result.baselineTiming->medianUs;
    if (result.speedup)
        facts["speedup"] = *result.speedup;

    if (roofline) {
        const Roofline& r = *roofline;
        if (r.bytes > 0.0)
            facts["intensity"] = r.intensity;
        if (r.seconds > 0.0) {
            facts["achieved_gb_per_s"] = r.achievedBytes / 1e9;
            facts["achieved_gflop_per_s"] = r.achievedFlops / 1e9;
        }
        // Without measured ceilings the fractions are meaningless zeros: leave them unknown.
        if (r.peakBytes > 0.0) {
            facts["peak_gb_per_s"] = r.peakBytes / 1e9;
            facts["memory_fraction"] = r.memoryFraction;
        }
        if (r.peakFlops > 0.0) {
            facts["peak_gflop_per_s"] = r.peakFlops / 1e9;
            facts["compute_fraction"] = r.computeFraction;
            facts["split_tf32_fraction"] = r.splitTf32Fraction;
        }
        if (r.boundSeconds > 0.0)
            facts["fraction_of_bound"] = r.fractionOfBound;
        if (!r.bound.isEmpty()) {
            setFlag(facts, "bound_memory", r.bound == QLatin1String("memory"));
            setFlag(facts, "bound_compute", r.bound == QLatin1String("compute"));
            setFlag(facts, "bound_latency", r.bound == QLatin1String("latency"));
        }
    }

    if (result.profile && result.profile->status == "ok")
        for (const char* name : {"achieved_occupancy", "sm_throughput", "dram_throughput"})
            if (auto it = result.profile->metrics.find(name); it != result.profile->metrics.end())
                facts[name] = it->second;
    return facts;
}

Diagnosis::Diagnosis() = default;
Diagnosis::~Diagnosis() = default;
Diagnosis::Diagnosis(const Diagnosis&) = default;
Diagnosis& Diagnosis::operator=(const Diagnosis&) = default;

spec::Expected<Diagnosis> Diagnosis::builtIn() {
    const QString relative = QStringLiteral("diagnose/rules.json");
    const QString path = util::ResourceLocator::find(relative);
    if (path.isEmpty())
        return spec::fail(util::ResourceLocator::notFound(relative, QStringLiteral("diagnosis rules")).toStdString());
    QStringList files{path};
    const QString user = util::ResourceLocator::userDir() + QLatin1Char('/') + relative;
    if (!util::ResourceLocator::userDir().isEmpty() && QFileInfo::exists(user))
        files << user;
    return load(files);
}

spec::Expected<Diagnosis> Diagnosis::load(const QStringList& files) {
    Diagnosis merged;
    for (const QString& path : files) {
        auto json = readJsonFile(path);
        if (!json)
            return spec::Error{json.error()};
        auto one = fromJson(*json, path);
        if (!one)
            return one;
        // A later file's rule replaces an earlier one with the same id, in its place.
        for (Rule& rule : one->m_rules) {
            auto same = std::find_if(merged.m_rules.begin(), merged.m_rules.end(),
                                     [&](const Rule& r) { return r.id == rule.id; });
            if (same != merged.m_rules.end())
                *same = std::move(rule);
            else
                merged.m_rules.push_back(std::move(rule));
        }
    }
    return merged;
}

spec::Expected<Diagnosis> Diagnosis::fromJson(const QJsonObject& json, const QString& origin) {
    const Reader reader(origin);
    if (auto e = reader.checkKeys(json, {}, {QStringLiteral("version"), QStringLiteral("rules")}))
        return *e;
    const QJsonValue version = json.value(QLatin1String("version"));
    if (version.isUndefined())
        return reader.error({}, QStringLiteral("missing \"version\" (this kforge reads version %1)").arg(kVersion));
    if (!version.isDouble() || version.toDouble() != kVersion)
        return reader.error(QStringLiteral("version"),
                            QStringLiteral("unsupported version %1 (this kforge reads version %2)")
                                .arg(version.toVariant().toString())
                                .arg(kVersion));
    const QJsonValue rules = json.value(QLatin1String("rules"));
    if (rules.isUndefined())
        return reader.error({}, QStringLiteral("missing \"rules\""));
    if (!rules.isArray())
        return reader.error(QStringLiteral("rules"), QStringLiteral("expected an array"));

    Diagnosis diagnosis;
    const QJsonArray list = rules.toArray();
    for (qsizetype i = 0; i < list.size(); ++i) {
        Rule rule;
        if (auto e = reader.rule(list.at(i), i, &rule))
            return *e;
        const bool duplicate = std::any_of(diagnosis.m_rules.begin(), diagnosis.m_rules.end(),
                                           [&](const Rule& r) { return r.id == rule.id; });
        if (duplicate)
            return reader.error(QStringLiteral("rules[%1] (%2)").arg(i).arg(rule.id),
                                QStringLiteral("duplicate id \"%1\"").arg(rule.id));
        diagnosis.m_rules.push_back(std::move(rule));
    }
    return diagnosis;
}

QStringList Diagnosis::ruleIds() const {
    QStringList ids;
    for (const Rule& r : m_rules)
        ids << r.id;
    return ids;
}

Findings Diagnosis::apply(const Facts& facts, const Labels& labels) const {
    Findings findings;
    for (const Rule& rule : m_rules) {
        const bool known = std::all_of(rule.needs.begin(), rule.needs.end(),
                                       [&](const std::string& name) { return facts.count(name) > 0; });
        if (!known)
            continue;
        const auto value = spec::Expression::evaluate(rule.when, facts);
        if (!value || *value == 0.0)
            continue; // a condition that does not evaluate (0 / 0) does not hold
        Finding f;
        f.rule = rule.id;
        f.kind = rule.kind;
        f.severity = rule.severity;
        f.message = render(rule.message, facts, labels);
        f.direction = render(rule.direction, facts, labels);
        QStringList evidence;
        for (const QString& name : rule.evidence)
            if (auto it = facts.find(name.toStdString()); it != facts.end())
                evidence << name + QStringLiteral(" = ") + formatNumber(it->second);
        f.evidence = evidence.join(QStringLiteral(", "));
        findings << f;
    }
    std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
        return severityRank(a.severity) < severityRank(b.severity);
    });
    return findings;
}

Labels labelsOf(const std::optional<Roofline>& roofline) {
    Labels labels;
    if (roofline && roofline->peakFlops > 0.0 && !roofline->peakName.isEmpty())
        labels["peak"] = peakTitle(roofline->peakName);
    return labels;
}

Findings Diagnosis::diagnose(const protocol::EvaluateResult& result, const spec::TaskSpec& task,
                             const spec::Sizes& sizes, const std::optional<Roofline>& roofline) const {
    Findings findings;
    for (const auto& d : result.diagnostics) {
        if (d.line <= 0 || d.role != "candidate")
            continue;
        Finding f;
        f.rule = QStringLiteral("worker-") + QString::fromStdString(d.kind);
        f.kind = QString::fromStdString(d.kind);
        f.severity = QString::fromStdString(d.severity);
        f.message = QString::fromStdString(d.message);
        f.line = d.line;
        findings << f;
    }
    findings << apply(factsOf(result, task, sizes, roofline), labelsOf(roofline));
    return findings;
}

} // namespace kforge::diagnose
