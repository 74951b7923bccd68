// A minimal reproduction of how kforge's CUDA worker times a kernel, for finding what in a process
// changes a kernel's time: the rmsnorm task's kernel (a file with rmsnorm's signature: x, w, y, N,
// eps; by default the expert) built by NVRTC with the worker's options, buffers from cuMemAlloc, a
// non-blocking stream, the output poisoned, the worker's flush (a read of twice the L2), CUPTI
// CONCURRENT_KERNEL records. Each variant changes one of these, interleaved round by round: plain
// buffers, no poison, the null stream, the kernel as PTX for the driver to compile, built as CuPy
// builds it, the context's L2 fetch granularity limit at 32, 64 and 128 bytes, and the kernel queued
// behind a spin so that CUDA events time it alone. Every variant prints CUPTI's median and CUDA
// events' (the events include the launch, except for the queued variant).
//   --runtime-init   initialise CUDA through the runtime API first (cudaFree(0)), as PyTorch does
//   --placement      instead vary where the output lies relative to the input (one allocation)
//   --skip-mib=N     allocate N MiB before the buffers, so that they lie elsewhere in the GPU's memory
//   --cubin=FILE     add a variant with a cubin of the kernel built elsewhere (e.g. CuPy's cache)
//   --no-cupti       leave CUPTI out: CUDA events only
//   --pairs=K        instead time every pairing of K inputs and K outputs, each a cuMemAlloc of its own
//                    (allocated x0, y0, x1, y1, ...): whether a read-and-write kernel's time depends
//                    on where its input and output lie relative to each other
// Built and run by tests/gpu/timing-probe.sh (arguments are passed on).
//   timing-probe [KERNEL_FILE] [ROUNDS] [--runtime-init] [--placement] [--pairs=K] [--skip-mib=N] [--cubin=FILE]
//                [--no-cupti]
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <nvrtc.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#define CK(x)                                                                                                          \
    do {                                                                                                               \
        CUresult r_ = (x);                                                                                             \
        if (r_ != CUDA_SUCCESS) {                                                                                      \
            const char* s_;                                                                                            \
            cuGetErrorString(r_, &s_);                                                                                 \
            std::fprintf(stderr, "%s: %s (line %d)\n", #x, s_, __LINE__);                                              \
            std::exit(1);                                                                                              \
        }                                                                                                              \
    } while (0)

static std::mutex g_mutex;
static std::vector<std::pair<std::string, double>> g_records; // name, us

static void CUPTIAPI bufferRequested(uint8_t** buffer, size_t* size, size_t* maxRecords) {
    *size = 1 << 20;
    *buffer = static_cast<uint8_t*>(aligned_alloc(8, *size));
    *maxRecords = 0;
}
static void CUPTIAPI bufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t validSize) {
    CUpti_Activity* record = nullptr;
    std::lock_guard lock(g_mutex);
    while (cuptiActivityGetNextRecord(buffer, validSize, &record) == CUPTI_SUCCESS) {
        if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
            auto* k = reinterpret_cast<CUpti_ActivityKernel9*>(record);
            const char* nm = k->name;
            g_records.emplace_back(std::string(nm), double(k->end - k->start) / 1000.0);
        }
    }
    std::free(buffer);
}

static const char* kFlush = R"(
extern "C" __global__ void kforge_flush(const uint4* data, unsigned long long count, unsigned int* sink) {
    unsigned int x = 0;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
        const uint4 v = data[i];
        x |= v.x | v.y | v.z | v.w;
    }
    if (x != 0)
        *sink = x;
}
)";

static const char* kSpin = R"(
extern "C" __global__ void probe_spin(long long cycles) {
    const long long start = clock64();
    while (clock64() - start < cycles) {
    }
}
)";

static std::vector<char> compile(const std::string& src, std::vector<std::string> opts, bool ptx = false) {
    nvrtcProgram p;
    nvrtcCreateProgram(&p, src.c_str(), "k.cu", 0, nullptr, nullptr);
    std::vector<const char*> o;
    for (auto& s : opts)
        o.push_back(s.c_str());
    if (nvrtcCompileProgram(p, (int)o.size(), o.data()) != NVRTC_SUCCESS) {
        size_t n;
        nvrtcGetProgramLogSize(p, &n);
        std::string log(n, 0);
        nvrtcGetProgramLog(p, log.data());
        std::fprintf(stderr, "%s\n", log.c_str());
        std::exit(1);
    }
    size_t n;
    if (ptx) {
        nvrtcGetPTXSize(p, &n);
        std::vector<char> text(n);
        nvrtcGetPTX(p, text.data());
        nvrtcDestroyProgram(&p);
        return text;
    }
    nvrtcGetCUBINSize(p, &n);
    std::vector<char> cubin(n);
    nvrtcGetCUBIN(p, cubin.data());
    nvrtcDestroyProgram(&p);
    return cubin;
}

