// Behaviour descriptors: the built-in rules place realistic CUDA and OpenCL kernels (inline
// samples and the tasks' own baselines and references) in the expected cells; parameter and
// compile-fact conditions work; broken descriptor files are reported with the file, the JSON path
// of the bad entry and what is wrong.

#include "search/descriptors.h"

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QTemporaryDir>
#include <QTest>

#include <map>
#include <utility>
#include <vector>

using kforge::model::Cell;
using kforge::model::ParamValues;
using kforge::search::DescriptorSpace;
using kforge::search::KernelFacts;
using kforge::spec::Dialect;

Q_DECLARE_METATYPE(Dialect)

namespace {

const DescriptorSpace& builtIn() {
    static const DescriptorSpace space = [] {
        auto loaded = DescriptorSpace::builtIn();
        if (!loaded)
            qFatal("the built-in descriptors do not load: %s", loaded.error().c_str());
        return *loaded;
    }();
    return space;
}

QString cellText(const Cell& c) {
    return QStringLiteral("(%1, %2, %3)").arg(c[0]).arg(c[1]).arg(c[2]);
}

// The effective parameter values of a kernel file: every declared parameter at its default.
ParamValues defaultsOf(const QString& source, Dialect dialect) {
    auto parsed = kforge::spec::KernelFile::parse(source.toStdString(), dialect);
    if (!parsed)
        qFatal("kernel file does not parse: %s", parsed.error().c_str());
    ParamValues values;
    for (const auto& p : parsed->params)
        values[p.name] = p.value;
    return values;
}

// A valid space with one simple rule per level; a level (d, l) or a whole dimension d can be
// replaced by the given JSON text, to make one thing wrong at a known path.
QByteArray spaceJson(const std::map<std::pair<int, int>, QString>& levels = {},
                     const std::map<int, QString>& dims = {}) {
    const char* keys[] = {"memory", "compute", "granularity"};
    QStringList dimTexts;
    for (int d = 0; d < 3; ++d) {
        if (dims.count(d)) {
            dimTexts << dims.at(d);
            continue;
        }
        QStringList levelTexts;
        for (int l = 0; l < 4; ++l) {
            if (levels.count({d, l}))
                levelTexts << levels.at({d, l});
            else if (l == 0)
                levelTexts << QStringLiteral(R"({"name": "none"})");
            else
                levelTexts << QStringLiteral(
                                  R"({"name": "L%1", "rules": [{"why": "w%1", "patterns": ["\\bLEVEL%1\\b"]}]})")
                                  .arg(l);
        }
        dimTexts << QStringLiteral(R"({"key": "%1", "title": "T", "levels": [%2]})")
                        .arg(QLatin1String(keys[d]), levelTexts.join(QStringLiteral(", ")));
    }
    return QStringLiteral(R"({"version": 1, "dimensions": [%1]})").arg(dimTexts.join(QStringLiteral(", "))).toUtf8();
}

// Small realistic kernels and the cell each belongs in (memory, compute, granularity).
struct Sample {
    const char* name;
    Dialect dialect;
    Cell cell;
    const char* source;
};

#ifndef Q_MOC_RUN // moc's scanner loses its way in raw strings that hold kernel code
const std::vector<Sample>& sampleKernels() {
    static const std::vector<Sample> list = {
        // ---- CUDA
        {"cuda one element per thread", Dialect::Cuda, {0, 0, 0}, R"k(
extern "C" __global__ void scale(const float* __restrict__ x, float* __restrict__ y, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = 2.0f * x[i];
})k"},
        {"cuda grid-stride loop", Dialect::Cuda, {0, 0, 1}, R"k(
extern "C" __global__ void scale(const float* x, float* y, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] = 2.0f * x[i];
})k"},
        {"cuda float4 and __ldg", Dialect::Cuda, {1, 0, 1}, R"k(
extern "C" __global__ void add4(const float* __restrict__ x, const float* __restrict__ y, float* z, int n4)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n4)
        return;
    const float4 a = __ldg(reinterpret_cast<const float4*>(x) + i);
    const float4 b = __ldg(reinterpret_cast<const float4*>(y) + i);
    reinterpret_cast<float4*>(z)[i] = make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
})k"},
        {"cuda half2 fused math", Dialect::Cuda, {1, 1, 1}, R"k(
#include <cuda_fp16.h>
extern "C" __global__ void axpy_h2(const __half2* __restrict__ x, __half2* __restrict__ y, __half2 a, int n2)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n2)
        y[i] = __hfma2(a, x[i], y[i]);
})k"},
        {"cuda fast-math intrinsics", Dialect::Cuda, {0, 1, 0}, R"k(
extern "C" __global__ void sig(const float* x, float* y, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = 1.0f / (1.0f + __expf(-x[i]));
})k"},
        {"cuda warp per row", Dialect::Cuda, {0, 2, 2}, R"k(
extern "C" __global__ void row_max(const float* x, float* y, int M, int N)
{
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (row >= M)
        return;
    float m = -1e30f;
    for (int j = lane; j < N; j += 32)
        m = fmaxf(m, x[(size_t)row * N + j]);
    for (int o = 16; o > 0; o >>= 1)
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    if (lane == 0)
        y[row] = m;
})k"},
        {"cuda block reduction", Dialect::Cuda, {2, 0, 3}, R"k(
// kforge:param BLOCK in {128, 256} = 256
extern "C" __global__ void row_sum(const float* x, float* y, int N)
{
    __shared__ float buf[BLOCK];
    float s = 0.0f;
    for (int j = threadIdx.x; j < N; j += BLOCK)
        s += x[(size_t)blockIdx.x * N + j];
    buf[threadIdx.x] = s;
    __syncthreads();
    for (int h = BLOCK / 2; h > 0; h >>= 1) {
        if (threadIdx.x < h)
            buf[threadIdx.x] += buf[threadIdx.x + h];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        y[blockIdx.x] = buf[0];
})k"},
        {"cuda register-tiled sgemm", Dialect::Cuda, {3, 1, 3}, R"k(
// kforge:param BM = 64
// kforge:param BN = 64
// kforge:param BK = 8
// kforge:param TM in {4, 8} = 8
// kforge:param TN in {4, 8} = 8
extern "C" __global__ void sgemm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                 int M, int N, int K)
{
    __shared__ float As[BK][BM];
    __shared__ float Bs[BK][BN];
    float acc[TM][TN] = {};
    float a[TM], b[TN];
    const int tr = threadIdx.x / (BN / TN), tc = threadIdx.x % (BN / TN);
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int e = threadIdx.x; e < BM * BK; e += blockDim.x) {
            As[e % BK][e / BK] = A[(size_t)(blockIdx.y * BM + e / BK) * K + k0 + e % BK];
            Bs[e / BN][e % BN] = B[(size_t)(k0 + e / BN) * N + blockIdx.x * BN + e % BN];
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
#pragma unroll
            for (int i = 0; i < TM; ++i) a[i] = As[kk][tr * TM + i];
#pragma unroll
            for (int j = 0; j < TN; ++j) b[j] = Bs[kk][tc * TN + j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j)
                    acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j)
            C[(size_t)(blockIdx.y * BM + tr * TM + i) * N + blockIdx.x * BN + tc * TN + j] = acc[i][j];
})k"},
        {"cuda pipeline memcpy_async", Dialect::Cuda, {3, 0, 3}, R"k(
#include <cuda_pipeline.h>
extern "C" __global__ void stage(const float* __restrict__ x, float* __restrict__ y, int n)
{
    extern __shared__ float buf[];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        __pipeline_memcpy_async(&buf[threadIdx.x], &x[i], sizeof(float));
    __pipeline_commit();
    __pipeline_wait_prior(0);
    __syncthreads();
    if (i < n)
        y[i] = buf[blockDim.x - 1 - threadIdx.x];
})k"},
        {"cuda cp.async in inline asm", Dialect::Cuda, {3, 0, 3}, R"k(
extern "C" __global__ void stage(const float4* __restrict__ x, float4* __restrict__ y)
{
    __shared__ float4 buf[256];
    const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(&buf[threadIdx.x]));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(dst), "l"(x + blockIdx.x * 256 + threadIdx.x));
    asm volatile("cp.async.wait_all;\n" ::);
    __syncthreads();
    y[blockIdx.x * 256 + threadIdx.x] = buf[255 - threadIdx.x];
})k"},
        {"cuda mma.sync in inline asm", Dialect::Cuda, {3, 3, 2}, R"k(
extern "C" __global__ void mma_tile(const unsigned* a, const unsigned* b, float* c)
{
    const int lane = threadIdx.x % 32;
    unsigned a0 = a[lane], a1 = a[32 + lane], a2 = a[64 + lane], a3 = a[96 + lane];
    unsigned b0 = b[lane], b1 = b[32 + lane];
    float d0 = 0, d1 = 0, d2 = 0, d3 = 0;
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    c[lane * 4 + 0] = d0; c[lane * 4 + 1] = d1; c[lane * 4 + 2] = d2; c[lane * 4 + 3] = d3;
})k"},
        {"cuda wmma from global memory", Dialect::Cuda, {3, 3, 2}, R"k(
#include <mma.h>
using namespace nvcuda;
extern "C" __global__ void tile16(const __half* A, const __half* B, float* C, int K)
{
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(a, A + k, K);
        wmma::load_matrix_sync(b, B + k, K);
        wmma::mma_sync(acc, a, b, acc);
    }
    wmma::store_matrix_sync(C, acc, 16, wmma::mem_row_major);
})k"},
        {"cuda words in comments and strings do not count", Dialect::Cuda, {0, 0, 0}, R"k(
// Left for later: __shared__ tiles, cp.async, mma.sync, __shfl_xor_sync, float4 loads.
/* wmma::fragment<wmma::matrix_a, 16, 16, 16, __half> a; __syncthreads(); */
extern "C" __global__ void copy(const float* x, float* y, int n)
{
    const char* note = "__shared__ float4 __syncthreads() wmma::";
    (void)note;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = x[i];
})k"},
        {"cuda float4 arithmetic is not vector math", Dialect::Cuda, {1, 0, 1}, R"k(
extern "C" __global__ void twice(const float4* x, float4* y, int n4)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        const float4 v = x[i];
        y[i] = make_float4(2.0f * v.x, 2.0f * v.y, 2.0f * v.z, 2.0f * v.w);
    }
})k"},
        // ---- OpenCL
        {"opencl one element per work-item", Dialect::OpenCL, {0, 0, 0}, R"k(
__kernel void scale(__global const float* x, __global float* y, int n)
{
    const int i = get_global_id(0);
    if (i < n)
        y[i] = 2.0f * x[i];
})k"},
        {"opencl float4 vector arithmetic", Dialect::OpenCL, {1, 1, 1}, R"k(
__kernel void twice(__global const float4* x, __global float4* y, int n4)
{
    const int i = get_global_id(0);
    if (i < n4)
        y[i] = x[i] * 2.0f;
})k"},
        {"opencl vload4 / vstore4", Dialect::OpenCL, {1, 1, 1}, R"k(
__kernel void add(__global const float* x, __global const float* y, __global float* z, int n4)
{
    const int i = get_global_id(0);
    if (i < n4)
        vstore4(vload4(i, x) + vload4(i, y), i, z);
})k"},
        {"opencl __local tiles with mad", Dialect::OpenCL, {2, 1, 3}, R"k(
#define TS 16
__kernel void sgemm(__global const float* A, __global const float* B, __global float* C, int M, int N, int K)
{
    __local float As[TS][TS];
    __local float Bs[TS][TS];
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int col = get_global_id(0), row = get_global_id(1);
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TS) {
        As[ty][tx] = A[row * K + k0 + tx];
        Bs[ty][tx] = B[(k0 + ty) * N + col];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int kk = 0; kk < TS; ++kk)
            acc = mad(As[ty][kk], Bs[kk][tx], acc);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    C[row * N + col] = acc;
})k"},
        {"opencl bare local qualifier", Dialect::OpenCL, {2, 0, 3}, R"k(
kernel void reverse(global const float* x, global float* y)
{
    local float tile[256];
    const int l = get_local_id(0);
    tile[l] = x[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    y[get_global_id(0)] = tile[255 - l];
})k"},
        {"opencl sub-group reduction", Dialect::OpenCL, {0, 2, 2}, R"k(
__kernel void row_sum(__global const float* x, __global float* y, int N)
{
    const int row = get_group_id(0) * get_num_sub_groups() + get_sub_group_id();
    float s = 0.0f;
    for (int j = get_sub_group_local_id(); j < N; j += get_max_sub_group_size())
        s += x[row * N + j];
    s = sub_group_reduce_add(s);
    if (get_sub_group_local_id() == 0)
        y[row] = s;
})k"},
        {"opencl async_work_group_copy", Dialect::OpenCL, {3, 0, 3}, R"k(
__kernel void stage(__global const float* x, __global float* y)
{
    __local float buf[256];
    event_t e = async_work_group_copy(buf, x + get_group_id(0) * 256, 256, 0);
    wait_group_events(1, &e);
    barrier(CLK_LOCAL_MEM_FENCE);
    y[get_global_id(0)] = buf[255 - get_local_id(0)];
})k"},
        {"opencl register tile with fma", Dialect::OpenCL, {3, 1, 3}, R"k(
#define TS 32
#define WPT 8
__kernel void sgemm(__global const float* A, __global const float* B, __global float* C, int M, int N, int K)
{
    __local float As[TS][TS];
    __local float Bs[TS][TS];
    const int row = get_local_id(0), col = get_local_id(1);
    float acc[WPT];
#pragma unroll
    for (int w = 0; w < WPT; ++w)
        acc[w] = 0.0f;
    for (int t = 0; t < K / TS; ++t) {
#pragma unroll
        for (int w = 0; w < WPT; ++w) {
            As[col + w * (TS / WPT)][row] = A[(t * TS + col + w * (TS / WPT)) * M + get_group_id(0) * TS + row];
            Bs[col + w * (TS / WPT)][row] = B[(get_group_id(1) * TS + col + w * (TS / WPT)) * K + t * TS + row];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TS; ++k)
#pragma unroll
            for (int w = 0; w < WPT; ++w)
                acc[w] = fma(As[k][row], Bs[col + w * (TS / WPT)][k], acc[w]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
})k"},
        {"opencl grid-stride loop", Dialect::OpenCL, {0, 0, 1}, R"k(
__kernel void scale(__global const float* x, __global float* y, int n)
{
    for (int i = get_global_id(0); i < n; i += get_global_size(0))
        y[i] = 2.0f * x[i];
})k"},
        {"opencl native math", Dialect::OpenCL, {0, 1, 0}, R"k(
__kernel void sig(__global const float* x, __global float* y)
{
    const int i = get_global_id(0);
    y[i] = native_recip(1.0f + native_exp(-x[i]));
})k"},
    };
    return list;
}
#endif

QString level(const QString& rules) {
    return QStringLiteral(R"({"name": "x", "rules": [%1]})").arg(rules);
}

} // namespace

