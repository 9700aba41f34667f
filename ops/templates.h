// File: ops/templates.h
// Factories of the registered op templates (ops/registry.cc lists them). Each returns a pointer to
// a function-local static that lives for the whole program.
#ifndef TUNEJIT_OPS_TEMPLATES_H_
#define TUNEJIT_OPS_TEMPLATES_H_

#include "ops/op_template.h"

namespace tunejit {

const OpTemplate* DenseSmallBatchTemplate();  // dense_small_batch.cuda      (ops/dense.cc)
const OpTemplate* DenseLargeBatchTemplate();  // dense_large_batch.cuda      (ops/dense.cc)
const OpTemplate* BatchMatmulTemplate();      // batch_matmul.cuda           (ops/batch_matmul.cc)
const OpTemplate* Conv2dNchwTemplate();       // conv2d_nchw.cuda            (ops/conv2d_direct.cc)
const OpTemplate* DepthwiseConv2dNchwTemplate();  // depthwise_conv2d_nchw.cuda  (ops/depthwise.cc)
const OpTemplate* Conv2dNchwWinogradTemplate();   // conv2d_nchw_winograd.cuda   (ops/winograd.cc)
const OpTemplate* Conv2dNchwcInt8Template();  // conv2d_NCHWc_int8.cuda      (ops/conv2d_int8.cc)
const OpTemplate* DenseWgmmaTemplate();       // dense_wgmma.cuda            (ops/gemm_wgmma.cc)
const OpTemplate* Conv2dNhwcWgmmaTemplate();  // conv2d_nhwc_wgmma.cuda      (ops/conv2d_wgmma.cc)
const OpTemplate*
Conv2dNhwcWgmmaPoolTemplate();                  // conv2d_nhwc_wgmma_pool.cuda (ops/conv2d_wgmma.cc)
const OpTemplate* Conv2dNchwStemMmaTemplate();  // conv2d_nchw_stem_mma.cuda  (ops/conv2d_stem.cc)
const OpTemplate*
Conv2dNchwPatchifyWgmmaTemplate();  // conv2d_nchw_patchify_wgmma.cuda (ops/patchify.cc)
const OpTemplate*
DepthwiseConv2dNhwcTemplate();  // depthwise_conv2d_nhwc.cuda (ops/depthwise_nhwc.cc)

// attention_mma.cuda (ops/attention.cc): offered to no node; the executor's fused attention.
const OpTemplate* AttentionMmaTemplate();

}  // namespace tunejit

#endif  // TUNEJIT_OPS_TEMPLATES_H_
