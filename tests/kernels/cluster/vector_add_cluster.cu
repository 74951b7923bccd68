// vector_add (tasks/vector_add) in thread block clusters of two, for kforge-gpucheck. The two
// blocks of a cluster share one tile of 2 * BLOCK elements: rank 0 loads x into its shared memory,
// rank 1 loads y into its own, and after a cluster barrier each block adds the halves it reads from
// both blocks' shared memory (distributed shared memory: mapa and ld.shared::cluster). A block that
// is not in a cluster of two (a launch without the cluster attribute) writes nothing, so only a
// launch with cluster=(2) verifies.

// kforge:param BLOCK = 256
// kforge:launch vector_add_cluster grid=(2 * cdiv(N, 2 * BLOCK)) block=(BLOCK) cluster=(2)

__device__ __forceinline__ unsigned clusterBlocks()
{
    unsigned n;
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
    return n;
}

__device__ __forceinline__ unsigned clusterRank()
{
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

__device__ __forceinline__ unsigned clusterIndex()
{
    unsigned c;
    asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(c));
    return c;
}

// Every thread of every block of the cluster arrives and waits: shared memory written before is
// visible to the whole cluster after it (release/acquire at cluster scope).
__device__ __forceinline__ void clusterSync()
{
    asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
}

// The float at the same shared-memory offset as `local`, in the block of rank `rank`.
__device__ __forceinline__ float loadFromBlock(const float* local, unsigned rank)
{
    const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(local));
    unsigned remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(address), "r"(rank));
    float v;
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(remote) : "memory");
    return v;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
    vector_add_cluster(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ z, int N)
{
    __shared__ float tile[2 * BLOCK]; // rank 0: x of the cluster's elements; rank 1: y
    // The same in every block of the grid, so no block waits at a barrier another one skips.
    if (clusterBlocks() != 2)
        return;
    const unsigned rank = clusterRank();
    const long long first = static_cast<long long>(clusterIndex()) * (2 * BLOCK);
    const float* source = rank == 0 ? x : y;
    for (int k = threadIdx.x; k < 2 * BLOCK; k += BLOCK) {
        const long long i = first + k;
        tile[k] = i < N ? source[i] : 0.0f;
    }
    clusterSync();
    const int k = static_cast<int>(rank) * BLOCK + threadIdx.x;
    const float a = loadFromBlock(&tile[k], 0);
    const float b = loadFromBlock(&tile[k], 1);
    if (first + k < N)
        z[first + k] = a + b;
    // A block's shared memory ends with it: neither leaves while the other may still read.
    clusterSync();
}
