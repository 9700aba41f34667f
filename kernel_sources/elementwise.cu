// File: kernel_sources/elementwise.cu
// The graph's non-tuned ops (no AutoTVM knobs): standalone bias_add+relu, the residual add(+relu;
// float, or int8 with requantize), clip, max_pool2d (NCHW, float and int8; NHWC fp16 and int8),
// avg_pool2d, global average pooling, row softmax, quantize / dequantize / requantize, and the fp16
// path's type and layout conversions. One thread per element with a grid-stride loop (any grid size
// is correct), except softmax (one block of kBlock threads per row) and global average pooling (one
// warp per plane). Rounding follows the CPU reference exactly (round to nearest even, saturate; _rn
// intrinsics so no fma contraction changes a result).
//
//   KernelSpec{"elementwise.cu", "tunejit::bias_relu<1>"}
#include "common.cuh"

namespace tunejit {

#define TUNEJIT_GRID_STRIDE(i, total)                                                \
  for (s64 i = static_cast<s64>(blockIdx.x) * blockDim.x + threadIdx.x; i < (total); \
       i += static_cast<s64>(gridDim.x) * blockDim.x)
// The same over a 32-bit range (total < 2^31), for kernels whose index math must stay 32-bit
// (64-bit division is emulated); the last step stops at `total` instead of overflowing.
__device__ __forceinline__ int NextGridStride(int i, int step, int total) {
  return total - i > step ? i + step : total;
}
#define TUNEJIT_GRID_STRIDE_32(i, total)                                                 \
  for (int i = blockIdx.x * blockDim.x + threadIdx.x, i##_step = gridDim.x * blockDim.x; \
       i < (total); i = NextGridStride(i, i##_step, (total)))

// Where flat index `i` of an NHWC output is, with `vectors` 16-byte channel vectors per pixel
// (32-bit: the callers' tensors are below 2^31 elements).
struct NhwcVector {
  int vector, x, y, image;
  __device__ __forceinline__ NhwcVector(int i, int vectors, int ow, int oh) {
    vector = i % vectors;
    const int pixel = i / vectors;
    x = pixel % ow;
    y = (pixel / ow) % oh;
    image = pixel / (ow * oh);
  }
};

// y[n, c, ...] = x + bias[c] (then relu if kRelu); `inner` = elements per channel (H*W; 1 for
// NHWC, whose channel is the fastest dim). T: float, or f16 on the tensor-core path.
template <int kRelu, typename T = float>
__global__ void bias_relu(const T* __restrict__ x, const float* __restrict__ bias,
                          T* __restrict__ y, s64 total, int channels, s64 inner) {
  TUNEJIT_GRID_STRIDE(i, total) {
    const int ch = static_cast<int>((i / inner) % channels);
    float v = __fadd_rn(ToFloat(x[i]), __ldg(bias + ch));
    if (kRelu) v = v < 0.0f ? 0.0f : v;
    y[i] = FromFloat<T>(v);
  }
}

// y = x + r (then relu if kRelu): ResNet's residual add, its relu fused. T: float, or f16 on the
// tensor-core path (added in float, rounded once).
template <int kRelu, typename T = float>
__global__ void add_relu(const T* __restrict__ x, const T* __restrict__ r, T* __restrict__ y,
                         s64 total) {
  TUNEJIT_GRID_STRIDE(i, total) {
    float v = __fadd_rn(ToFloat(x[i]), ToFloat(r[i]));
    if (kRelu) v = v < 0.0f ? 0.0f : v;
    y[i] = FromFloat<T>(v);
  }
}

// The residual add of the int8 modes: x and r int8 in one layout, each with its per-tensor scale.
// v = x * scale_x + r * scale_r (the float add of the two dequantized values, each step rounded
// once), then relu if kRelu. TOut s8: saturate(round_half_even(v / scale_out)), exactly the
// `quantize` step of v; TOut float: v (an add whose readers are not all int8).
template <int kRelu, typename TOut>
__global__ void add_int8(const s8* __restrict__ x, const s8* __restrict__ r, TOut* __restrict__ y,
                         s64 total, float scale_x, float scale_r, float scale_out) {
  TUNEJIT_GRID_STRIDE(i, total) {
    const float v = Int8SumValue<kRelu != 0>(x[i], r[i], scale_x, scale_r);
    if constexpr (sizeof(TOut) == 1) {
      y[i] = SaturateToInt8(__fdiv_rn(v, scale_out));
    } else {
      y[i] = v;
    }
  }
}

// y = min(max(x, lo), hi), NaN passing through (common.cuh ClipValue, which an epilogue's fused
// clip shares).
template <typename T = float>
__global__ void clip(const T* __restrict__ x, T* __restrict__ y, s64 total, float lo, float hi) {
  TUNEJIT_GRID_STRIDE(i, total) { y[i] = FromFloat<T>(ClipValue(ToFloat(x[i]), lo, hi)); }
}

// NCHW average pooling, floor output size. kCountPad: divide by the whole window (padding counts
// as zeros; with floor sizes a window never passes the padded edge); else by the real elements in
// it (ONNX's default). Shape inference keeps pads below the window, so that count is >= 1.
template <int kCountPad>
__global__ void avg_pool2d(const float* __restrict__ x, float* __restrict__ y, int planes, int h,
                           int w, int oh, int ow, int kh, int kw, int sh, int sw, int pad_top,
                           int pad_left) {
  const s64 total = static_cast<s64>(planes) * oh * ow;
  TUNEJIT_GRID_STRIDE(i, total) {
    const int ox = static_cast<int>(i % ow);
    const int oy = static_cast<int>((i / ow) % oh);
    const float* src = x + (i / (static_cast<s64>(oh) * ow)) * h * w;
    float sum = 0.0f;
    int count = 0;
    for (int ky = 0; ky < kh; ++ky) {
      const int iy = oy * sh + ky - pad_top;
      if (iy < 0 || iy >= h) continue;
      for (int kx = 0; kx < kw; ++kx) {
        const int ix = ox * sw + kx - pad_left;
        if (ix < 0 || ix >= w) continue;
        sum = __fadd_rn(sum, src[static_cast<s64>(iy) * w + ix]);
        ++count;
      }
    }
    y[i] = __fdiv_rn(sum, static_cast<float>(kCountPad ? kh * kw : count));
  }
}

// y[p] = mean of the `inner` floats of plane p ([N, C, H, W] -> [N, C, 1, 1]); one warp per plane,
// grid-stride over planes (the loop bound is warp-uniform, so the full-mask shuffles are safe).
// blockDim.x must be a multiple of 32.
__global__ void global_avg_pool(const float* __restrict__ x, float* __restrict__ y, s64 planes,
                                int inner) {
  const int lane = threadIdx.x & 31;
  const s64 first = (static_cast<s64>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const s64 warps = (static_cast<s64>(gridDim.x) * blockDim.x) >> 5;
  for (s64 p = first; p < planes; p += warps) {
    const float* src = x + p * inner;
    float sum = 0.0f;
    for (int j = lane; j < inner; j += 32) sum += src[j];
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
      sum += __shfl_down_sync(0xffffffffu, sum, offset);
    }
    if (lane == 0) y[p] = __fdiv_rn(sum, static_cast<float>(inner));
  }
}

template <typename T>
struct Lowest;
template <>
struct Lowest<float> {
  __device__ static float value() { return __int_as_float(0xff800000); }  // -inf
};
template <>
struct Lowest<s8> {
  __device__ static s8 value() { return -128; }
};

// NCHW max pooling; padded positions count as the lowest value (-inf / -128), as TVM pads.
template <typename T>
__global__ void max_pool2d(const T* __restrict__ x, T* __restrict__ y, int planes, int h, int w,
                           int oh, int ow, int kh, int kw, int sh, int sw, int pad_top,
                           int pad_left) {
  const s64 total = static_cast<s64>(planes) * oh * ow;
  TUNEJIT_GRID_STRIDE(i, total) {
    const int ox = static_cast<int>(i % ow);
    const int oy = static_cast<int>((i / ow) % oh);
    const s64 plane = i / (static_cast<s64>(oh) * ow);
    const T* src = x + plane * h * w;
    T best = Lowest<T>::value();
    for (int ky = 0; ky < kh; ++ky) {
      const int iy = oy * sh + ky - pad_top;
      if (iy < 0 || iy >= h) continue;
      for (int kx = 0; kx < kw; ++kx) {
        const int ix = ox * sw + kx - pad_left;
        if (ix < 0 || ix >= w) continue;
        const T v = src[static_cast<s64>(iy) * w + ix];
        best = v > best ? v : best;
      }
    }
    y[i] = best;
  }
}

// Lane-wise max of two 32-bit words of max_pool2d_nhwc's vectors (`best` so far, then `next`),
// keeping `best`'s bits on ties, and the padding's lowest value in every lane.
template <typename T>
struct PoolWord;
template <>
struct PoolWord<f16> {
  static constexpr unsigned int kLowest = 0xfc00fc00u;  // -inf, -inf
  __device__ static unsigned int Max(unsigned int best, unsigned int next) {
    unsigned int out = 0;
#pragma unroll
    for (int shift = 0; shift < 32; shift += 16) {
      const unsigned int b = (best >> shift) & 0xffffu, n = (next >> shift) & 0xffffu;
      const bool greater = F16ToFloat(f16{static_cast<unsigned short>(n)}) >
                           F16ToFloat(f16{static_cast<unsigned short>(b)});
      out |= (greater ? n : b) << shift;
    }
    return out;
  }
};
template <>
struct PoolWord<float> {
  static constexpr unsigned int kLowest = 0xff800000u;  // -inf
  __device__ static unsigned int Max(unsigned int best, unsigned int next) {
    return __uint_as_float(next) > __uint_as_float(best) ? next : best;
  }
};
template <>
struct PoolWord<s8> {
  static constexpr unsigned int kLowest = 0x80808080u;  // -128 x 4
  // Four signed bytes at once (equal values have equal bits, so ties need no care).
  __device__ static unsigned int Max(unsigned int best, unsigned int next) {
    return __vmaxs4(best, next);
  }
};

// NHWC max pooling of the tensor-core paths' activations (fp16, or int8, whose max commutes with
// the shared scale): one thread per 16 bytes of channels of one output pixel, so a warp reads
// whole 128-byte rows of channels; padded positions count as the lowest value and the winner's
// bits are stored. The input has fewer than 2^31 elements (the builder checks), so the index math
// is 32-bit: 64-bit division is emulated and cost more than the loads.
template <typename T>
__global__ void max_pool2d_nhwc(const uint4* __restrict__ x, uint4* __restrict__ y, int n, int h,
                                int w, int vectors, int oh, int ow, int kh, int kw, int sh, int sw,
                                int pad_top, int pad_left) {
  using Word = PoolWord<T>;
  const int total = n * oh * ow * vectors;
  TUNEJIT_GRID_STRIDE_32(i, total) {
    const NhwcVector at(i, vectors, ow, oh);
    const int cv = at.vector, ox = at.x, oy = at.y, image = at.image;
    uint4 best = make_uint4(Word::kLowest, Word::kLowest, Word::kLowest, Word::kLowest);
    for (int ky = 0; ky < kh; ++ky) {
      const int iy = oy * sh + ky - pad_top;
      if (iy < 0 || iy >= h) continue;
      for (int kx = 0; kx < kw; ++kx) {
        const int ix = ox * sw + kx - pad_left;
        if (ix < 0 || ix >= w) continue;
        const uint4 v = x[((image * h + iy) * w + ix) * vectors + cv];  // < 2^31 / 8
        best = make_uint4(Word::Max(best.x, v.x), Word::Max(best.y, v.y), Word::Max(best.z, v.z),
                          Word::Max(best.w, v.w));
      }
    }
    y[i] = best;
  }
}

// y = x in another element type, same layout.
template <typename TIn, typename TOut>
__global__ void convert(const TIn* __restrict__ x, TOut* __restrict__ y, s64 total) {
  TUNEJIT_GRID_STRIDE(i, total) { y[i] = FromFloat<TOut>(ToFloat(x[i])); }
}

// Each of gridDim.y [rows, cols] matrices of x, transposed into [cols, rows] in y (and converted):
// NCHW -> NHWC is rows = C, cols = H*W per image; NHWC -> NCHW the reverse. 32 x 32 tiles through
// shared memory (blockDim 32 x 8), so reads and writes are both coalesced; blockIdx.x walks the
// tiles, `col_tiles` of them per row of tiles.
template <typename TIn, typename TOut>
__global__ void __launch_bounds__(256)
    transpose_convert(const TIn* __restrict__ x, TOut* __restrict__ y, int rows, int cols,
                      int col_tiles) {
  __shared__ float tile[32][33];  // +1: the column reads hit 32 different banks
  const int r0 = static_cast<int>(blockIdx.x / col_tiles) * 32;
  const int c0 = static_cast<int>(blockIdx.x % col_tiles) * 32;
  const s64 base = static_cast<s64>(blockIdx.y) * rows * cols;
  for (int k = threadIdx.y; k < 32; k += 8) {
    const int r = r0 + k, c = c0 + threadIdx.x;
    if (r < rows && c < cols)
      tile[k][threadIdx.x] = ToFloat(x[base + static_cast<s64>(r) * cols + c]);
  }
  __syncthreads();
  for (int k = threadIdx.y; k < 32; k += 8) {
    const int c = c0 + k, r = r0 + threadIdx.x;
    if (r < rows && c < cols) {
      y[base + static_cast<s64>(c) * rows + r] = FromFloat<TOut>(tile[threadIdx.x][k]);
    }
  }
}

// Max of one float per thread over a block of kBlock threads (a power of two), through the
// caller's shared array of kBlock floats; every thread gets the result.
template <int kBlock>
__device__ __forceinline__ float BlockMax(float* partial, float v) {
  partial[threadIdx.x] = v;
  __syncthreads();
  for (int stride = kBlock / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) {
      partial[threadIdx.x] = fmaxf(partial[threadIdx.x], partial[threadIdx.x + stride]);
    }
    __syncthreads();
  }
  return partial[0];
}

// Softmax of one row by a group of threads: each walks the row from `first` by `stride`;
// group_max and group_sum reduce one float per thread over the group, valid in every thread of it.
template <typename GroupMax, typename GroupSum>
__device__ __forceinline__ void SoftmaxRow(const float* __restrict__ in, float* __restrict__ out,
                                           int cols, int first, int stride, GroupMax group_max,
                                           GroupSum group_sum) {
  float m = __int_as_float(0xff800000);
  for (int j = first; j < cols; j += stride) m = fmaxf(m, in[j]);
  const float row_max = group_max(m);
  float s = 0.0f;
  for (int j = first; j < cols; j += stride) s += expf(in[j] - row_max);
  const float inv = 1.0f / group_sum(s);
  for (int j = first; j < cols; j += stride) out[j] = expf(in[j] - row_max) * inv;
}

// Softmax over each row of a [rows, cols] matrix; one block per row (grid-stride over rows).
// kBlock is a power of two (shared-memory tree for the row max, BlockSum for the sum).
template <int kBlock>
__global__ void __launch_bounds__(kBlock)
    softmax_rows(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  static_assert((kBlock & (kBlock - 1)) == 0, "softmax_rows needs a power-of-two block");
  __shared__ float partial[kBlock];
  __shared__ float shared_sum;
  const auto block_sum = [&](float v) {
    const float total = BlockSum<kBlock>(v);
    if (threadIdx.x == 0) shared_sum = total;
    __syncthreads();
    return shared_sum;
  };
  for (int row = blockIdx.x; row < rows; row += gridDim.x) {
    SoftmaxRow(
        x + static_cast<s64>(row) * cols, y + static_cast<s64>(row) * cols, cols, threadIdx.x,
        kBlock, [&](float v) { return BlockMax<kBlock>(partial, v); }, block_sum);
    // Nobody may overwrite partial/shared_sum for the next row before everyone has read them.
    __syncthreads();
  }
}

// softmax_rows for rows of at most a few thousand values: a warp per row, kWarps rows per block,
// the max and the sum by shuffles with no block barrier (attention's rows of 197 tokens left most
// of a 256-thread block idle).
template <int kWarps>
__global__ void __launch_bounds__(kWarps * 32)
    softmax_rows_warp(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  for (int row = blockIdx.x * kWarps + (threadIdx.x >> 5); row < rows; row += gridDim.x * kWarps) {
    SoftmaxRow(
        x + static_cast<s64>(row) * cols, y + static_cast<s64>(row) * cols, cols, threadIdx.x & 31,
        32, [](float v) { return WarpAllMax(v); }, [](float v) { return WarpAllSum(v); });
  }
}

// q = saturate(round_half_even(x / scale)).
__global__ void quantize(const float* __restrict__ x, s8* __restrict__ y, s64 total, float scale) {
  TUNEJIT_GRID_STRIDE(i, total) { y[i] = SaturateToInt8(__fdiv_rn(x[i], scale)); }
}

// y = x * scale[c] (per channel: c = (i / inner) % channels) or x * scale[0] (channels == 1).
template <typename T>
__global__ void dequantize(const T* __restrict__ x, const float* __restrict__ scale,
                           float* __restrict__ y, s64 total, int channels, s64 inner) {
  TUNEJIT_GRID_STRIDE(i, total) {
    const int ch = channels == 1 ? 0 : static_cast<int>((i / inner) % channels);
    y[i] = __fmul_rn(static_cast<float>(x[i]), __ldg(scale + ch));
  }
}

// q = saturate(round_half_even(x * scale[c])), int32 -> int8, per channel or per tensor.
__global__ void requantize(const int* __restrict__ x, const float* __restrict__ scale,
                           s8* __restrict__ y, s64 total, int channels, s64 inner) {
  TUNEJIT_GRID_STRIDE(i, total) {
    const int ch = channels == 1 ? 0 : static_cast<int>((i / inner) % channels);
    y[i] = SaturateToInt8(__fmul_rn(static_cast<float>(x[i]), __ldg(scale + ch)));
  }
}

// Compares an output with its reference without bringing either to the host (the tuner checks
// every candidate; VGG-16's first int32 outputs are 1.6 GB). sums[0] += sum (got - want)^2,
// sums[1] += sum want^2, sums[2] += count of elements that are NaN in either or (int) differ.
// The caller zeroes sums. Warp sums in double, then one atomic per warp and quantity. An fp16
// output (TGot f16) is compared with the reference's float32 accumulator output.
template <typename T>
__device__ __forceinline__ double CompareValue(T v) {
  return static_cast<double>(v);
}
template <>
__device__ __forceinline__ double CompareValue<f16>(f16 v) {
  return F16ToFloat(v);
}

template <typename TGot, typename TWant>
__global__ void __launch_bounds__(256)
    compare_to_reference(const TGot* __restrict__ got, const TWant* __restrict__ want,
                         double* __restrict__ sums, s64 total) {
  double diff = 0.0, norm = 0.0, bad = 0.0;
  TUNEJIT_GRID_STRIDE(i, total) {
    const double g = CompareValue(got[i]);
    const double w = CompareValue(want[i]);
    if (g != g || w != w || (!IsFloatAcc<TWant>::value && g != w)) bad += 1.0;
    if (g == g && w == w) {
      diff += (g - w) * (g - w);
      norm += w * w;
    }
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    diff += __shfl_down_sync(0xffffffffu, diff, offset);
    norm += __shfl_down_sync(0xffffffffu, norm, offset);
    bad += __shfl_down_sync(0xffffffffu, bad, offset);
  }
  if ((threadIdx.x & 31) == 0) {
    atomicAdd(sums, diff);
    atomicAdd(sums + 1, norm);
    atomicAdd(sums + 2, bad);
  }
}

// out[0] = max(out[0], max |x|): the int8 calibration's per-tensor range. out[0] must start at 0
// (or a previous max): non-negative floats order like their int bit patterns, so an int atomicMax
// on the bits is a float max. One block tree-reduces its grid-stride maxima, then one atomic.
template <int kBlock>
__global__ void __launch_bounds__(kBlock)
    abs_max(const float* __restrict__ x, float* __restrict__ out, s64 total) {
  static_assert((kBlock & (kBlock - 1)) == 0, "abs_max needs a power-of-two block");
  __shared__ float partial[kBlock];
  float m = 0.0f;
  TUNEJIT_GRID_STRIDE(i, total) { m = fmaxf(m, fabsf(x[i])); }
  const float block_max = BlockMax<kBlock>(partial, m);
  if (threadIdx.x == 0) atomicMax(reinterpret_cast<int*>(out), __float_as_int(block_max));
}

#undef TUNEJIT_GRID_STRIDE
#undef TUNEJIT_GRID_STRIDE_32

}  // namespace tunejit

#ifdef TUNEJIT_NVCC_CHECK
template __global__ void tunejit::bias_relu<1>(const float*, const float*, float*, long long, int,
                                               long long);
template __global__ void tunejit::max_pool2d<float>(const float*, float*, int, int, int, int, int,
                                                    int, int, int, int, int, int);
template __global__ void tunejit::max_pool2d<signed char>(const signed char*, signed char*, int,
                                                          int, int, int, int, int, int, int, int,
                                                          int, int);
template __global__ void tunejit::bias_relu<1, tunejit::f16>(const tunejit::f16*, const float*,
                                                             tunejit::f16*, long long, int,
                                                             long long);
template __global__ void tunejit::clip<tunejit::f16>(const tunejit::f16*, tunejit::f16*, long long,
                                                     float, float);
template __global__ void tunejit::add_relu<1>(const float*, const float*, float*, long long);
template __global__ void tunejit::add_relu<0>(const float*, const float*, float*, long long);
template __global__ void tunejit::add_relu<1, tunejit::f16>(const tunejit::f16*,
                                                            const tunejit::f16*, tunejit::f16*,
                                                            long long);
template __global__ void tunejit::add_int8<1, signed char>(const signed char*, const signed char*,
                                                           signed char*, long long, float, float,
                                                           float);
template __global__ void tunejit::add_int8<0, float>(const signed char*, const signed char*, float*,
                                                     long long, float, float, float);
template __global__ void tunejit::avg_pool2d<0>(const float*, float*, int, int, int, int, int, int,
                                                int, int, int, int, int);
template __global__ void tunejit::avg_pool2d<1>(const float*, float*, int, int, int, int, int, int,
                                                int, int, int, int, int);
template __global__ void tunejit::softmax_rows<256>(const float*, float*, int, int);
template __global__ void tunejit::softmax_rows_warp<8>(const float*, float*, int, int);
template __global__ void tunejit::abs_max<256>(const float*, float*, long long);
template __global__ void tunejit::compare_to_reference<float, float>(const float*, const float*,
                                                                     double*, long long);
template __global__ void tunejit::compare_to_reference<int, int>(const int*, const int*, double*,
                                                                 long long);
template __global__ void tunejit::compare_to_reference<signed char, signed char>(const signed char*,
                                                                                 const signed char*,
                                                                                 double*,
                                                                                 long long);
template __global__ void tunejit::compare_to_reference<tunejit::f16, float>(const tunejit::f16*,
                                                                            const float*, double*,
                                                                            long long);
template __global__ void tunejit::max_pool2d_nhwc<tunejit::f16>(const uint4*, uint4*, int, int, int,
                                                                int, int, int, int, int, int, int,
                                                                int, int);
template __global__ void tunejit::max_pool2d_nhwc<signed char>(const uint4*, uint4*, int, int, int,
                                                               int, int, int, int, int, int, int,
                                                               int, int);
template __global__ void tunejit::max_pool2d_nhwc<float>(const uint4*, uint4*, int, int, int, int,
                                                         int, int, int, int, int, int, int, int);
template __global__ void tunejit::convert<float, tunejit::f16>(const float*, tunejit::f16*,
                                                               long long);
template __global__ void tunejit::convert<tunejit::f16, float>(const tunejit::f16*, float*,
                                                               long long);
template __global__ void tunejit::transpose_convert<float, tunejit::f16>(const float*,
                                                                         tunejit::f16*, int, int,
                                                                         int);
template __global__ void tunejit::transpose_convert<tunejit::f16, tunejit::f16>(const tunejit::f16*,
                                                                                tunejit::f16*, int,
                                                                                int, int);
template __global__ void tunejit::transpose_convert<tunejit::f16, float>(const tunejit::f16*,
                                                                         float*, int, int, int);
template __global__ void tunejit::transpose_convert<float, float>(const float*, float*, int, int,
                                                                  int);
template __global__ void tunejit::transpose_convert<signed char, signed char>(const signed char*,
                                                                              signed char*, int,
                                                                              int, int);
template __global__ void tunejit::dequantize<int>(const int*, const float*, float*, long long, int,
                                                  long long);
template __global__ void tunejit::dequantize<signed char>(const signed char*, const float*, float*,
                                                          long long, int, long long);
#endif  // TUNEJIT_NVCC_CHECK
