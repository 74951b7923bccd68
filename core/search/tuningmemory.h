#pragma once
// What the template tuners learn from the times measured, within a run and across runs. Every
// search result of a kernel with tunable parameters goes to its template's tuner: its median time,
// or a failure (it did not compile, gave wrong results, its launch plan did not resolve...). New
// results also go to the tuning cache in the experience library, keyed by task, sizes, device and
// template, and before a template's tuner first proposes in a session it is told what the cache
// holds for that key, so that a later run starts where earlier ones ended. A cache that cannot be
// read or written costs a notice, never the run.

#include "search/population.h"

#include "experience/experiencelibrary.h"

#include <QString>

#include <functional>
#include <map>
#include <set>

namespace kforge::search {

class TuningMemory {
public:
    struct Context {
        Population* population = nullptr;
        experience::ExperienceLibrary* library = nullptr; // null: no cache
        QString task;
        model::Backend backend = model::Backend::OpenCL;
        QString sizes; // sizesKey()
        std::function<void(const QString&)> notice;
    };
    void attach(Context context);

    // A search result: its template's tuner learns it. `fresh`: measured in this session (not
    // replayed from the store), so the cache keeps it at the next flush().
    void learn(const Entry& entry, bool fresh);
    // Writes what was learned since the last flush to the cache, one transaction per template.
    void flush();
    // Before `tuner` (the tuner of `entry`'s template) proposes: what the cache holds for the
    // template, once per template and session. Nothing until a result has named the device.
    void recall(const Entry& entry, propose::Tuner& tuner);

    // The cache's key parts: "small: N=4096 M=512"; a key of the kernel file without its
    // `// kforge:param` lines (so that a kernel baked with other defaults is the same template).
    static QString sizesKey(const QString& variant, const spec::Sizes& sizes);
    static QString templateKey(const QString& source);

private:
    experience::TuningKey keyOf(const Entry& entry, const QString& device) const;
    void warn(const QString& message);

    Context m_c;
    QString m_device;                     // of the first result that named one
    std::set<QString> m_recalled;         // population template keys
    std::map<QString, QString> m_kernels; // population template key -> cache template key
    std::map<std::pair<QString, QString>, QList<experience::TuningRecord>> m_fresh; // by (device, kernel)
    bool m_broken = false; // the cache failed once: not used again in this session
};

} // namespace kforge::search
