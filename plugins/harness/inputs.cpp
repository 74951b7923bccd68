#include "inputs.h"

#include <cmath>
#include <fstream>
#include <numbers>

namespace kforge::harness {

namespace {

std::uint64_t splitmix64(std::uint64_t& state) {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
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

double HostTensor::at(std::uint64_t i) const { return spec::loadAsDouble(dtype, bytes.data() + i * spec::dtypeSize(dtype)); }

HostTensor makeTensor(spec::DType dtype, std::uint64_t count) {
    HostTensor t;
    t.dtype = dtype;
    t.count = count;
    t.bytes.assign(count * spec::dtypeSize(dtype), 0);
    return t;
}

void initialise(HostTensor& t, const spec::InitSpec& init, std::uint64_t seed, const std::string& name) {
    Rng rng(seed * 0x9e3779b97f4a7c15ull ^ fnv1a(name.data(), name.size()));
    const std::size_t size = spec::dtypeSize(t.dtype);
    unsigned char* out = t.bytes.data();
    using Kind = spec::InitSpec::Kind;
    for (std::uint64_t i = 0; i < t.count; ++i) {
        double v = 0.0;
        switch (init.kind) {
        case Kind::Uniform: v = init.a + (init.b - init.a) * rng.unit(); break;
        case Kind::Normal: {
            // Box-Muller; 1 - unit() is in (0, 1], so the log is finite.
            const double u1 = 1.0 - rng.unit();
            const double u2 = rng.unit();
            v = init.a + init.b * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
            break;
        }
        case Kind::Constant: v = init.a; break;
        case Kind::RandInt: {
            const auto span = static_cast<std::uint64_t>(init.b - init.a) + 1;
            v = init.a + static_cast<double>(rng.next() % span);
            break;
        }
        case Kind::Arange: v = init.a + init.b * static_cast<double>(i); break;
        }
        spec::storeFromDouble(t.dtype, v, out + i * size);
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
