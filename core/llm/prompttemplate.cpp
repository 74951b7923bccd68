#include "llm/prompttemplate.h"

#include "util/resourcelocator.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>

#include <optional>
#include <vector>

namespace kforge::llm {

namespace {

struct Node {
    enum class Kind { Text, Variable, Section, Inverted, Partial };
    Kind kind = Kind::Text;
    QString text; // the text, or the variable / section / partial name
    int line = 0;
    std::vector<Node> children; // sections only
};

struct Template {
    QString file;
    std::vector<Node> nodes;
};

// Deep enough for any sensible layout; a partial that includes itself stops here.
constexpr int kMaxPartialDepth = 16;

spec::Error errorAt(const QString& file, int line, const QString& what) {
    return spec::fail(QStringLiteral("%1:%2: %3").arg(file).arg(line).arg(what).toStdString());
}

bool isNameChar(QChar c, bool first) {
    return c == QLatin1Char('_') || (c.isLetter() && c.unicode() < 128)
           || (!first && ((c.isDigit() && c.unicode() < 128) || c == QLatin1Char('.') || c == QLatin1Char('-')));
}

bool isValidName(const QString& name) {
    if (name.isEmpty())
        return false;
    for (qsizetype i = 0; i < name.size(); ++i)
        if (!isNameChar(name[i], i == 0))
            return false;
    return true;
}

bool isBlank(const QString& text, qsizetype from, qsizetype to) {
    for (qsizetype i = from; i < to; ++i)
        if (text[i] != QLatin1Char(' ') && text[i] != QLatin1Char('\t') && text[i] != QLatin1Char('\r'))
            return false;
    return true;
}

struct OpenSection {
    Node node;
    int line = 0;
    char sigil = '#';
};

spec::Expected<Template> parseTemplate(const QString& file, const QString& text) {
    Template t;
    t.file = file;
    // The innermost open section collects the nodes; the bottom entry is the template itself.
    std::vector<OpenSection> stack(1);
    auto emitText = [&](qsizetype from, qsizetype to, int line) {
        if (to <= from)
            return;
        Node n;
        n.kind = Node::Kind::Text;
        n.text = text.mid(from, to - from);
        n.line = line;
        stack.back().node.children.push_back(std::move(n));
    };

    qsizetype pos = 0;
    int line = 1; // line of text[pos]
    auto advanceLines = [&](qsizetype from, qsizetype to) {
        for (qsizetype i = from; i < to; ++i)
            if (text[i] == QLatin1Char('\n'))
                ++line;
    };
    while (pos < text.size()) {
        const qsizetype open = text.indexOf(QLatin1String("{{"), pos);
        if (open < 0) {
            emitText(pos, text.size(), line);
            break;
        }
        const int textLine = line;
        int tagLine = line;
        for (qsizetype i = pos; i < open; ++i)
            if (text[i] == QLatin1Char('\n'))
                ++tagLine;
        const qsizetype close = text.indexOf(QLatin1String("}}"), open + 2);
        if (close < 0)
            return errorAt(file, tagLine, QStringLiteral("'{{' is not closed by '}}'"));
        const qsizetype end = close + 2;
        const QString inner = text.mid(open + 2, close - open - 2).trimmed();

        char sigil = 0;
        QString name = inner;
        if (!inner.isEmpty() && QStringLiteral("#^/>!").contains(inner[0])) {
            sigil = static_cast<char>(inner[0].unicode());
            name = inner.mid(1).trimmed();
        }
        if (sigil != '!' && !isValidName(name))
            return errorAt(file, tagLine,
                           QStringLiteral("cannot read the tag {{%1}}: expected {{name}}, {{#name}}, {{^name}}, "
                                          "{{/name}}, {{>partial}} or {{! comment}}")
                               .arg(inner));

        // A tag other than a variable alone on its line takes the whole line with it.
        const qsizetype lineStart = open == 0 ? 0 : text.lastIndexOf(QLatin1Char('\n'), open - 1) + 1;
        qsizetype lineEnd = text.indexOf(QLatin1Char('\n'), end);
        if (lineEnd < 0)
            lineEnd = text.size();
        const bool standalone =
            sigil != 0 && lineStart >= pos && isBlank(text, lineStart, open) && isBlank(text, end, lineEnd);
        qsizetype next = end;
        if (standalone) {
            emitText(pos, lineStart, textLine);
            next = lineEnd < text.size() ? lineEnd + 1 : lineEnd;
        } else {
            emitText(pos, open, textLine);
        }

        switch (sigil) {
        case 0:
        case '>': {
            Node n;
            n.kind = sigil == '>' ? Node::Kind::Partial : Node::Kind::Variable;
            n.text = name;
            n.line = tagLine;
            stack.back().node.children.push_back(std::move(n));
            break;
        }
        case '#':
        case '^': {
            OpenSection s;
            s.node.kind = sigil == '#' ? Node::Kind::Section : Node::Kind::Inverted;
            s.node.text = name;
            s.node.line = tagLine;
            s.line = tagLine;
            s.sigil = sigil;
            stack.push_back(std::move(s));
            break;
        }
        case '/': {
            if (stack.size() < 2)
                return errorAt(file, tagLine, QStringLiteral("{{/%1}} closes no open section").arg(name));
            if (stack.back().node.text != name)
                return errorAt(file, tagLine,
                               QStringLiteral("{{/%1}} does not close {{%2%3}} opened at line %4")
                                   .arg(name, QString(QLatin1Char(stack.back().sigil)), stack.back().node.text)
                                   .arg(stack.back().line));
            Node done = std::move(stack.back().node);
            stack.pop_back();
            stack.back().node.children.push_back(std::move(done));
            break;
        }
        default: // '!': a comment
            break;
        }
        advanceLines(pos, next);
        pos = next;
    }
    if (stack.size() > 1)
        return errorAt(file, stack.back().line,
                       QStringLiteral("section {{%1%2}} is not closed (expected {{/%2}})")
                           .arg(QString(QLatin1Char(stack.back().sigil)), stack.back().node.text));
    t.nodes = std::move(stack.front().node.children);
    return t;
}

std::optional<spec::Error> checkPartials(const Template& t, const std::vector<Node>& nodes,
                                         const std::map<QString, Template>& all, const QString& where) {
    for (const Node& n : nodes) {
        if (n.kind == Node::Kind::Partial && !all.count(n.text))
            return errorAt(t.file, n.line,
                           QStringLiteral("partial {{>%1}} not found: there is no %1.md in %2").arg(n.text, where));
        if (!n.children.empty())
            if (auto e = checkPartials(t, n.children, all, where))
                return e;
    }
    return std::nullopt;
}

} // namespace

struct PromptTemplates::Data {
    std::map<QString, Template> templates;
};

namespace {

using Values = std::map<QString, QString>;

std::optional<spec::Error> renderNodes(const std::map<QString, Template>& all, const Template& t,
                                       const std::vector<Node>& nodes, const Values& values, int depth, QString& out) {
    for (const Node& n : nodes) {
        switch (n.kind) {
        case Node::Kind::Text:
            out += n.text;
            break;
        case Node::Kind::Variable:
        case Node::Kind::Section:
        case Node::Kind::Inverted: {
            const auto it = values.find(n.text);
            if (it == values.end()) {
                QStringList known;
                for (const auto& [k, v] : values)
                    known << k;
                const QString tag =
                    n.kind == Node::Kind::Variable
                        ? n.text
                        : (n.kind == Node::Kind::Section ? QStringLiteral("#") : QStringLiteral("^")) + n.text;
                return errorAt(
                    t.file, n.line,
                    QStringLiteral("unknown variable {{%1}} (known: %2)")
                        .arg(tag, known.isEmpty() ? QStringLiteral("none") : known.join(QStringLiteral(", "))));
            }
            if (n.kind == Node::Kind::Variable) {
                out += it->second;
                break;
            }
            const bool blank = it->second.trimmed().isEmpty();
            if (blank == (n.kind == Node::Kind::Inverted))
                if (auto e = renderNodes(all, t, n.children, values, depth, out))
                    return e;
            break;
        }
        case Node::Kind::Partial: {
            const auto it = all.find(n.text);
            if (it == all.end())
                return errorAt(t.file, n.line, QStringLiteral("partial {{>%1}} not found").arg(n.text));
            if (depth >= kMaxPartialDepth)
                return errorAt(
                    t.file, n.line,
                    QStringLiteral("partials nest more than %1 deep at {{>%2}}: does a partial include itself?")
                        .arg(kMaxPartialDepth)
                        .arg(n.text));
            if (auto e = renderNodes(all, it->second, it->second.nodes, values, depth + 1, out))
                return e;
            break;
        }
        }
    }
    return std::nullopt;
}

} // namespace

PromptTemplates::PromptTemplates() : m_data(std::make_shared<Data>()) {}
PromptTemplates::~PromptTemplates() = default;
PromptTemplates::PromptTemplates(const PromptTemplates&) = default;
PromptTemplates& PromptTemplates::operator=(const PromptTemplates&) = default;
PromptTemplates::PromptTemplates(PromptTemplates&&) noexcept = default;
PromptTemplates& PromptTemplates::operator=(PromptTemplates&&) noexcept = default;

spec::Expected<PromptTemplates> PromptTemplates::load(const QString& dir) {
    if (!QFileInfo(dir).isDir())
        return spec::fail(QStringLiteral("the prompt template folder %1 does not exist").arg(dir).toStdString());
    return load(QStringList{dir});
}

spec::Expected<PromptTemplates> PromptTemplates::load(const QStringList& dirs) {
    auto data = std::make_shared<Data>();
    QStringList used;
    for (const QString& dir : dirs) {
        if (dir.isEmpty() || !QFileInfo(dir).isDir())
            continue;
        used << QDir::cleanPath(dir);
        const QDir d(dir);
        for (const QString& entry : d.entryList({QStringLiteral("*.md")}, QDir::Files | QDir::Readable, QDir::Name)) {
            const QString path = d.filePath(entry);
            QFile file(path);
            if (!file.open(QIODevice::ReadOnly))
                return spec::fail(QStringLiteral("%1: cannot read the prompt template: %2")
                                      .arg(path, file.errorString())
                                      .toStdString());
            auto parsed = parseTemplate(path, QString::fromUtf8(file.readAll()));
            if (!parsed)
                return spec::Error{parsed.error()};
            data->templates[entry.chopped(3)] = std::move(*parsed);
        }
    }
    const QString where = used.isEmpty() ? dirs.join(QStringLiteral(", ")) : used.join(QStringLiteral(" or "));
    if (data->templates.empty())
        return spec::fail(QStringLiteral("no prompt templates (*.md) in %1")
                              .arg(where.isEmpty() ? QStringLiteral("no folder") : where)
                              .toStdString());
    // Checked once here, so that a template nobody renders in a test still fails early.
    for (const auto& [name, t] : data->templates)
        if (auto e = checkPartials(t, t.nodes, data->templates, where))
            return *e;
    PromptTemplates result;
    result.m_data = std::move(data);
    return result;
}

QString PromptTemplates::userDir() {
    // The user's resources mirror the built-in layout (resources/README.md).
    const QString data = util::ResourceLocator::userDir();
    return data.isEmpty() ? QString() : data + QStringLiteral("/llm/prompts");
}

spec::Expected<PromptTemplates> PromptTemplates::builtIn() {
    const QString relative = QStringLiteral("llm/prompts");
    const QString path = util::ResourceLocator::find(relative);
    if (path.isEmpty())
        return spec::fail(util::ResourceLocator::notFound(relative, QStringLiteral("prompt templates")).toStdString());
    return load(QStringList{path, userDir()});
}

spec::Expected<QString> PromptTemplates::render(const QString& name, const std::map<QString, QString>& values) const {
    const auto it = m_data->templates.find(name);
    if (it == m_data->templates.end())
        return spec::fail(QStringLiteral("no prompt template named \"%1\" (known: %2)")
                              .arg(name, names().join(QStringLiteral(", ")))
                              .toStdString());
    QString out;
    if (auto e = renderNodes(m_data->templates, it->second, it->second.nodes, values, 0, out))
        return *e;
    return out;
}

spec::Expected<QString> PromptTemplates::renderText(const QString& origin, const QString& text,
                                                    const std::map<QString, QString>& values) const {
    auto parsed = parseTemplate(origin, text);
    if (!parsed)
        return spec::Error{parsed.error()};
    QString out;
    if (auto e = renderNodes(m_data->templates, *parsed, parsed->nodes, values, 0, out))
        return *e;
    return out;
}

bool PromptTemplates::contains(const QString& name) const {
    return m_data->templates.count(name) > 0;
}

QStringList PromptTemplates::names() const {
    QStringList result;
    for (const auto& [name, t] : m_data->templates)
        result << name;
    return result;
}

QString PromptTemplates::fileOf(const QString& name) const {
    const auto it = m_data->templates.find(name);
    return it == m_data->templates.end() ? QString() : it->second.file;
}

} // namespace kforge::llm
