// The knob definitions of the six supported TVM 0.7.dev1 CUDA templates, in definition order
// (docs/tvm-templates.md sections 2.3, 3.2, 4.3, 5.4, 6.3 and 9), and of the tunejit-only
// dense_wgmma.cuda and conv2d_nhwc_wgmma.cuda (Hopper tensor cores, issue 7; TVM cannot replay
// their records).
#include <limits>

#include "absl/strings/str_cat.h"
#include "autotvm/config_space.h"
#include "common/status_macros.h"

namespace tunejit::autotvm {
namespace {

// unroll_explicit: [0, 1] for cuda, [1] for nvptx and rocm.
std::vector<int64_t> UnrollExplicit(const Target& target) {
  if (target.name == "nvptx" || target.name == "rocm") return {1};
  return {0, 1};
}

int64_t SafeProduct(std::initializer_list<int64_t> values) {
  __int128 p = 1;
  for (int64_t v : values) {
    p *= v;
    if (p > std::numeric_limits<int64_t>::max()) return std::numeric_limits<int64_t>::max();
  }
  return static_cast<int64_t>(p);
}

absl::StatusOr<ConfigSpace> DirectSpace(const Conv2dParams& p, const Target& target) {
  ConfigSpace s;
  TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_f", p.co, 4));
  TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_y", p.OutH(), 4));
  TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_x", p.OutW(), 4));
  TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_rc", p.ci, 2));
  TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_ry", p.kh, 2));
  TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_rx", p.kw, 2));
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("auto_unroll_max_step", {0, 512, 1500}));
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("unroll_explicit", UnrollExplicit(target)));
  return s;
}

absl::StatusOr<ConfigSpace> WinogradSpace(const Conv2dParams& p, const Target& target) {
  if (p.kh != p.kw || p.stride_h != 1 || p.stride_w != 1) {
    return absl::InvalidArgumentError("winograd needs KH == KW and stride 1");
  }
  int64_t m = p.h % 8 == 0 ? 4 : 2;  // section 5.2: the INPUT height decides
  int64_t alpha = m + p.kw - 1;
  int64_t oh = p.h + p.pad_top + p.pad_bottom - p.kh + 1;
  int64_t ow = p.w + p.pad_left + p.pad_right - p.kw + 1;
  if (oh <= 0 || ow <= 0) return absl::InvalidArgumentError("winograd output size is not positive");
  int64_t tiles = SafeProduct({p.n, (oh + m - 1) / m, (ow + m - 1) / m});
  ConfigSpace s;
  TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_b", alpha * alpha, 4, [](const std::vector<int64_t>& e) {
    return e[1] == 1 && e[2] == 1 && e[3] == 1;
  }));
  TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_y", p.co, 4));
  TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_x", tiles, 4));
  TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_rc", p.ci, 2));
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("auto_unroll_max_step", {0, 128, 1500}));
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("unroll_explicit", UnrollExplicit(target)));
  return s;
}

absl::StatusOr<ConfigSpace> Int8Space(const Conv2dParams& p) {
  ConfigSpace s;
  TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_n", p.n, 4));
  TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_f", p.co / 4, 4));
  TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_y", p.OutH(), 4));
  TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_x", p.OutW(), 4));
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("fuse_yx", {0, 1}));
  TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_rc", p.ci / 4, 2));
  TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_ry", p.kh, 2));
  TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_rx", p.kw, 2));
  TUNEJIT_RETURN_IF_ERROR(s.AddReorder("reorder_inner", 3));
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("AA_double_buffer", {0, 1}));
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("WW_double_buffer", {0, 1}));
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("auto_unroll_max_step", {0, 512, 1500}));
  return s;
}

absl::StatusOr<ConfigSpace> DepthwiseSpace(const Conv2dParams& p, const Target& target) {
  ConfigSpace s;
  TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_f", p.co, 4));
  TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_y", p.OutH(), 4));
  TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_x", p.OutW(), 4));
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("auto_unroll_max_step", {0, 256, 1500}));
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("unroll_explicit", UnrollExplicit(target)));
  return s;
}

// dense_large_batch: the template's pruning filters always end in IndexError, so TVM redefines
// the three knobs without filters (section 3.2); the unpruned lists are the real space.
absl::StatusOr<ConfigSpace> DenseSpace(const DenseParams& p, bool large) {
  ConfigSpace s;
  if (large) {
    TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_x", p.m, 4));
    TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_y", p.n, 4));
    TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_k", p.k, 3));
  } else {
    TUNEJIT_RETURN_IF_ERROR(s.AddSplit("tile_k", p.k, 2));
  }
  return s;
}

