// File: kernel_sources/reference.cu
// Naive GPU reference kernels for the tuner's correctness check on shapes too big for the CPU
// reference: one thread per output (grid-stride), accumulating in double (float inputs) or int64
// (int8 inputs), then the same fused epilogue as the tuned kernels (common.cuh), and the
// activation A (common.cuh Act; Act<> none) on the float value. Every shape is a runtime
// argument, so one compiled kernel per (dtype, epilogue, activation, layout) serves all workloads.
// A float16 workload's reference writes float32, the activation taken before any rounding to
// float16 (the fused kernels round to float16 first, as the unfused step would read it): the
// two differ by float16 rounding, which the record check's 1e-2 relative bound allows for.
// fp16 data (the tensor-core templates') is read as its 16 bits (tunejit::f16, common.cuh).
//
//   KernelSpec{"reference.cu", "tunejit::conv2d_reference<float, 0, false, false>"}
#include "common.cuh"

namespace tunejit {

template <typename T>
struct ReferenceAcc;
template <>
struct ReferenceAcc<float> {
  typedef double Wide;   // accumulation
  typedef float Narrow;  // what the tuned kernels accumulate in (the epilogue's Acc)
};
template <>
struct ReferenceAcc<s8> {
  typedef s64 Wide;
  typedef int Narrow;
};
template <>
struct ReferenceAcc<f16> {
  typedef double Wide;  // a product of two halves is exact in double, and so is a sum of a few
  typedef float Narrow;
};

// EpilogueOp's Store, then the activation (float outputs only: the templates take an activation
// into float16 and float32 outputs, which the reference writes as float32).
template <int kEpi, typename Narrow, class A>
__device__ __forceinline__ void ReferenceStore(void* out, s64 index, Narrow acc, int channel,
                                               const float* bias, const float* scale) {
  typedef EpilogueOp<kEpi, Narrow> Op;
  if constexpr (A::kActive) {
    static_assert(
        (IsFloatAcc<Narrow>::value && Op::kOut != kEpiOutInt8) || Op::kOut == kEpiOutFloat32,
        "an activation into float outputs only");
    const float v = Op::Apply(acc, Op::kBias ? __ldg(bias + channel) : 0.0f,
                              Op::kOut != kEpiOutAccumulator ? __ldg(scale + channel) : 1.0f);
    static_cast<float*>(out)[index] = A::Apply(v);
  } else {
    Op::Store(out, index, acc, channel, bias, scale);
  }
}

template <typename T>
__device__ __forceinline__ typename ReferenceAcc<T>::Wide Widen(T v) {
  return static_cast<typename ReferenceAcc<T>::Wide>(v);
}
template <>
__device__ __forceinline__ double Widen<f16>(f16 v) {
  return F16ToFloat(v);
}

// Convolution with groups, NCHW data / OIHW weight (depthwise: groups == ci, weight
// [co, 1, kh, kw]), or with kNhwc NHWC data / OHWI weight; the output NHWC when kNhwcOut (NHWC
// data, or the stem's NCHW data written NHWC).
template <typename T, int kEpi, bool kNhwc, bool kNhwcOut, class A = Act<>>
__global__ void conv2d_reference(const T* __restrict__ data, const T* __restrict__ weight,
                                 const float* __restrict__ bias, const float* __restrict__ scale,
                                 void* out, int n, int ci, int h, int w, int co, int oh, int ow,
                                 int kh, int kw, int sh, int sw, int pad_top, int pad_left, int dh,
                                 int dw, int groups) {
  typedef typename ReferenceAcc<T>::Wide Wide;
  typedef typename ReferenceAcc<T>::Narrow Narrow;
  const s64 total = static_cast<s64>(n) * co * oh * ow;
  const int ci_per_group = ci / groups;
  const int co_per_group = co / groups;
  for (s64 i = static_cast<s64>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<s64>(gridDim.x) * blockDim.x) {
    int b, f, y, x;
    if (kNhwcOut) {
      f = static_cast<int>(i % co);
      x = static_cast<int>((i / co) % ow);
      y = static_cast<int>((i / (static_cast<s64>(co) * ow)) % oh);
      b = static_cast<int>(i / (static_cast<s64>(co) * ow * oh));
    } else {
      x = static_cast<int>(i % ow);
      y = static_cast<int>((i / ow) % oh);
      f = static_cast<int>((i / (static_cast<s64>(ow) * oh)) % co);
      b = static_cast<int>(i / (static_cast<s64>(ow) * oh * co));
    }
    const int g = f / co_per_group;
    Wide acc = 0;
    for (int c = 0; c < ci_per_group; ++c) {
      const int gc = g * ci_per_group + c;
      for (int ky = 0; ky < kh; ++ky) {
        const int iy = y * sh + ky * dh - pad_top;
        if (iy < 0 || iy >= h) continue;
        for (int kx = 0; kx < kw; ++kx) {
          const int ix = x * sw + kx * dw - pad_left;
          if (ix < 0 || ix >= w) continue;
          const s64 at = kNhwc ? ((static_cast<s64>(b) * h + iy) * w + ix) * ci + gc
                               : ((static_cast<s64>(b) * ci + gc) * h + iy) * w + ix;
          const s64 wt = kNhwc ? ((static_cast<s64>(f) * kh + ky) * kw + kx) * ci_per_group + c
                               : ((static_cast<s64>(f) * ci_per_group + c) * kh + ky) * kw + kx;
          acc += Widen(data[at]) * Widen(weight[wt]);
        }
      }
    }
    ReferenceStore<kEpi, Narrow, A>(out, i, static_cast<Narrow>(acc), f, bias, scale);
  }
}

// C[M, N] = A[M, K] * W[N, K]^T.
template <typename T, int kEpi, class A = Act<>>
__global__ void dense_reference(const T* __restrict__ a, const T* __restrict__ wt,
                                const float* __restrict__ bias, const float* __restrict__ scale,
                                void* out, int m, int n, int k) {
  typedef typename ReferenceAcc<T>::Wide Wide;
  typedef typename ReferenceAcc<T>::Narrow Narrow;
  const s64 total = static_cast<s64>(m) * n;
  for (s64 i = static_cast<s64>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<s64>(gridDim.x) * blockDim.x) {
    const int j = static_cast<int>(i % n);
    const s64 row = i / n;
    Wide acc = 0;
    for (int kk = 0; kk < k; ++kk) {
      acc += Widen(a[row * k + kk]) * Widen(wt[static_cast<s64>(j) * k + kk]);
    }
    ReferenceStore<kEpi, Narrow, A>(out, i, static_cast<Narrow>(acc), j, bias, scale);
  }
}

// out[B, M, N] = x[XB, M, K] * y[YB, N, K]^T per batch; a batch stride of 0 broadcasts.
template <typename T, int kEpi>
__global__ void batch_matmul_reference(const T* __restrict__ x, const T* __restrict__ y,
                                       const float* __restrict__ bias,
                                       const float* __restrict__ scale, void* out, int batch, int m,
                                       int n, int k, s64 x_batch_stride, s64 y_batch_stride) {
  typedef typename ReferenceAcc<T>::Wide Wide;
  typedef typename ReferenceAcc<T>::Narrow Narrow;
  const s64 total = static_cast<s64>(batch) * m * n;
  for (s64 i = static_cast<s64>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<s64>(gridDim.x) * blockDim.x) {
    const int j = static_cast<int>(i % n);
    const s64 row = (i / n) % m;
    const s64 b = i / (static_cast<s64>(m) * n);
    const T* xr = x + b * x_batch_stride + row * k;
    const T* yr = y + b * y_batch_stride + static_cast<s64>(j) * k;
    Wide acc = 0;
    for (int kk = 0; kk < k; ++kk) acc += Widen(xr[kk]) * Widen(yr[kk]);
    EpilogueOp<kEpi, Narrow>::Store(out, i, static_cast<Narrow>(acc), j, bias, scale);
  }
}

// attention_mma.cuda's reference (ops/attention.h): one thread per query row (b, h, i) of
// contiguous [B, H, S, D] float16 Q, K and V, the scores, softmax and P V in double, the output
// float32 [B, H, S_q, D]. kMask: 0 none, 1 float32, 2 float16, [B or 1, S_kv] rows mask_batch
// apart (0: one row for every batch), added to the scaled scores; 3 causal (query i over keys
// j <= i).
template <int kMask, int kD>
__global__ void attention_reference(const f16* __restrict__ q, const f16* __restrict__ k,
                                    const f16* __restrict__ v, const void* __restrict__ mask,
                                    float* __restrict__ out, int bh, int heads, int sq, int skv,
                                    float scale, s64 mask_batch) {
  const s64 total = static_cast<s64>(bh) * sq;
  for (s64 i = static_cast<s64>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<s64>(gridDim.x) * blockDim.x) {
    const s64 head = i / sq;
    const f16* qr = q + i * kD;
    const f16* kh = k + head * skv * kD;
    const f16* vh = v + head * skv * kD;
    const s64 mask_row = (head / heads) * mask_batch;
    const int keys = kMask == 3 ? static_cast<int>(min(static_cast<s64>(skv), i % sq + 1)) : skv;
    auto score = [&](int j) {
      double dot = 0;
      for (int d = 0; d < kD; ++d) dot += Widen(qr[d]) * Widen(kh[static_cast<s64>(j) * kD + d]);
      double m = 0;
      if (kMask == 1) m = static_cast<const float*>(mask)[mask_row + j];
      if (kMask == 2) m = F16ToFloat(static_cast<const f16*>(mask)[mask_row + j]);
      return dot * scale + m;
    };
    double top = -1e308;
    for (int j = 0; j < keys; ++j) top = fmax(top, score(j));
    double acc[kD];
    for (int d = 0; d < kD; ++d) acc[d] = 0;
    double sum = 0;
    for (int j = 0; j < keys; ++j) {
      const double p = exp(score(j) - top);
      sum += p;
      for (int d = 0; d < kD; ++d) acc[d] += p * Widen(vh[static_cast<s64>(j) * kD + d]);
    }
    for (int d = 0; d < kD; ++d) out[i * kD + d] = static_cast<float>(acc[d] / sum);
  }
}

}  // namespace tunejit

