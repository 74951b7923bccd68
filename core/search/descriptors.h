#pragma once
// Behaviour descriptors for the MAP-Elites archive: where a kernel sits in behaviour space, read
// from its source and its compile facts. Three dimensions of four levels each; the rules are data
// (resources/search/descriptors.json, or a file the user points at), so the space is configurable
// without recompiling. Built-in dimensions:
//   memory       global only | vectorised / read-only loads | shared-memory tiling |
//                register tiling, async copy or tensor-core fragments
//   compute      scalar | vector types / fused math | warp-level (shuffles, subgroups) |
//                tensor cores (mma, wmma)
//   granularity  one element per thread | several per thread (coarsened) |
//                a warp per row/tile | a block per row/tile (cooperative, barriers)
// A kernel's level in a dimension is the highest level whose rule matches.

#include "expected.h"
#include "kernelfile.h"
#include "model/candidate.h"

#include <QJsonObject>
#include <QRegularExpression>
#include <QString>
#include <QStringList>

#include <array>
#include <map>
#include <string>

namespace kforge::search {

// What a rule can look at besides the source.
struct KernelFacts {
    spec::Dialect dialect = spec::Dialect::OpenCL;
    model::ParamValues params;               // effective values of every declared parameter
    std::map<std::string, double> resources; // compile facts: registers, shared_bytes, local_bytes, ...
};

struct DescriptorRule; // defined in descriptors.cpp

struct Dimension {
    QString key;        // "memory"
    QString title;      // "Memory hierarchy"
    QStringList levels; // names of the levels, lowest first; exactly kLevels of them
};

inline constexpr int kLevels = 4;

class DescriptorSpace {
public:
    // The built-in space from resources/search/descriptors.json (found through ResourceLocator).
    static spec::Expected<DescriptorSpace> builtIn();
    // A space from a JSON file; errors name the file and the rule ("descriptors.json:
    // dimensions[1].levels[2].patterns[0]: invalid regular expression: ...").
    static spec::Expected<DescriptorSpace> load(const QString& path);
    static spec::Expected<DescriptorSpace> fromJson(const QJsonObject& json, const QString& origin);

    DescriptorSpace();
    ~DescriptorSpace();
    DescriptorSpace(const DescriptorSpace&);
    DescriptorSpace& operator=(const DescriptorSpace&);

    const std::array<Dimension, model::kDimensions>& dimensions() const { return m_dimensions; }

    // The cell of a kernel file. `reasons`, when given, gets one line per dimension saying which
    // rule placed it there ("memory: shared-memory tiling (matched __shared__)").
    model::Cell describe(const QString& source, const KernelFacts& facts, QStringList* reasons = nullptr) const;

private:
    std::array<Dimension, model::kDimensions> m_dimensions;
    std::array<std::vector<std::vector<DescriptorRule>>, model::kDimensions> m_rules; // [dim][level][rule]
};

} // namespace kforge::search
