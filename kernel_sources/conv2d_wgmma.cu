// File: kernel_sources/conv2d_wgmma.cu
// conv2d_nhwc_wgmma.cuda (docs/tensorcore-design.md 1.3): implicit-GEMM
// convolution on Hopper tensor cores, NHWC: fp16 in, fp32 accumulation, fp32 or fp16 out; or
// (kInt8) int8 in, int32 accumulation, int32, fp32 or requantized int8 out.
//   out[b, y, x, co] = epilogue(sum_{r, s, c} in[b, y * SH + r * DH - PT, x * SW + s * DW - PL, c]
//                                           * weight[co, r, s, c])
//
//   conv2d_wgmma<ConvTilePolicy<TH, TW, TB, BN, SWAP_AB>,
//                ConvPipelinePolicy<STAGES, CONS_WG, PINGPONG, CLUSTER>,
//                ConvLoadPolicy<ATOM, kIm2col, HALO>,
//                ConvOutputPolicy<kInt8, Epi<BIAS, RELU, OUT[, RESIDUAL[, Act<...>]]>, kOutF16,
//                                 POOL>>
//   (ops/conv2d_wgmma.cc ConvKernelName writes the name expression)
//   grid (at most the number of output tiles, M tiles x ceil(CO / BN); one block per SM makes it
//   persistent: wgmma_core.cuh WgmmaBlock; PINGPONG: its two consumers take whole tiles in
//   turn), block 128 * (1 + CONS_WG), dynamic shared memory
//   WgmmaSmemBytes(TH * TW, BN, 128, STAGES), with HALO WgmmaSmemBytes(TH * TW, BN, HALO * ATOM,
//   STAGES, ATOM, TW) (+ WgmmaPoolBytes(TW, CONS_WG) with POOL; with SWAP_AB instead
//   CONS_WG x WgmmaSwapStagingBytes(consumer rows, POOL, output bytes)). Output tile
//   t is channel tile t % ceil(CO / BN) of pixel tile t / ceil(CO / BN): the channel tiles of one
//   pixel tile run side by side, so its input is read from DRAM once and from L2 after.
//
// The GEMM view: M = the output pixels, in tiles of TH x TW pixels of TB images (rows h-major,
// image by image);
// N = CO; K = KH * KW * C, walked one tap (r, s) and one 128-byte swizzled row of E channels
// (E = 64 fp16 or 128 int8) per k tile. Everything but the loads is wgmma_core.cuh's. The loads
// need no im2col: tap (r, s) of the tile's pixels is one 4-D box {E, TW, TH, TB} of the input at
// {c0, x0 * SW + s * DW - PL, y0 * SH + r * DH - PT, b}, whose W and H dimensions step SW and SH
// elements (the map's element strides: its box is {E, TW * SW, TH * SH, TB} elements of the
// input, of which TMA brings every SW-th and SH-th), and TMA writes zeros for coordinates
// outside the image, which is exactly the zero padding (and the C tail when C % E != 0; and the
// images past N). It lands as TB * TH * TW rows of 128 bytes, the A operand layout of the GEMM
// core. The weight's k tile is a
// 3-D box {E, 1, BN} of the weight viewed as {C, KH * KW, CO}, zeros past C and CO.
// kIm2col = 1: the M tile is TH * TW consecutive output pixels in (N, H, W) order instead, loaded
// with TMA's im2col mode (x_map from cuTensorMapEncodeIm2col, its bounding box the input pixels
// of the output pixels' first taps, walked in steps of SW and SH, the map's element strides; tap
// (r, s) is the load's offset {s * DW, r * DH}). The rows may run
// across image rows and images, so no tile overhangs the output where TH x TW does not divide it
// (a 28 x 28 output in 4 x 32 tiles computes 14% of its rows for nothing; 14 x 14 in 8 x 16, 31%).
// ATOM = 64 (C within 64 bytes: int8 C <= 64, the fp16 stem's 32 patch values): rows of 64
// bytes with 64-byte swizzle, E halved, and each k tile two taps, one per 64-byte atom, where a
// 128-byte row would hold one tap and 64 bytes of zeros.
//
// CLUSTER = 2: clusters of two blocks take the two channel tiles of one pixel tile side by side
// (tile t and t + 1, t even: ceil(CO / BN) is even and the grid too), and each loads half of the
// tile's pixel rows (x_map's box is half the M tile: TH / 2 rows, or TH * TW / 2 im2col pixels)
// into both blocks' stages with TMA multicast, halving the input's L2 reads. The weights are
// loaded per block. wgmma_core.cuh hands each stage back to both producers.
//
// HALO = KH (the filter's rows; 0: off): a stage holds one filter column s and one row of
// channels for all KH filter rows, from one input box of TH + KH - 1 image rows {E, TW, TH + KH -
// 1, 1} at {c0, x0 * SW + s * DW - PL, y0 - PT, b}: filter row r's A operand is the TH * TW rows
// from row r * TW on (wgmma_core.cuh WgmmaStage's overlapping atoms; TW a multiple of 8 so each
// starts on a swizzle group), and the weight's KH boxes of taps r * KW + s follow. The input goes
// from L2 to shared memory (TH + KH - 1) / (KH * TH) as often as with a box per tap (3x3, TH = 8:
// 42%), the traffic that bounds the 64-channel convs, whose wgmmas are short (N = 64: conv1_2).
// Tiled loads only (kIm2col 0), no cluster, filter rows DH = 1 apart and SH = 1 (the box's rows are
// consecutive).
//
// SWAP_AB = 1 (BN = 64, at most 256 pixels per consumer): the weight's 64 rows are wgmma's A and
// the pixels its B, so that a 64-channel conv's wgmmas (conv1_2) read 10 KiB of shared memory per
// 64 x 256 x 16 products rather than 16 (wgmma_core.cuh WgmmaSwappedEpilogue); the loads and the
// stage layout are the same.
//
// TB > 1 (tiled, no cluster, no halo): the M tile is the same TH x TW pixels of TB consecutive
// images, so that a tile of whole windows can be small enough to divide the output (56 x 56 in
// 8 x 8 x 2 tiles: no rows computed for nothing, where 8 x 16 computes 14% more and im2col tiles
// cannot pool).
//
// POOL = 1 (conv2d_nhwc_wgmma_pool.cuda): a 2x2 max pool (stride 2) follows the epilogue, in
// the kernel: tiles of whole image rows (kIm2col 0) hold whole windows when TH is even, OH and OW
// are even and each consumer's rows start at an even image row (ops/conv2d_wgmma.cc checks), so
// wgmma_core.cuh WgmmaPool2x2 reduces each window in registers and shared memory and only its
// top-left row is written, to the [N, OH / 2, OW / 2, CO] output (ConvPoolRows).
//
// Kernel parameters: x_map ({C, W, H, N}, box {E, TW, TH, TB}), w_map ({C, KH * KW, CO}, box
// {E, 1, BN}), both 128-byte swizzled; bias, scale, out (ops/op_template.h conventions, out
// NHWC), residual (with a residual epilogue, common.cuh kEpiResidual: a tensor shaped like the
// output, float16, or int8 into a requantized int8 output with its scales after the channels' in
// `scale`, added before the ReLU; else null); then the geometry as runtime values (C, CO,
// OH, OW, KW, KH * KW, pad top/left, stride h/w, dilation h/w, tiles per image along h/w, pixel
// tiles in all, output pixels in all), so one compiled kernel serves every layer of a network that
// shares the tile config. The Epi's activation (common.cuh Act: clip, silu, hard_swish) comes
// after the residual and its ReLU, into fp16 convs' float16 or float32 outputs without a pool.
#include "wgmma_core.cuh"

