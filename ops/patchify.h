// File: ops/patchify.h
// The patchify convolution on the fp16 tensor cores (task conv2d_nchw_patchify_wgmma.cuda,
// ops/templates.h): a conv whose kernel equals its stride in both dims, with no padding,
// dilation 1 and groups 1 (ViT's 16x16 patch embedding, Swin's 4x4), is exactly the GEMM
//   patches [N*OH*OW, C*KH*KW] x weight [CO, C*KH*KW]^T = out [N*OH*OW, CO],
// whose result is the conv's output in NHWC. A patch row's columns are in the (c, kh, kw) order of
// an OIHW weight's row, so the weight is the GEMM's right operand as the graph has it. The
// template's plan (kernel_sources/patchify.cu, then ops/gemm_wgmma.cc's):
//   kPrepare  patch_weight_f16: the float32 OIHW weight (op input 1) in float16 [CO, KP], into a
//             persistent workspace;
//   kRun      patch_gather: the float32 NCHW data (op input 0) into the patches [M, KP] float16,
//             a scratch workspace;
//   kRun      dense_wgmma.cuda's plan for M x CO x KP on the two workspaces, the conv's epilogue
//             (bias, relu, activation, or int8 requantize) writing op output 0.
// K is padded with zero columns to KP, a multiple of 8 (TMA's 16-byte row stride: ViT-H/14's 588
// patch values become 592). The knobs are dense_wgmma.cuda's, its space and its fallback for that
// GEMM. The op's tensors are the stem template's (ops/op_template.h conventions; NCHW float32 data
// and OIHW float32 weight as the graph has them, NHWC output), so the executor lowers it like the
// stem: a conv step reading the graph's float32 input, its weight uploaded as given.
// It is offered at rank 1 (only where conv2d_nhwc_wgmma.cuda cannot take the conv: the RGB
// input), after the stem template, which stays the fallback where both take a conv (ConvNeXt's
// 4x4 stem with 96 channels); past the stem's limits (ViT's 768 channels of 768 patch values) it
// is the only tensor-core implementation.
//
//   TUNEJIT_ASSIGN_OR_RETURN(PatchifyGeometry g, PatchifyGeometryOf(params));
//   TUNEJIT_ASSIGN_OR_RETURN(PlannedKernel gather, PatchGatherKernel(g, ElementType::kFloat32));
#ifndef TUNEJIT_OPS_PATCHIFY_H_
#define TUNEJIT_OPS_PATCHIFY_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "autotvm/workload.h"
#include "ops/elementwise.h"
#include "ops/op_template.h"

namespace tunejit {

// A patchify conv's shape: data [n, c, h, w], patches kh x kw (the stride), output [n, co, oh, ow]
// with oh = h / kh, ow = w / kw (rounded down: rows and columns the stride does not reach are not
// read, as the conv does not read them).
struct PatchifyGeometry {
  int64_t n = 0, c = 0, h = 0, w = 0, kh = 0, kw = 0, oh = 0, ow = 0;
  int64_t m() const { return n * oh * ow; }         // GEMM rows: output pixels
  int64_t k() const { return c * kh * kw; }         // patch values
  int64_t kp() const { return (k() + 7) / 8 * 8; }  // the patch rows' length, zero-padded
};

// The geometry of a patchify conv. Unimplemented naming the rule for any other conv (kernel !=
// stride, padding, dilation, groups); InvalidArgument for an empty shape or a patch larger than
// the input.
absl::StatusOr<PatchifyGeometry> PatchifyGeometryOf(const autotvm::Conv2dParams& p);

// patch_gather: input 0 the data [N, C, H, W] (kFloat32, or kFloat16), output 0 the patches
// [M, KP] float16 (cvt.rn), columns K..KP zero. InvalidArgument for another element type or an
// extent past 2^31 - 1 (the kernel indexes in int).
absl::StatusOr<PlannedKernel> PatchGatherKernel(const PatchifyGeometry& g, ElementType data);
// patch_weight_f16: input 0 the float32 weight [CO, K] (OIHW), output 0 [CO, KP] float16 with
// zero columns K..KP.
absl::StatusOr<PlannedKernel> PatchWeightKernel(const PatchifyGeometry& g, int64_t co);

}  // namespace tunejit

#endif  // TUNEJIT_OPS_PATCHIFY_H_
