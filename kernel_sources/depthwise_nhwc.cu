// File: kernel_sources/depthwise_nhwc.cu
// depthwise_conv2d_nhwc.cuda (ops/depthwise_nhwc.cc): the depthwise convolution of the
// tensor-core networks (MobileNetV2, EfficientNet, ConvNeXt), on their NHWC float16 activations,
// so that those layers need no NHWC float16 <-> NCHW float32 conversions around them. Channel
// multiplier 1: output channel c reads input channel c only,
//   out[b, y, x, c] = epilogue(sum_{r, s} in[b, y * SH + r * DH - PT, x * SW + s * DW - PL, c]
//                                         * weight[c, r, s])
// with float32 products and sums (float16 operands are exact in float32), then common.cuh's
// epilogue, written float16, float32 or requantized int8, and on a float16 or float32 output the
// Epi's activation (common.cuh Act: MobileNetV2's ReLU6, EfficientNet's silu, MobileNetV3's
// hard_swish), as the separate step after the conv would compute it.
//
//   depthwise_conv2d_nhwc<DepthwiseFilter<KH, KW, SH, SW, DH, DW>,
//                         DepthwiseTile<TILE_C, TILE_H, TILE_W, THREAD_H, THREAD_W>,
//                         DepthwiseIo<VECTOR_IO, Epi<...>, OUT_F16>>
//   grid N * ceil(OH / TILE_H) * ceil(OW / TILE_W) * ceil(C / TILE_C), the channel block fastest
//   (the blocks of one tile run together, and so do neighbouring tiles, whose windows overlap in
//   L2); block (TILE_C / 8) * (TILE_H / THREAD_H) * (TILE_W / THREAD_W) threads; static shared
//   memory only.
//
// The op is memory-bound (9 to 49 products per value read), so the kernel is built around its
// DRAM traffic: each block stages the input window its TILE_H x TILE_W outputs read, for its
// TILE_C channels, in shared memory with 16-byte loads (8 float16 channels of a pixel), zeros
// outside the image, and each output leaves once, in 16-byte stores (float16) or 32-byte ones
// (float32). Neighbouring tiles share only their halo, read again from L2, not DRAM. A thread
// owns one 8-channel vector of THREAD_H x THREAD_W adjacent outputs: it walks the input rows they
// read, converts each row's columns to float once and applies every tap that reads them, so that
// a value staged in shared memory is read up to KW times fewer than once per product. The block's
// weights are staged as float32 [tap][channel], read as two 16-byte vectors per tap.
//
// VECTOR_IO 0 (C not a multiple of 8: a pixel's channels are not 16-byte aligned) loads and
// stores element by element, with the same staging and arithmetic.
//
// The launch overlaps the previous kernel's tail (LaunchShape::overlaps_previous): the blocks
// start as that kernel drains and wait for it (GridDependencyWait) before touching memory.
//
// Kernel parameters: data (float16 NHWC), weight (float16 [C, KH, KW]), bias, scale, out
// (ops/op_template.h conventions; out NHWC), then C, H, W, OH, OW, pad top, pad left, channel
// blocks, tiles per image along w, tiles per image.
#include "common.cuh"

namespace tunejit {

// The filter's shape: KH x KW taps, strides and dilations.
template <int KH, int KW, int SH, int SW, int DH, int DW>
struct DepthwiseFilter {
  static constexpr int kH = KH, kW = KW, kStrideH = SH, kStrideW = SW, kDilationH = DH,
                       kDilationW = DW, kTaps = KH * KW;
};

// A block's outputs: TILE_H x TILE_W pixels of one image by TILE_C channels (whole 8-channel
// vectors); a thread's: THREAD_H x THREAD_W adjacent pixels of one vector.
template <int TILE_C, int TILE_H, int TILE_W, int THREAD_H, int THREAD_W>
struct DepthwiseTile {
  static constexpr int kChannels = TILE_C, kH = TILE_H, kW = TILE_W, kThreadH = THREAD_H,
                       kThreadW = THREAD_W;
  static constexpr int kVectors = TILE_C / 8;
  static constexpr int kThreadsW = TILE_W / THREAD_W;
  static constexpr int kThreads = kVectors * (TILE_H / THREAD_H) * kThreadsW;
  static_assert(TILE_C % 8 == 0, "whole 8-channel vectors");
  static_assert(TILE_H % THREAD_H == 0 && TILE_W % THREAD_W == 0, "threads tile the block");
};

// The operands in memory: VECTOR_IO 1 when C is a multiple of 8 (16-byte pixel vectors), the
// epilogue (common.cuh Epi, with its activation) and a float16 output (else float32, or int8 when
// it requantizes).
template <int VECTOR_IO, typename EPILOGUE, int OUT_F16>
struct DepthwiseIo {
  static constexpr int kVectorIo = VECTOR_IO, kEpi = EPILOGUE::kCode, kOutF16 = OUT_F16;
  typedef typename EPILOGUE::Activation Activation;
};

// What the tile and the filter make of each other: the block's input window, and the rows and
// columns of it one thread reads.
template <typename F, typename T>
struct DepthwiseShape {
  static constexpr int kWinH = (T::kH - 1) * F::kStrideH + (F::kH - 1) * F::kDilationH + 1;
  static constexpr int kWinW = (T::kW - 1) * F::kStrideW + (F::kW - 1) * F::kDilationW + 1;
  static constexpr int kWindowVectors = kWinH * kWinW * T::kVectors;
  static constexpr int kRowsIn = (T::kThreadH - 1) * F::kStrideH + (F::kH - 1) * F::kDilationH + 1;
  static constexpr int kColsIn = (T::kThreadW - 1) * F::kStrideW + (F::kW - 1) * F::kDilationW + 1;
};

__device__ __forceinline__ void HalvesToFloats(const uint4& v, float (&f)[8]) {
  const unsigned words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = F16ToFloat(f16{static_cast<unsigned short>(words[i] & 0xFFFFu)});
    f[2 * i + 1] = F16ToFloat(f16{static_cast<unsigned short>(words[i] >> 16)});
  }
}

