#pragma once
// CUDA device code on the host, for checking kernel files' indexing where there is no GPU: the
// subset of CUDA C++ that the plain experts and the tasks' references use, with one host thread
// per CUDA thread of a block (blocks one after another), so that __syncthreads and warp shuffles
// behave as on a GPU. Not a timing model and not a memory model: shared memory is a function's
// static storage (blocks run one at a time; dynamic shared memory a buffer of the launch's size),
// global memory is host memory, and a kernel that needs inline PTX, tensor cores or atomics is out
// of its reach.

#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

struct uint3 {
    unsigned x = 0, y = 0, z = 0;
};
struct dim3 {
    unsigned x = 1, y = 1, z = 1;
};

// The running thread's coordinates; the grid's and block's shape, for the launch in progress.
inline thread_local uint3 threadIdx;
inline uint3 blockIdx;
inline dim3 blockDim, gridDim;

namespace cudaemu {

// The block in progress: its barrier, one per warp, and the warps' exchange slots for shuffles.
struct Block {
    explicit Block(unsigned threads) : barrier(static_cast<std::ptrdiff_t>(threads)), slots(threads * 2) {
        for (unsigned w = 0; w < (threads + 31) / 32; ++w)
            warps.push_back(std::make_unique<std::barrier<>>(std::min<std::ptrdiff_t>(32, threads - w * 32)));
    }
    std::barrier<> barrier;
    std::vector<std::unique_ptr<std::barrier<>>> warps;
    std::vector<std::uint64_t> slots;
};
inline Block* block = nullptr;

// The launch's dynamic shared memory (smem=), 128-byte aligned: kernel files that declare it
// (`extern __shared__`) are compiled from a copy in which the array's name stands for this.
inline std::vector<std::max_align_t> dynamicBytes;
inline void* dynamicShared() {
    return dynamicBytes.data();
}

inline unsigned linearThread() {
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

template <typename T> T shuffle(T v, int (*source)(int lane, int arg, int width), int arg, int width) {
    static_assert(sizeof(T) <= 8, "shuffles move at most 8 bytes");
    const unsigned t = linearThread(), warp = t / 32, lane = t % 32;
    std::uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof(T));
    block->slots[t] = bits;
    block->warps[warp]->arrive_and_wait();
    const int from = source(static_cast<int>(lane), arg, width);
    std::uint64_t got = block->slots[warp * 32 + static_cast<unsigned>(from)];
    block->warps[warp]->arrive_and_wait();
    T out;
    std::memcpy(&out, &got, sizeof(T));
    return out;
}

// Runs `kernel` over the grid: each block's threads at once, blocks one after another. `threaded`
// false runs a block's threads one after another on this thread (kernels without barriers or
// shuffles), much faster.
inline void launch(dim3 grid, dim3 blockShape, std::size_t smemBytes, bool threaded,
                   const std::function<void()>& kernel) {
    dynamicBytes.assign(smemBytes / sizeof(std::max_align_t) + 1, std::max_align_t{});
    gridDim = grid;
    blockDim = blockShape;
    const unsigned threads = blockShape.x * blockShape.y * blockShape.z;
    for (blockIdx.z = 0; blockIdx.z < grid.z; ++blockIdx.z)
        for (blockIdx.y = 0; blockIdx.y < grid.y; ++blockIdx.y)
            for (blockIdx.x = 0; blockIdx.x < grid.x; ++blockIdx.x) {
                if (!threaded) {
                    for (unsigned t = 0; t < threads; ++t) {
                        threadIdx = {t % blockShape.x, t / blockShape.x % blockShape.y,
                                     t / (blockShape.x * blockShape.y)};
                        kernel();
                    }
                    continue;
                }
                Block b(threads);
                block = &b;
                std::vector<std::thread> running;
                running.reserve(threads);
                for (unsigned t = 0; t < threads; ++t)
                    running.emplace_back([&, t] {
                        threadIdx = {t % blockShape.x, t / blockShape.x % blockShape.y,
                                     t / (blockShape.x * blockShape.y)};
                        kernel();
                        // A thread that has returned no longer holds up its block's barriers.
                        b.barrier.arrive_and_drop();
                        b.warps[t / 32]->arrive_and_drop();
                    });
                for (auto& r : running)
                    r.join();
                block = nullptr;
            }
}

} // namespace cudaemu

