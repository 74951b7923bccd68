#include "ceilingscache.h"

#include "cachefiles.h"
#include "sha256.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <ctime>
#include <fstream>
#include <map>

namespace kforge::harness {

std::string CeilingsCache::defaultDirectory() {
    return cacheDirectory("ceilings");
}

CeilingsCache::CeilingsCache(std::string format, std::string namePrefix, std::string directory)
    : m_format(std::move(format)), m_namePrefix(std::move(namePrefix)), m_directory(std::move(directory)) {}

std::string CeilingsCache::pathFor(const std::string& key) const {
    // Readable for people browsing the directory, unique through the hash.
    std::string stem;
    for (char c : key.substr(0, key.find('|'))) {
        if (std::isalnum(static_cast<unsigned char>(c)))
            stem += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        else if (!stem.empty() && stem.back() != '-')
            stem += '-';
    }
    Sha256 h;
    h.update(key);
    return m_directory + "/" + m_namePrefix + (stem.empty() ? "device" : stem) + "-" + h.hexDigest().substr(0, 16)
           + ".json";
}

std::optional<protocol::CeilingsResult> CeilingsCache::load(const std::string& key) const {
    if (!enabled())
        return std::nullopt;
    std::ifstream in(pathFor(key));
    if (!in)
        return std::nullopt;
    try {
        const nlohmann::json j = nlohmann::json::parse(in);
        if (j.value("format", std::string()) != m_format || j.value("key", std::string()) != key)
            return std::nullopt;
        protocol::CeilingsResult r;
        r.ok = true;
        r.cached = true;
        r.device = j.value("device", std::string());
        r.message = j.value("message", std::string());
        r.measuredAt = j.value("measured_at", std::string());
        r.ceilings = j.at("ceilings").get<std::map<std::string, double>>();
        if (r.ceilings.empty())
            return std::nullopt;
        return r;
    } catch (const nlohmann::json::exception&) {
        return std::nullopt;
    }
}

bool CeilingsCache::store(const std::string& key, const protocol::CeilingsResult& result) const {
    if (!enabled())
        return false;
    const nlohmann::json j{{"format", m_format},        {"key", key},
                           {"device", result.device},   {"measured_at", result.measuredAt},
                           {"message", result.message}, {"ceilings", result.ceilings}};
    return writeFileAtomically(pathFor(key), j.dump(2) + "\n");
}

protocol::CeilingsResult CeilingsCache::loadOrMeasure(const std::string& key, const std::string& device, bool refresh,
                                                      const std::function<protocol::CeilingsResult()>& measure) const {
    if (!refresh) {
        if (auto hit = load(key)) {
            hit->device = device;
            return *hit;
        }
    }
    protocol::CeilingsResult r = measure();
    r.device = device;
    if (r.ok && refresh) {
        // A roof is the most the device has been seen to do: a measurement disturbed by other work
        // on the device (another program, tests in parallel) can only come out low, and a low roof
        // turns honest kernels into suspects. So a new measurement raises a stored figure, never
        // lowers it.
        if (auto before = load(key)) {
            std::string kept;
            for (const auto& [name, value] : before->ceilings) {
                auto it = r.ceilings.find(name);
                if (it != r.ceilings.end() && value > it->second && name != "cache_bytes") {
                    kept += (kept.empty() ? "" : ", ") + name;
                    it->second = value;
                }
            }
            if (!kept.empty())
                r.message += "; kept the higher earlier measurement of " + kept + " (from " + before->measuredAt + ")";
        }
    }
    if (r.ok) {
        if (!enabled())
            r.message += "; not cached: no cache directory (set KFORGE_CACHE_DIR, XDG_CACHE_HOME or HOME)";
        else if (!store(key, r))
            r.message += "; could not be cached in " + m_directory;
    }
    return r;
}

std::string notMeasured(const std::vector<std::string>& failures) {
    std::string text;
    for (std::size_t i = 0; i < failures.size(); ++i)
        text += (i ? "; " : "; not measured: ") + failures[i];
    return text;
}

std::string utcNow() {
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

} // namespace kforge::harness