// The 8 channels from `first` of one pixel (`pixel` points at its channel 0), zeros past C.
template <int kVectorIo>
__device__ __forceinline__ uint4 LoadPixelVector(const f16* __restrict__ pixel, int first, int c) {
  if constexpr (kVectorIo != 0) {
    return __ldg(reinterpret_cast<const uint4*>(pixel + first));
  } else {
    unsigned words[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const unsigned lo = first + 2 * i < c ? __ldg(&pixel[first + 2 * i].bits) : 0u;
      const unsigned hi = first + 2 * i + 1 < c ? __ldg(&pixel[first + 2 * i + 1].bits) : 0u;
      words[i] = lo | hi << 16;
    }
    return make_uint4(words[0], words[1], words[2], words[3]);
  }
}

// Stores 8 epilogue values of one pixel from channel `first` (`count` of them below C): float16,
// int8 or float32 by the output kind, the activation applied to the float16 or float32 value;
// whole vectors when kVectorIo.
template <typename Io>
__device__ __forceinline__ void StorePixelVector(void* out, s64 index, const float (&v)[8],
                                                 int count) {
  typedef typename Io::Activation A;
  constexpr bool kInt8Out = Io::kOutF16 == 0 && (Io::kEpi >> 2) == kEpiOutInt8;
  static_assert(!kInt8Out || !A::kActive, "an activation into float outputs only");
  if constexpr (Io::kOutF16 != 0) {
    unsigned short* to = static_cast<unsigned short*>(out) + index;
    if constexpr (Io::kVectorIo != 0) {
      unsigned words[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        words[i] = A::ApplyF16(FloatToF16Bits(v[2 * i])) |
                   unsigned(A::ApplyF16(FloatToF16Bits(v[2 * i + 1]))) << 16;
      }
      *reinterpret_cast<uint4*>(to) = make_uint4(words[0], words[1], words[2], words[3]);
    } else {
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        if (i < count) to[i] = A::ApplyF16(FloatToF16Bits(v[i]));
      }
    }
  } else if constexpr (kInt8Out) {
    s8* to = static_cast<s8*>(out) + index;
    if constexpr (Io::kVectorIo != 0) {
      *reinterpret_cast<uint2*>(to) = make_uint2(SaturateToInt8x4(v[0], v[1], v[2], v[3]),
                                                 SaturateToInt8x4(v[4], v[5], v[6], v[7]));
    } else {
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        if (i < count) to[i] = SaturateToInt8(v[i]);
      }
    }
  } else {
    float* to = static_cast<float*>(out) + index;
    if constexpr (Io::kVectorIo != 0) {
      reinterpret_cast<float4*>(to)[0] =
          make_float4(A::Apply(v[0]), A::Apply(v[1]), A::Apply(v[2]), A::Apply(v[3]));
      reinterpret_cast<float4*>(to)[1] =
          make_float4(A::Apply(v[4]), A::Apply(v[5]), A::Apply(v[6]), A::Apply(v[7]));
    } else {
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        if (i < count) to[i] = A::Apply(v[i]);
      }
    }
  }
}

