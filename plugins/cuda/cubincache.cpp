#include "cubincache.h"

#include "cachefiles.h"
#include "sha256.h"

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>

namespace kforge::cuda {

namespace {

// Bumped whenever the entry layout changes; older entries then fail the magic check and are rebuilt.
constexpr std::string_view kMagic = "KFORGE-CUBIN-1\n";

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
}

void putField(std::string& out, std::string_view s) {
    const std::uint64_t n = s.size();
    for (int i = 0; i < 8; ++i)
        out += static_cast<char>((n >> (8 * i)) & 0xffu);
    out.append(s);
}

// Reads one length-prefixed field from `in` at `pos`; false when it runs past the end.
bool takeField(const std::string& in, std::size_t& pos, std::string& out) {
    if (in.size() - pos < 8)
        return false;
    std::uint64_t n = 0;
    for (int i = 0; i < 8; ++i)
        n |= static_cast<std::uint64_t>(static_cast<unsigned char>(in[pos + static_cast<std::size_t>(i)])) << (8 * i);
    pos += 8;
    if (n > in.size() - pos)
        return false;
    out.assign(in, pos, static_cast<std::size_t>(n));
    pos += static_cast<std::size_t>(n);
    return true;
}

std::string checksum(std::string_view payload) {
    harness::Sha256 h;
    h.update(payload);
    const auto d = h.digest();
    return std::string(d.begin(), d.end());
}

} // namespace

std::string CubinCache::defaultDirectory() {
    const std::string off = env("KFORGE_CUBIN_CACHE");
    if (off == "off" || off == "0" || off == "no")
        return {};
    return harness::cacheDirectory("cubin");
}

CubinCache::CubinCache(std::string directory) : m_directory(std::move(directory)) {}

std::string CubinCache::pathFor(const std::string& key) const {
    return m_directory + "/" + key + ".kfcubin";
}

std::optional<CubinEntry> CubinCache::load(const std::string& key) const {
    if (!enabled())
        return std::nullopt;
    std::ifstream in(pathFor(key), std::ios::binary);
    if (!in)
        return std::nullopt;
    const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad() || data.size() < kMagic.size() + 32 || data.compare(0, kMagic.size(), kMagic) != 0)
        return std::nullopt;
    const std::string_view payload(data.data() + kMagic.size(), data.size() - kMagic.size() - 32);
    if (checksum(payload) != data.substr(data.size() - 32))
        return std::nullopt;

    const std::string body(payload);
    std::size_t pos = 0;
    CubinEntry e;
    std::string count;
    if (!takeField(body, pos, e.cubin) || !takeField(body, pos, e.log) || !takeField(body, pos, count))
        return std::nullopt;
    std::size_t names = 0;
    try {
        names = std::stoul(count);
    } catch (...) {
        return std::nullopt;
    }
    for (std::size_t i = 0; i < names; ++i) {
        std::string name, lowered;
        if (!takeField(body, pos, name) || !takeField(body, pos, lowered))
            return std::nullopt;
        e.loweredNames.emplace_back(std::move(name), std::move(lowered));
    }
    if (pos != body.size() || e.cubin.empty())
        return std::nullopt;
    return e;
}

bool CubinCache::store(const std::string& key, const CubinEntry& entry) const {
    if (!enabled())
        return false;

    std::string payload;
    putField(payload, entry.cubin);
    putField(payload, entry.log);
    putField(payload, std::to_string(entry.loweredNames.size()));
    for (const auto& [name, lowered] : entry.loweredNames) {
        putField(payload, name);
        putField(payload, lowered);
    }

    std::string data(kMagic);
    data += payload;
    data += checksum(payload);
    return harness::writeFileAtomically(pathFor(key), data);
}

} // namespace kforge::cuda
