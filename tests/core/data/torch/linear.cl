// y = x W^T + b for the imported linear task: one work-item per output element.
// kforge:launch linear grid=(cdiv(out_features, 16), cdiv(batch_size, 16)) block=(16, 16)

__kernel void linear(__global const float* x, __global const float* linear_weight,
                     __global const float* linear_bias, __global float* out,
                     int batch_size, int in_features, int out_features)
{
    const int j = get_global_id(0);
    const int i = get_global_id(1);
    if (i >= batch_size || j >= out_features)
        return;
    float acc = linear_bias[j];
    for (int k = 0; k < in_features; ++k)
        acc += x[i * in_features + k] * linear_weight[j * in_features + k];
    out[i * out_features + j] = acc;
}
