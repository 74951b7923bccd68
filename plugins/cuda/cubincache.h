#pragma once
// A disk cache of NVRTC results, so that the same kernel file with the same options is compiled once
// per machine rather than once per evaluation. Several workers share the directory: entries are
// written to a private temporary file and renamed into place, so readers see a whole entry or none,
// and an entry that cannot be read (truncated, corrupt, another format) counts as a miss and is
// rebuilt.

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kforge::cuda {

struct CubinEntry {
    std::string cubin;
    std::string log; // the compiler's log of the original build (warnings)
    std::vector<std::pair<std::string, std::string>> loweredNames; // kernel -> lowered (mangled) name
};

class CubinCache {
public:
    // $KFORGE_CACHE_DIR/cubin, else $XDG_CACHE_HOME/kforge/cubin, else ~/.cache/kforge/cubin; "" when
    // none can be formed or KFORGE_CUBIN_CACHE=off.
    static std::string defaultDirectory();

    explicit CubinCache(std::string directory = defaultDirectory());

    const std::string& directory() const { return m_directory; }
    bool enabled() const { return !m_directory.empty(); }

    std::optional<CubinEntry> load(const std::string& key) const;
    // Best effort: a cache that cannot be written only costs the next compile its speed-up.
    bool store(const std::string& key, const CubinEntry& entry) const;

private:
    std::string pathFor(const std::string& key) const;

    std::string m_directory;
};

} // namespace kforge::cuda