namespace tunejit {

struct ConvWgmmaGeometry {
  int c, co, oh, ow, kw, taps, pad_top, pad_left, stride_h, stride_w, dil_h, dil_w;
  int tiles_h, tiles_w;  // tiles per image
  int m_tiles;           // pixel tiles: ceil(N / TB) * tiles_h * tiles_w (im2col: pixels / TH TW)
  int pixels;            // output pixels in all: N * OH * OW
  __device__ __forceinline__ int images() const { return pixels / (oh * ow); }
};

// A tiled tile's pixel of local row `row`: TH x TW pixels of each of TB images from (b, y0, x0);
// `in` false past the output or the batch.
template <int TH, int TW, int TB>
struct ConvTilePixel {
  int b, y, x;
  bool in;
  __device__ __forceinline__ ConvTilePixel(int row, int b0, int y0, int x0, int oh, int ow,
                                           int images) {
    const int within = TB == 1 ? row : row % (TH * TW);
    b = TB == 1 ? b0 : b0 + row / (TH * TW);
    y = y0 + within / TW;
    x = x0 + within % TW;
    in = y < oh && x < ow && (TB == 1 || b < images);
  }
};

// Output rows of a tile: local row -> NHWC index of its pixel (ConvTilePixel).
template <int TH, int TW, int TB>
struct ConvRows {
  int b, y0, x0, oh, ow, co, images;
  __device__ __forceinline__ s64 operator()(int row) const {
    const ConvTilePixel<TH, TW, TB> p(row, b, y0, x0, oh, ow, images);
    if (!p.in) return -1;
    return ((static_cast<s64>(p.b) * oh + p.y) * ow + p.x) * co;
  }
};

// Output rows of a tile pooled 2x2 (POOL = 1): the top-left row of each window -> NHWC index of
// pooled pixel (b, y / 2, x / 2) of the [N, OH / 2, OW / 2, CO] output; the window's other rows,
// and rows past the output (OH, OW even: a window is in or out whole), -1.
template <int TH, int TW, int TB>
struct ConvPoolRows {
  int b, y0, x0, oh, ow, co, images;  // the conv's output size
  __device__ __forceinline__ s64 operator()(int row) const {
    const ConvTilePixel<TH, TW, TB> p(row, b, y0, x0, oh, ow, images);
    if (((p.y | p.x) & 1) != 0 || !p.in) return -1;
    return ((static_cast<s64>(p.b) * (oh / 2) + p.y / 2) * (ow / 2) + p.x / 2) * co;
  }
};

// The loads of one output tile. (b, y0, x0) is the first pixel this block loads: the tile's, or
// in a cluster the first of its half (ConvTiles::At); `a` is the tile's A atom, and the half goes
// to its rows from kRowsPerLoad * rank on, in this block's and its peer's shared memory.
template <int TH, int TW, int TB, int BN, int kInt8, int ATOM, int kIm2col, int CLUSTER, int HALO>
struct ConvProducer {
  static constexpr int kRowsPerLoad = TB * TH * TW / CLUSTER;
  const hopper::TmaDescriptor* x_map;
  const hopper::TmaDescriptor* w_map;
  ConvWgmmaGeometry g;
  int b, y0, x0, n0, c_tiles, rank;
  // The boxes of filter tap `tap` and channel `c0` into an A atom and a B atom.
  __device__ __forceinline__ void LoadTap(unsigned char* a, unsigned char* w, hopper::u64* full,
                                          int tap, int c0, int weight_tap) const {
    const int r = tap / g.kw, s = tap % g.kw;
    // The input pixel of the load's first output pixel under the filter's first tap.
    const int x = x0 * g.stride_w - g.pad_left, y = y0 * g.stride_h - g.pad_top;
    const unsigned short off_w = static_cast<unsigned short>(s * g.dil_w);
    const unsigned short off_h = static_cast<unsigned short>(r * g.dil_h);
    if constexpr (CLUSTER == 1) {
      if constexpr (kIm2col != 0) {
        hopper::TmaLoadIm2col4d(a, x_map, full, c0, x, y, b, off_w, off_h);
      } else {
        hopper::TmaLoad4d(a, x_map, full, c0, x + off_w, y + off_h, b);
      }
    } else {
      constexpr unsigned short kAll = (1 << CLUSTER) - 1;
      unsigned char* half = a + rank * kRowsPerLoad * ATOM;
      if constexpr (kIm2col != 0) {
        hopper::TmaLoadIm2col4dMulticast(half, x_map, full, c0, x, y, b, off_w, off_h, kAll);
      } else {
        hopper::TmaLoad4dMulticast(half, x_map, full, c0, x + off_w, y + off_h, b, kAll);
      }
    }
    hopper::TmaLoad3d(w, w_map, full, c0, weight_tap, n0);
  }
  // HALO: filter column s = kt / c_tiles of all the filter rows, channels c0 (one box of the
  // input, TH + HALO - 1 rows), the weight's taps r * KW + s in the B atoms.
  __device__ __forceinline__ void LoadColumn(unsigned char* a, unsigned char* w, hopper::u64* full,
                                             int kt) const {
    constexpr int kRowElems = ATOM / (kInt8 ? 1 : 2);
    const int s = kt / c_tiles, c0 = (kt % c_tiles) * kRowElems;
    hopper::TmaLoad4d(a, x_map, full, c0, x0 * g.stride_w - g.pad_left + s * g.dil_w,
                      y0 - g.pad_top, b);
#pragma unroll
    for (int r = 0; r < HALO; ++r) {
      hopper::TmaLoad3d(w + r * BN * ATOM, w_map, full, c0, r * g.kw + s, n0);
    }
  }
  __device__ __forceinline__ void operator()(unsigned char* a, unsigned char* w, hopper::u64* full,
                                             int kt) const {
    if constexpr (HALO != 0) {
      LoadColumn(a, w, full, kt);
    } else if constexpr (ATOM == kWgmmaAtomBytes) {  // one tap, one 128-byte row of channels
      const int tap = kt / c_tiles;
      LoadTap(a, w, full, tap, (kt % c_tiles) * WgmmaKind<kInt8>::kAtomElems, tap);
    } else {
      // Narrow channels (C within 64 bytes, c_tiles 1): taps 2 kt and 2 kt + 1 in the stage's two
      // 64-byte atoms. Past the last tap (an odd tap count) the weight box lies past the taps, so
      // TMA fills it with zeros (still counting its bytes) and the repeated input box adds 0.
#pragma unroll
      for (int atom = 0; atom < 2; ++atom) {
        const int tap = 2 * kt + atom;
        LoadTap(a + atom * TB * TH * TW * ATOM, w + atom * BN * ATOM, full, tap < g.taps ? tap : 0,
                0, tap);
      }
    }
  }
};

// Output rows of an im2col tile: local row -> NHWC index of output pixel m0 + row.
struct ConvLinearRows {
  int m0, pixels, co;
  __device__ __forceinline__ s64 operator()(int row) const {
    const int pixel = m0 + row;
    return pixel < pixels ? static_cast<s64>(pixel) * co : -1;
  }
};

template <int TH, int TW, int TB, int kIm2col, int POOL>
struct ConvRowsOf {
  typedef ConvRows<TH, TW, TB> Type;
};
template <int TH, int TW, int TB>
struct ConvRowsOf<TH, TW, TB, 1, 0> {
  typedef ConvLinearRows Type;
};
template <int TH, int TW, int TB>
struct ConvRowsOf<TH, TW, TB, 0, 1> {
  typedef ConvPoolRows<TH, TW, TB> Type;
};

// The output tiles of the conv, for WgmmaBlock. `rank`: this block's rank in its cluster (0
// without clusters), which picks the half of each pixel tile it loads.
template <int TH, int TW, int TB, int BN, int kInt8, int ATOM, int kIm2col, int CLUSTER, int POOL,
          int HALO>
struct ConvTiles {
  const hopper::TmaDescriptor* x_map;
  const hopper::TmaDescriptor* w_map;
  ConvWgmmaGeometry g;
  int c_tiles, n_tiles, rank;
  __device__ __forceinline__ int count() const { return g.m_tiles * n_tiles; }
  typedef ConvProducer<TH, TW, TB, BN, kInt8, ATOM, kIm2col, CLUSTER, HALO> Producer;
  typedef typename ConvRowsOf<TH, TW, TB, kIm2col, POOL>::Type Rows;
  __device__ __forceinline__ WgmmaTile<Producer, Rows> At(int t) const {
    const int m_tile = t / n_tiles, n0 = (t % n_tiles) * BN;
    if constexpr (kIm2col != 0) {
      const int m0 = m_tile * TB * TH * TW, per_image = g.oh * g.ow;
      const int first = m0 + rank * Producer::kRowsPerLoad;  // this block's load starts here
      const int b = first / per_image, y0 = first % per_image / g.ow, x0 = first % g.ow;
      return {Producer{x_map, w_map, g, b, y0, x0, n0, c_tiles, rank},
              ConvLinearRows{m0, g.pixels, g.co}, 0, n0};
    } else {
      const int per_images = g.tiles_h * g.tiles_w;  // tiles per TB images
      const int b = m_tile / per_images * TB;
      const int y0 = (m_tile % per_images) / g.tiles_w * TH;
      const int x0 = (m_tile % per_images) % g.tiles_w * TW;
      return {Producer{x_map, w_map, g, b, y0 + rank * (TH / CLUSTER), x0, n0, c_tiles, rank},
              Rows{b, y0, x0, g.oh, g.ow, g.co, g.images()}, 0, n0};
    }
  }
};

// The kernel's compile-time choices, in four named groups.
// The output tile: TB images of TH x TW pixels by BN output channels; SWAP_AB computes it
// transposed (channels as wgmma's M).
template <int TH, int TW, int TB, int BN, int SWAP_AB>
struct ConvTilePolicy {
  static constexpr int kH = TH, kW = TW, kImages = TB, kChannels = BN, kSwapAB = SWAP_AB;
};
// The mainloop: STAGES shared-memory stages, CONS_WG consumer warpgroups taking whole tiles in
// turn (PINGPONG) or splitting each, in clusters of CLUSTER blocks sharing the input loads.
template <int STAGES, int CONS_WG, int PINGPONG, int CLUSTER>
struct ConvPipelinePolicy {
  static constexpr int kStages = STAGES, kConsumers = CONS_WG, kPingPong = PINGPONG,
                       kCluster = CLUSTER;
};
// The loads: ATOM-byte rows of channels (128, or 64 for narrow convs), TMA im2col boxes or tiled
// ones, HALO filter rows per input box (0: a box per tap).
template <int ATOM, int IM2COL, int HALO>
struct ConvLoadPolicy {
  static constexpr int kAtom = ATOM, kIm2col = IM2COL, kHalo = HALO;
};
// The operands and the output: int8 or fp16 data, the epilogue (common.cuh Epi: bias, ReLU, what
// it writes, a residual, an activation), a float16 output, a 2x2 max pool in the kernel.
template <int INT8, typename EPILOGUE, int OUT_F16, int POOL>
struct ConvOutputPolicy {
  static constexpr int kInt8 = INT8, kEpi = EPILOGUE::kCode, kOutF16 = OUT_F16, kPool = POOL;
  typedef typename EPILOGUE::Activation Activation;
};

template <typename Tile, typename Pipeline, typename Loads, typename Output>
__global__ void __cluster_dims__(Pipeline::kCluster, 1, 1)
    __launch_bounds__(128 * (1 + Pipeline::kConsumers), 1)
        conv2d_wgmma(const __grid_constant__ hopper::TmaDescriptor x_map,
                     const __grid_constant__ hopper::TmaDescriptor w_map,
                     const float* __restrict__ bias, const float* __restrict__ scale, void* out,
                     const void* residual, int c, int co, int oh, int ow, int kw, int taps,
                     int pad_top, int pad_left, int stride_h, int stride_w, int dil_h, int dil_w,
                     int tiles_h, int tiles_w, int m_tiles, int pixels) {
  constexpr int TH = Tile::kH, TW = Tile::kW, TB = Tile::kImages, BN = Tile::kChannels,
                SWAP_AB = Tile::kSwapAB;
  constexpr int STAGES = Pipeline::kStages, CONS_WG = Pipeline::kConsumers,
                PINGPONG = Pipeline::kPingPong, CLUSTER = Pipeline::kCluster;
  constexpr int ATOM = Loads::kAtom, kIm2col = Loads::kIm2col, HALO = Loads::kHalo;
  constexpr int kInt8 = Output::kInt8, kEpi = Output::kEpi, kOutF16 = Output::kOutF16,
                POOL = Output::kPool;
  const ConvWgmmaGeometry g{c,        co,       oh,    ow,    kw,      taps,    pad_top, pad_left,
                            stride_h, stride_w, dil_h, dil_w, tiles_h, tiles_w, m_tiles, pixels};
  static_assert(TH <= 256 && TW <= 256, "a TMA box dimension is at most 256");
  static_assert(CLUSTER == 1 || CLUSTER == 2, "clusters of one or two blocks");
  static_assert(CLUSTER == 1 || kIm2col != 0 || TH % CLUSTER == 0, "whole rows per half tile");
  static_assert(POOL == 0 || (kIm2col == 0 && TH % 2 == 0), "pooled tiles hold whole windows");
  static_assert(POOL == 0 || (kEpi & kEpiResidual) == 0, "a residual is added before no pool");
  static_assert(POOL == 0 || !Output::Activation::kActive, "an activation comes before no pool");
  static_assert(kInt8 == 0 || !Output::Activation::kActive, "an activation on fp16 convs only");
  static_assert(HALO == 0 || (kIm2col == 0 && CLUSTER == 1), "halo boxes are tiled, per block");
  static_assert(HALO == 0 || TH + HALO - 1 <= 256, "a TMA box dimension is at most 256");
  static_assert(TB == 1 || (kIm2col == 0 && CLUSTER == 1 && HALO == 0),
                "images per tile: tiled boxes, per block, a box per tap");
  constexpr int BM = TB * TH * TW;
  // Channels per atom row; a narrow conv has them all in one row (c_tiles 1), two taps a stage
  // (HALO: the filter's rows, each a stage's atom).
  constexpr int kRowElems = ATOM / (kInt8 ? 1 : 2);
  const int c_tiles = CeilDiv(g.c, kRowElems);
  const int k_tiles = HALO != 0                 ? g.kw * c_tiles
                      : ATOM == kWgmmaAtomBytes ? g.taps * c_tiles
                                                : CeilDiv(g.taps, 2);
  constexpr int kStageBytes = HALO != 0 ? HALO * ATOM : kWgmmaAtomBytes;
  const int rank = CLUSTER == 1 ? 0 : static_cast<int>(hopper::ClusterRank());
  WgmmaBlock<BM, BN, kStageBytes, STAGES, CONS_WG, kInt8, kEpi, kOutF16, PINGPONG, ATOM, CLUSTER,
             POOL != 0 ? TW : 0, HALO != 0 ? TW : 0, SWAP_AB, typename Output::Activation>(
      ConvTiles<TH, TW, TB, BN, kInt8, ATOM, kIm2col, CLUSTER, POOL, HALO>{
          &x_map, &w_map, g, c_tiles, CeilDiv(g.co, BN), rank},
      &x_map, &w_map, out, bias, scale, g.co, k_tiles, residual);
}

}  // namespace tunejit

