// kforge:launch k grid=(M * N) block=(1)
#include <cuda_fp16.h>
#pragma unroll 4
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#if defined(FOO) && BAR > 2
#line 7 "x.cl"
#endif
#define STR(x) #x \
  /* continued */
??= trigraph
_Pragma("message")
__kernel void k(__global const float* x, __global const half* w, __global float* y, const float eps, const int M, const int N) {
  y[get_global_id(0)] = x[get_global_id(0)];
}
