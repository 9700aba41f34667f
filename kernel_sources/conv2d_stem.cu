// File: kernel_sources/conv2d_stem.cu
// conv2d_nchw_stem_mma.cuda, the stem kernel for a 3-channel first conv: a direct
// convolution for convs with few input channels (VGG-16's RGB stem: CI 3, 3x3, 64 out), read
// from the graph's float32 NCHW input and written NHWC as float16, float32 or requantized int8,
// for the tensor-core layers after it. It replaces an im2col pass (0.42 ms at batch 128) plus a
// 1x1 wgmma GEMM over the patches (1.05 ms): the patches are built in shared memory instead.
//   out[b, y, x, co] = epilogue(sum_{c, r, s} in[b, c, y * SH + r * DH - PT, x * SW + s * DW - PL]
//                                              * weight[co, c, r, s])
//
//   conv2d_stem<CI, KH, KW, SH, SW, DH, DW, CO, TH, TW, WARPS, kEpi, kOutF16[, A]>
//   (A: the activation after the epilogue, common.cuh Act, into a float16 or float32 output:
//   MobileNetV2's ReLU6, MobileNetV3's hard_swish, EfficientNet's silu stems; Act<> none)
//   grid N * ceil(OH / TH) * ceil(OW / TW) (one output tile of TH x TW pixels each),
//   block 32 * WARPS, static shared memory only.
//
// The block stages its tile's input window (CI x the rows and columns TH x TW outputs read) in
// shared memory as float16, zero outside the image. The GEMM is M = pixels, N = CO, K = the
// CI * KH * KW patch padded to a multiple of 16 with zero weights, on mma.sync m16n8k16 (f16 x f16
// -> f32; any sm_80+ GPU). A warp takes 16 pixels of one tile row at a time: each lane gathers its
// A fragment straight from the window (its patch offsets are fixed per lane, so they are computed
// once), and holds its B fragments (the whole padded [CO, K] weight) in registers for the block's
// life, converted from the float32 OIHW weight as the graph has it (no packing step: a [CO, CI, KH,
// KW] row is the patch in the window's order). Fragments of more than 32 registers a lane
// (ResNet's 7x7 RGB stem: 147 values, 10 k steps x 8 channel tiles x 2 = 160; ConvNeXt's 4x4
// patchify stem to 96 channels: 72) live in shared memory instead, a word per lane, so that each
// warp-wide read hits 32 banks. The epilogue
// (common.cuh's formula) goes through a
// per-warp staging buffer, so that the 16 pixels' CO channels, contiguous in NHWC, leave as 16-byte
// stores.
//
// Kernel parameters: data (float32 NCHW), weight (float32 OIHW), bias, scale, out
// (ops/op_template.h conventions; out NHWC), then H, W, OH, OW, pad top, pad left, tiles per image
// along w, tiles per image.
#include "common.cuh"
#include "mma_sync.cuh"