template <typename Filter, typename Tile, typename Io>
__global__ void __launch_bounds__(Tile::kThreads)
    depthwise_conv2d_nhwc(const f16* __restrict__ data, const f16* __restrict__ weight,
                          const float* __restrict__ bias, const float* __restrict__ scale,
                          void* out, int c, int h, int w, int oh, int ow, int pad_top, int pad_left,
                          int channel_blocks, int tiles_w, int tiles) {
  typedef DepthwiseShape<Filter, Tile> S;
  typedef EpilogueOp<Io::kEpi, float> Op;
  constexpr int kThreads = Tile::kThreads, kVectors = Tile::kVectors, TC = Tile::kChannels;
  constexpr int SH = Filter::kStrideH, SW = Filter::kStrideW, DH = Filter::kDilationH,
                DW = Filter::kDilationW, KH = Filter::kH, KW = Filter::kW;
  constexpr int YI = Tile::kThreadH, XI = Tile::kThreadW;
  __shared__ uint4 window[S::kWindowVectors];               // [row][column][vector], 8 halves each
  __shared__ __align__(16) float taps[Filter::kTaps * TC];  // [tap][channel]
  LaunchDependents();
  GridDependencyWait();

  const int block = blockIdx.x;
  const int c0 = block % channel_blocks * TC;
  const int tile = block / channel_blocks % tiles;
  const int b = block / channel_blocks / tiles;
  const int y0 = tile / tiles_w * Tile::kH;
  const int x0 = tile % tiles_w * Tile::kW;

  // The weights, [C, KH * KW] in memory: a block's are one contiguous run, read in order.
  for (int i = threadIdx.x; i < Filter::kTaps * TC; i += kThreads) {
    const int channel = i / Filter::kTaps, tap = i % Filter::kTaps;
    taps[tap * TC + channel] =
        c0 + channel < c ? F16ToFloat(weight[static_cast<s64>(c0) * Filter::kTaps + i]) : 0.0f;
  }

  // The window: kBatch 16-byte loads in flight per thread before any is stored.
  constexpr int kPerThread = CeilDiv(S::kWindowVectors, kThreads);
  constexpr int kBatch = kPerThread < 8 ? kPerThread : 8;
  const int iy0 = y0 * SH - pad_top;
  const int ix0 = x0 * SW - pad_left;
  const f16* image = data + static_cast<s64>(b) * h * w * c;
#pragma unroll 1
  for (int first = 0; first < kPerThread; first += kBatch) {
    uint4 v[kBatch];
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      const int i = threadIdx.x + (first + j) * kThreads;
      const int vector = i % kVectors, pixel = i / kVectors;
      const int iy = iy0 + pixel / S::kWinW, ix = ix0 + pixel % S::kWinW;
      const int channel = c0 + 8 * vector;
      const bool inside =
          i < S::kWindowVectors && iy >= 0 && iy < h && ix >= 0 && ix < w && channel < c;
      v[j] = inside ? LoadPixelVector<Io::kVectorIo>(image + (static_cast<s64>(iy) * w + ix) * c,
                                                     channel, c)
                    : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      const int i = threadIdx.x + (first + j) * kThreads;
      if (i < S::kWindowVectors) window[i] = v[j];
    }
  }
  __syncthreads();

  const int vector = threadIdx.x % kVectors;
  const int tx = threadIdx.x / kVectors % Tile::kThreadsW;
  const int ty = threadIdx.x / kVectors / Tile::kThreadsW;
  float acc[YI][XI][8];
#pragma unroll
  for (int j = 0; j < YI; ++j)
#pragma unroll
    for (int x = 0; x < XI; ++x)
#pragma unroll
      for (int k = 0; k < 8; ++k) acc[j][x][k] = 0.0f;

  // Input row q of the thread's window is filter row (q - j * SH) / DH of output row j, for the
  // j where that is a whole row inside the filter: all compile-time, so unused pairs vanish.
  const uint4* corner = window + ((ty * YI * SH) * S::kWinW + tx * XI * SW) * kVectors + vector;
  const float* my_taps = taps + 8 * vector;
#pragma unroll
  for (int q = 0; q < S::kRowsIn; ++q) {
    float in[S::kColsIn][8];
#pragma unroll
    for (int col = 0; col < S::kColsIn; ++col) {
      HalvesToFloats(corner[(q * S::kWinW + col) * kVectors], in[col]);
    }
#pragma unroll
    for (int j = 0; j < YI; ++j) {
      const int r = q - j * SH;
      if (r < 0 || r % DH != 0 || r / DH >= KH) continue;
#pragma unroll
      for (int s = 0; s < KW; ++s) {
        const float4 lo = *reinterpret_cast<const float4*>(my_taps + (r / DH * KW + s) * TC);
        const float4 hi = *reinterpret_cast<const float4*>(my_taps + (r / DH * KW + s) * TC + 4);
        const float wt[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
        for (int x = 0; x < XI; ++x) {
#pragma unroll
          for (int k = 0; k < 8; ++k) {
            acc[j][x][k] = __fmaf_rn(in[x * SW + s * DW][k], wt[k], acc[j][x][k]);
          }
        }
      }
    }
  }

  const int channel = c0 + 8 * vector;
  if (channel >= c) return;
  const int count = c - channel;  // channels of the vector below C (8 or more: whole)
  float bias8[8], scale8[8];
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    const bool real = Io::kVectorIo != 0 || k < count;
    bias8[k] = Op::kBias && real ? __ldg(bias + channel + k) : 0.0f;
    scale8[k] = Op::kOut != kEpiOutAccumulator && real ? __ldg(scale + channel + k) : 1.0f;
  }
