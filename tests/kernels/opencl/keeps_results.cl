// kforge integrity test: task vector_add; violation: computes z on the first call only, caches it in program-scope globals and replays the cache on later calls; expected status: incorrect or compile_error.
// (compile_error where the worker's chosen OpenCL C standard has no program-scope variables: PoCL 3.1
// offers them only under CL2.0, which lacks vload/vstore on global pointers, so the worker picks CL3.0.)
// Program-scope `global` variables need OpenCL C 2.0, or 3.0 with the feature
// __opencl_c_program_scope_global_variables. Built as OpenCL C 1.2 (the default without -cl-std)
// the file fails to compile, which hides the cheat instead of catching it: the harness should
// build with the highest -cl-std the device accepts. PoCL 3.1 (CPU) reports OpenCL C 1.2 yet
// accepts -cl-std=CL2.0 and runs this; with -cl-std=CL3.0 it rejects the globals (feature not
// advertised). Only fresh inputs on later calls (new seeds, rotated input sets) expose the
// replay; poisoning the outputs alone does not, since the cache rewrites every element.
// State is kept per element, in a single kernel: no work-item waits on another, and PoCL does
// not share program-scope variables between different kernels of one program.

// kforge:param BLOCK = 256
// kforge:launch vector_add grid=(cdiv(N, BLOCK)) block=(BLOCK)

#define CACHE_N (1 << 20)   // covers the small variant (N = 1000003); beyond it, computed honestly

global float cache[CACHE_N];
global int cached[CACHE_N];

__kernel void vector_add(__global const float* x, __global const float* y,
                         __global float* z, int N)
{
    const int i = get_global_id(0);
    if (i >= N)
        return;
    if (i < CACHE_N && cached[i]) {
        z[i] = cache[i];   // the violation: a result from an earlier call, whatever x and y are now
        return;
    }
    const float s = x[i] + y[i];
    z[i] = s;
    if (i < CACHE_N) {
        cache[i] = s;
        cached[i] = 1;
    }
}
