// conv2d_nhwc_wgmma.cuda (kernel_sources/conv2d_wgmma.cu): fp16 or int8 NHWC convolution on Hopper
// tensor cores, a tunejit task name (docs/tensorcore-design.md 1.3 and 2.1).
//
// Workload: [data [N, H, W, C], kernel [CO, KH, KW, C], strides, padding, dilation, out_dtype]
// (autotvm::ParseConv2dWorkload, layout "NHWC"): float16 x float16 -> float32 | float16, or int8 x
// int8 -> int32 (the epilogue may requantize to int8 or scale to float32). Output NHWC.
// Knobs (all `ot`, ConvWgmmaSpace below): tile_h x tile_w output pixels of one image per block
// (the GEMM's M tile), tile_n output channels, stages, consumer_wg, pingpong (the two consumers
// take whole tiles in turn rather than half of each), im2col (1: the M tile is tile_h x 64
// consecutive output pixels, loaded by TMA's im2col mode, rather than a tile_h x tile_w block of
// one image; added last, so records without it are im2col 0), cluster (2: two blocks share each
// pixel tile's loads by TMA multicast, taking its channel tiles side by side; after im2col, so
// records without it are cluster 1), halo (1: a stage holds one filter column for all the
// filter's rows, from one input box of tile_h + KH - 1 rows, instead of one tap; last, so records
// without it are halo 0), swap_ab (1, with tile_n 64: the weight's rows are wgmma's A operand
// and the pixels its B, the tile computed transposed, which halves the shared-memory reads per
// product of a 64-channel conv; last, so records without it are swap_ab 0), tile_b (images per
// tile: the tile_h x tile_w pixels of 1, 2 or 4 consecutive images, so that tiles of whole 2x2
// windows can divide a 56 x 56 output; last, so records without it are tile_b 1). K is walked one
// filter tap (halo: one filter column)
// and one 128-byte row of channels (64 fp16, 128 int8) per stage. The rules of ops/wgmma_rules.h
// apply, plus this template's own: strides up to 8 (TMA's element strides step the loads over
// the input's pixels; a box spans tile_w * stride_w by rows * stride_h input pixels, at most 256
// each), C a multiple of 16 bytes (TMA strides), groups 1.
//
// Epilogue (CheckWgmmaEpilogue): bias, ReLU, scale / requantize; a float16 residual; on fp16
// convs an activation (clip, silu, hard_swish: Epilogue::activation, in the kernel's Epi type)
// into the float16 or float32 output, which MobileNetV2's ReLU6, MobileNetV3's hard_swish and
// EfficientNet's silu need after most of their convs.
//
// conv2d_nhwc_wgmma_pool.cuda (the same class, pooled): the convolution, its epilogue, then a 2x2
// max pool of stride 2, written [N, OH / 2, OW / 2, CO]. With a config whose tiles hold whole
// windows (CheckPoolTile) the kernel pools (POOL = 1); with any other it writes the convolution
// to a workspace and ops/elementwise.h's NHWC max pool follows. Either way the config is valid
// and its measured time is the pair's, so the tuner weighs a fused tile against an unfused one.
#include <algorithm>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "ops/elementwise.h"
#include "ops/plan_util.h"
#include "ops/split.h"
#include "ops/templates.h"
#include "ops/wgmma_rules.h"

