// kforge integrity test: task vector_add; violation: none, a correct kernel whose source uses C++ lexing a naive scanner gets wrong (a raw string holding quotes, an apostrophe and a line that starts with #include, digit separators, apostrophes in comments); expected status: pass.
// Everything here is legal C++17 that NVRTC compiles: the "#include" line is inside a raw string
// literal, so it is text, not a directive, and the digit separators are plain integers. A scanner
// that blanks literals by C rules (or reads directives out of string contents) rejects this file
// or loses the kernel's signature; one that lexes like the compiler accepts it.
// It's the sort of source a model writes: a banner string, and constants like 1'024 for readability.
// kforge:param BLOCK in {128, 256} = 256
// kforge:param PER_THREAD = 4
// kforge:launch vector_add grid=(cdiv(N, BLOCK * PER_THREAD)) block=(BLOCK)

__device__ const char kBanner[] = R"kf(vector_add "v2" - don't edit
#include "this/is/just/text.h"
)kf";

constexpr int kPerThread = 0'004;     // digit separators: 4
constexpr long long kMaxElements = 1'000'000'000'000LL;
static_assert(kPerThread == PER_THREAD, "the launch plan assumes 4 elements per thread");

extern "C" __global__ void vector_add(const float* x, const float* y, float* z, int N)
{
    const long long first = ((long long)blockIdx.x * BLOCK + threadIdx.x) * kPerThread;
    if (first >= kMaxElements)
        return; // never taken; keeps kMaxElements used
#pragma unroll
    for (int k = 0; k < kPerThread; ++k) {
        const long long i = first + k;
        if (i < N)
            z[i] = x[i] + y[i];
    }
}