#ifdef TUNEJIT_NVCC_CHECK
// The arguments in the order of the policies: tile (TH, TW, TB, BN, SW), pipeline (STAGES,
// CONS_WG, PP, CL), loads (ATOM, IM2COL, HALO), output (I8, the epilogue's BIAS, RELU and OUT, F16,
// PL).
// The epilogue type last (its commas pass through __VA_ARGS__).
#define TUNEJIT_CONV2D_WGMMA_EPI(TH, TW, TB, BN, SW, STAGES, CONS_WG, PP, CL, ATOM, IM2COL, HALO, \
                                 I8, F16, PL, ...)                                                \
  template __global__ void                                                                        \
  tunejit::conv2d_wgmma<tunejit::ConvTilePolicy<TH, TW, TB, BN, SW>,                              \
                        tunejit::ConvPipelinePolicy<STAGES, CONS_WG, PP, CL>,                     \
                        tunejit::ConvLoadPolicy<ATOM, IM2COL, HALO>,                              \
                        tunejit::ConvOutputPolicy<I8, __VA_ARGS__, F16, PL>>(                     \
      const __grid_constant__ tunejit::hopper::TmaDescriptor,                                     \
      const __grid_constant__ tunejit::hopper::TmaDescriptor, const float*, const float*, void*,  \
      const void*, int, int, int, int, int, int, int, int, int, int, int, int, int, int, int, int)
