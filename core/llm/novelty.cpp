#include "llm/novelty.h"

#include "kernelfile.h"

#include <QCryptographicHash>
#include <QRegularExpression>
#include <QStringList>

#include <algorithm>

namespace kforge::llm {

namespace {

constexpr int kShingle = 4;

std::uint64_t fnv1a(const QString& s, std::uint64_t h = 1469598103934665603ull) {
    for (QChar c : s) {
        h ^= c.unicode();
        h *= 1099511628211ull;
    }
    return h;
}

// Identifiers, numbers (with their suffixes and exponents) and single punctuation characters.
QStringList tokens(const QString& text) {
    QStringList out;
    const qsizetype n = text.size();
    for (qsizetype i = 0; i < n;) {
        const QChar c = text[i];
        if (c.isSpace()) {
            ++i;
            continue;
        }
        qsizetype j = i + 1;
        if (c.isLetter() || c == QLatin1Char('_')) {
            while (j < n && (text[j].isLetterOrNumber() || text[j] == QLatin1Char('_')))
                ++j;
        } else if (c.isDigit()) {
            while (j < n
                   && (text[j].isLetterOrNumber() || text[j] == QLatin1Char('.') || text[j] == QLatin1Char('_')
                       || ((text[j] == QLatin1Char('+') || text[j] == QLatin1Char('-'))
                           && (text[j - 1] == QLatin1Char('e') || text[j - 1] == QLatin1Char('E')))))
                ++j;
        }
        out << text.mid(i, j - i);
        i = j;
    }
    return out;
}

} // namespace

NoveltyFilter::NoveltyFilter(double nearThreshold) : m_nearThreshold(nearThreshold) {}

QString NoveltyFilter::normalise(const QString& source) {
    static const QRegularExpression directive(QStringLiteral(R"(^\s*//\s*kforge:)"));
    static const QRegularExpression spaces(QStringLiteral(R"(\s+)"));
    QString text = source;
    text.replace(QLatin1String("\r\n"), QLatin1String("\n"));
    const QStringList original = text.split(QLatin1Char('\n'));
    // stripComments keeps the line breaks, so its lines pair with the original's.
    const QStringList stripped =
        QString::fromStdString(spec::stripComments(text.toStdString())).split(QLatin1Char('\n'));
    QStringList out;
    for (qsizetype i = 0; i < original.size(); ++i) {
        const QString& line = original[i].contains(QLatin1String("kforge:")) && directive.match(original[i]).hasMatch()
                                  ? original[i]
                                  : (i < stripped.size() ? stripped[i] : QString());
        const QString simple = QString(line).replace(spaces, QStringLiteral(" ")).trimmed();
        if (!simple.isEmpty())
            out << simple;
    }
    return out.join(QLatin1Char('\n'));
}

std::vector<std::uint64_t> NoveltyFilter::shinglesOf(const QString& normalised) {
    const QStringList toks = tokens(normalised);
    std::vector<std::uint64_t> hashes;
    hashes.reserve(static_cast<std::size_t>(toks.size()));
    for (const QString& t : toks)
        hashes.push_back(fnv1a(t));
    std::vector<std::uint64_t> shingles;
    if (hashes.empty())
        return shingles;
    const std::size_t count = hashes.size() >= kShingle ? hashes.size() - kShingle + 1 : 1;
    const std::size_t width = std::min<std::size_t>(kShingle, hashes.size());
    shingles.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
        std::uint64_t h = 1469598103934665603ull;
        for (std::size_t k = 0; k < width; ++k) {
            h ^= hashes[i + k] + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
            h *= 1099511628211ull;
        }
        shingles.push_back(h);
    }
    std::sort(shingles.begin(), shingles.end());
    shingles.erase(std::unique(shingles.begin(), shingles.end()), shingles.end());
    return shingles;
}

double NoveltyFilter::jaccard(const std::vector<std::uint64_t>& a, const std::vector<std::uint64_t>& b) {
    if (a.empty() && b.empty())
        return 1.0;
    std::size_t common = 0;
    for (auto i = a.begin(), j = b.begin(); i != a.end() && j != b.end();) {
        if (*i < *j) {
            ++i;
        } else if (*j < *i) {
            ++j;
        } else {
            ++common;
            ++i;
            ++j;
        }
    }
    return static_cast<double>(common) / static_cast<double>(a.size() + b.size() - common);
}

double NoveltyFilter::similarity(const QString& a, const QString& b) {
    return jaccard(shinglesOf(normalise(a)), shinglesOf(normalise(b)));
}

void NoveltyFilter::add(qint64 id, const QString& source) {
    const QString norm = normalise(source);
    const QByteArray key = QCryptographicHash::hash(norm.toUtf8(), QCryptographicHash::Sha256);
    if (m_exact.contains(key))
        return;
    m_exact.insert(key, id);
    m_kernels.push_back({id, shinglesOf(norm)});
}

std::optional<NoveltyFilter::Match> NoveltyFilter::check(const QString& source) const {
    const QString norm = normalise(source);
    const QByteArray key = QCryptographicHash::hash(norm.toUtf8(), QCryptographicHash::Sha256);
    if (const auto it = m_exact.constFind(key); it != m_exact.constEnd())
        return Match{it.value(), 1.0, true};
    const std::vector<std::uint64_t> mine = shinglesOf(norm);
    std::optional<Match> best;
    for (const Entry& e : m_kernels) {
        // Jaccard is at most the ratio of the set sizes: most kernels are ruled out without a merge.
        const double small = static_cast<double>(std::min(mine.size(), e.shingles.size()));
        const double large = static_cast<double>(std::max(mine.size(), e.shingles.size()));
        if (large > 0.0 && small / large < m_nearThreshold)
            continue;
        const double s = jaccard(mine, e.shingles);
        if (s >= m_nearThreshold && (!best || s > best->similarity))
            best = Match{e.id, s, false};
    }
    return best;
}

} // namespace kforge::llm
