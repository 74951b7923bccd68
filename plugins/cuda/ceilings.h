#pragma once
// The device's measured ceilings: what built-in micro-kernels reach on the open device (DRAM and L2
// bandwidth, FP32 FFMA and FP16/BF16/TF32 tensor throughput), so that a kernel's achieved figures can be
// set against what this GPU really does rather than against a datasheet. Measuring takes a second or
// two, so the backend keeps results per device (name, UUID, driver) in the harness's CeilingsCache.

#include "cudadriver.h"
#include "nvrtccompiler.h"
#include "protocol.h"

#include <cstddef>
#include <string>

namespace kforge::cuda {

// The tag of this worker's entries in the ceilings cache (harness/ceilingscache.h). 2: DRAM also
// measured read-only; 3: wgmma roofs on compute capability 9.0; 4: TF32 wgmma roof; 5: the DRAM
// read roof the fastest of several access patterns.
inline constexpr const char* kCeilingsFormat = "kforge-ceilings-5";

// What the micro-kernels need of the open device. Its context must be current on this thread.
struct CeilingsDevice {
    const CudaDriver& driver;
    const NvrtcCompiler& compiler;
    CUstream stream = nullptr;
    int computeCapability = 0;
    int multiprocessors = 0;
    std::size_t l2Bytes = 0;
    std::string name;
};

struct CeilingsMeasurement {
    protocol::CeilingsResult result; // ok, message, measuredAt and ceilings
    CUresult failure = CUDA_SUCCESS; // the CUDA error that ended the measurement, if any
};

// Keys: dram_bytes_per_s (device-to-device copy, read + write bytes), l2_bytes_per_s (re-reads of
// an L2-resident buffer), fp32_flops_per_s (FFMA), fp16_tensor_flops_per_s and
// bf16_tensor_flops_per_s (mma.sync m16n8k16, FP32 accumulation), tf32_tensor_flops_per_s (mma.sync
// m16n8k8), and on compute capability 9.0 fp16_wgmma_flops_per_s and bf16_wgmma_flops_per_s (wgmma
// m64n256k16) and tf32_wgmma_flops_per_s (wgmma m64n256k8, A in registers). A ceiling that cannot be
// measured is left out and named in the message; ok when any was measured.
CeilingsMeasurement measureCeilings(const CeilingsDevice& device);

} // namespace kforge::cuda
