#include "dtype.h"

#include <bit>
#include <cmath>
#include <cstring>

namespace kforge::spec {

namespace {

struct Info {
    DType type;
    std::string_view name;
    std::size_t size;
};

constexpr Info kInfo[] = {
    {DType::Float32, "float32", 4},   {DType::Float64, "float64", 8}, {DType::Float16, "float16", 2},
    {DType::BFloat16, "bfloat16", 2}, {DType::Int32, "int32", 4},     {DType::Int64, "int64", 8},
    {DType::UInt8, "uint8", 1},
};

const Info& info(DType t) {
    return kInfo[static_cast<int>(t)];
}

float halfToFloat(std::uint16_t h) {
    const std::uint32_t sign = (h & 0x8000u) << 16;
    std::uint32_t exp = (h >> 10) & 0x1f;
    std::uint32_t mant = h & 0x3ffu;
    std::uint32_t bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else { // subnormal: normalise
            int e = -1;
            do {
                ++e;
                mant <<= 1;
            } while ((mant & 0x400u) == 0);
            bits = sign | static_cast<std::uint32_t>(127 - 15 - e) << 23 | (mant & 0x3ffu) << 13;
        }
    } else if (exp == 0x1f) {
        bits = sign | 0x7f800000u | mant << 13;
    } else {
        bits = sign | (exp + 127 - 15) << 23 | mant << 13;
    }
    return std::bit_cast<float>(bits);
}

std::uint16_t floatToHalf(float f) {
    const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
    const std::uint32_t sign = (x >> 16) & 0x8000u;
    const std::uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) // Inf or NaN
        return static_cast<std::uint16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u));
    if (absx >= 0x477ff000u) // rounds to beyond the largest half
        return static_cast<std::uint16_t>(sign | 0x7c00u);
    if (absx < 0x38800000u) { // subnormal half or zero
        const float a = std::bit_cast<float>(absx);
        return static_cast<std::uint16_t>(sign | static_cast<std::uint32_t>(std::nearbyint(a * 16777216.0f)));
    }
    // Round to nearest even on the 13 dropped bits.
    std::uint32_t r = absx - ((127u - 15u) << 23);
    r += 0xfffu + ((r >> 13) & 1u);
    return static_cast<std::uint16_t>(sign | (r >> 13));
}