namespace tunejit {
namespace {

constexpr const char* kTask = autotvm::kConv2dNhwcWgmma;

struct ConvTile {
  bool pool = false;     // the kernel pools 2x2 (conv2d_nhwc_wgmma_pool.cuda, CheckPoolTile passed)
  int64_t h = 0, w = 0;  // output pixels per block: tile_h rows of tile_w (im2col: h * w in a row)
  int64_t b = 1;         // images per block, each tile_h x tile_w pixels (tiled tiles)
  int64_t im2col = 0;
  int64_t cluster = 1;  // blocks sharing a pixel tile's input loads (multicast)
  int64_t halo = 0;     // a stage per filter column, its rows sharing one input box
  int64_t swap_ab = 0;  // the tile computed transposed: channels as wgmma's M, pixels as its N
  WgmmaTile gemm;
};

// An im2col M tile is tile_h x kIm2colTileW consecutive pixels: tile_w must be this, so that the
// space holds each M size once (tile_h 1, 2, 4: 64, 128, 256 pixels).
constexpr int64_t kIm2colTileW = 64;

// The largest conv stride: TMA's largest element stride, with which the loads step over the
// input's pixels.
constexpr int64_t kMaxStride = 8;
bool StrideFits(const autotvm::Conv2dParams& p) {
  return p.stride_h >= 1 && p.stride_w >= 1 && p.stride_h <= kMaxStride && p.stride_w <= kMaxStride;
}

// A convolution this template takes, with its operand kind.
struct WgmmaConv {
  autotvm::Conv2dParams p;
  bool int8 = false;
  int64_t element_bytes() const { return int8 ? 1 : 2; }
  TensorMapDesc::Element element() const {
    return int8 ? TensorMapDesc::Element::kI8 : TensorMapDesc::Element::kF16;
  }
};

// The bytes of one swizzled row of an operand: 128, or 64 when the channels fit in 64 bytes, so
// that a stage holds two taps rather than one tap and 64 zero bytes (the int8 64-channel convs,
// the fp16 RGB stem's 32 patch values).
int64_t ConvRowBytes(const WgmmaConv& conv) {
  return conv.p.ci * conv.element_bytes() <= 64 ? 64 : kWgmmaRowBytes;
}

absl::StatusOr<ConvTile> ReadTile(const autotvm::ConfigEntity& config, const WgmmaConv& conv) {
  ConvTile t;
  TUNEJIT_ASSIGN_OR_RETURN(t.h, config.Other("tile_h"));
  TUNEJIT_ASSIGN_OR_RETURN(t.w, config.Other("tile_w"));
  TUNEJIT_ASSIGN_OR_RETURN(t.b, ReadOtherOr(config, "tile_b", 1));
  t.gemm.m = t.b * t.h * t.w;
  t.gemm.element_bytes = conv.element_bytes();
  t.gemm.k = t.gemm.row_elements();  // one tap, one 128-byte row of channels per stage
  TUNEJIT_ASSIGN_OR_RETURN(t.gemm.n, config.Other("tile_n"));
  TUNEJIT_ASSIGN_OR_RETURN(t.gemm.stages, config.Other("stages"));
  TUNEJIT_ASSIGN_OR_RETURN(t.gemm.consumer_wg, config.Other("consumer_wg"));
  TUNEJIT_ASSIGN_OR_RETURN(t.gemm.pingpong, config.Other("pingpong"));
  TUNEJIT_ASSIGN_OR_RETURN(t.im2col, ReadOtherOr(config, "im2col", 0));
  TUNEJIT_ASSIGN_OR_RETURN(t.cluster, ReadOtherOr(config, "cluster", 1));
  TUNEJIT_ASSIGN_OR_RETURN(t.halo, ReadOtherOr(config, "halo", 0));
  TUNEJIT_ASSIGN_OR_RETURN(t.swap_ab, ReadOtherOr(config, "swap_ab", 0));
  t.gemm.atom_bytes = ConvRowBytes(conv);
  if (t.halo == 1) {  // the filter's KH rows, one swizzled row each, over TH + KH - 1 image rows
    t.gemm.k = conv.p.kh * t.gemm.atom_bytes / t.gemm.element_bytes;
    t.gemm.shift_rows = t.w;
  }
  return t;
}

// The halo knob's rules: tiled boxes loaded per block, whose filter rows are consecutive image
// rows, each row's A block starting on a swizzle group (8 rows of the tile).
absl::Status CheckHaloTile(const ConvTile& t, const autotvm::Conv2dParams& p) {
  if (t.halo != 0 && t.halo != 1) {
    return InvalidConfig(kTask, absl::StrCat("halo = ", t.halo, " (0 or 1)"));
  }
  if (t.halo == 0) return absl::OkStatus();
  std::string why;
  if (t.im2col != 0) why = "im2col tiles (halo boxes are tiled: im2col = 0)";
  if (t.cluster != 1) why = "clusters (each block loads its own box)";
  if (p.kh < 2) why = absl::StrCat("a ", p.kh, "-row filter (nothing to share)");
  if (p.dilation_h != 1) why = absl::StrCat("dilation_h ", p.dilation_h, " (rows not consecutive)");
  if (p.stride_h != 1) why = absl::StrCat("stride_h ", p.stride_h, " (rows not consecutive)");
  if (t.w % 8 != 0) why = absl::StrCat("tile_w ", t.w, " (not whole 8-row swizzle groups)");
  if (t.h + p.kh - 1 > 256) why = absl::StrCat("a box of ", t.h + p.kh - 1, " rows (at most 256)");
  if (why.empty()) return absl::OkStatus();
  return InvalidConfig(kTask, absl::StrCat("halo = 1 does not take ", why));
}

// The swap_ab knob's rules: the 64 channels are one m64 wgmma's rows, and a consumer's pixels
// one wgmma's N (at most 256).
absl::Status CheckSwapTile(const ConvTile& t) {
  if (t.swap_ab != 0 && t.swap_ab != 1) {
    return InvalidConfig(kTask, absl::StrCat("swap_ab = ", t.swap_ab, " (0 or 1)"));
  }
  if (t.swap_ab == 0) return absl::OkStatus();
  if (t.gemm.n != 64) {
    return InvalidConfig(kTask, absl::StrCat("swap_ab = 1 takes tile_n 64 (one m64 wgmma of "
                                             "channels), not ",
                                             t.gemm.n));
  }
  // (A consumer count CheckWgmmaTile rejects has no rows per consumer.)
  if (t.gemm.consumer_wg >= 1 && t.gemm.rows_per_consumer() > 256) {
    return InvalidConfig(kTask, absl::StrCat("swap_ab = 1 takes at most 256 pixels per consumer "
                                             "(wgmma's N), not ",
                                             t.gemm.rows_per_consumer()));
  }
  return absl::OkStatus();
}

// The tile_b knob's rules: the images of a tile are one tiled box, loaded per block by a box per
// tap; and they fill an M tile only a smaller tile_h x tile_w could not (at most 64 pixels).
absl::Status CheckImagesTile(const ConvTile& t) {
  if (t.b != 1 && t.b != 2 && t.b != 4) {
    return InvalidConfig(kTask, absl::StrCat("tile_b = ", t.b, " (1, 2 or 4)"));
  }
  if (t.b == 1) return absl::OkStatus();
  std::string why;
  if (t.h * t.w > 64) why = absl::StrCat(t.h, " x ", t.w, " pixels (more than 64 fill M alone)");
  if (t.halo != 0) why = "halo boxes (their rows shift within one image)";
  if (t.cluster != 1) why = "clusters (each block loads half of one image's rows)";
  if (t.im2col != 0) why = "im2col tiles (they run across images already)";
  if (why.empty()) return absl::OkStatus();
  return InvalidConfig(kTask, absl::StrCat("tile_b = ", t.b, " does not take ", why));
}

// The bytes of one output element as the kernel writes it (wgmma_core.cuh WgmmaOutElement).
int64_t OutputBytes(const WgmmaConv& conv, const Epilogue& epilogue) {
  if (WgmmaOutF16(conv.p.out_dtype, epilogue) != 0) return 2;
  return epilogue.output == Epilogue::Output::kInt8Requantize ? 1 : 4;
}

// The cluster knob's rules: the pair takes the two channel tiles of one pixel tile side by side,
// so the channel tiles come in pairs; each loads half the pixel tile, whole rows of it.
absl::Status CheckClusterTile(const ConvTile& t, const autotvm::Conv2dParams& p) {
  if (t.cluster != 1 && t.cluster != 2) {
    return InvalidConfig(kTask, absl::StrCat("cluster = ", t.cluster, " (1 or 2)"));
  }
  if (t.cluster == 1) return absl::OkStatus();
  if (CeilDiv64(p.co, t.gemm.n) % 2 != 0) {
    return InvalidConfig(
        kTask, absl::StrCat("cluster = 2 takes an even number of channel tiles, not ",
                            CeilDiv64(p.co, t.gemm.n), " (CO ", p.co, " / tile_n ", t.gemm.n, ")"));
  }
  if (t.im2col == 0 && t.h % 2 != 0) {
    return InvalidConfig(
        kTask,
        absl::StrCat("cluster = 2 loads half of tile_h's rows per block: tile_h ", t.h, " is odd"));
  }
  return absl::OkStatus();
}

// The im2col knob's own rules.
absl::Status CheckIm2colTile(const ConvTile& t) {
  if (t.im2col != 0 && t.im2col != 1) {
    return InvalidConfig(kTask, absl::StrCat("im2col = ", t.im2col, " (0 or 1)"));
  }
  if (t.im2col == 1 && t.w != kIm2colTileW) {
    return InvalidConfig(
        kTask, absl::StrCat("im2col = 1 takes tile_w = ", kIm2colTileW, " (the M tile is tile_h x ",
                            kIm2colTileW, " consecutive pixels), not ", t.w));
  }
  if (t.im2col == 1 && t.gemm.m > TensorMapDesc::kMaxIm2colPixels) {
    return InvalidConfig(kTask,
                         absl::StrCat("im2col = 1 loads at most ", TensorMapDesc::kMaxIm2colPixels,
                                      " pixels at once, not ", t.gemm.m));
  }
  return absl::OkStatus();
}

// Whether the kernel can pool 2x2 itself (wgmma_core.cuh WgmmaPool2x2): tiles of whole image
// rows, an even number of them, each consumer's rows starting at an even image row, and windows
// that never straddle the output's edge. OkStatus or the rule that fails.
absl::Status CheckPoolTile(const ConvTile& t, const autotvm::Conv2dParams& p) {
  if (t.im2col != 0) return absl::FailedPreconditionError("im2col tiles run across image rows");
  if (t.h % 2 != 0) return absl::FailedPreconditionError(absl::StrCat("tile_h ", t.h, " is odd"));
  if (t.gemm.rows_per_consumer() % (2 * t.w) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(t.gemm.rows_per_consumer(),
                                                      " rows per consumer are not whole pairs of ",
                                                      t.w, "-pixel rows"));
  }
  if (p.OutH() % 2 != 0 || p.OutW() % 2 != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("the ", p.OutH(), "x", p.OutW(), " output has an odd side"));
  }
  return absl::OkStatus();
}