// dense_wgmma.cuda (tunejit-only, kernel_sources/gemm_wgmma.cu): the kernel is shape-generic
// (TMA zero-fills tails, the epilogue checks bounds), so the space does not depend on M, N, K.
// All `ot` knobs; ops/gemm_wgmma.cc rejects the combinations that cannot run, with the reason.
absl::StatusOr<ConfigSpace> DenseWgmmaSpace(bool int8) {
  ConfigSpace s;
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("tile_m", {64, 128, 256}));
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("tile_n", {64, 128, 192, 256}));
  // One or two 128-byte rows of K per stage: 64 / 128 fp16, 128 / 256 int8.
  TUNEJIT_RETURN_IF_ERROR(
      s.AddOther("tile_k", int8 ? std::vector<int64_t>{128, 256} : std::vector<int64_t>{64, 128}));
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("stages", {2, 3, 4, 5, 6}));
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("consumer_wg", {1, 2}));
  // Last, 1 first: records from before it keep their index.
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("split_k", {1, 2, 4, 8}));
  return s;
}

// conv2d_nhwc_wgmma.cuda (tunejit-only, kernel_sources/conv2d_wgmma.cu): an output tile is
// tile_h x tile_w pixels of tile_b images (the GEMM's M rows) by tile_n output channels; K is
// walked one tap and 64 channels at a time. Shape-generic like dense_wgmma; ops/conv2d_wgmma.cc
// rejects the combinations that cannot run (M rows not a multiple of 64 per consumer, shared
// memory...).
absl::StatusOr<ConfigSpace> ConvWgmmaSpace() {
  ConfigSpace s;
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("tile_h", {1, 2, 4, 8, 16}));
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("tile_w", {8, 16, 32, 64}));
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("tile_n", {64, 128, 192, 256}));
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("stages", {2, 3, 4, 5, 6}));
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("consumer_wg", {1, 2}));
  // Last, with 0 first: the records written before it existed keep their index.
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("pingpong", {0, 1}));
  // TMA im2col loads (M = consecutive pixels); also last with 0 first, for the same reason.
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("im2col", {0, 1}));
  // Clusters of two blocks sharing the input loads (TMA multicast); last, 1 first, likewise.
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("cluster", {1, 2}));
  // A stage per filter column over one input box of tile_h + KH - 1 rows; last, 0 first, likewise.
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("halo", {0, 1}));
  // The tile computed transposed (tile_n 64: channels as wgmma's M); last, 0 first, likewise.
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("swap_ab", {0, 1}));
  // The tile's pixels in 1, 2 or 4 consecutive images; last, 1 first, likewise.
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("tile_b", {1, 2, 4}));
  return s;
}

// conv2d_nchw_stem_mma.cuda (tunejit-only, kernel_sources/conv2d_stem.cu): a block computes
// tile_h x tile_w output pixels (all channels) with `warps` warps, 16 pixels of a row at a time.
// ops/conv2d_stem.cc rejects tiles with fewer 16-pixel rows than warps, and shared memory past 48
// KiB.
absl::StatusOr<ConfigSpace> StemSpace() {
  ConfigSpace s;
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("tile_h", {1, 2, 4, 8, 16}));
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("tile_w", {16, 32, 64, 128}));
  TUNEJIT_RETURN_IF_ERROR(s.AddOther("warps", {1, 2, 4, 8}));
  return s;
}

}  // namespace

bool HasConfigSpace(const std::string& task_name) {
  return task_name == "conv2d_nchw.cuda" || task_name == "conv2d_nchw_winograd.cuda" ||
         task_name == "conv2d_nchw_winograd_without_weight_transform.cuda" ||
         task_name == "conv2d_NCHWc_int8.cuda" || task_name == "dense_small_batch.cuda" ||
         task_name == "dense_large_batch.cuda" || task_name == "depthwise_conv2d_nchw.cuda" ||
         task_name == "dense_wgmma.cuda" || task_name == kConv2dNhwcWgmma ||
         task_name == kConv2dNhwcWgmmaPool || task_name == kConv2dNchwStemMma;
}

absl::StatusOr<ConfigSpace> BuildConfigSpace(const Workload& workload, const Target& target) {
  const std::string& task = workload.task_name;
  if (!HasConfigSpace(task)) {
    return absl::UnimplementedError(absl::StrCat("no config space for task ", task));
  }
  if (task == "dense_small_batch.cuda" || task == "dense_large_batch.cuda") {
    TUNEJIT_ASSIGN_OR_RETURN(DenseParams p, ParseDenseWorkload(workload));
    return DenseSpace(p, task == "dense_large_batch.cuda");
  }
  if (task == "dense_wgmma.cuda") {
    TUNEJIT_ASSIGN_OR_RETURN(DenseParams p, ParseDenseWorkload(workload));
    return DenseWgmmaSpace(p.data_dtype == "int8");
  }
  TUNEJIT_ASSIGN_OR_RETURN(Conv2dParams p, ParseConv2dWorkload(workload));
  // The pooled task has the convolution's knobs: its configs are the same kernels.
  if (task == kConv2dNhwcWgmma || task == kConv2dNhwcWgmmaPool) return ConvWgmmaSpace();
  if (task == kConv2dNchwStemMma) return StemSpace();
  if (task == "conv2d_nchw.cuda") return DirectSpace(p, target);
  if (task == "conv2d_NCHWc_int8.cuda") return Int8Space(p);
  if (task == "depthwise_conv2d_nchw.cuda") return DepthwiseSpace(p, target);
  return WinogradSpace(p, target);
}

}  // namespace tunejit::autotvm
