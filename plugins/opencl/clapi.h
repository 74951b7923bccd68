#pragma once
// The OpenCL API as the worker compiles against it: the 3.0 headers, with the 1.2 entry points a
// 1.2 platform needs still declared (clCreateCommandQueue is deprecated from 2.0 on but is the only
// queue constructor a 1.2 platform has).

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
#ifndef CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#endif
#include <CL/cl.h>
