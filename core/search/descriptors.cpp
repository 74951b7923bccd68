#include "search/descriptors.h"

#include "util/jsonreader.h"

#include "util/resourcelocator.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonParseError>
#include <QJsonValue>

#include <optional>
#include <regex>
#include <set>
#include <utility>

namespace kforge::search {

namespace {

// A bound on one number the kernel carries: an effective parameter value or a compile fact.
struct Condition {
    enum class Source { Param, Resource };
    Source source = Source::Param;
    std::string name;
    std::optional<double> min;
    std::optional<double> max;
};

} // namespace

// One way to reach a level. Every part that is present must hold: the dialect, one of `any`,
// all of `all`, none of `none`, and every condition. The regular expressions are compiled once,
// when the file is read.
struct DescriptorRule {
    QString why;
    std::optional<spec::Dialect> dialect; // nullopt: either
    std::vector<QRegularExpression> any;
    std::vector<QRegularExpression> all;
    std::vector<QRegularExpression> none;
    std::vector<Condition> conditions;
};

namespace {

constexpr int kVersion = 1;

// Reads the JSON into a space, keeping the path of the entry being read so that every error
// names it ("dimensions[1].levels[2].rules[0].patterns[3]").
class Reader : public util::JsonReader {
public:
    explicit Reader(QString origin) : JsonReader(std::move(origin), QStringLiteral(".")) {}

    std::optional<spec::Error> array(const QJsonObject& o, const QString& path, const QString& key,
                                     QJsonArray* out) const {
        const QJsonValue v = o.value(key);
        if (v.isUndefined())
            return std::nullopt;
        if (!v.isArray())
            return error(keyPath(path, key), QStringLiteral("expected an array"));
        *out = v.toArray();
        return std::nullopt;
    }

    std::optional<spec::Error> patterns(const QJsonObject& o, const QString& path, const QString& key,
                                        std::vector<QRegularExpression>* out) const {
        QJsonArray list;
        if (auto e = array(o, path, key, &list))
            return e;
        for (qsizetype i = 0; i < list.size(); ++i) {
            const QString at = QStringLiteral("%1.%2[%3]").arg(path, key).arg(i);
            if (!list.at(i).isString() || list.at(i).toString().isEmpty())
                return error(at, QStringLiteral("expected a non-empty string (a regular expression)"));
            // Multiline: an expert can anchor a pattern to the start of a line (declarations).
            QRegularExpression re(list.at(i).toString(), QRegularExpression::MultilineOption);
            if (!re.isValid())
                return error(at, QStringLiteral("invalid regular expression at offset %1: %2")
                                     .arg(re.patternErrorOffset())
                                     .arg(re.errorString()));
            re.optimize();
            out->push_back(std::move(re));
        }
        return std::nullopt;
    }

    std::optional<spec::Error> condition(const QJsonValue& v, const QString& path, Condition* out) const {
        if (!v.isObject())
            return error(path, QStringLiteral("expected an object such as {\"param\": \"VEC\", \"min\": 2}"));
        const QJsonObject o = v.toObject();
        if (auto e = checkKeys(
                o, path,
                {QStringLiteral("param"), QStringLiteral("resource"), QStringLiteral("min"), QStringLiteral("max")}))
            return e;
        const bool param = o.contains(QLatin1String("param"));
        if (param == o.contains(QLatin1String("resource")))
            return error(path, QStringLiteral("needs exactly one of \"param\" (a parameter name) and \"resource\" "
                                              "(a compile fact such as registers or shared_bytes)"));
        QString name;
        if (auto e = string(o, path, param ? QStringLiteral("param") : QStringLiteral("resource"), true, &name))
            return e;
        out->source = param ? Condition::Source::Param : Condition::Source::Resource;
        out->name = name.toStdString();
        for (const QString& key : {QStringLiteral("min"), QStringLiteral("max")}) {
            const QJsonValue bound = o.value(key);
            if (bound.isUndefined())
                continue;
            if (!bound.isDouble())
                return error(keyPath(path, key), QStringLiteral("expected a number"));
            (key == QLatin1String("min") ? out->min : out->max) = bound.toDouble();
        }
        if (!out->min && !out->max)
            return error(path, QStringLiteral("needs \"min\", \"max\" or both"));
        if (out->min && out->max && *out->min > *out->max)
            return error(path, QStringLiteral("\"min\" is larger than \"max\""));
        return std::nullopt;
    }

