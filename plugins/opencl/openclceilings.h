#pragma once
// The open OpenCL device's measured ceilings: the global-memory bandwidth of a streaming copy and
// the FP32 throughput of independent FMA chains, so that the roofline sets a kernel's achieved
// figures against what this device really does. Measuring takes a second or so, so the backend keeps
// results per device in the harness's CeilingsCache, beside the CUDA worker's entries.

#include "clapi.h"

#include "protocol.h"

#include <string>

namespace kforge::opencl {

// The tag and file name prefix of this worker's entries in the ceilings cache
// (harness/ceilingscache.h), which it shares with the CUDA worker.
inline constexpr const char* kCeilingsFormat = "kforge-opencl-ceilings-1";
inline constexpr const char* kCeilingsFilePrefix = "opencl-";

// What the micro-kernels need of the open device; the queue must be in order.
struct CeilingsDevice {
    cl_context context = nullptr;
    cl_command_queue queue = nullptr;
    cl_device_id device = nullptr;
    std::string name;
    bool profiling = true; // the queue gives profiling times; else the host clock times each launch
};

struct CeilingsMeasurement {
    protocol::CeilingsResult result; // ok, message, measuredAt and ceilings
    cl_int failure = CL_SUCCESS;     // the OpenCL error that ended the measurement, if any
};

// Keys: dram_bytes_per_s (copy of a buffer several times the global-memory cache, read + write
// bytes) and fp32_flops_per_s (fma on float8 vectors, 2 FLOP per lane). A ceiling that cannot be
// measured is left out and named in the message; ok when any was measured.
CeilingsMeasurement measureCeilings(const CeilingsDevice& device);

} // namespace kforge::opencl