namespace tunejit {

// EpilogueOp<kEpi, float>::Apply before SaturateToInt8x4, its ReLU as fmaxf: ptxas folds that into
// the pack's F2IP (.RELU), where Apply's compare and select cost two instructions a value. The two
// differ only on a NaN (Apply keeps it, fmaxf gives 0) and on -0 (fmaxf may give +0), which
// __float2int_rn all turns into 0: the bytes are the same.
template <int kEpi>
__device__ __forceinline__ float ApplyBeforeInt8(float acc, float bias, float scale) {
  float v = EpilogueOp<kEpi & ~kEpiRelu, float>::Apply(acc, bias, scale);
  if constexpr ((kEpi & kEpiRelu) != 0) v = fmaxf(v, 0.0f);
  return v;
}

// The output channel of mma column `col` of n-tile n. An int8 stem interleaves each pair of tiles
// by channel pairs, so that a lane's four sums of a pixel (columns 2t, 2t + 1 of tiles 2p and
// 2p + 1) are the adjacent channels 16p + 4t + {0, 1, 2, 3}: one 32-bit staging store of four
// bytes instead of two 16-bit ones.
template <bool kPaired>
__device__ __forceinline__ int StemChannel(int n, int col) {
  return kPaired ? 16 * (n / 2) + 4 * (col / 2) + 2 * (n % 2) + col % 2 : 8 * n + col;
}

// The shapes a stem kernel derives from its template arguments (the host's StemShape in
// ops/conv2d_stem.cc computes the same shared memory size).
template <int CI, int KH, int KW, int SH, int SW, int DH, int DW, int CO, int TH, int TW, int WARPS,
          int kOutBytes>
struct StemShape {
  static constexpr int kPatch = CI * KH * KW;
  static constexpr int kKSteps = (kPatch + 15) / 16;
  static constexpr int kWinH = (TH - 1) * SH + (KH - 1) * DH + 1;  // input rows of a tile
  static constexpr int kWinW = (TW - 1) * SW + (KW - 1) * DW + 1;
  static constexpr int kWindow = CI * kWinH * kWinW;
  static constexpr int kNTiles = CO / 8;
  // A staged row: CO outputs plus 16 bytes, so the 8 rows a store instruction touches fall in
  // different banks.
  static constexpr int kRowBytes = CO * kOutBytes;
  static constexpr int kStageRow = kRowBytes + 16;
  static constexpr int kMTiles = TH * TW / 16;
  // The B fragments: a 32-bit word per lane for each k step, n tile and half of the k step; in
  // registers up to 32 of them (VGG's stem: 2 k steps x 8 tiles x 2), else in shared memory.
  static constexpr int kFragRegisters = kKSteps * kNTiles * 2;
  static constexpr bool kWeightsInSmem = kFragRegisters > 32;
  static constexpr int kFragWords = kKSteps * kNTiles * 2 * 32;
  static_assert(TW % 16 == 0, "a warp's 16 pixels lie in one tile row");
  static_assert(CO % 16 == 0, "whole 16-byte output chunks");
  static_assert(kKSteps <= 16, "the stem takes patches of at most 256 values");
};

// The block's B fragments (the padded [CO, K] weight as float16 pairs): in registers, one lane's
// words (kInSmem false), or all lanes' words in shared memory (kInSmem true).
template <typename S, bool kInSmem = S::kWeightsInSmem>
struct StemWeights {
  unsigned frag[S::kKSteps][S::kNTiles][2];
  __device__ __forceinline__ void Set(int s, int n, int half, int /*lane*/, unsigned word) {
    frag[s][n][half] = word;
  }
  __device__ __forceinline__ unsigned Get(int s, int n, int half, int /*lane*/) const {
    return frag[s][n][half];
  }
};
template <typename S>
struct StemWeights<S, true> {
  unsigned* words;  // kFragWords, lane fastest
  __device__ __forceinline__ static int Index(int s, int n, int half, int lane) {
    return ((s * S::kNTiles + n) * 2 + half) * 32 + lane;
  }
  __device__ __forceinline__ void Set(int s, int n, int half, int lane, unsigned word) {
    words[Index(s, n, half, lane)] = word;
  }
  __device__ __forceinline__ unsigned Get(int s, int n, int half, int lane) const {
    return words[Index(s, n, half, lane)];
  }
};

template <int CI, int KH, int KW, int SH, int SW, int DH, int DW, int CO, int TH, int TW, int WARPS,
          int kEpi, int kOutF16, class A = Act<>>
__global__ void __launch_bounds__(32 * WARPS)
    conv2d_stem(const float* __restrict__ data, const float* __restrict__ weight,
                const float* __restrict__ bias, const float* __restrict__ scale, void* out, int h,
                int w, int oh, int ow, int pad_top, int pad_left, int tiles_w, int tiles) {
  typedef EpilogueOp<kEpi, float> Op;
  constexpr bool kInt8Out = kOutF16 == 0 && Op::kOut == kEpiOutInt8;
  static_assert(!kInt8Out || !A::kActive, "an activation into float outputs only");
  constexpr int kOutBytes = kOutF16 ? 2 : kInt8Out ? 1 : 4;
  typedef StemShape<CI, KH, KW, SH, SW, DH, DW, CO, TH, TW, WARPS, kOutBytes> S;
  __shared__ unsigned short window[S::kWindow];
  __shared__ __align__(16) unsigned char stage[WARPS][16 * S::kStageRow];
  __shared__ unsigned frag_words[S::kWeightsInSmem ? S::kFragWords : 1];
  // The wgmma conv after the stem (an overlaps_previous launch) may set up in the SMs our last
  // blocks free; it waits for this grid before reading our output.
  LaunchDependents();

  const int b = blockIdx.x / tiles;
  const int tile = blockIdx.x % tiles;
  const int y0 = tile / tiles_w * TH;
  const int x0 = tile % tiles_w * TW;
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int g = lane >> 2;  // the fragment row (and B column) of this lane
  const int t = lane & 3;   // its pair of K (and C) columns

  // The window: CI planes of kWinH x kWinW input values as float16, zeros outside the image.
  // A thread issues kBatch loads before it stores any: with one load in flight at a time (load,
  // convert, store) the window's DRAM latency was a fifth of the kernel's time (VGG-16's stem at
  // batch 128: 0.335 -> 0.272 ms in the network on the H200).
  constexpr int kThreads = 32 * WARPS;
  constexpr int kBatch = 32;
  const int iy0 = y0 * SH - pad_top;
  const int ix0 = x0 * SW - pad_left;
  const float* image = data + static_cast<s64>(b) * CI * h * w;
  for (int base = threadIdx.x; base < S::kWindow; base += kBatch * kThreads) {
    float v[kBatch];
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      const int i = base + j * kThreads;
      const int c = i / (S::kWinH * S::kWinW);
      const int iy = iy0 + i / S::kWinW % S::kWinH;
      const int ix = ix0 + i % S::kWinW;
      const bool inside = i < S::kWindow && iy >= 0 && iy < h && ix >= 0 && ix < w;
      v[j] = inside ? __ldg(image + (static_cast<s64>(c) * h + iy) * w + ix) : 0.0f;
    }
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      if (base + j * kThreads < S::kWindow) window[base + j * kThreads] = FloatToF16Bits(v[j]);
    }
  }

  // This lane's patch offsets in the window: K columns 16 s + 2 t + {0, 1, 8, 9}. Past the patch
  // they point at the pixel itself: a finite value, times the zero weight there. (A zero slot at
  // a fixed offset would not do: the offsets are relative to the pixel.)
  int patch[S::kKSteps][4];