absl::StatusOr<WgmmaConv> ParseWgmmaConv(const autotvm::Workload& workload, const char* task) {
  if (workload.task_name != task) {
    return absl::InvalidArgumentError(absl::StrCat(task, ": workload is for ", workload.task_name));
  }
  WgmmaConv conv;
  TUNEJIT_ASSIGN_OR_RETURN(conv.p, autotvm::ParseConv2dWorkload(workload));
  const autotvm::Conv2dParams& p = conv.p;
  TUNEJIT_ASSIGN_OR_RETURN(conv.int8,
                           WgmmaIsInt8(kTask, p.data_dtype, p.kernel_dtype, p.out_dtype));
  if (!StrideFits(p)) {
    return absl::UnimplementedError(absl::StrCat(kTask, ": stride ", p.stride_h, "x", p.stride_w,
                                                 " (TMA steps 1 to ", kMaxStride, " pixels)"));
  }
  const int64_t align = 16 / conv.element_bytes();
  if (p.ci % align != 0) {
    return absl::UnimplementedError(absl::StrCat(kTask, ": C = ", p.ci, " is not a multiple of ",
                                                 align, " (TMA needs 16-byte pixel strides)"));
  }
  if (p.n < 1 || p.co < 1 || p.kh < 1 || p.kw < 1) {
    return absl::InvalidArgumentError(absl::StrCat(kTask, ": empty shape"));
  }
  if (task == std::string_view(autotvm::kConv2dNhwcWgmmaPool) && (p.OutH() < 2 || p.OutW() < 2)) {
    return absl::InvalidArgumentError(
        absl::StrCat(task, ": the ", p.OutH(), "x", p.OutW(), " output has no 2x2 window"));
  }
  TUNEJIT_RETURN_IF_ERROR(ToInt32(kTask, "N*H*W*C", p.n * p.h * p.w * p.ci).status());
  TUNEJIT_RETURN_IF_ERROR(ToInt32(kTask, "N*OH*OW*CO", p.n * p.OutH() * p.OutW() * p.co).status());
  TUNEJIT_RETURN_IF_ERROR(ToInt32(kTask, "CO*KH*KW*C", p.co * p.kh * p.kw * p.ci).status());
  return conv;
}

