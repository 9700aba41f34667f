// File: kernel_sources/tensor_ops.cu
// The general tensor ops of the graph (graph/graph.h: unary, binary, transpose, slice, concat,
// reduce_mean, layer_norm, matmul, softmax over an inner axis, gather), float32, for the models
// beyond plain CNNs. No AutoTVM knobs: ops/tensor_ops.h plans each launch. Shapes arrive as Dims
// (six int64 by value) already collapsed by the host to the fewest dims that describe the access
// (kRank of them, a template argument, so the index math unrolls). The element functions match
// ops/tensor_ops_reference.cc: same formulas, float arithmetic.
//
//   KernelSpec{"tensor_ops.cu", "tunejit::binary<2, 3, float, float, float>"}  // mul, 3 dims
#include "common.cuh"
#include "elementwise_fn.cuh"

namespace tunejit {

constexpr int kMaxRank = 6;
struct Dims {
  s64 v[kMaxRank];
};

#define TUNEJIT_GRID_STRIDE(i, total)                                                \
  for (s64 i = static_cast<s64>(blockIdx.x) * blockDim.x + threadIdx.x; i < (total); \
       i += static_cast<s64>(gridDim.x) * blockDim.x)

// The offset `strides` give to flat index `i` of the row-major `dims` (first kRank used).
template <int kRank>
__device__ __forceinline__ s64 StridedOffset(s64 i, const Dims& dims, const Dims& strides) {
  s64 offset = 0;
#pragma unroll
  for (int d = kRank - 1; d > 0; --d) {
    offset += (i % dims.v[d]) * strides.v[d];
    i /= dims.v[d];
  }
  return offset + i * strides.v[0];
}

// The function a kernel's int template argument names (elementwise_fn.cuh).
__host__ __device__ constexpr int Fn(UnaryFn f) { return static_cast<int>(f); }
__host__ __device__ constexpr int Fn(BinaryFn f) { return static_cast<int>(f); }

template <int kFn>
__device__ __forceinline__ float UnaryValue(float x, float alpha, float beta) {
  // Sigmoid, hard_swish, silu and both gelus are common.cuh's, shared with the epilogues that
  // fuse them.
  if constexpr (kFn == Fn(UnaryFn::kSigmoid)) return SigmoidValue(x);
  if constexpr (kFn == Fn(UnaryFn::kTanh)) return tanhf(x);
  if constexpr (kFn == Fn(UnaryFn::kErf)) return erff(x);
  if constexpr (kFn == Fn(UnaryFn::kGelu)) return GeluValue(x);
  if constexpr (kFn == Fn(UnaryFn::kHardSigmoid)) return fminf(fmaxf(alpha * x + beta, 0.0f), 1.0f);
  if constexpr (kFn == Fn(UnaryFn::kHardSwish)) return HardSwishValue(x);
  if constexpr (kFn == Fn(UnaryFn::kSilu)) return SiluValue(x);
  if constexpr (kFn == Fn(UnaryFn::kSqrt)) return sqrtf(x);
  if constexpr (kFn == Fn(UnaryFn::kExp)) return expf(x);
  if constexpr (kFn == Fn(UnaryFn::kReciprocal)) return 1.0f / x;
  if constexpr (kFn == Fn(UnaryFn::kNeg)) return -x;
  if constexpr (kFn == Fn(UnaryFn::kReplaceNan)) return isnan(x) ? alpha : x;
  if constexpr (kFn == Fn(UnaryFn::kGeluTanh)) return GeluTanhValue(x);
  return x;
}

template <int kFn>
__device__ __forceinline__ float BinaryValue(float a, float b) {
  if constexpr (kFn == Fn(BinaryFn::kAdd)) return a + b;
  if constexpr (kFn == Fn(BinaryFn::kSub)) return a - b;
  if constexpr (kFn == Fn(BinaryFn::kMul)) return a * b;
  if constexpr (kFn == Fn(BinaryFn::kDiv)) return a / b;
  if constexpr (kFn == Fn(BinaryFn::kPow)) return powf(a, b);
  if constexpr (kFn == Fn(BinaryFn::kMax)) return fmaxf(a, b);
  if constexpr (kFn == Fn(BinaryFn::kMin)) return fminf(a, b);
  return a;
}

// T: float or f16 (the tensor-core path's activations, computed in float).
template <int kFn, typename T>
__global__ void unary(const T* __restrict__ x, T* __restrict__ y, s64 total, float alpha,
                      float beta) {
  TUNEJIT_GRID_STRIDE(i, total) {
    y[i] = FromFloat<T>(UnaryValue<kFn>(ToFloat(x[i]), alpha, beta));
  }
}

// y = a (op) b over the broadcast shape `dims`; an operand's stride is 0 along a dim it repeats.
// Operands and output float or f16 each (an fp16 activation times a float32 weight).
template <int kFn, int kRank, typename TA, typename TB, typename TOut>
__global__ void binary(const TA* __restrict__ a, const TB* __restrict__ b, TOut* __restrict__ y,
                       s64 total, Dims dims, Dims a_strides, Dims b_strides) {
  TUNEJIT_GRID_STRIDE(i, total) {
    y[i] = FromFloat<TOut>(BinaryValue<kFn>(ToFloat(a[StridedOffset<kRank>(i, dims, a_strides)]),
                                            ToFloat(b[StridedOffset<kRank>(i, dims, b_strides)])));
  }
}

// y[y_offset + (i at y_strides)] = x[x_offset + (i at x_strides)] over `dims`: transpose, slice,
// and each input of a concat written into its slice of the output. T: any element type.
template <int kRank, typename T>
__global__ void strided_copy(const T* __restrict__ x, T* __restrict__ y, s64 total, Dims dims,
                             Dims x_strides, Dims y_strides, s64 x_offset, s64 y_offset) {
  TUNEJIT_GRID_STRIDE(i, total) {
    y[y_offset + StridedOffset<kRank>(i, dims, y_strides)] =
        x[x_offset + StridedOffset<kRank>(i, dims, x_strides)];
  }
}

// Mean over the middle dim of [outer, count, inner] with inner > 1: one thread per output, the
// threads of a warp on adjacent inner elements (coalesced). T: float, or f16 (an NHWC global
// average pool on the tensor-core path: [N, H*W, C]), summed in float.
template <typename T>
__global__ void reduce_mean_strided(const T* __restrict__ x, T* __restrict__ y, s64 outer,
                                    s64 count, s64 inner) {
  TUNEJIT_GRID_STRIDE(i, outer * inner) {
    const T* p = x + (i / inner) * count * inner + i % inner;
    float s = 0.0f;
    for (s64 j = 0; j < count; ++j) s += ToFloat(p[j * inner]);
    y[i] = FromFloat<T>(s / static_cast<float>(count));
  }
}

// The sum of one row of `cols` floats by a block of kBlock threads, valid in every thread (the
// caller's `shared` slot carries it; the trailing barrier lets the next call reuse it).
template <int kBlock>
__device__ __forceinline__ float RowSum(float v, float* shared) {
  const float total = BlockSum<kBlock>(v);
  if (threadIdx.x == 0) *shared = total;
  __syncthreads();
  const float out = *shared;
  __syncthreads();
  return out;
}

// Mean of each row of [rows, cols] (reduce_mean over trailing dims); one block per row.
template <int kBlock>
__global__ void __launch_bounds__(kBlock)
    reduce_mean_rows(const float* __restrict__ x, float* __restrict__ y, s64 rows, s64 cols) {
  __shared__ float shared;
  for (s64 row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* in = x + row * cols;
    float s = 0.0f;
    for (s64 j = threadIdx.x; j < cols; j += kBlock) s += in[j];
    const float total = RowSum<kBlock>(s, &shared);
    if (threadIdx.x == 0) y[row] = total / static_cast<float>(cols);
  }
}

// One row of layer normalization (two passes over the row: the mean, then the centred variance,
// as the reference), then * scale[c] + bias[c], by a group of threads: each walks the row from
// `first` by `stride`, and group_sum sums one float per thread over the group, valid in every
// thread of it. T: float, or f16 (the tensor-core path's activations, math in float). kRms: the
// RMS norm instead (Llama's, T5's): no mean taken out, no bias, x * scale / sqrt(mean(x^2) + eps).
template <bool kRms = false, typename T, typename GroupSum>
__device__ __forceinline__ void LayerNormRow(const T* __restrict__ in,
                                             const float* __restrict__ scale,
                                             const float* __restrict__ bias, T* __restrict__ out,
                                             s64 cols, float epsilon, int first, int stride,
                                             GroupSum group_sum) {
  float mean = 0.0f;
  if constexpr (!kRms) {
    float s = 0.0f;
    for (s64 j = first; j < cols; j += stride) s += ToFloat(in[j]);
    mean = group_sum(s) / static_cast<float>(cols);
  }
  float v = 0.0f;
  for (s64 j = first; j < cols; j += stride) {
    const float d = ToFloat(in[j]) - mean;
    v += d * d;
  }
  const float inv = rsqrtf(group_sum(v) / static_cast<float>(cols) + epsilon);
  for (s64 j = first; j < cols; j += stride) {
    const float y = (ToFloat(in[j]) - mean) * inv * scale[j];
    out[j] = FromFloat<T>(kRms ? y : y + bias[j]);
  }
}

// Layer normalization of each row of [rows, cols]; one block per row.
template <typename T, int kBlock>
__global__ void __launch_bounds__(kBlock)
    layer_norm(const T* __restrict__ x, const float* __restrict__ scale,
               const float* __restrict__ bias, T* __restrict__ y, s64 rows, s64 cols,
               float epsilon) {
  __shared__ float shared;
  for (s64 row = blockIdx.x; row < rows; row += gridDim.x) {
    LayerNormRow(x + row * cols, scale, bias, y + row * cols, cols, epsilon, threadIdx.x, kBlock,
                 [&](float v) { return RowSum<kBlock>(v, &shared); });
  }
}

// layer_norm for rows of at most a few thousand values: a warp per row, kWarps rows per block,
// the sums by shuffles with no block barrier. ConvNeXt's first stage normalizes 100,352 rows of
// 96 channels per batch of 32, where a block per row left 160 of 256 threads idle and waited on
// four barriers a row.
template <typename T, int kWarps>
__global__ void __launch_bounds__(kWarps * 32)
    layer_norm_warp(const T* __restrict__ x, const float* __restrict__ scale,
                    const float* __restrict__ bias, T* __restrict__ y, s64 rows, s64 cols,
                    float epsilon) {
  for (s64 row = static_cast<s64>(blockIdx.x) * kWarps + (threadIdx.x >> 5); row < rows;
       row += static_cast<s64>(gridDim.x) * kWarps) {
    LayerNormRow(x + row * cols, scale, bias, y + row * cols, cols, epsilon, threadIdx.x & 31, 32,
                 [](float v) { return WarpAllSum(v); });
  }
}

// The rotary position embedding as transformers applies it to q and k (Llama's): over [..., S, D]
// rows, y[d] = x[d] cos[s, d] + r[d] sin[s, d] with r = concat(-x[D/2:], x[:D/2]) (rotate_half),
// the tables float32 [S, D].
template <typename T>
__global__ void rope(const T* __restrict__ x, const float* __restrict__ cos_table,
                     const float* __restrict__ sin_table, T* __restrict__ y, s64 total, int seq,
                     int dim) {
  const int half = dim / 2;
  TUNEJIT_GRID_STRIDE(i, total) {
    const int d = static_cast<int>(i % dim);
    const s64 t = (i / dim) % seq * dim + d;
    const float r = d < half ? -ToFloat(x[i + half]) : ToFloat(x[i - half]);
    y[i] =
        FromFloat<T>(__fadd_rn(__fmul_rn(ToFloat(x[i]), cos_table[t]), __fmul_rn(r, sin_table[t])));
  }
}

// RMS normalization of each row of [rows, cols] (LayerNormRow's kRms), a warp per row as
// layer_norm_warp, or a block per row for long rows.
template <typename T, int kWarps>
__global__ void __launch_bounds__(kWarps * 32)
    rms_norm_warp(const T* __restrict__ x, const float* __restrict__ scale, T* __restrict__ y,
                  s64 rows, s64 cols, float epsilon) {
  for (s64 row = static_cast<s64>(blockIdx.x) * kWarps + (threadIdx.x >> 5); row < rows;
       row += static_cast<s64>(gridDim.x) * kWarps) {
    LayerNormRow<true>(x + row * cols, scale, nullptr, y + row * cols, cols, epsilon,
                       threadIdx.x & 31, 32, [](float v) { return WarpAllSum(v); });
  }
}
template <typename T, int kBlock>
__global__ void __launch_bounds__(kBlock)
    rms_norm(const T* __restrict__ x, const float* __restrict__ scale, T* __restrict__ y, s64 rows,
             s64 cols, float epsilon) {
  __shared__ float shared;
  for (s64 row = blockIdx.x; row < rows; row += gridDim.x) {
    LayerNormRow<true>(x + row * cols, scale, nullptr, y + row * cols, cols, epsilon, threadIdx.x,
                       kBlock, [&](float v) { return RowSum<kBlock>(v, &shared); });
  }
}

// Softmax over the middle dim of [outer, count, inner] with inner > 1 (softmax_rows in
// elementwise.cu takes inner == 1): one thread per (outer, inner) position, three passes.
__global__ void softmax_strided(const float* __restrict__ x, float* __restrict__ y, s64 outer,
                                s64 count, s64 inner) {
  TUNEJIT_GRID_STRIDE(i, outer * inner) {
    const s64 base = (i / inner) * count * inner + i % inner;
    float m = x[base];
    for (s64 j = 1; j < count; ++j) m = fmaxf(m, x[base + j * inner]);
    float s = 0.0f;
    for (s64 j = 0; j < count; ++j) s += expf(x[base + j * inner] - m);
    const float inv = 1.0f / s;
    for (s64 j = 0; j < count; ++j) y[base + j * inner] = expf(x[base + j * inner] - m) * inv;
  }
}

// Batched C[b] = A[b] [M, K] x B[b] [K, N], float32, row-major; blockIdx.z walks the broadcast
// batch `batch` (first kRank dims; an operand's batch stride is 0 where it repeats, in
// elements). kTile x kTile outputs per block, one per thread, K in kTile steps through shared
// memory.
template <int kRank>
__global__ void __launch_bounds__(256)
    batched_matmul(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                   int m, int n, int k, s64 batches, Dims batch, Dims a_strides, Dims b_strides) {
  constexpr int kTile = 16;
  __shared__ float as[kTile][kTile + 1];
  __shared__ float bs[kTile][kTile + 1];
  const int tx = threadIdx.x % kTile, ty = threadIdx.x / kTile;
  const int row = blockIdx.y * kTile + ty, col = blockIdx.x * kTile + tx;
  for (s64 z = blockIdx.z; z < batches; z += gridDim.z) {
    const float* pa = a + StridedOffset<kRank>(z, batch, a_strides);
    const float* pb = b + StridedOffset<kRank>(z, batch, b_strides);
    float acc = 0.0f;
    for (int k0 = 0; k0 < k; k0 += kTile) {
      const int ka = k0 + tx, kb = k0 + ty;
      as[ty][tx] = row < m && ka < k ? pa[static_cast<s64>(row) * k + ka] : 0.0f;
      bs[ty][tx] = kb < k && col < n ? pb[static_cast<s64>(kb) * n + col] : 0.0f;
      __syncthreads();
#pragma unroll
      for (int j = 0; j < kTile; ++j) acc += as[ty][j] * bs[j][tx];
      __syncthreads();
    }
    if (row < m && col < n) c[z * m * n + static_cast<s64>(row) * n + col] = acc;
  }
}

// The table row id `id` reads, of `rows`: ONNX's negative ids count from the end; any other id
// outside [0, rows) is clamped, so a bad token id reads a real row, never memory past the table
// (ops/tensor_ops_reference.cc GatherRow is the same rule).
__device__ __forceinline__ s64 GatherRow(s64 id, s64 rows) {
  if (id < 0) id += rows;
  return id < 0 ? 0 : (id >= rows ? rows - 1 : id);
}

// y[i, :] = table[GatherRow(ids[i]), :] for `count` int64 ids of rows of `row` floats (an
// embedding lookup: BERT's token ids). Adjacent threads take adjacent floats of one row.
__global__ void gather_rows(const float* __restrict__ table, const s64* __restrict__ ids,
                            float* __restrict__ y, s64 count, s64 rows, s64 row) {
  TUNEJIT_GRID_STRIDE(i, count * row) {
    const s64 r = GatherRow(ids[i / row], rows);
    y[i] = table[r * row + i % row];
  }
}

#undef TUNEJIT_GRID_STRIDE

}  // namespace tunejit

