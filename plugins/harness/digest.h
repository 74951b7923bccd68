#pragma once

#include <cstddef>
#include <cstdint>

namespace kforge::harness {

// A keyed 64-bit digest of a byte range that a device can compute where the bytes are, so that
// "does this buffer still hold what it held?" costs a few bytes of transfer instead of a read-back.
//
// The range is read as little-endian 64-bit words (the last one zero-padded). Word i contributes
// mix(word ^ (key + i * kDigestStep)), the contributions are summed modulo 2^64 (so any device can
// add them up in any order) and the sum is finalised with the length:
//     digest = mix(sum + mix(mix(key) ^ bytes)).
// mix is SplitMix64's finaliser. The key is drawn afresh for each evaluation, so a kernel cannot
// prepare bytes that digest alike. Backends that digest on the device must give exactly this value
// (the GPU checks compare the two).
constexpr std::uint64_t kDigestStep = 0x9e3779b97f4a7c15ull;

constexpr std::uint64_t digestMix(std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// The sum of the contributions of `bytes` bytes whose first word is word `firstWord` of the range
// (a multiple of 8 bytes into it): digests of a range read in chunks add up.
std::uint64_t digestSum(const void* data, std::size_t bytes, std::uint64_t key, std::uint64_t firstWord);

constexpr std::uint64_t digestFinish(std::uint64_t sum, std::uint64_t totalBytes, std::uint64_t key) {
    return digestMix(sum + digestMix(digestMix(key) ^ totalBytes));
}

// The digest of a whole range in host memory; large ranges are summed on several threads.
std::uint64_t digest(const void* data, std::size_t bytes, std::uint64_t key);

// Whether the evaluator should check buffers by device-side digests: `byDefault` (what the backend
// judges cheaper for its device) unless KFORGE_DEVICE_DIGESTS is 1 (always) or 0 (never: read
// buffers back), which tests and benchmarks use to exercise or compare either path.
bool deviceDigestsWanted(bool byDefault);

} // namespace kforge::harness