// The GEMM's M tiles: tile_h x tile_w output pixels of tile_b images each, or (im2col) runs of
// tile_h x tile_w consecutive pixels.
int64_t PixelTiles(const ConvTile& t, const autotvm::Conv2dParams& p) {
  if (t.im2col != 0) return CeilDiv64(p.n * p.OutH() * p.OutW(), t.gemm.m);
  return CeilDiv64(p.n, t.b) * CeilDiv64(p.OutH(), t.h) * CeilDiv64(p.OutW(), t.w);
}

// The input's TMA view: {C, W, H, N} in boxes of a row of channels x the tile's pixels x tile_b
// images (halo: and KH - 1 rows more), or the im2col view whose bounding box is the input pixels
// of the output pixels' first taps. Either steps the conv's strides over the input's pixels (the
// element strides; a tiled box spans stride times the pixels it brings). In a cluster each block
// loads 1 / cluster of the tile's pixels.
TensorMapDesc InputMap(const ConvTile& t, const WgmmaConv& conv, int64_t row_bytes) {
  const autotvm::Conv2dParams& p = conv.p;
  TensorMapDesc d;
  if (t.im2col == 0) {
    const int64_t rows = t.h / t.cluster + (t.halo != 0 ? p.kh - 1 : 0);
    d = SwizzledMap(conv.element(), {p.ci, p.w, p.h, p.n},
                    {t.w * p.stride_w, rows * p.stride_h, t.b}, row_bytes);
  } else {
    d = SwizzledMap(conv.element(), {p.ci, p.w, p.h, p.n}, {1, 1, 1}, row_bytes);
    TensorMapDesc::Im2col m;
    // Output (y, x)'s first tap reads input (y * SH - pad_top, x * SW - pad_left); the last
    // output's, ((OH - 1) * SH - pad_top), is (H - 1) + upper.
    m.lower = {-static_cast<int32_t>(p.pad_left), -static_cast<int32_t>(p.pad_top)};
    m.upper = {static_cast<int32_t>((p.OutW() - 1) * p.stride_w - p.pad_left - (p.w - 1)),
               static_cast<int32_t>((p.OutH() - 1) * p.stride_h - p.pad_top - (p.h - 1))};
    m.pixels = static_cast<uint32_t>(t.gemm.m / t.cluster);
    d.im2col = m;
  }
  d.element_strides[1] = static_cast<uint32_t>(p.stride_w);
  d.element_strides[2] = static_cast<uint32_t>(p.stride_h);
  return d;
}

