#include "digest.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace kforge::harness {

std::uint64_t digestSum(const void* data, std::size_t bytes, std::uint64_t key, std::uint64_t firstWord) {
    const auto* p = static_cast<const unsigned char*>(data);
    const std::size_t words = bytes / 8;
    std::uint64_t sum = 0;
    std::uint64_t offset = key + firstWord * kDigestStep;
    for (std::size_t i = 0; i < words; ++i, offset += kDigestStep) {
        std::uint64_t w;
        std::memcpy(&w, p + 8 * i, 8);
        sum += digestMix(w ^ offset);
    }
    if (const std::size_t tail = bytes % 8) {
        std::uint64_t w = 0;
        for (std::size_t b = 0; b < tail; ++b)
            w |= std::uint64_t{p[8 * words + b]} << (8 * b);
        sum += digestMix(w ^ offset);
    }
    return sum;
}

std::uint64_t digest(const void* data, std::size_t bytes, std::uint64_t key) {
    constexpr std::size_t kPerThread = std::size_t{16} << 20;
    const std::size_t threads = std::clamp<std::size_t>(
        bytes / kPerThread, 1, std::min(16u, std::max(1u, std::thread::hardware_concurrency())));
    if (threads == 1)
        return digestFinish(digestSum(data, bytes, key, 0), bytes, key);
    // Whole words per thread, so that every part starts on a word of the range.
    const std::size_t step = (bytes / 8 + threads - 1) / threads * 8;
    std::vector<std::uint64_t> sums(threads, 0);
    std::vector<std::thread> pool;
    for (std::size_t t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
            const std::size_t begin = std::min(bytes, t * step);
            const std::size_t end = t + 1 == threads ? bytes : std::min(bytes, begin + step);
            sums[t] = digestSum(static_cast<const unsigned char*>(data) + begin, end - begin, key, begin / 8);
        });
    for (auto& th : pool)
        th.join();
    std::uint64_t sum = 0;
    for (const std::uint64_t s : sums)
        sum += s;
    return digestFinish(sum, bytes, key);
}

bool deviceDigestsWanted(bool byDefault) {
    const char* env = std::getenv("KFORGE_DEVICE_DIGESTS");
    if (env && std::strcmp(env, "1") == 0)
        return true;
    if (env && std::strcmp(env, "0") == 0)
        return false;
    return byDefault;
}

} // namespace kforge::harness
