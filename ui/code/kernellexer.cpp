#include "kernellexer.h"

namespace kforge::ui {

namespace {

// Qualifiers and storage words: styled as keywords.
constexpr const char* kCudaKeywords =
    "__global__ __device__ __host__ __shared__ __constant__ __managed__ __restrict__ __launch_bounds__ "
    "__forceinline__ __noinline__ __align__ __grid_constant__ __cluster_dims__";
// Built-in variables, synchronisation, memory and arithmetic intrinsics, half/bf16 conversions, warp
// shuffles, the wmma/mma API and asynchronous copies.
constexpr const char* kCudaBuiltins =
    "threadIdx blockIdx blockDim gridDim warpSize "
    "__syncthreads __syncthreads_count __syncthreads_and __syncthreads_or __syncwarp __threadfence "
    "__threadfence_block __threadfence_system __nanosleep "
    "__ldg __ldcg __ldca __ldcs __ldlu __ldcv __stcg __stcs __stwb __stwt __prefetch_global_l2 "
    "__shfl_sync __shfl_up_sync __shfl_down_sync __shfl_xor_sync __ballot_sync __any_sync __all_sync "
    "__activemask __match_any_sync __reduce_add_sync __reduce_max_sync __reduce_min_sync "
    "__popc __popcll __clz __ffs __brev __byte_perm __funnelshift_l __funnelshift_r __umulhi __mulhi __mul24 "
    "__fmaf_rn __fmul_rn __fadd_rn __fsub_rn __fdiv_rn __frcp_rn __fsqrt_rn __frsqrt_rn __fdividef __saturatef "
    "__expf __exp10f __logf __log2f __powf __sinf __cosf __tanf __sincosf "
    "rsqrtf sqrtf expf exp2f logf log2f tanhf erff fmaf fmaxf fminf fabsf floorf ceilf "
    "atomicAdd atomicSub atomicMax atomicMin atomicCAS atomicExch atomicAnd atomicOr atomicXor atomicInc "
    "__half2float __float2half __float2half_rn __float22half2_rn __floats2half2_rn __half22float2 __half2half2 "
    "__low2half __high2half __low2float __high2float __halves2half2 __hadd __hsub __hmul __hdiv __hfma __hneg "
    "__hadd2 __hsub2 __hmul2 __hfma2 __hmax __hmin __hmax2 __hmin2 __habs __hexp __hsqrt hrsqrt h2rsqrt "
    "__float2bfloat16 __float2bfloat16_rn __bfloat162float __floats2bfloat162_rn __bfloat1622float2 "
    "__float22bfloat162_rn __low2bfloat16 __high2bfloat16 "
    "nvcuda wmma mma fragment matrix_a matrix_b accumulator row_major col_major mem_row_major mem_col_major "
    "load_matrix_sync store_matrix_sync mma_sync fill_fragment precision "
    "__pipeline_memcpy_async __pipeline_commit __pipeline_wait_prior memcpy_async pipeline "
    "__cvta_generic_to_shared cooperative_groups this_thread_block tiled_partition";
constexpr const char* kCudaTypes =
    "half half2 __half __half2 nv_bfloat16 nv_bfloat162 __nv_bfloat16 __nv_bfloat162 "
    "char2 char4 uchar2 uchar4 short2 short4 ushort2 ushort4 int2 int3 int4 uint2 uint3 uint4 "
    "long2 longlong2 ulonglong2 float1 float2 float3 float4 double2 double4 dim3 "
    "size_t int8_t uint8_t int16_t uint16_t int32_t uint32_t int64_t uint64_t";

constexpr const char* kOpenClKeywords =
    "__kernel kernel __global global __local local __constant constant __private "
    "__read_only read_only __write_only write_only __read_write read_write __attribute__ "
    "reqd_work_group_size work_group_size_hint vec_type_hint intel_reqd_sub_group_size restrict uniform";
constexpr const char* kOpenClBuiltins =
    "get_global_id get_local_id get_group_id get_global_size get_local_size get_num_groups get_work_dim "
    "get_global_offset get_enqueued_local_size get_sub_group_id get_sub_group_local_id get_sub_group_size "
    "barrier work_group_barrier sub_group_barrier mem_fence read_mem_fence write_mem_fence "
    "CLK_LOCAL_MEM_FENCE CLK_GLOBAL_MEM_FENCE "
    "vload2 vload3 vload4 vload8 vload16 vstore2 vstore3 vstore4 vstore8 vstore16 vload_half vload_half2 "
    "vload_half4 vload_half8 vstore_half vstore_half2 vstore_half4 vstore_half8 vloada_half4 vstorea_half4 "
    "mad fma mad24 mul24 mad_hi mul_hi clamp mix step smoothstep dot cross length normalize select "
    "fmax fmin fabs exp exp2 log log2 sqrt rsqrt pow tanh erf floor ceil "
    "native_exp native_exp2 native_log native_log2 native_sqrt native_rsqrt native_recip native_divide "
    "native_powr native_sin native_cos half_exp half_log half_sqrt half_rsqrt half_recip half_divide "
    "atomic_add atomic_sub atomic_inc atomic_dec atomic_xchg atomic_cmpxchg atomic_min atomic_max "
    "atom_add atom_inc atom_cmpxchg async_work_group_copy async_work_group_strided_copy wait_group_events "
    "prefetch work_group_reduce_add work_group_reduce_max sub_group_reduce_add sub_group_reduce_max "
    "sub_group_broadcast sub_group_shuffle sub_group_shuffle_xor "
    "convert_float convert_float2 convert_float4 convert_half convert_half4 convert_int convert_int4 "
    "as_float as_float2 as_float4 as_int as_uint as_half2";
constexpr const char* kOpenClTypes =
    "half half2 half3 half4 half8 half16 float2 float3 float4 float8 float16 double2 double4 "
    "char2 char4 uchar uchar2 uchar4 short2 short4 ushort ushort2 ushort4 int2 int3 int4 int8 int16 "
    "uint uint2 uint3 uint4 uint8 uint16 long2 long4 ulong ulong2 ulong4 size_t ptrdiff_t event_t";

// Words that LexCPP styles as TaskMarker inside comments: the `kforge` of `// kforge:param`.
constexpr const char* kCommentMarkers = "kforge";

} // namespace

KernelLexer::KernelLexer(spec::Dialect dialect, QObject* parent) : QsciLexerCPP(parent), m_dialect(dialect) {
    setDialect(dialect);
}

void KernelLexer::setDialect(spec::Dialect dialect) {
    m_dialect = dialect;
    const bool cuda = dialect == spec::Dialect::Cuda;
    m_keywords = QByteArray(QsciLexerCPP::keywords(1)) + ' ' + (cuda ? kCudaKeywords : kOpenClKeywords);
    m_builtins = cuda ? kCudaBuiltins : kOpenClBuiltins;
    m_types = cuda ? kCudaTypes : kOpenClTypes;
}

const char* KernelLexer::language() const {
    return m_dialect == spec::Dialect::Cuda ? "CUDA" : "OpenCL C";
}

const char* KernelLexer::keywords(int set) const {
    switch (set) {
    case 1:
        return m_keywords.constData();
    case 2:
        return m_builtins.constData();
    case 4:
        return m_types.constData();
    case 6:
        return kCommentMarkers;
    default:
        return QsciLexerCPP::keywords(set);
    }
}

} // namespace kforge::ui
