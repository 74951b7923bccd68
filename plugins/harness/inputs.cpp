#include "inputs.h"

#include "digest.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <numbers>
#include <set>
#include <stdexcept>
#include <thread>

#include <sys/random.h>

namespace kforge::harness {

namespace {

std::uint64_t splitmix64(std::uint64_t& state) {
    return digestMix(state += kDigestStep); // SplitMix64: its finaliser is the digest's mix
}

// xoshiro256** seeded through splitmix64.
class Rng {
public:
    explicit Rng(std::uint64_t seed) {
        for (auto& s : m_s)
            s = splitmix64(seed);
    }
    std::uint64_t next() {
        const std::uint64_t result = rotl(m_s[1] * 5, 7) * 9;
        const std::uint64_t t = m_s[1] << 17;
        m_s[2] ^= m_s[0];
        m_s[3] ^= m_s[1];
        m_s[1] ^= m_s[2];
        m_s[0] ^= m_s[3];
        m_s[2] ^= t;
        m_s[3] = rotl(m_s[3], 45);
        return result;
    }
    // Uniform in [0, 1) with 53 random bits.
    double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

private:
    static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    std::uint64_t m_s[4];
};

} // namespace

std::uint64_t fnv1a(const void* data, std::size_t size) {
    std::uint64_t h = 0xcbf29ce484222325ull;
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < size; ++i) {
        h ^= bytes[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

double HostTensor::at(std::uint64_t i) const {
    return spec::loadAsDouble(dtype, bytes.data() + i * spec::dtypeSize(dtype));
}

HostTensor makeTensor(spec::DType dtype, std::uint64_t count) {
    HostTensor t;
    t.dtype = dtype;
    t.count = count;
    t.bytes.assign(count * spec::dtypeSize(dtype), 0);
    return t;
}

namespace {

constexpr std::uint64_t kBlockElements = 1 << 16;

void initialiseBlock(HostTensor& t, const spec::InitSpec& init, std::uint64_t streamSeed, std::uint64_t block) {
    Rng rng(streamSeed ^ (block * 0xd1b54a32d192ed03ull));
    const std::size_t size = spec::dtypeSize(t.dtype);
    unsigned char* out = t.bytes.data();
    using Kind = spec::InitSpec::Kind;
    const std::uint64_t end = std::min(t.count, (block + 1) * kBlockElements);
    for (std::uint64_t i = block * kBlockElements; i < end; ++i) {
        double v = 0.0;
        switch (init.kind) {
        case Kind::Uniform:
            v = init.a + (init.b - init.a) * rng.unit();
            break;
        case Kind::Normal: {
            // Box-Muller; 1 - unit() is in (0, 1], so the log is finite.
            const double u1 = 1.0 - rng.unit();
            const double u2 = rng.unit();
            v = init.a + init.b * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
            break;
        }
        case Kind::Constant:
            v = init.a;
            break;
        case Kind::RandInt: {
            const auto span = static_cast<std::uint64_t>(init.b - init.a) + 1;
            v = init.a + static_cast<double>(rng.next() % span);
            break;
        }
        case Kind::Arange:
            v = init.a + init.b * static_cast<double>(i);
            break;
        }
        spec::storeFromDouble(t.dtype, v, out + i * size);
    }
}

} // namespace

void initialise(HostTensor& t, const spec::InitSpec& init, std::uint64_t seed, const std::string& name) {
    const std::uint64_t streamSeed = seed * 0x9e3779b97f4a7c15ull ^ fnv1a(name.data(), name.size());
    const std::uint64_t blocks = (t.count + kBlockElements - 1) / kBlockElements;
    const std::uint64_t threads =
        std::min<std::uint64_t>({blocks / 2, std::max(1u, std::thread::hardware_concurrency()), 32});
    if (threads <= 1) {
        for (std::uint64_t b = 0; b < blocks; ++b)
            initialiseBlock(t, init, streamSeed, b);
        return;
    }
    std::vector<std::thread> pool;
    for (std::uint64_t w = 0; w < threads; ++w)
        pool.emplace_back([&, w] {
            for (std::uint64_t b = w; b < blocks; b += threads)
                initialiseBlock(t, init, streamSeed, b);
        });
    for (auto& th : pool)
        th.join();
}

void secureRandomBytes(void* data, std::size_t size) {
    auto* out = static_cast<unsigned char*>(data);
    while (size > 0) {
        const ssize_t got = getrandom(out, size, 0);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            throw std::runtime_error("the system's random source (getrandom) failed");
        }
        out += got;
        size -= static_cast<std::size_t>(got);
    }
}

std::vector<std::uint64_t> secureSeeds(std::size_t n) {
    std::set<std::uint64_t> seen;
    std::vector<std::uint64_t> seeds;
    while (seeds.size() < n) {
        std::uint64_t s = 0;
        secureRandomBytes(&s, sizeof s);
        // Below 2^53, so that a seed survives a trip through a JSON number in any reader.
        s &= (std::uint64_t{1} << 53) - 1;
        if (seen.insert(s).second)
            seeds.push_back(s);
    }
    return seeds;
}

void applyStress(HostTensor& t, const std::string& set, std::uint64_t rowLength) {
    if (!spec::isFloating(t.dtype) || t.count == 0)
        return;
    // The set is decided once, not per element: tensors run to millions of elements.
    enum class Set { IdenticalRows, ZeroRows, LargeMagnitude, ExpOverflow };
    Set which;
    if (set == "identical_rows")
        which = Set::IdenticalRows;
    else if (set == "zero_rows")
        which = Set::ZeroRows;
    else if (set == "large_magnitude")
        which = Set::LargeMagnitude;
    else if (set == "exp_overflow")
        which = Set::ExpOverflow;
    else
        throw std::invalid_argument("unknown stress set '" + set
                                    + "'"); // task files are checked against stressSetNames()
    const std::uint64_t row = std::max<std::uint64_t>(1, std::min(rowLength, t.count));
    const std::size_t size = spec::dtypeSize(t.dtype);
    unsigned char* bytes = t.bytes.data();
    const bool half = t.dtype == spec::DType::Float16;
    for (std::uint64_t i = 0; i < t.count; ++i) {
        const std::uint64_t r = i / row;
        double v = t.at(i);
        switch (which) {
        case Set::IdenticalRows:
            v = t.at(r * row);
            break;
        case Set::ZeroRows:
            v = r % 2 == 0 ? 0.0 : v;
            break;
        case Set::LargeMagnitude:
            v *= half ? 256.0 : 1e4;
            break; // float16 tops out at 65504
        case Set::ExpOverflow:
            v += half ? 12.0 : 90.0;
            break; // exp overflows above 11.09 in float16, 88.72 in float32/bfloat16
        }
        spec::storeFromDouble(t.dtype, v, bytes + i * size);
    }
}

spec::Status readRaw(HostTensor& t, const std::string& path) {
    // A regular file of exactly the tensor's size, read without blocking on a FIFO or reading a
    // device without end (spec/safeio.h).
    auto data = spec::readRegularFile(path, t.bytes.size(), path);
    if (!data)
        return spec::fail(data.error());
    if (data->size() != t.bytes.size())
        return spec::fail(path + ": has fewer bytes than the tensor needs (" + std::to_string(t.bytes.size()) + ")");
    std::copy(data->begin(), data->end(), reinterpret_cast<char*>(t.bytes.data()));
    return spec::success();
}

} // namespace kforge::harness
