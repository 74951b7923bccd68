// expert:name vector_add_vec
// expert:tasks vector_add
// expert:pattern VW-wide vector loads and stores, EPT contiguous vectors per work-item, a scalar tail for the last N % VW elements
//
// A memory-bound kernel runs at the speed of its memory accesses, so each access should be as
// wide as the hardware allows and the per-element overhead (index arithmetic, bounds checks,
// work-item scheduling) should be paid rarely. Each work-item adds EPT consecutive vectors of VW
// floats (vector v at v = gid * EPT + i): on a CPU one vector is one SIMD register and a work-item
// streams EPT * VW * 4 contiguous bytes; on a GPU prefer EPT = 1, where neighbouring work-items
// then read neighbouring vectors (coalesced). Only the work-item holding the last, partial
// vector runs the bounds-checked scalar tail.
//
// Tuning: VW the vector width, EPT vectors per work-item, BLOCK the work-group size.

// kforge:param VW in {4, 8, 16} = 16
// kforge:param EPT in {1, 2, 4, 8} = 4
// kforge:param BLOCK in {16, 64, 256} = 64
// kforge:param NT in {0, 1} = 1
// kforge:launch vector_add grid=(cdiv(N, VW * EPT * BLOCK)) block=(BLOCK)

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define floatVW CAT(float, VW)

// Element-wise unaligned vector loads and stores: compilers merge them into vector accesses, and
// they avoid vloadn/vstoren, which PoCL 3.1 does not declare for __global pointers under CL3.0.
#define LOAD4(p) ((float4)((p)[0], (p)[1], (p)[2], (p)[3]))
#define LOAD8(p) ((float8)(LOAD4(p), LOAD4((p) + 4)))
#define LOAD16(p) ((float16)(LOAD8(p), LOAD8((p) + 8)))
#define STORE4(v, p) ((p)[0] = (v).s0, (p)[1] = (v).s1, (p)[2] = (v).s2, (p)[3] = (v).s3)
#define STORE8(v, p) (STORE4((v).lo, (p)), STORE4((v).hi, (p) + 4))
#define STORE16(v, p) (STORE8((v).lo, (p)), STORE8((v).hi, (p) + 8))
#define LOADVW CAT(LOAD, VW)
#define STOREVW CAT(STORE, VW)

// Streaming (non-temporal) stores: z is written once and not read again, so on a CPU writing it
// around the caches saves the read-for-ownership of every output line (a quarter of the traffic).
// Only where the compiler has the clang builtin; elsewhere NT = 1 is a plain store.
#if defined(__has_builtin)
#if __has_builtin(__builtin_nontemporal_store)
#define HAVE_NT_STORE 1
#endif
#endif
#if NT && defined(HAVE_NT_STORE)
#define STORE_OUT(v, p) __builtin_nontemporal_store((v), (__global floatVW*)(p))
#else
#define STORE_OUT(v, p) STOREVW(v, p)
#endif

__kernel void vector_add(__global const float* x, __global const float* y,
                         __global float* z, int N)
{
    const int first = get_global_id(0) * (VW * EPT);
    if (first + VW * EPT <= N) {
#pragma unroll
        for (int i = 0; i < EPT; ++i) {
            const int at = first + i * VW;
            const floatVW s = LOADVW(x + at) + LOADVW(y + at);
            STORE_OUT(s, z + at);
        }
        return;
    }
    for (int i = first; i < N; ++i)   // the one work-item that straddles the end of the arrays
        z[i] = x[i] + y[i];
}
