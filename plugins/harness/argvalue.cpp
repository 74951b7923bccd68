#include "argvalue.h"

#include "dtype.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

namespace kforge::harness {

namespace {

template <typename T> ArgValue packed(T v) {
    ArgValue a;
    std::memcpy(a.bytes.data(), &v, sizeof v);
    a.size = sizeof v;
    return a;
}

template <typename T> spec::Expected<ArgValue> integerArg(double v, const std::string& type) {
    if (!std::isfinite(v) || v != std::trunc(v))
        return spec::fail("value " + std::to_string(v) + " is not a whole number, but the kernel declares it " + type);
    // Bounds as doubles: 2^63 and 2^64 are exact, the max values themselves are not.
    const double lo = static_cast<double>(std::numeric_limits<T>::min());
    const double hiExclusive = std::ldexp(1.0, std::numeric_limits<T>::digits);
    if (v < lo || v >= hiExclusive) {
        std::ostringstream os;
        os.precision(17);
        os << "value " << v << " does not fit in the kernel's " << type;
        return spec::fail(os.str());
    }
    return packed(static_cast<T>(v));
}

ArgValue sixteenBit(spec::DType t, double value) {
    std::uint16_t bits = 0;
    spec::storeFromDouble(t, value, &bits);
    return packed(bits);
}

bool oneOf(const std::string& t, std::initializer_list<const char*> names) {
    for (const char* n : names)
        if (t == n)
            return true;
    return false;
}

} // namespace

spec::Expected<ArgValue> kernelArgValue(const std::string& declared, double value, int sizeTBytes,
                                        const std::string& backend) {
    std::string t = declared;
    if (t.rfind("std::", 0) == 0)
        t = t.substr(5);
    if (t.rfind("signed ", 0) == 0 && t != "signed char")
        t = t.substr(7);
    if (oneOf(t, {"char", "signed char", "int8_t"}))
        return integerArg<std::int8_t>(value, declared);
    if (oneOf(t, {"uchar", "unsigned char", "uint8_t"}))
        return integerArg<std::uint8_t>(value, declared);
    if (oneOf(t, {"short", "short int", "int16_t"}))
        return integerArg<std::int16_t>(value, declared);
    if (oneOf(t, {"ushort", "unsigned short", "unsigned short int", "uint16_t"}))
        return integerArg<std::uint16_t>(value, declared);
    if (oneOf(t, {"int", "signed", "int32_t"}))
        return integerArg<std::int32_t>(value, declared);
    if (oneOf(t, {"uint", "unsigned", "unsigned int", "uint32_t"}))
        return integerArg<std::uint32_t>(value, declared);
    // long is 64 bits in OpenCL C and in CUDA on 64-bit Linux, whatever the host compiler says.
    if (oneOf(t, {"long", "long int", "long long", "long long int", "int64_t", "ptrdiff_t", "ssize_t"}))
        return integerArg<std::int64_t>(value, declared);
    if (oneOf(t, {"ulong", "unsigned long", "unsigned long int", "unsigned long long", "unsigned long long int",
                  "uint64_t"}))
        return integerArg<std::uint64_t>(value, declared);
    if (t == "size_t")
        return sizeTBytes == 4 ? integerArg<std::uint32_t>(value, declared)
                               : integerArg<std::uint64_t>(value, declared);
    if (t == "float")
        return packed(static_cast<float>(value));
    if (t == "double")
        return packed(value);
    if (oneOf(t, {"half", "__half"}))
        return sixteenBit(spec::DType::Float16, value);
    if (oneOf(t, {"__nv_bfloat16", "nv_bfloat16"}))
        return sixteenBit(spec::DType::BFloat16, value);
    return spec::fail("type '" + declared + "' cannot be passed as a value by the " + backend
                      + " worker (use char, uchar, short, ushort, int, uint, long, ulong, long long, size_t, half, "
                        "bfloat16, float or double)");
}

} // namespace kforge::harness
