#include "propose/expertlibrary.h"

#include "sourcescan.h"
#include "util/resourcelocator.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHash>
#include <QRegularExpression>
#include <QSet>

#include <algorithm>
#include <utility>

namespace kforge::propose {

namespace {

// "path:line: message" (or "path: message" without a line), the form compilers use, so that
// editors and terminals can jump to the spot.
QString problem(const QString& file, int line, const QString& message) {
    if (line > 0)
        return QStringLiteral("%1:%2: %3").arg(file).arg(line).arg(message);
    return QStringLiteral("%1: %2").arg(file, message);
}

// Maps the kernel-file parser's "line N: message" onto the problem format.
QString kernelFileProblem(const QString& file, const std::string& error) {
    static const QRegularExpression lineError(QStringLiteral("^line (\\d+): (.*)$"),
                                              QRegularExpression::DotMatchesEverythingOption);
    const QString text = QString::fromStdString(error);
    const auto m = lineError.match(text);
    if (m.hasMatch())
        return problem(file, m.captured(1).toInt(), m.captured(2));
    return problem(file, 0, text);
}

struct Header {
    QString name;
    QStringList tasks;
    QString pattern;
};

// Reads the `// expert:` lines. They are ordinary comments to the kernel-file parser (it only
// looks at `kforge:`), so they may sit anywhere, but by convention they open the file.
spec::Expected<Header> parseHeader(const QString& source, const QString& file) {
    static const QRegularExpression headerLine(QStringLiteral("^\\s*//\\s*expert:(\\S*)\\s*(.*?)\\s*$"));
    static const QRegularExpression identifier(QStringLiteral("^[A-Za-z0-9_-]+$"));
    static const QRegularExpression spaces(QStringLiteral("\\s+"));
    Header h;
    QHash<QString, int> seenAt;
    const QStringList lines = source.split(QLatin1Char('\n'));
    for (int i = 0; i < lines.size(); ++i) {
        const auto m = headerLine.match(lines.at(i));
        if (!m.hasMatch())
            continue;
        const int line = i + 1;
        const QString key = m.captured(1);
        const QString value = m.captured(2);
        auto fail = [&](const QString& message) { return spec::Error{problem(file, line, message).toStdString()}; };
        if (key != QLatin1String("name") && key != QLatin1String("tasks") && key != QLatin1String("pattern"))
            return fail(QStringLiteral("unknown header line 'expert:%1' (known: name, tasks, pattern)").arg(key));
        if (seenAt.contains(key))
            return fail(QStringLiteral("expert:%1 is given twice (first on line %2)").arg(key).arg(seenAt.value(key)));
        seenAt.insert(key, line);
        if (value.isEmpty())
            return fail(QStringLiteral("expert:%1 has no value").arg(key));
        if (key == QLatin1String("name")) {
            if (!identifier.match(value).hasMatch())
                return fail(
                    QStringLiteral("expert:name '%1' is not a name (letters, digits, _ and - only)").arg(value));
            h.name = value;
        } else if (key == QLatin1String("tasks")) {
            h.tasks = value.split(spaces, Qt::SkipEmptyParts);
            for (const QString& t : std::as_const(h.tasks))
                if (!identifier.match(t).hasMatch())
                    return fail(QStringLiteral("expert:tasks: '%1' is not a task name").arg(t));
            h.tasks.removeDuplicates();
        } else {
            h.pattern = value;
        }
    }
    for (const char* key : {"name", "tasks", "pattern"})
        if (!seenAt.contains(QLatin1String(key)))
            return spec::Error{problem(file, 1,
                                       QStringLiteral("missing header line '// expert:%1 ...' (an expert file starts "
                                                      "with // expert:name, // expert:tasks and // expert:pattern)")
                                           .arg(QLatin1String(key)))
                                   .toStdString()};
    return h;
}

spec::Expected<Expert> readExpert(const QString& path, const QString& family) {
    const model::Backend backend = path.endsWith(QLatin1String(".cu")) ? model::Backend::Cuda : model::Backend::OpenCL;
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return spec::Error{problem(path, 0, QStringLiteral("cannot read: %1").arg(f.errorString())).toStdString()};
    const QByteArray bytes = f.readAll();
    if (f.error() != QFileDevice::NoError)
        return spec::Error{problem(path, 0, QStringLiteral("cannot read: %1").arg(f.errorString())).toStdString()};
    const std::string raw = bytes.toStdString();
    if (const auto bad = spec::findNotUtf8(raw))
        return spec::Error{problem(path, bad->line,
                                   QString::fromStdString(bad->what) + QStringLiteral("; expert files are UTF-8 text"))
                               .toStdString()};
    const QString source = QString::fromStdString(raw);

    auto header = parseHeader(source, path);
    if (!header)
        return spec::Error{header.error()};
    auto kf = spec::KernelFile::parse(source.toStdString(), backend);
    if (!kf)
        return spec::Error{kernelFileProblem(path, kf.error()).toStdString()};

    Expert e;
    e.name = header->name;
    e.family = family;
    e.tasks = header->tasks;
    e.pattern = header->pattern;
    e.backend = backend;
    e.file = path;
    e.source = source;
    return e;
}

bool orderedBefore(const Expert& a, const Expert& b) {
    if (a.family != b.family)
        return a.family < b.family;
    if (a.name != b.name)
        return a.name < b.name;
    return model::backendName(a.backend) < model::backendName(b.backend);
}

} // namespace

ExpertLibrary ExpertLibrary::load(const QStringList& roots) {
    ExpertLibrary lib;
    // (family, name, backend) -> index into m_experts. A later root replaces an earlier root's
    // expert of the same name, so users can override a built-in one; within one root two files
    // claiming one name are a mistake.
    QHash<QString, qsizetype> byKey;
    for (const QString& root : roots) {
        const QDir rootDir(root);
        if (!rootDir.exists()) {
            lib.m_problems << problem(root, 0, QStringLiteral("expert folder does not exist"));
            continue;
        }
        for (const QFileInfo& stray :
             rootDir.entryInfoList({QStringLiteral("*.cl"), QStringLiteral("*.cu")}, QDir::Files, QDir::Name))
            lib.m_problems << problem(
                stray.filePath(), 0,
                QStringLiteral("skipped: expert files belong in a family folder (%1/<family>/)").arg(root));
        QSet<QString> keysInThisRoot;
        for (const QString& family : rootDir.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name)) {
            const QDir familyDir(rootDir.filePath(family));
            // System too, so that a broken link or a folder named like an expert file is reported
            // rather than silently ignored.
            const auto entries =
                familyDir.entryInfoList({QStringLiteral("*.cl"), QStringLiteral("*.cu")},
                                        QDir::AllEntries | QDir::System | QDir::NoDotAndDotDot, QDir::Name);
            for (const QFileInfo& entry : entries) {
                const QString path = entry.filePath();
                auto expert = readExpert(path, family);
                if (!expert) {
                    lib.m_problems << QString::fromStdString(expert.error());
                    continue;
                }
                const QString key =
                    family + QLatin1Char('/') + expert->name + QLatin1Char('/') + model::backendName(expert->backend);
                if (keysInThisRoot.contains(key)) {
                    lib.m_problems << problem(path, 0,
                                              QStringLiteral("skipped: another %1 expert in %2 is already named '%3'")
                                                  .arg(model::backendName(expert->backend), family, expert->name));
                    continue;
                }
                keysInThisRoot.insert(key);
                if (const auto it = byKey.constFind(key); it != byKey.constEnd()) {
                    lib.m_experts[*it] = std::move(*expert);
                } else {
                    byKey.insert(key, lib.m_experts.size());
                    lib.m_experts << std::move(*expert);
                }
            }
        }
    }
    std::stable_sort(lib.m_experts.begin(), lib.m_experts.end(), orderedBefore);
    return lib;
}

QStringList ExpertLibrary::defaultRoots() {
    QStringList roots;
    const QString builtIn = util::ResourceLocator::find(QStringLiteral("experts"));
    if (!builtIn.isEmpty())
        roots << builtIn;
    const QString userDir = util::ResourceLocator::userDir();
    if (!userDir.isEmpty()) {
        const QString user = userDir + QStringLiteral("/experts");
        if (QFileInfo(user).isDir())
            roots << user;
    }
    return roots;
}

QList<Expert> ExpertLibrary::forTask(const QString& taskName, model::Backend backend) const {
    QList<Expert> out;
    for (const Expert& e : m_experts)
        if (e.backend == backend && e.tasks.contains(taskName))
            out << e;
    // m_experts is kept in this order already; sorting again keeps the promise explicit.
    std::stable_sort(out.begin(), out.end(), orderedBefore);
    return out;
}

} // namespace kforge::propose