#define TUNEJIT_CONV2D_WGMMA(TH, TW, TB, BN, SW, STAGES, CONS_WG, PP, CL, ATOM, IM2COL, HALO, I8, \
                             BIAS, RELU, OUT, F16, PL)                                            \
  TUNEJIT_CONV2D_WGMMA_EPI(TH, TW, TB, BN, SW, STAGES, CONS_WG, PP, CL, ATOM, IM2COL, HALO, I8,   \
                           F16, PL, tunejit::Epi<BIAS, RELU, tunejit::EpiOut::OUT>)
// The fallback config (fp32 out); bias + relu into fp16; one consumer, scaled fp32 out.
TUNEJIT_CONV2D_WGMMA(8, 16, 1, 128, 0, 4, 2, 0, 1, 128, 0, 0, 0, false, false, kAccumulator, 0, 0);
TUNEJIT_CONV2D_WGMMA(8, 16, 1, 256, 0, 3, 2, 0, 1, 128, 0, 0, 0, true, true, kAccumulator, 1, 0);
TUNEJIT_CONV2D_WGMMA(4, 16, 1, 64, 0, 2, 1, 0, 1, 128, 0, 0, 0, true, true, kFloat32, 0, 0);
// int8: bias + relu + requantize to int8; fp16 requantized to int8 (int8's stem).
TUNEJIT_CONV2D_WGMMA(8, 16, 1, 128, 0, 4, 2, 0, 1, 128, 0, 0, 1, true, true, kInt8, 0, 0);
TUNEJIT_CONV2D_WGMMA(8, 16, 1, 64, 0, 4, 2, 0, 1, 128, 0, 0, 0, true, true, kInt8, 0, 0);
// Ping-pong: 64 x 256 per consumer in fp16, 128 x 128 in int8.
TUNEJIT_CONV2D_WGMMA(4, 16, 1, 256, 0, 4, 2, 1, 1, 128, 0, 0, 0, true, true, kAccumulator, 1, 0);
TUNEJIT_CONV2D_WGMMA(8, 16, 1, 128, 0, 4, 2, 1, 1, 128, 0, 0, 1, true, true, kInt8, 0, 0);
// 64-byte rows: int8 with 64 channels; fp16 with 32 channels (the RGB stem).
TUNEJIT_CONV2D_WGMMA(8, 16, 1, 64, 0, 4, 2, 0, 1, 64, 0, 0, 1, true, true, kInt8, 0, 0);
TUNEJIT_CONV2D_WGMMA(16, 16, 1, 64, 0, 4, 1, 0, 1, 64, 0, 0, 0, true, true, kAccumulator, 1, 0);
// im2col tiles: 128 pixels x 256 in fp16; int8 with 64-byte rows, ping-pong.
TUNEJIT_CONV2D_WGMMA(2, 64, 1, 256, 0, 4, 2, 0, 1, 128, 1, 0, 0, true, true, kAccumulator, 1, 0);
TUNEJIT_CONV2D_WGMMA(4, 64, 1, 128, 0, 4, 2, 1, 1, 64, 1, 0, 1, true, true, kInt8, 0, 0);
// Clusters of two: im2col fp16 (256 pixels x 128), tiled int8 ping-pong.
TUNEJIT_CONV2D_WGMMA(4, 64, 1, 128, 0, 4, 2, 0, 2, 128, 1, 0, 0, true, true, kAccumulator, 1, 0);
TUNEJIT_CONV2D_WGMMA(8, 16, 1, 128, 0, 4, 2, 1, 2, 128, 0, 0, 1, true, true, kInt8, 0, 0);
// Pooled 2x2: rows of 8 (y pairs in one thread), 16 (across warps), 64 (across subtiles); fp16
// and requantized int8, ping-pong.
TUNEJIT_CONV2D_WGMMA(16, 8, 1, 64, 0, 4, 2, 0, 1, 128, 0, 0, 0, true, true, kAccumulator, 1, 1);
TUNEJIT_CONV2D_WGMMA(8, 16, 1, 128, 0, 4, 2, 1, 1, 128, 0, 0, 1, true, true, kInt8, 0, 1);
TUNEJIT_CONV2D_WGMMA(4, 64, 1, 64, 0, 4, 2, 0, 2, 128, 0, 0, 0, true, true, kAccumulator, 1, 1);
// Halo boxes (a stage per filter column): fp16 conv1_2 pooled, 8 x 32 x 64 ping-pong; int8 with
// 64-byte rows; fp16 128 channels, 16 x 16 cooperative.
TUNEJIT_CONV2D_WGMMA(8, 32, 1, 64, 0, 3, 2, 1, 1, 128, 0, 3, 0, true, true, kAccumulator, 1, 1);
TUNEJIT_CONV2D_WGMMA(8, 32, 1, 64, 0, 4, 2, 1, 1, 64, 0, 3, 1, true, true, kInt8, 0, 1);
TUNEJIT_CONV2D_WGMMA(16, 16, 1, 128, 0, 2, 2, 0, 1, 128, 0, 3, 0, true, true, kAccumulator, 1, 0);
// Swapped operands (64 channels): conv1_2 pooled, fp16 8 x 32 ping-pong and int8 with 64-byte
// rows; unpooled, cooperative, float32 out, tap by tap.
TUNEJIT_CONV2D_WGMMA(8, 32, 1, 64, 1, 3, 2, 1, 1, 128, 0, 3, 0, true, true, kAccumulator, 1, 1);
TUNEJIT_CONV2D_WGMMA(8, 32, 1, 64, 1, 4, 2, 1, 1, 64, 0, 3, 1, true, true, kInt8, 0, 1);
TUNEJIT_CONV2D_WGMMA(8, 16, 1, 64, 1, 4, 2, 0, 1, 128, 0, 0, 0, false, false, kAccumulator, 0, 0);
// Two images per tile: conv3_3 pooled (8 x 8 of each, fp16 and requantized int8); int8 64-byte
// rows (two taps a stage), float32 out.
TUNEJIT_CONV2D_WGMMA(8, 8, 2, 256, 0, 4, 2, 0, 1, 128, 0, 0, 0, true, true, kAccumulator, 1, 1);
TUNEJIT_CONV2D_WGMMA(8, 8, 2, 128, 0, 4, 2, 0, 1, 128, 0, 0, 1, true, true, kInt8, 0, 1);
TUNEJIT_CONV2D_WGMMA(4, 16, 2, 64, 0, 4, 2, 0, 1, 64, 0, 0, 1, true, true, kFloat32, 0, 0);
// The residual (ResNet's skip connection) added in the epilogue, then the ReLU: 16-byte stores;
// swapped operands (the staged rows' copy adds it); no ReLU after it.
TUNEJIT_CONV2D_WGMMA_EPI(8, 16, 1, 128, 0, 4, 2, 1, 1, 128, 0, 0, 0, 1, 0,
                         tunejit::Epi<true, true, tunejit::EpiOut::kAccumulator, true>);