// The kernel's name expression: the conv2d_wgmma.cu template with its four policies.
std::string ConvKernelName(const ConvTile& t, const WgmmaConv& conv, const Epilogue& epilogue) {
  const autotvm::Conv2dParams& p = conv.p;
  return absl::StrFormat(
      "tunejit::conv2d_wgmma<tunejit::ConvTilePolicy<%d, %d, %d, %d, %d>, "
      "tunejit::ConvPipelinePolicy<%d, %d, %d, %d>, tunejit::ConvLoadPolicy<%d, %d, %d>, "
      "tunejit::ConvOutputPolicy<%d, %s, %d, %d>>",
      t.h, t.w, t.b, t.gemm.n, t.swap_ab,                             // tile
      t.gemm.stages, t.gemm.consumer_wg, t.gemm.pingpong, t.cluster,  // pipeline
      ConvRowBytes(conv), t.im2col, t.halo != 0 ? p.kh : 0,           // loads
      conv.int8 ? 1 : 0, EpilogueTypeName(epilogue), WgmmaOutF16(p.out_dtype, epilogue),  // output
      t.pool ? 1 : 0);
}

PlannedKernel ConvKernel(const ConvTile& t, const WgmmaConv& conv, const Epilogue& epilogue,
                         const LaunchShape& shape) {
  const autotvm::Conv2dParams& p = conv.p;
  PlannedKernel kernel;
  kernel.label = "conv2d_wgmma";
  kernel.spec = KernelSpec{"conv2d_wgmma.cu",
                           ConvKernelName(t, conv, epilogue),
                           {},
                           /*arch_specific=*/true};
  kernel.shape = shape;
  kernel.args = EpilogueTensorArgs(epilogue);
  kernel.args[0] = TensorMapArg(0);
  kernel.args[1] = TensorMapArg(1);
  kernel.args.push_back(epilogue.residual ? InputArg(4) : Int64Arg(0));
  for (int64_t v :
       {p.ci, p.co, p.OutH(), p.OutW(), p.kw, p.kh * p.kw, static_cast<int64_t>(p.pad_top),
        static_cast<int64_t>(p.pad_left), static_cast<int64_t>(p.stride_h),
        static_cast<int64_t>(p.stride_w), static_cast<int64_t>(p.dilation_h),
        static_cast<int64_t>(p.dilation_w), CeilDiv64(p.OutH(), t.h), CeilDiv64(p.OutW(), t.w),
        PixelTiles(t, p), p.n * p.OutH() * p.OutW()}) {
    kernel.args.push_back(Int32Arg(v));
  }
  return kernel;
}