class TestDescriptors : public QObject {
    Q_OBJECT

private slots:
    void builtInShape() {
        const auto& dims = builtIn().dimensions();
        QCOMPARE(dims[0].key, QStringLiteral("memory"));
        QCOMPARE(dims[1].key, QStringLiteral("compute"));
        QCOMPARE(dims[2].key, QStringLiteral("granularity"));
        for (const auto& d : dims) {
            QCOMPARE(d.levels.size(), kforge::search::kLevels);
            QVERIFY(!d.title.isEmpty());
        }
        QCOMPARE(dims[0].levels.first(), QStringLiteral("global only"));
        QCOMPARE(dims[1].levels.last(), QStringLiteral("tensor cores"));
    }

    void samples_data() {
        QTest::addColumn<Dialect>("dialect");
        QTest::addColumn<QString>("source");
        QTest::addColumn<int>("memory");
        QTest::addColumn<int>("compute");
        QTest::addColumn<int>("granularity");
        for (const Sample& s : sampleKernels())
            QTest::newRow(s.name) << s.dialect << QString::fromUtf8(s.source) << s.cell[0] << s.cell[1] << s.cell[2];
    }

    void samples() {
        QFETCH(Dialect, dialect);
        QFETCH(QString, source);
        QFETCH(int, memory);
        QFETCH(int, compute);
        QFETCH(int, granularity);
        KernelFacts facts;
        facts.dialect = dialect;
        // No launch plan in these snippets, so no parse: the rules read the source alone.
        facts.params = {};
        QStringList reasons;
        const Cell cell = builtIn().describe(source, facts, &reasons);
        QVERIFY2(cell == (Cell{memory, compute, granularity}),
                 qPrintable(cellText(cell) + QStringLiteral("\n") + reasons.join(QLatin1Char('\n'))));
    }

