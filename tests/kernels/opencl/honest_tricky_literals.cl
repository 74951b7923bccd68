// kforge integrity test: task vector_add; violation: none, a correct kernel whose string and character literals hold comment markers, quotes and apostrophes; expected status: pass.
// Legal OpenCL C: "/*" and "//" inside a string start no comment, '"' is a character, and the
// apostrophe in "it's" is inside a string. A blanker that gets any of these wrong hides part of the
// file (possibly the kernel's signature) from the checks; one that lexes like the compiler accepts it.
// kforge:param BLOCK = 256
// kforge:launch vector_add grid=(cdiv(N, BLOCK)) block=(BLOCK)

__constant char kNote[] = "it's /* not a comment */ // nor this \" quote";
__constant char kQuote = '"';
__constant char kApostrophe = '\'';

__kernel void vector_add(__global const float* x, __global const float* y, __global float* z, int N)
{
    const int i = get_global_id(0);
    // kNote[0] is 'i', kQuote is '"', kApostrophe is '\'': the factor below is always 1.
    const float one = (kNote[0] == 'i' && kQuote == '"' && kApostrophe == 39) ? 1.0f : 0.0f;
    if (i < N)
        z[i] = (x[i] + y[i]) * one;
}
