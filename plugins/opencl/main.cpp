// The OpenCL evaluation worker: the shared worker loop driving the OpenCL backend.

#include "openclbackend.h"
#include "workermain.h"

int main(int argc, char** argv) {
    kforge::opencl::OpenClBackend backend;
    return kforge::harness::runWorker(backend, argc, argv);
}
