// A minimal reproduction of how kforge's CUDA worker times a kernel, for finding what in a process
// changes a kernel's time: the rmsnorm task's kernel (a file with rmsnorm's signature: x, w, y, N,
// eps; by default the expert) built by NVRTC with the worker's options, buffers from cuMemAlloc, a
// non-blocking stream, the output poisoned, the worker's flush (a read of twice the L2), CUPTI
// CONCURRENT_KERNEL records. Each variant changes one of these, interleaved round by round; one
// loads the kernel as PTX for the driver to compile. --runtime-init first initialises CUDA through
// the runtime API (cudaFree(0)), as PyTorch and CuPy do. Built and run by tests/gpu/timing-probe.sh.
//   timing-probe [KERNEL_FILE] [ROUNDS] [--runtime-init]
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <nvrtc.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
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
    bool runtimeInit = false;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--runtime-init") == 0)
            runtimeInit = true;
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
    auto helper = compile(kFlush, {"-arch=sm_90a", "-lineinfo", "--std=c++17"});
    const std::vector<std::string> kernelOptions = {"-arch=compute_90a", "-lineinfo", "--std=c++17",
                                                    "-DBLOCK=512",       "-DVPT=2",   "-DOCC=2048"};
    auto ptx = compile(ss.str(), kernelOptions, true);
    CUmodule mod, hmod, pmod;
    CK(cuModuleLoadData(&mod, cubin.data()));
    CK(cuModuleLoadData(&pmod, ptx.data()));
    CK(cuModuleLoadData(&hmod, helper.data()));
    CUfunction k, kp, flushK;
    CK(cuModuleGetFunction(&k, mod, "rmsnorm"));
    CK(cuModuleGetFunction(&kp, pmod, "rmsnorm"));
    CK(cuModuleGetFunction(&flushK, hmod, "kforge_flush"));

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

    cuptiActivityRegisterCallbacks(bufferRequested, bufferCompleted);
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);

    struct Variant {
        const char* name;
        bool guarded, poison, nullStream, ptx;
    };
    std::vector<Variant> vs = {{"worker-like (guarded, poison, stream, kforge flush)", true, true, false, false},
                               {"plain buffers", false, true, false, false},
                               {"no poison", true, false, false, false},
                               {"null stream", true, true, true, false},
                               {"plain, no poison, null stream", false, false, true, false},
                               {"the kernel from PTX (the driver's compiler)", true, true, false, true}};
    std::map<std::string, std::vector<double>> times;
    float eps = 1e-6f;
    int n = N;
    unsigned long long fcount = fbytes / 16;
    std::printf("%s%s, %d rounds\n", path.c_str(), runtimeInit ? ", CUDA initialised through the runtime API" : "",
                rounds);
    for (int r = 0; r < rounds; ++r) {
        for (const auto& v : vs) {
            CUstream st = v.nullStream ? nullptr : stream;
            CUdeviceptr px = v.guarded ? gx : x, py = v.guarded ? gy : y, pw = v.guarded ? gw : w;
            if (v.poison)
                CK(cuMemsetD32Async(py, 0xffc00001u, size_t(M) * N, st));
            void* fp[] = {&fb, &fcount, &sink};
            CK(cuLaunchKernel(flushK, 2 * sms, 1, 1, 512, 1, 1, 0, st, fp, nullptr));
            CK(cuStreamSynchronize(st));
            cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
            {
                std::lock_guard lock(g_mutex);
                g_records.clear();
            }
            void* args[] = {&px, &pw, &py, &n, &eps};
            CK(cuLaunchKernel(v.ptx ? kp : k, M, 1, 1, 512, 1, 1, 0, st, args, nullptr));
            CK(cuStreamSynchronize(st));
            cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
            std::lock_guard lock(g_mutex);
            for (auto& [name, us] : g_records)
                if (name == "rmsnorm")
                    times[v.name].push_back(us);
        }
    }
    for (const auto& v : vs) {
        auto t = times[v.name];
        std::sort(t.begin(), t.end());
        if (t.empty())
            continue;
        std::printf("  %-55s median %.2f us  q25 %.2f q75 %.2f  (n=%zu)\n", v.name, t[t.size() / 2], t[t.size() / 4],
                    t[3 * t.size() / 4], t.size());
    }
    return 0;
}
