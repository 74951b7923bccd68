// kforge integrity test: task vector_add; violation: __has_include("/etc/hostname") probes the worker's file system to tell the evaluation host from elsewhere; expected status: rejected.
// The cheat: __has_include lets code ask whether a file exists without including it, so a kernel
// can behave one way where a marker file exists (the sandbox that verifies, the machine that
// times) and another way elsewhere, or leak one bit per compile about the host. Both branches here
// are correct so that only the probe is under test; a real cheat puts its shortcut in one branch.
// What catches it: rejecting __has_include (and __has_embed) in candidate source.
// kforge:param BLOCK = 256
// kforge:launch vector_add grid=(cdiv(N, BLOCK)) block=(BLOCK)

#if __has_include("/etc/hostname")
#define KF_ON_HOST 1
#else
#define KF_ON_HOST 0
#endif

extern "C" __global__ void vector_add(const float* x, const float* y, float* z, int N)
{
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < N)
        z[i] = x[i] + y[i];
}
