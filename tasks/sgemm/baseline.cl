// Baseline sgemm: one work-item per element of C, straight from global memory. Every element of
// A and B is fetched M or N times; there is no data reuse beyond what the caches find. Left for
// candidates: local-memory tiling, register blocking (several C elements per work-item), vector
// loads, double buffering.

// kforge:param BX in {8, 16, 32} = 16
// kforge:param BY in {4, 8, 16} = 16
// kforge:launch sgemm grid=(cdiv(N, BX), cdiv(M, BY)) block=(BX, BY)

__kernel void sgemm(__global const float* A, __global const float* B, __global float* C,
                    int M, int N, int K)
{
    // Dimension 0 runs along N so that a work-group's reads of B and writes of C are contiguous.
    const int col = get_global_id(0);
    const int row = get_global_id(1);
    if (row >= M || col >= N)   // edge work-groups overhang odd M and N
        return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
}
