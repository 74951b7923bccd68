#pragma once
// Keeps the search from paying twice for the same kernel: models often answer with their parent
// unchanged, with only comments or layout changed, or with one name changed. An exact duplicate
// has the same normalised source (comments and whitespace do not count, `// kforge:` directives
// do, since a different parameter default or launch is a different candidate). A near duplicate
// shares almost all of its token 4-grams (Jaccard similarity of the shingle sets).

#include <QByteArray>
#include <QHash>
#include <QString>

#include <cstdint>
#include <optional>
#include <vector>

namespace kforge::llm {

class NoveltyFilter {
public:
    explicit NoveltyFilter(double nearThreshold = 0.95);

    // Remembers a kernel; a second kernel with the same normalised source keeps the first id.
    void add(qint64 id, const QString& source);

    struct Match {
        qint64 id = 0;
        double similarity = 0.0; // 1 for an exact duplicate
        bool exact = false;
    };
    // The exact duplicate if there is one, else the most similar kernel at or above the threshold
    // (the earliest added among equals), else nothing. O(kernels) with cheap per-kernel work.
    std::optional<Match> check(const QString& source) const;

    int size() const { return static_cast<int>(m_kernels.size()); }
    double nearThreshold() const { return m_nearThreshold; }

    // Comments dropped (except `// kforge:` directive lines), whitespace runs collapsed to one
    // space, blank lines dropped.
    static QString normalise(const QString& source);
    // Jaccard similarity of two sources' token 4-gram sets.
    static double similarity(const QString& a, const QString& b);

private:
    struct Entry {
        qint64 id = 0;
        std::vector<std::uint64_t> shingles; // sorted, unique
    };
    static std::vector<std::uint64_t> shinglesOf(const QString& normalised);
    static double jaccard(const std::vector<std::uint64_t>& a, const std::vector<std::uint64_t>& b);

    double m_nearThreshold;
    QHash<QByteArray, qint64> m_exact; // hash of the normalised source -> id
    std::vector<Entry> m_kernels;
};

} // namespace kforge::llm