// The element type of the convolution's output as the epilogue writes it, which the pool after
// it reads: float16, requantized int8 or float32 (an int32 output has no NHWC pool).
absl::StatusOr<ElementType> PooledElement(const WgmmaConv& conv, const Epilogue& epilogue) {
  if (WgmmaOutF16(conv.p.out_dtype, epilogue) != 0) return ElementType::kFloat16;
  if (epilogue.output == Epilogue::Output::kInt8Requantize) return ElementType::kInt8;
  if (conv.int8 && epilogue.output == Epilogue::Output::kAccumulator) {
    return absl::UnimplementedError(
        absl::StrCat(autotvm::kConv2dNhwcWgmmaPool, ": pooling an int32 output"));
  }
  return ElementType::kFloat32;
}

// An output tile is tile_h x tile_w pixels of tile_b images (the GEMM's M rows) by tile_n output
// channels; K is walked one tap and 64 channels at a time. Shape-generic like dense_wgmma.cuda;
// Specialize rejects the combinations that cannot run (M rows not a multiple of 64 per consumer,
// shared memory...). A knob is added last with its old behaviour first, so that the records
// written before it existed keep their index.
absl::StatusOr<autotvm::ConfigSpace> ConvWgmmaSpace() {
  autotvm::ConfigSpace s;
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("tile_h", {1, 2, 4, 8, 16}));
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("tile_w", {8, 16, 32, 64}));
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("tile_n", {64, 128, 192, 256}));
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("stages", {2, 3, 4, 5, 6}));
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("consumer_wg", {1, 2}));
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("pingpong", {0, 1}));
  // TMA im2col loads (M = consecutive pixels).
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("im2col", {0, 1}));
  // Clusters of two blocks sharing the input loads (TMA multicast).
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("cluster", {1, 2}));
  // A stage per filter column over one input box of tile_h + KH - 1 rows.
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("halo", {0, 1}));
  // The tile computed transposed (tile_n 64: channels as wgmma's M).
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("swap_ab", {0, 1}));
  // The tile's pixels in 1, 2 or 4 consecutive images.
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("tile_b", {1, 2, 4}));
  return s;
}

// conv2d_nhwc_wgmma.cuda, or with `pool` conv2d_nhwc_wgmma_pool.cuda.
class Conv2dNhwcWgmma final : public OpTemplate {
 public:
  explicit Conv2dNhwcWgmma(bool pool) : pool_(pool) {}
  std::string_view task_name() const override { return task(); }

  absl::Status CanImplement(const autotvm::Workload& workload) const override {
    return ParseWgmmaConv(workload, task()).status();
  }

