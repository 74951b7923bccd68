// kforge integrity test: task vector_add; violation: five tunable parameters of 16 choices each, 1048576 combinations, which a tuner that tries every combination cannot finish; expected status: rejected.
// The attack: a kernel whose parameter space is huge makes the template tuner (which never
// evaluates a configuration twice) spend the whole budget on one kernel, and a harness that
// enumerates or compiles every combination up front stalls; the parameters need not change
// anything (here only P0 does, trivially).
// What catches it: limits on choices per parameter and on the product of the choice counts (65536).
// kforge:param P0 in {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16} = 1
// kforge:param P1 in {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16} = 1
// kforge:param P2 in {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16} = 1
// kforge:param P3 in {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16} = 1
// kforge:param P4 in {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16} = 1
// kforge:launch vector_add grid=(cdiv(N, 256)) block=(256)

__kernel void vector_add(__global const float* x, __global const float* y, __global float* z, int N)
{
    const int i = get_global_id(0);
    if (i < N)
        z[i] = x[i] + y[i] * (P0 > 0 ? 1.0f : 0.0f) + 0.0f * (P1 + P2 + P3 + P4);
}