inline void __syncthreads() {
    cudaemu::block->barrier.arrive_and_wait();
}
template <typename T> T __shfl_xor_sync(unsigned, T v, int mask, int width = 32) {
    return cudaemu::shuffle(
        v, [](int lane, int m, int w) { return (lane & ~(w - 1)) | ((lane ^ m) & (w - 1)); }, mask, width);
}
template <typename T> T __shfl_down_sync(unsigned, T v, unsigned delta, int width = 32) {
    return cudaemu::shuffle(
        v,
        [](int lane, int d, int w) {
            const int base = lane & ~(w - 1);
            return lane - base + d < w ? lane + d : lane;
        },
        static_cast<int>(delta), width);
}
template <typename T> T __shfl_up_sync(unsigned, T v, unsigned delta, int width = 32) {
    return cudaemu::shuffle(
        v,
        [](int lane, int d, int w) {
            const int base = lane & ~(w - 1);
            return lane - base >= d ? lane - d : lane;
        },
        static_cast<int>(delta), width);
}
template <typename T> T __shfl_sync(unsigned, T v, int src, int width = 32) {
    return cudaemu::shuffle(
        v, [](int lane, int s, int w) { return (lane & ~(w - 1)) | (s & (w - 1)); }, src, width);
}

struct alignas(16) float4 {
    float x, y, z, w;
};
struct alignas(8) float2 {
    float x, y;
};
struct alignas(16) int4 {
    int x, y, z, w;
};
struct alignas(16) uint4 {
    unsigned x, y, z, w;
};
inline float4 make_float4(float x, float y, float z, float w) {
    return {x, y, z, w};
}
inline float2 make_float2(float x, float y) {
    return {x, y};
}

// Cache-policy loads and stores: plain ones here.
template <typename T> T __ldg(const T* p) {
    return *p;
}
template <typename T> T __ldcs(const T* p) {
    return *p;
}
template <typename T> T __ldcg(const T* p) {
    return *p;
}
template <typename T> T __ldlu(const T* p) {
    return *p;
}
template <typename T> void __stcs(T* p, T v) {
    *p = v;
}
template <typename T> void __stcg(T* p, T v) {
    *p = v;
}

inline float __expf(float v) {
    return std::exp(v);
}
inline float __logf(float v) {
    return std::log(v);
}
inline float __fdividef(float a, float b) {
    return a / b;
}
inline float rsqrtf(float v) {
    return 1.0f / std::sqrt(v);
}
inline double rsqrt(double v) {
    return 1.0 / std::sqrt(v);
}
inline float __frcp_rn(float v) {
    return 1.0f / v;
}
inline float __saturatef(float v) {
    return std::clamp(v, 0.0f, 1.0f);
}
inline double __longlong_as_double(long long v) {
    double d;
    std::memcpy(&d, &v, sizeof d);
    return d;
}
inline long long __double_as_longlong(double v) {
    long long l;
    std::memcpy(&l, &v, sizeof l);
    return l;
}
inline float __int_as_float(int v) {
    float f;
    std::memcpy(&f, &v, sizeof f);
    return f;
}
inline int __float_as_int(float v) {
    int i;
    std::memcpy(&i, &v, sizeof i);
    return i;
}
inline int __float2int_rn(float v) {
    return static_cast<int>(std::nearbyint(v));
}
using std::fmaf;
using std::fmaxf;
using std::fminf;
using std::max;
using std::min;

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __restrict__
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