    std::optional<spec::Error> rule(const QJsonValue& v, const QString& path, DescriptorRule* out) const {
        if (!v.isObject())
            return error(path, QStringLiteral("expected an object"));
        const QJsonObject o = v.toObject();
        if (auto e = checkKeys(o, path,
                               {QStringLiteral("why"), QStringLiteral("dialect"), QStringLiteral("patterns"),
                                QStringLiteral("all"), QStringLiteral("none"), QStringLiteral("conditions")}))
            return e;
        if (auto e = string(o, path, QStringLiteral("why"), true, &out->why))
            return e;
        QString dialect = QStringLiteral("any");
        if (auto e = string(o, path, QStringLiteral("dialect"), false, &dialect))
            return e;
        if (dialect == QLatin1String("cuda"))
            out->dialect = spec::Dialect::Cuda;
        else if (dialect == QLatin1String("opencl"))
            out->dialect = spec::Dialect::OpenCL;
        else if (dialect != QLatin1String("any"))
            return error(keyPath(path, QStringLiteral("dialect")),
                         QStringLiteral("unknown dialect \"%1\" (expected cuda, opencl or any)").arg(dialect));
        if (auto e = patterns(o, path, QStringLiteral("patterns"), &out->any))
            return e;
        if (auto e = patterns(o, path, QStringLiteral("all"), &out->all))
            return e;
        if (auto e = patterns(o, path, QStringLiteral("none"), &out->none))
            return e;
        QJsonArray conditions;
        if (auto e = array(o, path, QStringLiteral("conditions"), &conditions))
            return e;
        for (qsizetype i = 0; i < conditions.size(); ++i) {
            Condition c;
            if (auto e = condition(conditions.at(i), QStringLiteral("%1.conditions[%2]").arg(path).arg(i), &c))
                return e;
            out->conditions.push_back(std::move(c));
        }
        // A rule that tests nothing would put every kernel on its level.
        if (out->any.empty() && out->all.empty() && out->none.empty() && out->conditions.empty())
            return error(path, QStringLiteral("the rule tests nothing: give \"patterns\", \"all\", \"none\" or "
                                              "\"conditions\""));
        return std::nullopt;
    }

