// expert:name bias_gelu_vec
// expert:tasks bias_gelu
// expert:pattern 2D launch (no modulo), VW-wide vector loads, the bias vector reused over RPI rows, tanh rewritten as one exp: gelu(v) = v / (1 + exp(-2u))
//
// An elementwise kernel is bound by memory and by the cost of its maths. Three changes over the
// one-element-per-work-item baseline:
//  - A 2D launch: dimension 0 runs along the columns, so the bias index is the column, with no
//    integer modulo per element.
//  - Each work-item handles VW contiguous columns (one vector load of x and of the bias, one
//    vector store) for RPI consecutive rows, loading its slice of the bias once.
//  - 0.5 * v * (1 + tanh(u)) = v * sigmoid(2u) = v / (1 + exp(-2u)): one exp and one division
//    instead of a tanh. It is exact algebra, and for large |u| it saturates cleanly (exp -> inf
//    gives -0, exp -> 0 gives v), so it stays within float rounding of the tanh form.
// Columns past the last whole vector (odd N) and rows past M are bounds-checked.
//
// Tuning: VW the vector width, RPI rows per work-item, BX x BY the work-group shape.

// kforge:param VW in {4, 8, 16} = 16
// kforge:param RPI in {1, 2, 4} = 2
// kforge:param BX in {4, 16, 64} = 16
// kforge:param BY in {1, 4} = 1
// kforge:launch bias_gelu grid=(cdiv(N, VW * BX), cdiv(M, RPI * BY)) block=(BX, BY)

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

// -2 * sqrt(2 / pi) * (v + 0.044715 v^3), the tanh argument times -2.
#define NEG_TWO_U(v) ((v) * (-1.5957691216f - 0.0713548163f * (v) * (v)))

__kernel void bias_gelu(__global const float* x, __global const float* b, __global float* y,
                        int M, int N)
{
    const int col0 = get_global_id(0) * VW;
    const int row0 = get_global_id(1) * RPI;
    if (col0 >= N || row0 >= M)
        return;
    const int rows = min(RPI, M - row0);

    if (col0 + VW <= N) {
        const floatVW bias = LOADVW(b + col0);
        for (int i = 0; i < rows; ++i) {
            const size_t at = (size_t)(row0 + i) * N + col0;
            const floatVW v = LOADVW(x + at) + bias;
            const floatVW g = v / (1.0f + exp(NEG_TWO_U(v)));
            STOREVW(g, y + at);
        }
        return;
    }
    for (int i = 0; i < rows; ++i) {
        for (int j = col0; j < N; ++j) {
            const size_t at = (size_t)(row0 + i) * N + j;
            const float v = x[at] + b[j];
            y[at] = v / (1.0f + exp(NEG_TWO_U(v)));
        }
    }
}
