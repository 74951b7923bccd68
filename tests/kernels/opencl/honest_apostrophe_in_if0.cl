// kforge integrity test: task row_sum; violation: none, a correct kernel preceded by #if 0 notes whose prose has apostrophes; expected status: pass.
// Text in an #if 0 group is skipped by the compiler, so an unpaired apostrophe there is legal (at
// most a warning). A blanker that does not know #if 0 opens a character literal at "didn't" and
// blanks up to the next apostrophe ("it's", in the second group), which hides this file's kernel
// signature: the launch then names a kernel that "is not defined". Such notes are common in
// candidates that keep an old idea around.
// kforge:param BLOCK = 64
// kforge:launch row_sum grid=(cdiv(M, BLOCK)) block=(BLOCK)

#if 0
Tried a work-group per row first; it didn't help at N = 1001.
#endif

__kernel void row_sum(__global const float* x, __global float* y, int M, int N)
{
    const int row = get_global_id(0);
    if (row >= M)
        return;
    __global const float* r = x + (size_t)row * N;
    float s = 0.0f;
    for (int j = 0; j < N; ++j)
        s += r[j];
    y[row] = s;
}

#if 0
Next: split the row in four; it's worth a try at the default N.
#endif
