// y = 2 * relu(x) for the imported elementwise task: one work-item per element.
// kforge:launch scaled_relu grid=(cdiv(batch_size * dim, 256)) block=(256)

__kernel void scaled_relu(__global const float* x, __global float* out, int batch_size, int dim)
{
    const int i = get_global_id(0);
    if (i < batch_size * dim)
        out[i] = 2.0f * fmax(x[i], 0.0f);
}