TUNEJIT_CONV2D_WGMMA_EPI(8, 16, 1, 64, 1, 4, 2, 0, 1, 128, 0, 0, 0, 1, 0,
                         tunejit::Epi<true, true, tunejit::EpiOut::kAccumulator, true>);
TUNEJIT_CONV2D_WGMMA_EPI(2, 64, 1, 256, 0, 4, 2, 0, 1, 128, 1, 0, 0, 1, 0,
                         tunejit::Epi<true, false, tunejit::EpiOut::kAccumulator, true>);
// The int8 residual, requantized (AddResidualI8): 16-byte stores, ping-pong; swapped operands;
// im2col tiles with no ReLU after it.
TUNEJIT_CONV2D_WGMMA_EPI(8, 16, 1, 128, 0, 4, 2, 1, 1, 128, 0, 0, 1, 0, 0,
                         tunejit::Epi<true, true, tunejit::EpiOut::kInt8, true>);
TUNEJIT_CONV2D_WGMMA_EPI(8, 16, 1, 64, 1, 4, 2, 0, 1, 128, 0, 0, 1, 0, 0,
                         tunejit::Epi<true, true, tunejit::EpiOut::kInt8, true>);
TUNEJIT_CONV2D_WGMMA_EPI(4, 64, 1, 128, 0, 4, 2, 1, 1, 64, 1, 0, 1, 0, 0,
                         tunejit::Epi<true, false, tunejit::EpiOut::kInt8, true>);
