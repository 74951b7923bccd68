#pragma once
// Element types of task buffers: names, sizes, conversions to and from double, and the poison
// patterns the harness fills outputs with before every run.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kforge::spec {

enum class DType { Float32, Float64, Float16, BFloat16, Int32, Int64, UInt8 };

std::optional<DType> parseDType(std::string_view name);
std::string_view dtypeName(DType t);
std::size_t dtypeSize(DType t);
bool isFloating(DType t);
// All dtype names, comma separated, for error messages.
std::string dtypeNames();

double loadAsDouble(DType t, const void* element);
void storeFromDouble(DType t, double value, void* element);

// Two distinct poison bit patterns per dtype. For floating types both are NaNs with a payload no
// arithmetic produces, so a written element can never be mistaken for an unwritten one.
void fillPoison(DType t, int pattern, void* data, std::size_t count);
bool isPoison(DType t, int pattern, const void* element);
// How many of `count` elements at `data` hold the poison pattern (one pass, no call per element).
std::uint64_t countPoison(DType t, int pattern, const void* data, std::size_t count);
// The poison bit pattern of one element (dtypeSize(t) bytes, little-endian), for device-side fills.
std::uint64_t poisonPattern(DType t, int pattern);

// Whether a kernel argument's C element type (as written in the source) can hold this dtype.
bool ctypeMatches(DType t, std::string_view ctype);

} // namespace kforge::spec