#pragma unroll
  for (int s = 0; s < S::kKSteps; ++s) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int k = 16 * s + 2 * t + (j & 1) + (j >> 1) * 8;
      const int c = k / (KH * KW), r = k / KW % KH, q = k % KW;
      patch[s][j] = k < S::kPatch ? (c * S::kWinH + r * DH) * S::kWinW + q * DW : 0;
    }
  }
  // B fragments: column g of each 8-channel tile, K pairs (2t, 2t + 1) and (2t + 8, 2t + 9). In
  // shared memory the block's threads fill all lanes' words between them.
  StemWeights<S> weights;
  auto fragment = [&](int s, int n, int half, int lane_g, int lane_t) {
    const float* row = weight + StemChannel<kInt8Out>(n, lane_g) * S::kPatch;
    const int k = 16 * s + 8 * half + 2 * lane_t;
    const float w0 = k < S::kPatch ? __ldg(row + k) : 0.0f;
    const float w1 = k + 1 < S::kPatch ? __ldg(row + k + 1) : 0.0f;
    return FloatToF16Bits(w0) | unsigned(FloatToF16Bits(w1)) << 16;
  };
  if constexpr (S::kWeightsInSmem) {
    weights.words = frag_words;
    for (int i = threadIdx.x; i < S::kFragWords; i += kThreads) {
      const int l = i % 32, half = i / 32 % 2, n = i / 64 % S::kNTiles, s = i / (64 * S::kNTiles);
      weights.Set(s, n, half, l, fragment(s, n, half, l >> 2, l & 3));
    }
  } else {
#pragma unroll
    for (int n = 0; n < S::kNTiles; ++n) {
#pragma unroll
      for (int s = 0; s < S::kKSteps; ++s) {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          weights.Set(s, n, half, lane, fragment(s, n, half, g, t));
        }
      }
    }
  }
  float col_bias[S::kNTiles][2], col_scale[S::kNTiles][2];