// Activations (common.cuh Act): ReLU6 (clip [0, 6]) into fp16 by 16-byte stores; silu into fp16
// through the swapped tile's staged rows; hard_swish into float32 (pairs of floats); a clip
// after the residual; silu into float32 from swapped rows.
TUNEJIT_CONV2D_WGMMA_EPI(8, 16, 1, 128, 0, 4, 2, 0, 1, 128, 0, 0, 0, 1, 0,
                         tunejit::Epi<true, false, tunejit::EpiOut::kAccumulator, false,
                                      tunejit::Act<tunejit::ActKind::kClip, 0, 1086324736>>);
TUNEJIT_CONV2D_WGMMA_EPI(8, 16, 1, 64, 1, 4, 2, 0, 1, 128, 0, 0, 0, 1, 0,
                         tunejit::Epi<true, false, tunejit::EpiOut::kAccumulator, false,
                                      tunejit::Act<tunejit::ActKind::kSilu>>);
TUNEJIT_CONV2D_WGMMA_EPI(8, 16, 1, 128, 0, 4, 2, 0, 1, 128, 0, 0, 0, 0, 0,
                         tunejit::Epi<true, false, tunejit::EpiOut::kAccumulator, false,
                                      tunejit::Act<tunejit::ActKind::kHardSwish>>);
TUNEJIT_CONV2D_WGMMA_EPI(8, 16, 1, 128, 0, 4, 2, 1, 1, 128, 0, 0, 0, 1, 0,
                         tunejit::Epi<true, true, tunejit::EpiOut::kAccumulator, true,
                                      tunejit::Act<tunejit::ActKind::kClip, 0, 1086324736>>);
TUNEJIT_CONV2D_WGMMA_EPI(8, 16, 1, 64, 1, 4, 2, 0, 1, 128, 0, 0, 0, 0, 0,
                         tunejit::Epi<true, false, tunejit::EpiOut::kAccumulator, false,
                                      tunejit::Act<tunejit::ActKind::kSilu>>);
#endif  // TUNEJIT_NVCC_CHECK