#ifdef TUNEJIT_NVCC_CHECK
template __global__ void tunejit::attention_reference<1, 64>(const tunejit::f16*,
                                                             const tunejit::f16*,
                                                             const tunejit::f16*, const void*,
                                                             float*, int, int, int, int, float,
                                                             long long);
template __global__ void tunejit::attention_reference<3, 128>(const tunejit::f16*,
                                                              const tunejit::f16*,
                                                              const tunejit::f16*, const void*,
                                                              float*, int, int, int, int, float,
                                                              long long);
#define TUNEJIT_CONV_REFERENCE(T, EPI, NHWC, NHWC_OUT, ...)                                     \
  template __global__ void tunejit::conv2d_reference<T, EPI, NHWC, NHWC_OUT, ##__VA_ARGS__>(    \
      const T*, const T*, const float*, const float*, void*, int, int, int, int, int, int, int, \
      int, int, int, int, int, int, int, int, int)
TUNEJIT_CONV_REFERENCE(float, 0, false, false);
TUNEJIT_CONV_REFERENCE(signed char, 0, false, false);
TUNEJIT_CONV_REFERENCE(tunejit::f16, 0, true, true);
TUNEJIT_CONV_REFERENCE(signed char, 0, true, true);
TUNEJIT_CONV_REFERENCE(float, 11, false, true);  // the stem's: NCHW in, NHWC out
// Activations: ReLU6 after a bias (fp16 NHWC), silu (the stem's), hard_swish scaled float32.
TUNEJIT_CONV_REFERENCE(tunejit::f16, 1, true, true,
                       tunejit::Act<tunejit::ActKind::kClip, 0, 1086324736>);
TUNEJIT_CONV_REFERENCE(float, 1, false, true, tunejit::Act<tunejit::ActKind::kSilu>);
TUNEJIT_CONV_REFERENCE(signed char, 5, true, true, tunejit::Act<tunejit::ActKind::kHardSwish>);
template __global__ void
tunejit::dense_reference<tunejit::f16, 1, tunejit::Act<tunejit::ActKind::kHardSwish>>(
    const tunejit::f16*, const tunejit::f16*, const float*, const float*, void*, int, int, int);
template __global__ void tunejit::dense_reference<float, 7>(const float*, const float*,
                                                            const float*, const float*, void*, int,
                                                            int, int);
template __global__ void tunejit::dense_reference<tunejit::f16, 0>(const tunejit::f16*,
                                                                   const tunejit::f16*,
                                                                   const float*, const float*,
                                                                   void*, int, int, int);
template __global__ void tunejit::batch_matmul_reference<float, 0>(const float*, const float*,
                                                                   const float*, const float*,
                                                                   void*, int, int, int, int,
                                                                   long long, long long);
#endif  // TUNEJIT_NVCC_CHECK