#ifdef TUNEJIT_NVCC_CHECK
template __global__ void tunejit::unary<3, float>(const float*, float*, long long, float, float);
template __global__ void tunejit::unary<5, tunejit::f16>(const tunejit::f16*, tunejit::f16*,
                                                         long long, float, float);
template __global__ void tunejit::binary<2, 3, tunejit::f16, float, tunejit::f16>(
    const tunejit::f16*, const float*, tunejit::f16*, long long, tunejit::Dims, tunejit::Dims,
    tunejit::Dims);
template __global__ void tunejit::binary<4, 1, float, float, float>(const float*, const float*,
                                                                    float*, long long,
                                                                    tunejit::Dims, tunejit::Dims,
                                                                    tunejit::Dims);
template __global__ void tunejit::strided_copy<4, tunejit::f16>(const tunejit::f16*, tunejit::f16*,
                                                                long long, tunejit::Dims,
                                                                tunejit::Dims, tunejit::Dims,
                                                                long long, long long);
template __global__ void tunejit::reduce_mean_rows<256>(const float*, float*, long long, long long);
template __global__ void tunejit::reduce_mean_strided<tunejit::f16>(const tunejit::f16*,
                                                                    tunejit::f16*, long long,
                                                                    long long, long long);
template __global__ void tunejit::layer_norm<float, 256>(const float*, const float*, const float*,
                                                         float*, long long, long long, float);
