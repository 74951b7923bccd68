// kforge integrity test: task vector_add; a correct kernel with vload4/vstore4 on global pointers; expected status: pass.
// OpenCL C builtins every vectorised candidate uses: the worker must pick a -cl-std under which the
// compiler provides them (PoCL 3.1 does not under CL3.0).

// kforge:launch vector_add grid=(cdiv(N, 1024)) block=(256)
__kernel void vector_add(__global const float* x, __global const float* y, __global float* z, int N)
{
    const int i = get_global_id(0);
    if (4 * i + 3 < N) {
        vstore4(vload4(i, x) + vload4(i, y), i, z);
    } else {
        for (int k = 4 * i; k < N && k < 4 * i + 4; ++k)
            z[k] = x[k] + y[k];
    }
}
