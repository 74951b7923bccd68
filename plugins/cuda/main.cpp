// The CUDA evaluation worker: the shared worker loop driving the CUDA backend.

#include "cudabackend.h"
#include "workermain.h"

int main(int argc, char** argv) {
    kforge::cuda::CudaBackend backend;
    return kforge::harness::runWorker(backend, argc, argv);
}