int main(int argc, char** argv) {
    std::vector<std::string> positional;
    bool runtimeInit = false, placement = false, cupti = true;
    unsigned long long skipMiB = 0;
    int pairs = 0;
    std::string extraCubin; // a cubin of the kernel built elsewhere (e.g. by another NVRTC)
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--runtime-init") == 0)
            runtimeInit = true;
        else if (std::strcmp(argv[i], "--placement") == 0)
            placement = true;
        else if (std::strcmp(argv[i], "--no-cupti") == 0)
            cupti = false;
        else if (std::strncmp(argv[i], "--cubin=", 8) == 0)
            extraCubin = argv[i] + 8;
        else if (std::strncmp(argv[i], "--pairs=", 8) == 0)
            pairs = std::max(1, std::atoi(argv[i] + 8));
        else if (std::strncmp(argv[i], "--skip-mib=", 11) == 0)
            skipMiB = std::strtoull(argv[i] + 11, nullptr, 10);
        else
            positional.emplace_back(argv[i]);
    }
    const std::string path = positional.size() > 0 ? positional[0] : "resources/experts/norm/rmsnorm_register_row.cu";
    const int rounds = positional.size() > 1 ? std::atoi(positional[1].c_str()) : 40;
    if (runtimeInit && cudaFree(nullptr) != cudaSuccess) {
        std::fprintf(stderr, "cudaFree(0) failed\n");
        return 1;
    }
    std::ifstream f(path);
    if (!f) {
        std::fprintf(stderr, "cannot read %s\n", path.c_str());
        return 1;
    }
    std::stringstream ss;
    ss << f.rdbuf();
    CK(cuInit(0));
    CUdevice dev;
    CK(cuDeviceGet(&dev, 0));
    CUcontext ctx;
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CUstream stream;
    CK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    int l2 = 0, sms = 0;
    CK(cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev));
    CK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));

    auto cubin =
        compile(ss.str(), {"-arch=sm_90a", "-lineinfo", "--std=c++17", "-DBLOCK=512", "-DVPT=2", "-DOCC=2048"});
    auto spinCubin = compile(kSpin, {"-arch=sm_90a"});
    auto helper = compile(kFlush, {"-arch=sm_90a", "-lineinfo", "--std=c++17"});
    const std::vector<std::string> kernelOptions = {"-arch=compute_90a", "-lineinfo", "--std=c++17",
                                                    "-DBLOCK=512",       "-DVPT=2",   "-DOCC=2048"};
    auto ptx = compile(ss.str(), kernelOptions, true);
    // sm_90 (not 90a) and no -lineinfo: how CuPy's NVRTC builds it
    auto cubin90 = compile(ss.str(), {"-arch=sm_90", "--std=c++17", "-DBLOCK=512", "-DVPT=2", "-DOCC=2048"});
    CUmodule mod, hmod, pmod, mod90;
    CK(cuModuleLoadData(&mod, cubin.data()));
    CK(cuModuleLoadData(&pmod, ptx.data()));
    CK(cuModuleLoadData(&mod90, cubin90.data()));
    CK(cuModuleLoadData(&hmod, helper.data()));
    CUfunction k, kp, k90, flushK;
    CK(cuModuleGetFunction(&k, mod, "rmsnorm"));
    CK(cuModuleGetFunction(&kp, pmod, "rmsnorm"));
    CK(cuModuleGetFunction(&k90, mod90, "rmsnorm"));
    CK(cuModuleGetFunction(&flushK, hmod, "kforge_flush"));
    CUfunction kx = nullptr;
    if (!extraCubin.empty()) {
        std::ifstream cf(extraCubin, std::ios::binary);
        std::vector<char> bytes((std::istreambuf_iterator<char>(cf)), std::istreambuf_iterator<char>());
        CUmodule xmod;
        CK(cuModuleLoadData(&xmod, bytes.data()));
        CK(cuModuleGetFunction(&kx, xmod, "rmsnorm"));
    }
    {
        int major = 0, minor = 0, driver = 0;
        nvrtcVersion(&major, &minor);
        cuDriverGetVersion(&driver);
        std::printf("NVRTC %d.%d, driver API %d\n", major, minor, driver);
    }
    CUmodule smod;
    CUfunction spinK;
    CK(cuModuleLoadData(&smod, spinCubin.data()));
    CK(cuModuleGetFunction(&spinK, smod, "probe_spin"));
    {
        size_t fetch = 0, persisting = 0, stack = 0;
        unsigned flags = 0;
        CUfunc_cache cache;
        CK(cuCtxGetLimit(&fetch, CU_LIMIT_MAX_L2_FETCH_GRANULARITY));
        CK(cuCtxGetLimit(&persisting, CU_LIMIT_PERSISTING_L2_CACHE_SIZE));
        CK(cuCtxGetLimit(&stack, CU_LIMIT_STACK_SIZE));
        CK(cuCtxGetFlags(&flags));
        CK(cuCtxGetCacheConfig(&cache));
        std::printf("context: L2 fetch granularity %zu B, persisting L2 %zu B, stack %zu B, flags 0x%x, cache "
                    "config %d\n",
                    fetch, persisting, stack, flags, int(cache));
    }

    if (skipMiB) {
        // device memory taken before the buffers, so that they lie elsewhere in the GPU's memory
        CUdeviceptr skip;
        CK(cuMemAlloc(&skip, size_t(skipMiB) << 20));
        std::printf("%llu MiB allocated before the buffers\n", skipMiB);
    }
    const int M = 8192, N = 4096;
    const size_t bytes = size_t(M) * N * 4;
    std::vector<float> hx(size_t(M) * N), hw(N);
    unsigned s = 12345;
    for (auto& v : hx) {
        s = s * 1664525u + 1013904223u;
        v = -2.0f + 4.0f * (s >> 8) / 16777216.0f;
    }
    for (auto& v : hw) {
        s = s * 1664525u + 1013904223u;
        v = 0.5f + (s >> 8) / 16777216.0f;
    }
    // plain buffers, and guarded ones (a view 4096 bytes into an allocation 8192 bytes larger)
    CUdeviceptr x, y, w, gx, gy, gw, fb, sink;
    CK(cuMemAlloc(&x, bytes));
    CK(cuMemAlloc(&y, bytes));
    CK(cuMemAlloc(&w, N * 4));
    CK(cuMemAlloc(&gx, bytes + 8192));
    CK(cuMemAlloc(&gy, bytes + 8192));
    CK(cuMemAlloc(&gw, N * 4 + 8192));
    gx += 4096;
    gy += 4096;
    gw += 4096;
    const size_t fbytes = 2 * size_t(l2);
    CK(cuMemAlloc(&fb, fbytes));
    CK(cuMemAlloc(&sink, 8));
    CK(cuMemsetD8(fb, 0, fbytes));
    CK(cuMemcpyHtoD(x, hx.data(), bytes));
    CK(cuMemcpyHtoD(gx, hx.data(), bytes));
    CK(cuMemcpyHtoD(w, hw.data(), N * 4));
    CK(cuMemcpyHtoD(gw, hw.data(), N * 4));

    if (cupti) {
        cuptiActivityRegisterCallbacks(bufferRequested, bufferCompleted);
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    }

    struct Variant {
        std::string name;
        bool guarded, poison, nullStream;
        CUfunction fn;
        size_t l2Fetch = 0;  // 0: the context's own
        CUdeviceptr py = 0;  // 0: as guarded says
        CUdeviceptr px = 0;  // 0: as guarded says
        bool queued = false; // a spin, the flush, event, kernel, event all queued: the events time the kernel alone
    };
    size_t contextFetch = 0;
    CK(cuCtxGetLimit(&contextFetch, CU_LIMIT_MAX_L2_FETCH_GRANULARITY));
    std::vector<Variant> vs = {
        {"worker-like (guarded, poison, stream, kforge flush)", true, true, false, k},
        {"plain buffers", false, true, false, k},
        {"no poison", true, false, false, k},
        {"null stream", true, true, true, k},
        {"plain, no poison, null stream", false, false, true, k},
        {"the kernel from PTX (the driver's compiler)", true, true, false, kp},
        {"sm_90 cubin, no -lineinfo (as CuPy builds it)", true, true, false, k90},
        {"L2 fetch granularity limit 32 B", true, true, false, k, 32},
        {"L2 fetch granularity limit 64 B", true, true, false, k, 64},
        {"L2 fetch granularity limit 128 B", true, true, false, k, 128},
        {"queued behind a spin (CUDA events time the kernel alone)", true, true, false, k, 0, 0, true}};
    if (kx)
        vs.push_back({"the kernel from " + extraCubin, true, true, false, kx});
    if (placement) {
        // x at the start of one allocation, y at bytes + d past it: the output's distance from the input
        vs.clear();
        CUdeviceptr region;
        const size_t gap = 64ull << 20;
        CK(cuMemAlloc(&region, 2 * bytes + gap));
        CK(cuMemcpyHtoD(region, hx.data(), bytes));
        for (size_t d : {size_t(0), size_t(4096), size_t(65536), size_t(1) << 20, size_t(2) << 20,
                         (size_t(2) << 20) + 4096, size_t(6) << 20, (size_t(16) << 20) + 2048, size_t(32) << 20}) {
            Variant v{"y = x + size + " + std::to_string(d) + " B", true, true, false, k};
            v.py = region + bytes + d;
            vs.push_back(v);
        }
        vs.push_back({"worker-like (separate guarded allocations)", true, true, false, k});
        gx = region; // every variant reads the one x
    }
    if (pairs > 0) {
        vs.clear();
        std::vector<CUdeviceptr> xs(pairs), ys(pairs);
        for (int i = 0; i < pairs; ++i) {
            CK(cuMemAlloc(&xs[i], bytes));
            CK(cuMemAlloc(&ys[i], bytes));
            CK(cuMemcpyHtoD(xs[i], hx.data(), bytes));
        }
        for (int i = 0; i < pairs; ++i)
            for (int j = 0; j < pairs; ++j) {
                Variant v{"x" + std::to_string(i) + " -> y" + std::to_string(j), true, true, false, k};
                v.px = xs[i];
                v.py = ys[j];
                vs.push_back(v);
            }
        vs.push_back({"worker-like (guarded allocations made first)", true, true, false, k});
    }
    std::map<std::string, std::vector<double>> times, eventTimes;
    CUevent before, after;
    CK(cuEventCreate(&before, CU_EVENT_DEFAULT));
    CK(cuEventCreate(&after, CU_EVENT_DEFAULT));
    float eps = 1e-6f;
    int n = N;
    unsigned long long fcount = fbytes / 16;
    std::printf("%s%s, %d rounds\n", path.c_str(), runtimeInit ? ", CUDA initialised through the runtime API" : "",
                rounds);
    for (int r = 0; r < rounds; ++r) {
        for (const auto& v : vs) {
            CUstream st = v.nullStream ? nullptr : stream;
            CUdeviceptr px = v.px        ? v.px
                             : v.guarded ? gx
                                         : x,
                        py = v.py        ? v.py
                             : v.guarded ? gy
                                         : y,
                        pw = v.guarded ? gw : w;
            CK(cuCtxSetLimit(CU_LIMIT_MAX_L2_FETCH_GRANULARITY, v.l2Fetch ? v.l2Fetch : contextFetch));
            if (v.poison)
                CK(cuMemsetD32Async(py, 0xffc00001u, size_t(M) * N, st));
            void* fp[] = {&fb, &fcount, &sink};
            if (v.queued) {
                long long cycles = 400000; // about 200 us: the host queues what follows meanwhile
                void* sp[] = {&cycles};
                CK(cuLaunchKernel(spinK, 1, 1, 1, 1, 1, 1, 0, st, sp, nullptr));
            }
            CK(cuLaunchKernel(flushK, 2 * sms, 1, 1, 512, 1, 1, 0, st, fp, nullptr));
            if (!v.queued)
                CK(cuStreamSynchronize(st));
            if (!v.queued)
                if (cupti)
                    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
            if (!v.queued) {
                std::lock_guard lock(g_mutex);
                g_records.clear();
            }
            void* args[] = {&px, &pw, &py, &n, &eps};
            CK(cuEventRecord(before, st));
            CK(cuLaunchKernel(v.fn, M, 1, 1, 512, 1, 1, 0, st, args, nullptr));
            CK(cuEventRecord(after, st));
            CK(cuStreamSynchronize(st));
            float ms = 0;
            CK(cuEventElapsedTime(&ms, before, after));
            eventTimes[v.name].push_back(ms * 1000.0);
            if (cupti)
                cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
            std::lock_guard lock(g_mutex);
            for (auto& [name, us] : g_records)
                if (name == "rmsnorm")
                    times[v.name].push_back(us);
            g_records.clear();
        }
    }
    for (const auto& v : vs) {
        auto t = times[v.name];
        std::sort(t.begin(), t.end());
        auto e = eventTimes[v.name];
        std::sort(e.begin(), e.end());
        if (t.empty()) {
            std::printf("  %-55s CUDA events %.2f us (no CUPTI)\n", v.name.c_str(), e[e.size() / 2]);
            continue;
        }
        std::printf("  %-55s median %.2f us  q25 %.2f q75 %.2f  (n=%zu); CUDA events %.2f us\n", v.name.c_str(),
                    t[t.size() / 2], t[t.size() / 4], t[3 * t.size() / 4], t.size(), e[e.size() / 2]);
    }
    return 0;
}