  absl::StatusOr<OpPlan> Specialize(const autotvm::Workload& workload,
                                    const autotvm::ConfigEntity& config, const DeviceLimits& limits,
                                    const Epilogue& epilogue) const override {
    TUNEJIT_ASSIGN_OR_RETURN(WgmmaConv conv, ParseWgmmaConv(workload, task()));
    const autotvm::Conv2dParams& p = conv.p;
    if (pool_) {  // the pool reads the epilogue's output; silu and hard_swish do not commute
      TUNEJIT_RETURN_IF_ERROR(
          CheckActivation(task(), epilogue, "a 2x2 max pool follows its epilogue"));
    }
    TUNEJIT_RETURN_IF_ERROR(CheckWgmmaEpilogue(kTask, epilogue, conv.int8, p.out_dtype,
                                               /*reads_residual=*/!pool_));
    TUNEJIT_RETURN_IF_ERROR(CheckHopper(kTask, limits));
    TUNEJIT_ASSIGN_OR_RETURN(ConvTile t, ReadTile(config, conv));
    ElementType pooled = ElementType::kFloat32;
    if (pool_) {
      TUNEJIT_ASSIGN_OR_RETURN(pooled, PooledElement(conv, epilogue));
      t.pool = CheckPoolTile(t, p).ok();
    }
    TUNEJIT_RETURN_IF_ERROR(CheckImagesTile(t));
    TUNEJIT_RETURN_IF_ERROR(CheckSwapTile(t));
    // After the barriers: a swapped tile's staged output rows (pooled or not), else a pooled
    // tile's window exchange.
    if (t.swap_ab != 0 && t.gemm.consumer_wg >= 1) {
      t.gemm.extra_smem =
          t.gemm.consumer_wg *
          WgmmaSwapStagingBytes(t.gemm.rows_per_consumer(), t.pool, OutputBytes(conv, epilogue));
      t.gemm.extra_smem_use = "output staging";
    } else if (t.pool) {
      t.gemm.extra_smem = WgmmaPoolBytes(t.w, t.gemm.consumer_wg);
    }
    TUNEJIT_RETURN_IF_ERROR(CheckWgmmaTile(kTask, t.gemm, limits));
    TUNEJIT_RETURN_IF_ERROR(CheckIm2colTile(t));
    TUNEJIT_RETURN_IF_ERROR(CheckClusterTile(t, p));
    TUNEJIT_RETURN_IF_ERROR(CheckHaloTile(t, p));
    LaunchShape shape;
    TUNEJIT_ASSIGN_OR_RETURN(
        shape.grid[0], PersistentGrid(kTask, PixelTiles(t, p) * CeilDiv64(p.co, t.gemm.n), limits,
                                      static_cast<int>(t.cluster)));
    shape.block[0] = static_cast<uint32_t>(t.gemm.threads());
    shape.shared_bytes = static_cast<uint32_t>(t.gemm.smem_bytes());
    shape.overlaps_previous = true;  // WgmmaBlock waits for the previous grid after its setup
    TUNEJIT_RETURN_IF_ERROR(CheckLaunch(kTask, shape, 0, limits, /*allow_optin_smem=*/true));
    OpPlan plan;
    plan.kernels.push_back(ConvKernel(t, conv, epilogue, shape));
    if (pool_ && !t.pool) TUNEJIT_RETURN_IF_ERROR(PoolAfterTheKernel(t, p, pooled, &plan));
    // The input (InputMap) in rows of ConvRowBytes; the weight as {C, KH * KW, CO} in boxes of a
    // row of channels x one tap x tile_n.
    const int64_t row_bytes = ConvRowBytes(conv);
    plan.tensor_maps = {{InputArg(0), InputMap(t, conv, row_bytes)},
                        {InputArg(1), SwizzledMap(conv.element(), {p.ci, p.kh * p.kw, p.co},
                                                  {1, t.gemm.n}, row_bytes)}};
    // The im2col view has limits of its own (its corners: the padding and the filter's extent),
    // which must reject the config here rather than fail when the tensors are bound.
    if (absl::Status map = CheckTensorMap(plan.tensor_maps[0].desc, /*address=*/0); !map.ok()) {
      return InvalidConfig(kTask, map.message());
    }
    return plan;
  }