    // The tasks' own kernels, read from KFORGE_TASKS_DIR.
    void taskKernels_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<int>("memory");
        QTest::addColumn<int>("compute");
        QTest::addColumn<int>("granularity");
        const auto row = [](const char* file, int m, int c, int g) {
            QTest::newRow(file) << QString::fromLatin1(file) << m << c << g;
        };
        // One element per thread, scalar, global memory only.
        row("vector_add/baseline.cu", 0, 0, 0);
        row("vector_add/baseline.cl", 0, 0, 0);
        row("vector_add/reference.cu", 0, 0, 0);
        row("vector_add/reference.cl", 0, 0, 0);
        row("bias_gelu/baseline.cu", 0, 0, 0);
        row("bias_gelu/baseline.cl", 0, 0, 0);
        row("bias_gelu/reference.cu", 0, 0, 0);
        row("bias_gelu/reference.cl", 0, 0, 0);
        row("sgemm/baseline.cl", 0, 0, 0);
        row("sgemm/reference.cu", 0, 0, 0);
        row("sgemm/reference.cl", 0, 0, 0);
        row("transpose/reference.cu", 0, 0, 0);
        row("conv2d/reference.cu", 0, 0, 0);
        // One work-item per row, a row of outputs written in a loop; a row reduced to one output is
        // still one element per work-item.
        row("row_sum/reference.cl", 0, 0, 0);
        row("softmax/reference.cl", 0, 0, 1);
        row("layernorm/reference.cl", 0, 0, 1);
        // A warp per row: shuffles, no shared memory.
        row("gemv/baseline.cu", 0, 2, 2);
        // A block per row or tile through shared / local memory and barriers.
        row("sgemm/baseline.cu", 2, 0, 3);
        row("gemm_bias_relu/baseline.cu", 2, 0, 3);
        row("gemm_bias_relu/reference.cu", 2, 0, 3);
        row("gemm_fp16/reference.cu", 2, 0, 3);
        row("gemm_bf16/reference.cu", 2, 0, 3);
        row("transpose/baseline.cu", 2, 0, 3);
        row("conv2d/baseline.cu", 2, 0, 3);
        row("row_sum/baseline.cl", 2, 0, 3);
        row("softmax/baseline.cl", 2, 0, 3);
        row("layernorm/baseline.cl", 2, 0, 3);
        row("gemv/reference.cu", 2, 0, 3);
        row("row_sum/reference.cu", 2, 0, 3);
        row("softmax/reference.cu", 2, 0, 3);
        row("layernorm/reference.cu", 2, 0, 3);
        row("layernorm_residual/reference.cu", 2, 0, 3);
        row("rmsnorm/reference.cu", 2, 0, 3);
        row("reduce_sum/reference.cu", 2, 0, 3);
        row("attention/reference.cu", 2, 0, 3);
        // Warp shuffles inside a block-wide reduction.
        row("row_sum/baseline.cu", 2, 2, 3);
        row("softmax/baseline.cu", 2, 2, 3);
        row("layernorm/baseline.cu", 2, 2, 3);
        row("layernorm_residual/baseline.cu", 2, 2, 3);
        row("rmsnorm/baseline.cu", 2, 2, 3);
        row("reduce_sum/baseline.cu", 2, 2, 3);
        // Register arrays (q and o rows) fed from shared K/V tiles.
        row("attention/baseline.cu", 3, 0, 3);
        // WMMA fragments over shared-memory tiles.
        row("gemm_fp16/baseline.cu", 3, 3, 3);
        row("gemm_bf16/baseline.cu", 3, 3, 3);
    }

    void taskKernels() {
        QFETCH(QString, file);
        QFETCH(int, memory);
        QFETCH(int, compute);
        QFETCH(int, granularity);
        const QString tasks = qEnvironmentVariable("KFORGE_TASKS_DIR");
        if (tasks.isEmpty())
            QSKIP("KFORGE_TASKS_DIR is not set (ctest sets it to the source tree's tasks/)");
        QFile f(QDir(tasks).filePath(file));
        QVERIFY2(f.open(QIODevice::ReadOnly), qPrintable(f.fileName() + QStringLiteral(": ") + f.errorString()));
        const QString source = QString::fromUtf8(f.readAll());
        KernelFacts facts;
        facts.dialect = file.endsWith(QLatin1String(".cu")) ? Dialect::Cuda : Dialect::OpenCL;
        facts.params = defaultsOf(source, facts.dialect);
        QStringList reasons;
        const Cell cell = builtIn().describe(source, facts, &reasons);
        QVERIFY2(cell == (Cell{memory, compute, granularity}),
                 qPrintable(cellText(cell) + QStringLiteral("\n") + reasons.join(QLatin1Char('\n'))));
    }

    void reasonsNameTheRule() {
        const QString source = QStringLiteral("extern \"C\" __global__ void k(float* y)\n"
                                              "{\n"
                                              "    __shared__ float buf[32];\n"
                                              "    buf[threadIdx.x] = y[threadIdx.x];\n"
                                              "    __syncthreads();\n"
                                              "    y[threadIdx.x] = buf[31 - threadIdx.x];\n"
                                              "}\n");
        KernelFacts facts;
        facts.dialect = Dialect::Cuda;
        QStringList reasons;
        const Cell cell = builtIn().describe(source, facts, &reasons);
        QCOMPARE(cell, (Cell{2, 0, 3}));
        QCOMPARE(reasons.size(), 3);
        QCOMPARE(reasons.at(0),
                 QStringLiteral("memory: shared-memory tiling (shared memory: matched \"__shared__\" on line 3)"));
        QCOMPARE(reasons.at(1), QStringLiteral("compute: scalar (no rule of a higher level matched)"));
        QVERIFY2(
            reasons.at(2).startsWith(QStringLiteral("granularity: a block per row / tile (threads share data through "
                                                    "shared memory and barriers: matched \"__shared__\" on line 3, "
                                                    "matched \"__syncthreads(\" on line 5")),
            qPrintable(reasons.at(2)));
        // Without the list, the same cell.
        QCOMPARE(builtIn().describe(source, facts), cell);
    }

    void builtInParamAndResourceRules() {
        const QString scalar = QStringLiteral("extern \"C\" __global__ void k(const float* x, float* y)\n"
                                              "{\n    y[blockIdx.x * blockDim.x + threadIdx.x] = x[threadIdx.x];\n}\n");
        KernelFacts facts;
        facts.dialect = Dialect::Cuda;
        QCOMPARE(builtIn().describe(scalar, facts), (Cell{0, 0, 0}));

        // A coarsening parameter of 2 or more means several elements per thread.
        facts.params = {{"VEC", 4}};
        QStringList reasons;
        QCOMPARE(builtIn().describe(scalar, facts, &reasons), (Cell{0, 0, 1}));
        QVERIFY2(reasons.at(2).contains(QLatin1String("VEC = 4")), qPrintable(reasons.at(2)));
        facts.params = {{"VEC", 1}};
        QCOMPARE(builtIn().describe(scalar, facts), (Cell{0, 0, 0}));

        // Shared memory the source does not spell out (a macro, a header) still shows in the
        // compile facts, per kernel as the CUDA worker reports them.
        facts.params = {};
        facts.resources = {{"k.registers", 16}, {"k.shared_bytes", 4096}};
        reasons.clear();
        QCOMPARE(builtIn().describe(scalar, facts, &reasons), (Cell{2, 0, 0}));
        QVERIFY2(reasons.at(0).contains(QLatin1String("shared_bytes = 4096")), qPrintable(reasons.at(0)));
        facts.resources = {{"k.shared_bytes", 0}};
        QCOMPARE(builtIn().describe(scalar, facts), (Cell{0, 0, 0}));
        // That rule is for CUDA only.
        facts.dialect = Dialect::OpenCL;
        facts.resources = {{"shared_bytes", 4096}};
        QCOMPARE(builtIn().describe(
                     QStringLiteral("__kernel void k(__global float* y) { y[get_global_id(0)] = 1.0f; }"), facts),
                 (Cell{0, 0, 0}));
    }

    void customConditions() {
        // Memory level 1 by a pattern only in CUDA, level 2 by registers, level 3 by a parameter
        // range together with a pattern that must be absent.
        QByteArray json = spaceJson(
            {{{0, 1}, level(QStringLiteral(R"({"why": "cuda only", "dialect": "cuda", "patterns": ["\\bFOO\\b"]})"))},
             {{0, 2},
              level(QStringLiteral(
                  R"({"why": "many registers", "conditions": [{"resource": "registers", "min": 64}]})"))},
             {{0, 3},
              level(QStringLiteral(
                  R"({"why": "mid VEC", "none": ["\\bBAR\\b"], "conditions": [{"param": "VEC", "min": 2, "max": 4}]})"))}});
        auto space = DescriptorSpace::fromJson(QJsonDocument::fromJson(json).object(), QStringLiteral("custom"));
        QVERIFY2(space, space ? "" : space.error().c_str());
        KernelFacts facts;
        facts.dialect = Dialect::Cuda;
        QCOMPARE(space->describe(QStringLiteral("FOO"), facts)[0], 1);
        facts.dialect = Dialect::OpenCL;
        QCOMPARE(space->describe(QStringLiteral("FOO"), facts)[0], 0);

        facts.resources = {{"a.registers", 32}, {"b.registers", 96}}; // the largest kernel counts
        QCOMPARE(space->describe(QString(), facts)[0], 2);
        facts.resources = {{"registers", 63}};
        QCOMPARE(space->describe(QString(), facts)[0], 0);
        facts.resources = {{"registers_per_block", 100}}; // another fact, not a per-kernel one
        QCOMPARE(space->describe(QString(), facts)[0], 0);

        facts.resources = {};
        facts.params = {{"VEC", 4}};
        QCOMPARE(space->describe(QString(), facts)[0], 3);
        QCOMPARE(space->describe(QStringLiteral("BAR"), facts)[0], 0);
        facts.params = {{"VEC", 8}};
        QCOMPARE(space->describe(QString(), facts)[0], 0);
        facts.params = {{"VECTOR", 4}};
        QCOMPARE(space->describe(QString(), facts)[0], 0);
        // The highest level wins.
        facts.params = {{"VEC", 2}};
        facts.resources = {{"registers", 128}};
        facts.dialect = Dialect::Cuda;
        QCOMPARE(space->describe(QStringLiteral("FOO"), facts)[0], 3);
    }

    void builtInFollowsResourceDir() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        QVERIFY(QDir(dir.path()).mkpath(QStringLiteral("search")));
        QFile f(dir.filePath(QStringLiteral("search/descriptors.json")));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(spaceJson());
        f.close();
        const QByteArray old = qgetenv("KFORGE_RESOURCES_DIR");
        qputenv("KFORGE_RESOURCES_DIR", dir.path().toUtf8());
        auto space = DescriptorSpace::builtIn();
        if (old.isEmpty())
            qunsetenv("KFORGE_RESOURCES_DIR");
        else
            qputenv("KFORGE_RESOURCES_DIR", old);
        QVERIFY2(space, space ? "" : space.error().c_str());
        QCOMPARE(space->dimensions()[1].levels.at(2), QStringLiteral("L2"));
        KernelFacts facts;
        QCOMPARE(space->describe(QStringLiteral("LEVEL3 LEVEL1"), facts), (Cell{3, 3, 3}));
    }

    // The regular expressions with unbalanced brackets are in plain literals: moc's scanner loses
    // its way in raw strings that hold them.
    void badFiles_data() {
        QTest::addColumn<QByteArray>("json");
        QTest::addColumn<QString>("expected"); // after "<file>: "

        const QString rule = QStringLiteral(R"({"why": "w", "patterns": ["x"]})");
        QTest::newRow("not json") << QByteArray("{\"version\": 1,\n  \"dimensions\": [}")
                                  << QStringLiteral("not valid JSON at line 2, column");
        QTest::newRow("not an object") << QByteArray("[1, 2]") << QStringLiteral("expected a JSON object");
        QTest::newRow("missing version") << QByteArray(R"({"dimensions": []})")
                                         << QStringLiteral("missing \"version\"");
        QTest::newRow("newer version") << spaceJson().replace("\"version\": 1", "\"version\": 2")
                                       << QStringLiteral(
                                              "version: unsupported version 2 (this kforge reads version 1)");
        QTest::newRow("unknown top-level key") << spaceJson().replace("\"version\"", "\"dims\": [], \"version\"")
                                               << QStringLiteral("unknown key \"dims\"");
        QTest::newRow("two dimensions") << QByteArray(
            R"({"version": 1, "dimensions": [{"key": "a", "levels": []}, {"key": "b", "levels": []}]})")
                                        << QStringLiteral("dimensions: expected 3 dimensions, found 2");
        QTest::newRow("three levels") << spaceJson(
            {}, {{1, QStringLiteral(R"({"key": "compute", "levels": [{"name": "a"}, %1, %1]})").arg(level(rule))}})
                                      << QStringLiteral("dimensions[1].levels: expected 4 levels, found 3");
        QTest::newRow("missing levels") << spaceJson({}, {{2, QStringLiteral(R"({"key": "granularity"})")}})
                                        << QStringLiteral("dimensions[2]: missing \"levels\"");
        QTest::newRow("missing key") << spaceJson({}, {{0, QStringLiteral(R"({"levels": []})")}})
                                     << QStringLiteral("dimensions[0]: missing \"key\"");
        QTest::newRow("duplicate key") << spaceJson().replace("\"key\": \"granularity\"", "\"key\": \"memory\"")
                                       << QStringLiteral("dimensions[2].key: \"memory\" names another dimension too");
        QTest::newRow("missing level name") << spaceJson({{{2, 3}, QStringLiteral(R"({"rules": [%1]})").arg(rule)}})
                                            << QStringLiteral("dimensions[2].levels[3]: missing \"name\"");
        QTest::newRow("rules on level 0") << spaceJson({{{0, 0}, level(rule)}})
                                          << QStringLiteral("dimensions[0].levels[0].rules: level 0 always matches");
        QTest::newRow("level without rules") << spaceJson({{{1, 2}, QStringLiteral(R"({"name": "x"})")}})
                                             << QStringLiteral("dimensions[1].levels[2]: missing \"rules\"");
        QTest::newRow("bad regex")
            << spaceJson({{{1, 2}, level(QStringLiteral("{\"why\": \"w\", \"patterns\": [\"ok\", \"(unclosed\"]}"))}})
            << QStringLiteral(
                   "dimensions[1].levels[2].rules[0].patterns[1]: invalid regular expression at offset 9: %1")
                   .arg(QRegularExpression(QStringLiteral("(unclosed")).errorString());
        QTest::newRow("bad regex in all")
            << spaceJson({{{0, 3}, level(rule + QStringLiteral(", {\"why\": \"w\", \"all\": [\"a[b\"]}"))}})
            << QStringLiteral("dimensions[0].levels[3].rules[1].all[0]: invalid regular expression");
        QTest::newRow("pattern not a string")
            << spaceJson({{{0, 1}, level(QStringLiteral(R"({"why": "w", "patterns": [3]})"))}})
            << QStringLiteral("dimensions[0].levels[1].rules[0].patterns[0]: expected a non-empty string");
        QTest::newRow("unknown dialect")
            << spaceJson({{{0, 1}, level(QStringLiteral(R"({"why": "w", "dialect": "hip", "patterns": ["x"]})"))}})
            << QStringLiteral(
                   "dimensions[0].levels[1].rules[0].dialect: unknown dialect \"hip\" (expected cuda, opencl or any)");
        QTest::newRow("missing why") << spaceJson({{{0, 1}, level(QStringLiteral(R"({"patterns": ["x"]})"))}})
                                     << QStringLiteral("dimensions[0].levels[1].rules[0]: missing \"why\"");
        QTest::newRow("misspelt key") << spaceJson(
            {{{0, 1}, level(QStringLiteral(R"({"why": "w", "pattern": ["x"]})"))}})
                                      << QStringLiteral("dimensions[0].levels[1].rules[0]: unknown key \"pattern\"");
        QTest::newRow("rule tests nothing")
            << spaceJson({{{2, 1}, level(QStringLiteral(R"({"why": "w", "dialect": "cuda"})"))}})
            << QStringLiteral("dimensions[2].levels[1].rules[0]: the rule tests nothing");
        QTest::newRow("condition with both")
            << spaceJson({{{2, 1},
                           level(QStringLiteral(
                               R"({"why": "w", "conditions": [{"param": "A", "resource": "registers", "min": 1}]})"))}})
            << QStringLiteral("dimensions[2].levels[1].rules[0].conditions[0]: needs exactly one of \"param\"");
        QTest::newRow("condition without bound")
            << spaceJson({{{2, 1}, level(QStringLiteral(R"({"why": "w", "conditions": [{"param": "VEC"}]})"))}})
            << QStringLiteral("dimensions[2].levels[1].rules[0].conditions[0]: needs \"min\", \"max\" or both");
        QTest::newRow("condition bound not a number")
            << spaceJson(
                   {{{2, 1}, level(QStringLiteral(R"({"why": "w", "conditions": [{"param": "VEC", "min": "2"}]})"))}})
            << QStringLiteral("dimensions[2].levels[1].rules[0].conditions[0].min: expected a number");
    }

    void badFiles() {
        QFETCH(QByteArray, json);
        QFETCH(QString, expected);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString path = dir.filePath(QStringLiteral("descriptors.json"));
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(json);
        f.close();
        const auto space = DescriptorSpace::load(path);
        QVERIFY2(!space, "a broken file loaded");
        const QString message = QString::fromStdString(space.error());
        QVERIFY2(message.startsWith(path + QStringLiteral(": ") + expected),
                 qPrintable(QStringLiteral("got: ") + message + QStringLiteral("\nwanted: ") + path
                            + QStringLiteral(": ") + expected));
    }

    void missingFile() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("nothing.json"));
        const auto space = DescriptorSpace::load(path);
        QVERIFY(!space);
        QVERIFY2(QString::fromStdString(space.error()).startsWith(path + QStringLiteral(": cannot read")),
                 space.error().c_str());
    }

    void validTestSpaceLoads() {
        // The helper's own document is valid, so each bad row above fails for its one reason.
        const auto space =
            DescriptorSpace::fromJson(QJsonDocument::fromJson(spaceJson()).object(), QStringLiteral("t"));
        QVERIFY2(space, space ? "" : space.error().c_str());
    }
};

QTEST_GUILESS_MAIN(TestDescriptors)
#include "tst_descriptors.moc"
