#pragma once
// The workers' disk cache of measured device ceilings. Measuring takes a second or two, so each
// worker keeps its results per device key (name, driver and whatever else changes the figures) in a
// small JSON file; the workers share the directory and tell their entries apart by a format tag and a
// file name prefix.

#include "protocol.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kforge::harness {

// One JSON file per device key. Several workers may share the directory: a file is written under a
// private name and renamed into place, so a reader sees a whole entry or none; an entry that cannot
// be read, or that carries another format tag, counts as absent.
class CeilingsCache {
public:
    // $KFORGE_CACHE_DIR/ceilings (beside the CUBINs kept in $KFORGE_CACHE_DIR/cubin, and private to
    // whoever set it), else $XDG_CACHE_HOME/kforge/ceilings, else ~/.cache/kforge/ceilings; "" when
    // none can be formed.
    static std::string defaultDirectory();

    // `format` is stored in every entry and checked on load: a worker changes it when its
    // measurement changes, so that older entries are measured again. `namePrefix` starts every file
    // name, so that workers whose keys could look alike keep apart.
    CeilingsCache(std::string format, std::string namePrefix, std::string directory = defaultDirectory());

    const std::string& directory() const { return m_directory; }
    bool enabled() const { return !m_directory.empty(); }
    // <prefix><device name, lower case, runs of other characters as '-'>-<16 hex digits of SHA-256>.json
    std::string pathFor(const std::string& key) const;

    // The stored result for `key`, with cached = true.
    std::optional<protocol::CeilingsResult> load(const std::string& key) const;
    bool store(const std::string& key, const protocol::CeilingsResult& result) const;

    // The stored result for `key` unless `refresh`; else what `measure` gives, stored when ok (its
    // message then says so when it could not be). A refresh never lowers a stored roof: each
    // figure (but the cache size) is the higher of the new and the stored measurement, since other
    // work on the device can only make a measurement come out low. Either way the result names
    // `device`.
    protocol::CeilingsResult loadOrMeasure(const std::string& key, const std::string& device, bool refresh,
                                           const std::function<protocol::CeilingsResult()>& measure) const;

private:
    std::string m_format;
    std::string m_namePrefix;
    std::string m_directory;
};

// Now as ISO 8601 UTC: "2026-11-30T12:34:56Z", the form of CeilingsResult::measuredAt.
std::string utcNow();

// The end of a ceilings message for the measurements that failed: "; not measured: A; B", or ""
// when none did. Every backend's message ends the same way.
std::string notMeasured(const std::vector<std::string>& failures);

} // namespace kforge::harness