#pragma unroll
  for (int n = 0; n < S::kNTiles; ++n) {
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int c = StemChannel<kInt8Out>(n, 2 * t + e);
      col_bias[n][e] = Op::kBias ? __ldg(bias + c) : 0.0f;
      col_scale[n][e] = Op::kOut != kEpiOutAccumulator ? __ldg(scale + c) : 1.0f;
    }
  }
  __syncthreads();

  unsigned char* my_stage = stage[warp];
  for (int m = warp; m < S::kMTiles; m += WARPS) {
    const int ty = m * 16 / TW, tx = m * 16 % TW;
    const int y = y0 + ty;
    if (y >= oh || x0 + tx >= ow) continue;  // warp-uniform
    float acc[S::kNTiles][4];
#pragma unroll
    for (int n = 0; n < S::kNTiles; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;
    const int pixel = ty * SH * S::kWinW + (tx + g) * SW;  // row g; row g + 8 is 8 SW further
#pragma unroll
    for (int s = 0; s < S::kKSteps; ++s) {
      unsigned a[4];
#pragma unroll
      for (int half = 0; half < 2; ++half) {  // K columns 2t, 2t+1, then 2t+8, 2t+9
#pragma unroll
        for (int row = 0; row < 2; ++row) {  // pixel g, then g + 8
          const unsigned short* p = window + pixel + row * 8 * SW;
          a[2 * half + row] = p[patch[s][2 * half]] | unsigned(p[patch[s][2 * half + 1]]) << 16;
        }
      }
#pragma unroll
      for (int n = 0; n < S::kNTiles; ++n)
        MmaF16M16N8K16(acc[n], a, weights.Get(s, n, 0, lane), weights.Get(s, n, 1, lane));
    }
    // Epilogue into the staging rows: row g holds acc[.][0..1], row g + 8 acc[.][2..3].
    if constexpr (kInt8Out) {  // tiles 2p and 2p + 1 together: 4 adjacent channels (StemChannel)
#pragma unroll
      for (int row = 0; row < 2; ++row) {
        auto v = [&](int n, int e) {
          return ApplyBeforeInt8<kEpi>(acc[n][2 * row + e], col_bias[n][e], col_scale[n][e]);
        };
#pragma unroll
        for (int p = 0; p < S::kNTiles / 2; ++p) {
          *reinterpret_cast<unsigned*>(my_stage + (g + 8 * row) * S::kStageRow + 16 * p + 4 * t) =
              SaturateToInt8x4(v(2 * p, 0), v(2 * p, 1), v(2 * p + 1, 0), v(2 * p + 1, 1));
        }
      }
    } else {
#pragma unroll
      for (int n = 0; n < S::kNTiles; ++n) {
#pragma unroll
        for (int row = 0; row < 2; ++row) {
          const float v0 = Op::Apply(acc[n][2 * row], col_bias[n][0], col_scale[n][0]);
          const float v1 = Op::Apply(acc[n][2 * row + 1], col_bias[n][1], col_scale[n][1]);
          unsigned char* dst =
              my_stage + (g + 8 * row) * S::kStageRow + (8 * n + 2 * t) * kOutBytes;
          if constexpr (kOutF16 != 0) {
            *reinterpret_cast<unsigned*>(dst) =
                A::ApplyF16(FloatToF16Bits(v0)) | unsigned(A::ApplyF16(FloatToF16Bits(v1))) << 16;
          } else {
            *reinterpret_cast<float2*>(dst) = make_float2(A::Apply(v0), A::Apply(v1));
          }
        }
      }
    }
    __syncwarp();
    // The 16 pixels are contiguous in NHWC: 16 rows of CO outputs, in 16-byte chunks.
    constexpr int kChunksPerRow = S::kRowBytes / 16;
    unsigned char* first = static_cast<unsigned char*>(out) +
                           ((static_cast<s64>(b) * oh + y) * ow + x0 + tx) * S::kRowBytes;
#pragma unroll
    for (int i = lane; i < 16 * kChunksPerRow; i += 32) {
      const int row = i / kChunksPerRow, chunk = i % kChunksPerRow;
      if (x0 + tx + row < ow) {
        *reinterpret_cast<uint4*>(first + 16 * i) =  // row * S::kRowBytes + chunk * 16
            *reinterpret_cast<const uint4*>(my_stage + row * S::kStageRow + chunk * 16);
      }
    }
    __syncwarp();
  }
}

}  // namespace tunejit

#ifdef TUNEJIT_NVCC_CHECK
#define TUNEJIT_CONV2D_STEM(CI, K, S, D, CO, TH, TW, WARPS, EPI, F16, ...)                         \
  template __global__ void                                                                         \
  tunejit::conv2d_stem<CI, K, K, S, S, D, D, CO, TH, TW, WARPS, EPI, F16, ##__VA_ARGS__>(          \
      const float*, const float*, const float*, const float*, void*, int, int, int, int, int, int, \
      int, int)
TUNEJIT_CONV2D_STEM(3, 3, 1, 1, 64, 8, 32, 4, 3, 1);   // VGG-16's stem: bias + relu, fp16 out
TUNEJIT_CONV2D_STEM(3, 3, 1, 1, 64, 4, 64, 8, 11, 0);  // bias + relu + requantize to int8
TUNEJIT_CONV2D_STEM(1, 5, 2, 1, 32, 2, 16, 2, 0, 0);   // fp32 out, stride 2, K 25 -> 32
TUNEJIT_CONV2D_STEM(4, 3, 1, 2, 32, 1, 16, 1, 7, 0);   // dilation 2, scaled fp32, K 36 -> 48
TUNEJIT_CONV2D_STEM(3, 7, 2, 1, 64, 4, 32, 4, 3, 1);   // ResNet's: K 147 -> 160, weights in smem
TUNEJIT_CONV2D_STEM(3, 4, 4, 1, 96, 2, 32, 4, 3, 1);   // ConvNeXt's patchify: 96 out, smem
// MobileNetV2's stem (3x3 stride 2, 32 out, ReLU6 = clip [0, 6]); MobileNetV3's (16 out,
// hard_swish); EfficientNet's silu into float32.
TUNEJIT_CONV2D_STEM(3, 3, 2, 1, 32, 4, 32, 4, 1, 1,
                    tunejit::Act<tunejit::ActKind::kClip, 0, 1086324736>);
TUNEJIT_CONV2D_STEM(3, 3, 2, 1, 16, 4, 32, 4, 1, 1, tunejit::Act<tunejit::ActKind::kHardSwish>);
TUNEJIT_CONV2D_STEM(3, 3, 2, 1, 32, 4, 32, 4, 1, 0, tunejit::Act<tunejit::ActKind::kSilu>);
#endif  // TUNEJIT_NVCC_CHECK
