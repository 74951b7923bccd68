#pragma once
// Host-side tensors and their seeded initialisation. Values come from a splitmix64/xoshiro-style
// generator with hand-written distributions, so one seed gives the same inputs on every machine and
// standard library.

#include "taskspec.h"

#include <cstdint>
#include <vector>

namespace kforge::harness {

struct HostTensor {
    spec::DType dtype = spec::DType::Float32;
    std::uint64_t count = 0;
    std::vector<unsigned char> bytes;

    std::size_t byteSize() const { return bytes.size(); }
    double at(std::uint64_t i) const;
};

HostTensor makeTensor(spec::DType dtype, std::uint64_t count);

// Fills `t` per `init`, drawing from streams determined by (seed, tensor name): one stream per
// block of elements, so that large tensors are filled by several threads with the same result.
void initialise(HostTensor& t, const spec::InitSpec& init, std::uint64_t seed, const std::string& name);

// `n` distinct seeds from the operating system's secure random source (getrandom): nothing a
// candidate can see or predict decides them.
std::vector<std::uint64_t> secureSeeds(std::size_t n);
// Random bytes from the same source.
void secureRandomBytes(void* data, std::size_t size);

// Transforms a tensor of random values into stress set `set`'s (spec::stressSetNames()); `rowLength`
// is the tensor's last dimension.
void applyStress(HostTensor& t, const std::string& set, std::uint64_t rowLength);

// 64-bit FNV-1a of a byte range: names seed the input streams.
std::uint64_t fnv1a(const void* data, std::size_t size);

// Reads a raw little-endian file of exactly t.byteSize() bytes.
spec::Status readRaw(HostTensor& t, const std::string& path);

} // namespace kforge::harness
