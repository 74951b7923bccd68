#include "model/candidate.h"

#include "kernelfile.h"

#include <QCryptographicHash>
#include <QRegularExpression>
#include <QStringList>

#include <set>

namespace kforge::model {

QString formatParams(const ParamValues& params) {
    QStringList parts;
    for (const auto& [name, value] : params)
        parts << QStringLiteral("%1=%2").arg(QString::fromStdString(name)).arg(value);
    return parts.join(QLatin1Char(' '));
}

QString formatParamChanges(const ParamValues& before, const ParamValues& after) {
    std::set<std::string> names;
    for (const auto& values : {before, after})
        for (const auto& [name, value] : values)
            names.insert(name);
    const auto valueIn = [](const ParamValues& values, const std::string& name) {
        const auto it = values.find(name);
        return it == values.end() ? QStringLiteral("\u2014") : QString::number(it->second);
    };
    QStringList changes;
    for (const std::string& name : names) {
        const QString from = valueIn(before, name), to = valueIn(after, name);
        if (from != to)
            changes << QStringLiteral("%1 %2 \u2192 %3").arg(QString::fromStdString(name), from, to);
    }
    return changes.join(QStringLiteral(", "));
}

QString candidateKey(const QString& source, const ParamValues& completeParams) {
    // Comments and layout do not make a different kernel, but `// kforge:` directives do (they are
    // the launch plan), so they are kept apart from the comment-stripped code.
    static const QRegularExpression directive(QStringLiteral(R"(^\s*//\s*(kforge:.*)$)"),
                                              QRegularExpression::MultilineOption);
    static const QRegularExpression space(QStringLiteral(R"(\s+)"));
    QString normalised = QString::fromStdString(spec::stripComments(source.toStdString()));
    normalised.replace(space, QStringLiteral(" "));
    QStringList directives;
    for (auto it = directive.globalMatch(source); it.hasNext();)
        directives << it.next().captured(1).replace(space, QStringLiteral(" ")).trimmed();
    QCryptographicHash hash(QCryptographicHash::Sha256);
    hash.addData(normalised.trimmed().toUtf8());
    hash.addData(QByteArrayView("\n--directives--\n"));
    hash.addData(directives.join(QLatin1Char('\n')).toUtf8());
    hash.addData(QByteArrayView("\n--params--\n"));
    hash.addData(formatParams(completeParams).toUtf8());
    return QString::fromLatin1(hash.result().toHex().left(32));
}

Fitness fitnessOf(const protocol::EvaluateResult& result) {
    Fitness f;
    f.correct = result.status == protocol::Status::Ok;
    if (f.correct && result.speedup)
        f.speedup = *result.speedup;
    return f;
}

QString templateKey(const QString& source) {
    // `// kforge:param NAME in {choices} = DEFAULT` without its `= DEFAULT`; a fixed parameter's
    // value (`NAME = VALUE`) is part of the template.
    static const QRegularExpression tunableDefault(
        QStringLiteral(R"(^(\s*//\s*kforge:param\s+\w+\s+in\s*\{[^}\n]*\})\s*=[^\n]*$)"),
        QRegularExpression::MultilineOption);
    QString normalised = source;
    normalised.replace(tunableDefault, QStringLiteral("\\1"));
    return candidateKey(normalised, {});
}

} // namespace kforge::model