  absl::StatusOr<autotvm::ConfigEntity> FallbackConfig(
      const autotvm::Workload& workload) const override {
    TUNEJIT_ASSIGN_OR_RETURN(WgmmaConv conv, ParseWgmmaConv(workload, task()));
    const autotvm::Conv2dParams& p = conv.p;
    // 8 x 16 pixels by 128 channels, two cooperative consumers, 4 stages (129 KiB).
    autotvm::ConfigEntity config;
    config.knobs.push_back(OtherKnob("tile_h", 8));
    config.knobs.push_back(OtherKnob("tile_w", 16));
    config.knobs.push_back(OtherKnob("tile_n", p.co <= 64 ? 64 : 128));
    config.knobs.push_back(OtherKnob("stages", 4));
    config.knobs.push_back(OtherKnob("consumer_wg", 2));
    config.knobs.push_back(OtherKnob("pingpong", 0));
    config.knobs.push_back(OtherKnob("im2col", 0));
    config.knobs.push_back(OtherKnob("cluster", 1));
    config.knobs.push_back(OtherKnob("halo", 0));
    config.knobs.push_back(OtherKnob("swap_ab", 0));
    config.knobs.push_back(OtherKnob("tile_b", 1));
    return config;
  }

  absl::StatusOr<autotvm::ConfigSpace> ConfigSpace(
      const autotvm::Workload& /*workload*/, const autotvm::Target& /*target*/) const override {
    // The pooled task has the convolution's knobs: its configs are the same kernels.
    return ConvWgmmaSpace();
  }

  std::optional<OpOffer> Implement(const OpRequest& request) const override {
    // groups 1, strides TMA can step and C in whole 16 bytes (TMA's pixel stride); the pooled
    // task where a 2x2 pool follows and the output has a window. NHWC data, OHWI weights.
    const autotvm::Conv2dParams& geometry = request.conv;
    const int64_t align = WgmmaAlignment(request.mode);
    const OpRequest::Op op = pool_ ? OpRequest::Op::kConv2dMaxPool : OpRequest::Op::kConv2d;
    if (request.op != op || align == 0 || geometry.groups != 1 || !StrideFits(geometry) ||
        geometry.ci % align != 0 || (pool_ && (geometry.OutH() < 2 || geometry.OutW() < 2))) {
      return std::nullopt;
    }
    autotvm::Conv2dParams p = geometry;
    if (request.mode == NumericMode::kInt8TensorCores) {
      p.data_dtype = p.kernel_dtype = "int8";
      p.out_dtype = "int32";
    } else {
      p.data_dtype = p.kernel_dtype = "float16";
      p.out_dtype = request.half_output ? "float16" : "float32";
    }
    return OpOffer{{autotvm::MakeConv2dWorkload(task(), p), 10}, {.nhwc = true}};
  }

  // fp16 convs into float16 or float32, unpooled (CheckWgmmaEpilogue).
  bool takes_activation() const override { return !pool_; }

 private:
  const char* task() const { return pool_ ? autotvm::kConv2dNhwcWgmmaPool : kTask; }

  // A tile that cannot pool: the convolution writes workspace 0 and the NHWC pool kernel reads
  // it. InvalidConfig where that kernel cannot run either (int8 channels not in 16-byte vectors).
  absl::Status PoolAfterTheKernel(const ConvTile& t, const autotvm::Conv2dParams& p,
                                  ElementType pooled, OpPlan* plan) const {
    const std::string why(CheckPoolTile(t, p).message());
    if (absl::Status pooled_after = AppendMaxPool2x2Nhwc(p, pooled, plan); !pooled_after.ok()) {
      return InvalidConfig(task(), absl::StrCat(why, ", and ", pooled_after.message()));
    }
    plan->notes.push_back(absl::StrCat(task(), ": pool after the kernel (", why, ")"));
    return absl::OkStatus();
  }
  bool pool_;
};

}  // namespace

const OpTemplate* Conv2dNhwcWgmmaTemplate() {
  static const Conv2dNhwcWgmma* const kTemplate = new Conv2dNhwcWgmma(/*pool=*/false);
  return kTemplate;
}

const OpTemplate* Conv2dNhwcWgmmaPoolTemplate() {
  static const Conv2dNhwcWgmma* const kTemplate = new Conv2dNhwcWgmma(/*pool=*/true);
  return kTemplate;
}

}  // namespace tunejit