#pragma unroll
  for (int j = 0; j < YI; ++j) {
    const int y = y0 + ty * YI + j;
    if (y >= oh) break;
#pragma unroll
    for (int x = 0; x < XI; ++x) {
      const int xo = x0 + tx * XI + x;
      if (xo >= ow) break;
      float v[8];
#pragma unroll
      for (int k = 0; k < 8; ++k) v[k] = Op::Apply(acc[j][x][k], bias8[k], scale8[k]);
      StorePixelVector<Io>(out, ((static_cast<s64>(b) * oh + y) * ow + xo) * c + channel, v, count);
    }
  }
}

}  // namespace tunejit

#ifdef TUNEJIT_NVCC_CHECK
#define TUNEJIT_DEPTHWISE_NHWC(K, S, D, TC, TH, TW, YI, XI, VEC, BIAS, RELU, OUT, F16)            \
  template __global__ void tunejit::depthwise_conv2d_nhwc<                                        \
      tunejit::DepthwiseFilter<K, K, S, S, D, D>, tunejit::DepthwiseTile<TC, TH, TW, YI, XI>,     \
      tunejit::DepthwiseIo<VEC, tunejit::Epi<BIAS, RELU, tunejit::EpiOut::OUT>, F16>>(            \
      const tunejit::f16*, const tunejit::f16*, const float*, const float*, void*, int, int, int, \
      int, int, int, int, int, int, int)
// The fallback on MobileNetV2's 3x3 (bias, float16 out); stride 2 with 2x2 outputs a thread,
// float32 out; EfficientNet's 5x5 requantized to int8; ConvNeXt's 7x7 scaled float32; C not a
// multiple of 8; dilation 2.
TUNEJIT_DEPTHWISE_NHWC(3, 1, 1, 32, 8, 8, 1, 4, 1, true, false, kAccumulator, 1);
TUNEJIT_DEPTHWISE_NHWC(3, 2, 1, 64, 4, 8, 2, 2, 1, false, false, kAccumulator, 0);
TUNEJIT_DEPTHWISE_NHWC(5, 2, 1, 16, 8, 8, 1, 2, 1, true, true, kInt8, 0);
TUNEJIT_DEPTHWISE_NHWC(7, 1, 1, 32, 8, 8, 1, 4, 1, true, false, kFloat32, 0);
TUNEJIT_DEPTHWISE_NHWC(3, 1, 1, 16, 4, 16, 1, 4, 0, true, true, kAccumulator, 1);
TUNEJIT_DEPTHWISE_NHWC(3, 1, 2, 8, 2, 4, 2, 1, 0, false, true, kInt8, 0);
// Activations: MobileNetV2's ReLU6 (clip [0, 6]) into float16; EfficientNet's 5x5 with silu;
// hard_swish into float32, C not a multiple of 8.
#define TUNEJIT_DEPTHWISE_NHWC_ACT(K, S, TC, TH, TW, YI, XI, VEC, F16, ...)                       \
  template __global__ void tunejit::depthwise_conv2d_nhwc<                                        \
      tunejit::DepthwiseFilter<K, K, S, S, 1, 1>, tunejit::DepthwiseTile<TC, TH, TW, YI, XI>,     \
      tunejit::DepthwiseIo<                                                                       \
          VEC, tunejit::Epi<true, false, tunejit::EpiOut::kAccumulator, false, __VA_ARGS__>,      \
          F16>>(const tunejit::f16*, const tunejit::f16*, const float*, const float*, void*, int, \
                int, int, int, int, int, int, int, int, int)
TUNEJIT_DEPTHWISE_NHWC_ACT(3, 1, 32, 8, 8, 1, 4, 1, 1,
                           tunejit::Act<tunejit::ActKind::kClip, 0, 1086324736>);
TUNEJIT_DEPTHWISE_NHWC_ACT(5, 2, 16, 8, 8, 1, 2, 1, 1, tunejit::Act<tunejit::ActKind::kSilu>);
TUNEJIT_DEPTHWISE_NHWC_ACT(3, 1, 16, 4, 16, 1, 4, 0, 0, tunejit::Act<tunejit::ActKind::kHardSwish>);
#endif  // TUNEJIT_NVCC_CHECK
