// The maximum of each row and the first column holding it: one work-item per row.
// kforge:launch rowmax grid=(cdiv(rows, 64)) block=(64)

__kernel void rowmax(__global const float* x, __global float* out0, __global long* out1, int rows, int cols)
{
    const int r = get_global_id(0);
    if (r >= rows)
        return;
    float best = x[r * cols];
    long at = 0;
    for (int c = 1; c < cols; ++c) {
        const float v = x[r * cols + c];
        if (v > best) {
            best = v;
            at = c;
        }
    }
    out0[r] = best;
    out1[r] = at;
}
