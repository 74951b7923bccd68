#pragma once
// Kernel argument values: the bytes a launch API (clSetKernelArg, cuLaunchKernel) takes for a
// size, scalar or parameter value as the kernel declares it ("int", "unsigned long long", "__half"...).
// One conversion for every backend, so a value that does not fit is refused the same way everywhere.

#include "expected.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace kforge::harness {

struct ArgValue {
    std::array<unsigned char, 8> bytes{};
    std::size_t size = 0;
};

// `sizeTBytes` is the device's size_t width (4 or 8). Integers must be whole and in range; half and
// bfloat16 are rounded to nearest even. `backend` names the worker in the error for unknown types.
spec::Expected<ArgValue> kernelArgValue(const std::string& declared, double value, int sizeTBytes,
                                        const std::string& backend);

} // namespace kforge::harness
