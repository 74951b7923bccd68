#pragma once
// Hardware metrics of one run of a launch plan, through CUPTI's Range Profiler API (CUDA 12.6+,
// cupti_range_profiler.h) and its Profiler Host API (cupti_profiler_host.h): the host API turns metric
// names into a config image and, afterwards, counter data into values; the range profiler collects
// one range per kernel (auto ranges). The counters need several passes; with user replay the plan
// is run once per pass, each time from cold caches as a timed run is, so every counter sees the same
// run. Where CUPTI refuses user replay with auto ranges, kernel replay is used instead: CUPTI replays
// each kernel itself, restoring device memory between passes but not flushing the caches (the
// message says which was used).
//
// Reported, summed over the plan's kernels (ratios weighted by each kernel's duration):
//   dram_bytes         dram__bytes.sum            dram_read_bytes / dram_write_bytes likewise
//   fp32_flops         2 * ffma + fadd + fmul     (sm__sass_thread_inst_executed_op_f*_pred_on.sum)
//   fp64_flops         2 * dfma + dadd + dmul
//   fp16_flops         2 * hfma + hadd + hmul     (thread instructions as the counters count them;
//                      see below for what an HFMA2 seems to count)
//   tensor_flops       sm__ops_path_tensor_src_{fp16,bf16_dst_fp32,tf32_dst_fp32,fp64,fp8}.sum,
//                      times kTensorFlopsPerOp (see rangeprofiler.cpp); HMMA and Hopper's HGMMA
//                      (wgmma) alike; integer tensor ops are no flops and are left out
//   l2_bytes           lts__t_bytes.sum
//   achieved_occupancy sm__warps_active.avg.pct_of_peak_sustained_active / 100
//   sm_throughput      sm__throughput.avg.pct_of_peak_sustained_elapsed / 100
//   dram_throughput    gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed / 100
//   duration_ns        gpu__time_duration.sum
//   kernels            ranges (kernels) the counters were collected for
// A metric the GPU lacks is left out and named in the message; the status stays "ok" as long as
// anything could be measured.
//
// What the counters see (checked against Nsight Compute on an H200, h200-profile-results.md):
// - DRAM bytes are those moved while the kernels run, after the backend's cache flush (a memset of
//   twice the L2, the same as before every timed run). The flush leaves dirty lines in L2 that the
//   kernels' misses write back, so dram_write_bytes runs above the kernels' own stores (sgemm
//   1024^3: 6.3 MB against a 4.2 MB C), while output that still sits in L2 when the last kernel
//   ends is not counted at all. Reads match the inputs: A + B for sgemm (+0.4%), x + y for
//   vector_add (+0.01%).
// - ptxas sometimes loads a constant with HFMA2.MMA (an HFMA of zeros plus an immediate), so
//   fp16_flops of an FP32 kernel need not be zero (sgemm: 2.1e6, 0.1% of its FP32 flops). That
//   sgemm executed one such instruction per thread (Nsight Compute: one tensor-pipe HFMA2.MMA per
//   warp) and its hfma count was 1 per thread, so an HFMA2 seems to count once, not once per half:
//   packed half2 math may be under-counted by up to 2x (no half2 kernel was profiled to settle it).

#include "protocol.h"

#include <cuda.h>

#include <cstddef>
#include <functional>
#include <string>

namespace kforge::cuda {

class RangeProfiler {
public:
    // Collects the counters of the plan's kernels. Before each pass `prepare` readies the run (the
    // backend flushes the caches); `launch` queues the plan's kernels on `context` (which must be
    // current on this thread) and waits for them, returning "" or why the run failed. `device` is
    // the context's device and `ordinal` its CUDA index; `kernels` the number of launches the plan
    // makes. With `trace`, each kernel's raw counter values go to stderr.
    // CUPTI's activity tracing must be off while this runs: the caller pauses it.
    static protocol::ProfileResult collect(CUcontext context, CUdevice device, int ordinal, std::size_t kernels,
                                           const std::function<void()>& prepare,
                                           const std::function<std::string()>& launch, bool trace);

    // False when the worker was built against a CUPTI without the range profiler (before 12.6).
    static bool available();
};

} // namespace kforge::cuda