float bf16ToFloat(std::uint16_t b) {
    return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

std::uint16_t floatToBf16(float f) {
    std::uint32_t x = std::bit_cast<std::uint32_t>(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return static_cast<std::uint16_t>((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return static_cast<std::uint16_t>(x >> 16);
}

template <typename T> T load(const void* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

template <typename T> void store(void* p, T v) {
    std::memcpy(p, &v, sizeof v);
}

// Poison patterns, as raw bits, indexed by pattern 0/1.
std::uint64_t poisonBits(DType t, int pattern) {
    const bool second = pattern != 0;
    switch (t) {
    case DType::Float32:
        return second ? 0xffa5a5a5u : 0x7fa5a5a5u;
    case DType::Float64:
        return second ? 0xfff5a5a5a5a5a5a5ull : 0x7ff5a5a5a5a5a5a5ull;
    case DType::Float16:
        return second ? 0xfe5au : 0x7e5au;
    case DType::BFloat16:
        return second ? 0xffa5u : 0x7fa5u;
    case DType::Int32:
        return second ? 0x5a5a5a5au : 0xa5a5a5a5u;
    case DType::Int64:
        return second ? 0x5a5a5a5a5a5a5a5aull : 0xa5a5a5a5a5a5a5a5ull;
    case DType::UInt8:
        return second ? 0x5au : 0xa5u;
    }
    return 0;
}

} // namespace

std::optional<DType> parseDType(std::string_view name) {
    for (const Info& i : kInfo)
        if (i.name == name)
            return i.type;
    return std::nullopt;
}

std::string_view dtypeName(DType t) {
    return info(t).name;
}
std::size_t dtypeSize(DType t) {
    return info(t).size;
}

bool isFloating(DType t) {
    return t == DType::Float32 || t == DType::Float64 || t == DType::Float16 || t == DType::BFloat16;
}

std::string dtypeNames() {
    std::string s;
    for (const Info& i : kInfo) {
        if (!s.empty())
            s += ", ";
        s += i.name;
    }
    return s;
}

double loadAsDouble(DType t, const void* e) {
    switch (t) {
    case DType::Float32:
        return load<float>(e);
    case DType::Float64:
        return load<double>(e);
    case DType::Float16:
        return halfToFloat(load<std::uint16_t>(e));
    case DType::BFloat16:
        return bf16ToFloat(load<std::uint16_t>(e));
    case DType::Int32:
        return load<std::int32_t>(e);
    case DType::Int64:
        return static_cast<double>(load<std::int64_t>(e));
    case DType::UInt8:
        return load<std::uint8_t>(e);
    }
    return 0.0;
}

void storeFromDouble(DType t, double v, void* e) {
    switch (t) {
    case DType::Float32:
        store(e, static_cast<float>(v));
        break;
    case DType::Float64:
        store(e, v);
        break;
    case DType::Float16:
        store(e, floatToHalf(static_cast<float>(v)));
        break;
    case DType::BFloat16:
        store(e, floatToBf16(static_cast<float>(v)));
        break;
    case DType::Int32:
        store(e, static_cast<std::int32_t>(std::llround(v)));
        break;
    case DType::Int64:
        store(e, static_cast<std::int64_t>(std::llround(v)));
        break;
    case DType::UInt8:
        store(e, static_cast<std::uint8_t>(std::llround(v)));
        break;
    }
}

void fillPoison(DType t, int pattern, void* data, std::size_t count) {
    const std::uint64_t bits = poisonBits(t, pattern);
    const std::size_t size = dtypeSize(t);
    auto* out = static_cast<unsigned char*>(data);
    for (std::size_t i = 0; i < count; ++i)
        std::memcpy(out + i * size, &bits, size); // little-endian: low bytes first
}

std::uint64_t poisonPattern(DType t, int pattern) {
    return poisonBits(t, pattern);
}

bool isPoison(DType t, int pattern, const void* element) {
    const std::uint64_t bits = poisonBits(t, pattern);
    return std::memcmp(element, &bits, dtypeSize(t)) == 0;
}

namespace {

template <typename Word> std::uint64_t countWords(const unsigned char* data, std::size_t count, Word poison) {
    std::uint64_t n = 0;
    for (std::size_t i = 0; i < count; ++i) {
        Word w;
        std::memcpy(&w, data + i * sizeof(Word), sizeof(Word));
        n += w == poison;
    }
    return n;
}

} // namespace

std::uint64_t countPoison(DType t, int pattern, const void* data, std::size_t count) {
    const std::uint64_t bits = poisonBits(t, pattern);
    const auto* bytes = static_cast<const unsigned char*>(data);
    switch (dtypeSize(t)) {
    case 1:
        return countWords<std::uint8_t>(bytes, count, static_cast<std::uint8_t>(bits));
    case 2:
        return countWords<std::uint16_t>(bytes, count, static_cast<std::uint16_t>(bits));
    case 4:
        return countWords<std::uint32_t>(bytes, count, static_cast<std::uint32_t>(bits));
    case 8:
        return countWords<std::uint64_t>(bytes, count, bits);
    default:
        break;
    }
    std::uint64_t n = 0;
    for (std::size_t i = 0; i < count; ++i)
        n += isPoison(t, pattern, bytes + i * dtypeSize(t));
    return n;
}

bool ctypeMatches(DType t, std::string_view c) {
    // Vector types (float4, int2, half8...) view the same buffer with wider loads.
    for (std::string_view width : {"16", "8", "4", "3", "2"}) {
        if (c.size() > width.size() && c.ends_with(width) && !c.ends_with("_t")) {
            const std::string_view base = c.substr(0, c.size() - width.size());
            if (base == "float" || base == "double" || base == "half" || base == "int" || base == "uint"
                || base == "long" || base == "ulong" || base == "uchar" || base == "char")
                return ctypeMatches(t, base);
        }
    }
    switch (t) {
    case DType::Float32:
        return c == "float";
    case DType::Float64:
        return c == "double";
    case DType::Float16:
        return c == "half" || c == "__half" || c == "half2" || c == "__half2" || c == "ushort" || c == "unsigned short";
    case DType::BFloat16:
        return c == "__nv_bfloat16" || c == "nv_bfloat16" || c == "__nv_bfloat162" || c == "nv_bfloat162"
               || c == "ushort" || c == "unsigned short";
    case DType::Int32:
        return c == "int" || c == "int32_t" || c == "unsigned int" || c == "uint";
    case DType::Int64:
        return c == "long" || c == "long long" || c == "int64_t" || c == "ulong" || c == "unsigned long";
    case DType::UInt8:
        return c == "uchar" || c == "unsigned char" || c == "uint8_t" || c == "char";
    }
    return false;
}

} // namespace kforge::spec
