// File: kernel_sources/patchify.cu
// The two kernels of conv2d_nchw_patchify_wgmma.cuda (ops/patchify.h) besides dense_wgmma's GEMM:
// a patchify conv (kernel == stride, no padding, dilation 1, groups 1: ViT's 16x16 patch
// embedding) is the GEMM [N*OH*OW, C*KH*KW] x [CO, C*KH*KW]^T, whose [N*OH*OW, CO] result is the
// conv's output in NHWC. patch_gather writes the left operand from the NCHW input: a row per
// output pixel, its columns in the (c, kh, kw) order of an OIHW weight's row, so the weight is
// the right operand as it is; patch_weight_f16 rounds that weight to float16 once (a kPrepare
// kernel). Both pad K with zero columns up to `kp`, a multiple of 8 (TMA's 16-byte row stride).
// Each input element lands in at most one patch, so the gather is a permutation of the input.
// Index math is 32-bit (the host checks every extent against 2^31).
//
//   KernelSpec{"patchify.cu", "tunejit::patch_gather<16, 16, 4, float>"}
#include "common.cuh"

namespace tunejit {

// A grid-stride loop over a 32-bit range whose last step stops at `total` instead of overflowing.
__device__ __forceinline__ int PatchifyNextStride(int i, int step, int total) {
  return total - i > step ? i + step : total;
}
#define TUNEJIT_PATCHIFY_GRID_STRIDE(i, total)                                           \
  for (int i = blockIdx.x * blockDim.x + threadIdx.x, i##_step = gridDim.x * blockDim.x; \
       i < (total); i = PatchifyNextStride(i, i##_step, (total)))

// VEC elements moved by one load or store (the host picks VEC so that every access is aligned).
template <typename E, int VEC>
struct alignas(sizeof(E) * VEC) PatchVec {
  E v[VEC];
};

// patches[m, k] = x[n, c, py * KH + i, px * KW + j] for the output pixel m = (n * oh + py) * ow +
// px and the column k = (c * KH + i) * KW + j; patches[m, k] = 0 for c * KH * KW <= k < kp. One
// thread per (m, c, i), the rows ordered fastest, plus one per m for the zero columns when there
// are any: KW inputs contiguous in NCHW go to KW contiguous columns, VEC at a time (VEC divides KW,
// w and kp). A warp's threads write neighbouring runs of one patch row. T: float or f16 (the
// input), rounded to float16 by cvt.rn.
template <int KH, int KW, int VEC, typename T>
__global__ void patch_gather(const T* __restrict__ x, f16* __restrict__ patches, int c, int h,
                             int w, int oh, int ow, int kp, int total) {
  static_assert(KW % VEC == 0, "VEC must divide KW");
  const int k = c * KH * KW;
  const int rows = c * KH + (kp > k ? 1 : 0);
  TUNEJIT_PATCHIFY_GRID_STRIDE(t, total) {
    const int r = t % rows;
    const int m = t / rows;
    f16* out = patches + static_cast<s64>(m) * kp;
    if (r == c * KH) {  // the zero columns
      for (int col = k; col < kp; ++col) out[col] = f16{0};
      continue;
    }
    const int ch = r / KH, i = r % KH;
    const int px = m % ow, py = (m / ow) % oh, n = m / (ow * oh);
    const T* in = x + (static_cast<s64>(n * c + ch) * h + py * KH + i) * w + px * KW;
    out += r * KW;
#pragma unroll
    for (int j = 0; j < KW; j += VEC) {
      const PatchVec<T, VEC> a = *reinterpret_cast<const PatchVec<T, VEC>*>(in + j);
      PatchVec<f16, VEC> b;
#pragma unroll
      for (int e = 0; e < VEC; ++e) b.v[e] = FromFloat<f16>(ToFloat(a.v[e]));
      *reinterpret_cast<PatchVec<f16, VEC>*>(out + j) = b;
    }
  }
}

// out[o, col] = w[o, col] rounded to float16 for col < k, 0 for k <= col < kp: the OIHW weight
// [co, k] as the GEMM's right operand [co, kp]. total = co * kp.
__global__ void patch_weight_f16(const float* __restrict__ w, f16* __restrict__ out, int k, int kp,
                                 int total) {
  TUNEJIT_PATCHIFY_GRID_STRIDE(i, total) {
    const int o = i / kp, col = i % kp;
    out[i] = col < k ? FromFloat<f16>(w[static_cast<s64>(o) * k + col]) : f16{0};
  }
}

}  // namespace tunejit

#ifdef TUNEJIT_NVCC_CHECK
// ViT-B/16's patch embedding (float16 loads of 4 float32), ConvNeXt's 4x4 patches, and a 14x14
// patch (ViT-H/14: 588 columns, padded to 592) from float16 data, two at a time.
template __global__ void tunejit::patch_gather<16, 16, 4, float>(const float*, tunejit::f16*, int,
                                                                 int, int, int, int, int, int);
template __global__ void tunejit::patch_gather<4, 4, 4, float>(const float*, tunejit::f16*, int,
                                                               int, int, int, int, int, int);
template __global__ void tunejit::patch_gather<14, 14, 2, tunejit::f16>(const tunejit::f16*,
                                                                        tunejit::f16*, int, int,
                                                                        int, int, int, int, int);
#endif  // TUNEJIT_NVCC_CHECK