    std::optional<spec::Error> dimension(const QJsonValue& v, const QString& path, Dimension* dim,
                                         std::vector<std::vector<DescriptorRule>>* rules) const {
        if (!v.isObject())
            return error(path, QStringLiteral("expected an object"));
        const QJsonObject o = v.toObject();
        if (auto e = checkKeys(o, path, {QStringLiteral("key"), QStringLiteral("title"), QStringLiteral("levels")}))
            return e;
        if (auto e = string(o, path, QStringLiteral("key"), true, &dim->key))
            return e;
        dim->title = dim->key;
        if (auto e = string(o, path, QStringLiteral("title"), false, &dim->title))
            return e;
        if (!o.contains(QLatin1String("levels")))
            return error(path, QStringLiteral("missing \"levels\""));
        QJsonArray levels;
        if (auto e = array(o, path, QStringLiteral("levels"), &levels))
            return e;
        if (levels.size() != kLevels)
            return error(keyPath(path, QStringLiteral("levels")),
                         QStringLiteral("expected %1 levels, found %2").arg(kLevels).arg(levels.size()));
        rules->assign(kLevels, {});
        for (int l = 0; l < kLevels; ++l) {
            const QString at = QStringLiteral("%1.levels[%2]").arg(path).arg(l);
            if (!levels.at(l).isObject())
                return error(at, QStringLiteral("expected an object"));
            const QJsonObject level = levels.at(l).toObject();
            if (auto e = checkKeys(level, at, {QStringLiteral("name"), QStringLiteral("rules")}))
                return e;
            QString name;
            if (auto e = string(level, at, QStringLiteral("name"), true, &name))
                return e;
            dim->levels << name;
            QJsonArray list;
            if (auto e = array(level, at, QStringLiteral("rules"), &list))
                return e;
            if (l == 0 && !list.isEmpty())
                return error(keyPath(at, QStringLiteral("rules")),
                             QStringLiteral("level 0 always matches, so it takes no rules"));
            if (l > 0 && list.isEmpty())
                return error(at, QStringLiteral("missing \"rules\": nothing could reach this level"));
            for (qsizetype r = 0; r < list.size(); ++r) {
                DescriptorRule rule;
                if (auto e = this->rule(list.at(r), QStringLiteral("%1.rules[%2]").arg(at).arg(r), &rule))
                    return e;
                (*rules)[static_cast<std::size_t>(l)].push_back(std::move(rule));
            }
        }
        return std::nullopt;
    }
};

// The text rules look at: comments and string literals blanked out (positions and lines kept),
// but the strings of inline asm statements put back, since PTX such as cp.async or mma.sync is
// code that the rules need to see.
QString codeText(const QString& source) {
    const std::string original = source.toStdString();
    std::string code = spec::stripComments(original);
    static const std::regex asmHead(R"(\b(?:asm|__asm__|__asm)\b(?:\s*(?:volatile|__volatile__|goto|inline)\b)*\s*\()");
    for (auto it = std::sregex_iterator(code.begin(), code.end(), asmHead); it != std::sregex_iterator(); ++it) {
        int depth = 0;
        bool inString = false;
        for (std::size_t i = static_cast<std::size_t>(it->position(0) + it->length(0)) - 1; i < code.size(); ++i) {
            // Quotes survive stripping and escaped ones do not, so they delimit the literals.
            if (code[i] == '"')
                inString = !inString;
            else if (inString)
                code[i] = original[i];
            else if (code[i] == '(')
                ++depth;
            else if (code[i] == ')' && --depth == 0)
                break;
        }
    }
    return QString::fromStdString(code);
}

int lineAt(const QString& text, qsizetype offset) {
    return static_cast<int>(QStringView(text).left(offset).count(QLatin1Char('\n'))) + 1;
}

QString describeMatch(const QString& text, const QRegularExpressionMatch& m) {
    QString shown = m.captured(0).simplified();
    if (shown.size() > 40)
        shown = shown.left(37) + QStringLiteral("...");
    return QStringLiteral("matched \"%1\" on line %2").arg(shown).arg(lineAt(text, m.capturedStart(0)));
}

// The value a condition reads, or nothing when the kernel does not have it.
std::optional<double> valueOf(const Condition& c, const KernelFacts& facts) {
    if (c.source == Condition::Source::Param) {
        const auto it = facts.params.find(c.name);
        if (it == facts.params.end())
            return std::nullopt;
        return static_cast<double>(it->second);
    }
    // Workers report facts per kernel ("<kernel>.registers") or for the program ("shared_bytes");
    // the most demanding kernel speaks for the file.
    std::optional<double> value;
    const std::string suffix = "." + c.name;
    for (const auto& [key, v] : facts.resources) {
        const bool hit =
            key == c.name
            || (key.size() > suffix.size() && key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0);
        if (hit && (!value || v > *value))
            value = v;
    }
    return value;
}

// Whether `rule` holds; `detail` gets what made it hold ("matched \"__shared__\" on line 12").
bool matches(const DescriptorRule& rule, const QString& text, const KernelFacts& facts, QStringList* detail) {
    if (rule.dialect && *rule.dialect != facts.dialect)
        return false;
    QStringList found;
    if (!rule.any.empty()) {
        bool hit = false;
        for (const auto& re : rule.any) {
            const auto m = re.match(text);
            if (m.hasMatch()) {
                found << describeMatch(text, m);
                hit = true;
                break;
            }
        }
        if (!hit)
            return false;
    }
    for (const auto& re : rule.all) {
        const auto m = re.match(text);
        if (!m.hasMatch())
            return false;
        found << describeMatch(text, m);
    }
    for (const auto& re : rule.none)
        if (re.match(text).hasMatch())
            return false;
    for (const auto& c : rule.conditions) {
        const auto value = valueOf(c, facts);
        if (!value || (c.min && *value < *c.min) || (c.max && *value > *c.max))
            return false;
        found << QStringLiteral("%1 = %2").arg(QString::fromStdString(c.name)).arg(*value);
    }
    if (detail)
        *detail = found;
    return true;
}

} // namespace

DescriptorSpace::DescriptorSpace() = default;
DescriptorSpace::~DescriptorSpace() = default;
DescriptorSpace::DescriptorSpace(const DescriptorSpace&) = default;
DescriptorSpace& DescriptorSpace::operator=(const DescriptorSpace&) = default;

spec::Expected<DescriptorSpace> DescriptorSpace::builtIn() {
    const QString relative = QStringLiteral("search/descriptors.json");
    const QString path = util::ResourceLocator::find(relative);
    if (path.isEmpty())
        return spec::fail(
            util::ResourceLocator::notFound(relative, QStringLiteral("behaviour descriptors")).toStdString());
    return load(path);
}

spec::Expected<DescriptorSpace> DescriptorSpace::load(const QString& path) {
    auto json = util::JsonReader::readObjectFile(path, QStringLiteral("the behaviour descriptors"),
                                                 QStringLiteral("a JSON object with \"version\" and \"dimensions\""));
    if (!json)
        return spec::fail(json.error());
    return fromJson(*json, path);
}

spec::Expected<DescriptorSpace> DescriptorSpace::fromJson(const QJsonObject& json, const QString& origin) {
    const Reader reader(origin);
    if (auto e = reader.checkKeys(json, {}, {QStringLiteral("version"), QStringLiteral("dimensions")}))
        return *e;
    const QJsonValue version = json.value(QLatin1String("version"));
    if (version.isUndefined())
        return reader.error({}, QStringLiteral("missing \"version\" (this kforge reads version %1)").arg(kVersion));
    if (!version.isDouble())
        return reader.error(QStringLiteral("version"), QStringLiteral("expected a number"));
    if (version.toDouble() != kVersion)
        return reader.error(QStringLiteral("version"),
                            QStringLiteral("unsupported version %1 (this kforge reads version %2)")
                                .arg(version.toDouble())
                                .arg(kVersion));
    const QJsonValue dims = json.value(QLatin1String("dimensions"));
    if (dims.isUndefined())
        return reader.error({}, QStringLiteral("missing \"dimensions\""));
    if (!dims.isArray())
        return reader.error(QStringLiteral("dimensions"), QStringLiteral("expected an array"));
    const QJsonArray list = dims.toArray();
    if (list.size() != model::kDimensions)
        return reader.error(
            QStringLiteral("dimensions"),
            QStringLiteral("expected %1 dimensions, found %2").arg(model::kDimensions).arg(list.size()));

    DescriptorSpace space;
    std::set<QString> keys;
    for (int d = 0; d < model::kDimensions; ++d) {
        const QString path = QStringLiteral("dimensions[%1]").arg(d);
        const auto i = static_cast<std::size_t>(d);
        if (auto e = reader.dimension(list.at(d), path, &space.m_dimensions[i], &space.m_rules[i]))
            return *e;
        if (!keys.insert(space.m_dimensions[i].key).second)
            return reader.error(path + QStringLiteral(".key"),
                                QStringLiteral("\"%1\" names another dimension too").arg(space.m_dimensions[i].key));
    }
    return space;
}

model::Cell DescriptorSpace::describe(const QString& source, const KernelFacts& facts, QStringList* reasons) const {
    model::Cell cell{};
    const QString text = codeText(source);
    for (std::size_t d = 0; d < static_cast<std::size_t>(model::kDimensions); ++d) {
        const auto& levels = m_rules[d];
        QString why;
        QStringList detail;
        // From the top: the highest level with a matching rule wins.
        for (std::size_t l = levels.size(); l-- > 1 && cell[d] == 0;) {
            for (const auto& rule : levels[l]) {
                if (matches(rule, text, facts, &detail)) {
                    cell[d] = static_cast<int>(l);
                    why = rule.why;
                    break;
                }
            }
        }
        if (!reasons)
            continue;
        const Dimension& dim = m_dimensions[d];
        const QString level = cell[d] < dim.levels.size() ? dim.levels.at(cell[d]) : QString::number(cell[d]);
        if (cell[d] == 0)
            *reasons << QStringLiteral("%1: %2 (no rule of a higher level matched)").arg(dim.key, level);
        else
            *reasons << QStringLiteral("%1: %2 (%3: %4)").arg(dim.key, level, why, detail.join(QStringLiteral(", ")));
    }
    return cell;
}

} // namespace kforge::search
