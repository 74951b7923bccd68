#pragma once
// SHA-256 (FIPS 180-4), for the keys of the workers' disk caches (CUBINs, ceilings) and the checksums
// of their entries. A cryptographic hash keeps unrelated sources from ever sharing an entry, however
// many are cached.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kforge::harness {

class Sha256 {
public:
    Sha256();

    void update(const void* data, std::size_t size);
    void update(std::string_view s) { update(s.data(), s.size()); }
    // Hashes the length before the bytes, so that ("ab", "c") and ("a", "bc") differ.
    void updateField(std::string_view s);

    std::array<std::uint8_t, 32> digest();
    std::string hexDigest();

private:
    void block(const std::uint8_t* p);

    std::array<std::uint32_t, 8> m_state;
    std::array<std::uint8_t, 64> m_buffer{};
    std::size_t m_buffered = 0;
    std::uint64_t m_length = 0; // bytes
};

} // namespace kforge::harness
