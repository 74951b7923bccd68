// kforge integrity test: task sgemm; a correct alternative kernel (local-memory tiling); expected status: pass.
// Each work-group stages TILE x TILE blocks of A and B in local memory so that every global
// element is loaded once per tile instead of once per work-item. Out-of-range elements are
// loaded as zero, so edge tiles of the odd small sizes need no special path.

// kforge:param TILE in {8, 16} = 16
// kforge:launch sgemm_tiled grid=(cdiv(N, TILE), cdiv(M, TILE)) block=(TILE, TILE)

__kernel void sgemm_tiled(__global const float* A, __global const float* B, __global float* C,
                          int M, int N, int K)
{
    __local float As[TILE][TILE];
    __local float Bs[TILE][TILE];
    const int tx = get_local_id(0);
    const int ty = get_local_id(1);
    const int col = get_group_id(0) * TILE + tx;
    const int row = get_group_id(1) * TILE + ty;

    // No early return: every work-item must reach the barriers, in range or not.
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        const int ka = k0 + tx;   // column of A this work-item loads
        const int kb = k0 + ty;   // row of B this work-item loads
        As[ty][tx] = (row < M && ka < K) ? A[row * K + ka] : 0.0f;
        Bs[ty][tx] = (kb < K && col < N) ? B[kb * N + col] : 0.0f;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TILE; ++k)
            acc += As[ty][k] * Bs[k][tx];   // As row broadcast, Bs row contiguous: no bank conflicts
        barrier(CLK_LOCAL_MEM_FENCE);       // before the next tile overwrites As and Bs
    }
    if (row < M && col < N)
        C[row * N + col] = acc;
}