template __global__ void tunejit::layer_norm<tunejit::f16, 256>(const tunejit::f16*, const float*,
                                                                const float*, tunejit::f16*,
                                                                long long, long long, float);
template __global__ void tunejit::layer_norm_warp<float, 8>(const float*, const float*,
                                                            const float*, float*, long long,
                                                            long long, float);
template __global__ void tunejit::layer_norm_warp<tunejit::f16, 8>(const tunejit::f16*,
                                                                   const float*, const float*,
                                                                   tunejit::f16*, long long,
                                                                   long long, float);
template __global__ void tunejit::rms_norm_warp<tunejit::f16, 8>(const tunejit::f16*, const float*,
                                                                 tunejit::f16*, long long,
                                                                 long long, float);
template __global__ void tunejit::rms_norm<float, 256>(const float*, const float*, float*,
                                                       long long, long long, float);
template __global__ void tunejit::rope<tunejit::f16>(const tunejit::f16*, const float*,
                                                     const float*, tunejit::f16*, long long, int,
                                                     int);
template __global__ void tunejit::batched_matmul<2>(const float*, const float*, float*, int, int,
                                                    int, long long, tunejit::Dims, tunejit::Dims,
                                                    tunejit::Dims);
#endif  // TUNEJIT_NVCC_CHECK
