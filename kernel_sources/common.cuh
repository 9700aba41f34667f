// File: kernel_sources/common.cuh
// Shared device code of the op templates: integer typedefs (NVRTC has no <cstdint>), the fused
// output epilogue every conv/dense kernel ends with, the dependent-launch wrappers, block
// reductions and the unroll rule that approximates AutoTVM's auto_unroll_max_step.
//
// Epilogue code (an int template argument, built on the host by ops/op_template.h EpilogueCode()):
//   bit 0  bias   (+ bias[c], float32 per output channel)
//   bit 1  relu   (max(v, 0))
//   bits 2-3 output: 0 accumulator type (float for fp32 ops, int32 for int8 ops),
//                    1 float32 (v * scale[c]), 2 int8 requantize (sat(rn(v * scale[c])))
// Value = acc (* scale[c] when the output is not the accumulator) (+ bias[c]), then relu.
// An activation after it (clip, silu, hard_swish: Act below) is a type of its own, which the
// templates that fuse one take beside the code (in their Epi type, or as a last template
// argument); the code never holds one.
//
//   tunejit::EpilogueOp<kEpi, float>::Store(out, index, acc, channel, bias, scale);
#ifndef TUNEJIT_KERNEL_SOURCES_COMMON_CUH_
#define TUNEJIT_KERNEL_SOURCES_COMMON_CUH_

namespace tunejit {

typedef signed char s8;
typedef int s32;
typedef long long s64;

// ---- programmatic dependent launch (PTX ISA 9.7.13.9; sm_90+, no-ops below) ----
// A kernel launched with programmatic stream serialization (LaunchShape::overlaps_previous) may
// start while the kernel before it drains; griddepcontrol.wait blocks until that kernel has
// completed and its writes are visible, so it must come before the first read of an input and the
// first write of an output. Without the launch attribute both are no-ops.
__device__ __forceinline__ void GridDependencyWait() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Lets the next kernel's blocks launch (into SMs this grid frees) once every block of this grid has
// issued it or exited; they still wait in GridDependencyWait for this grid to complete.
__device__ __forceinline__ void LaunchDependents() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// An fp16 value as its 16 bits (NVRTC here has no cuda_fp16.h): the tensor-core templates' data,
// read by the reference and compare kernels through the exact conversion to float.
struct f16 {
  unsigned short bits;
};
__device__ __forceinline__ float F16ToFloat(f16 v) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v.bits));
  return f;
}
// float -> the bits of the nearest fp16 (round to nearest even, the hardware's cvt.rn).
__device__ __forceinline__ unsigned short FloatToF16Bits(float v) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
  return h;
}

// Element conversions by way of float: float32 <-> fp16 (round to nearest even, the hardware's
// cvt.rn); int8 <-> float exact (layout changes only).
__device__ __forceinline__ float ToFloat(float v) { return v; }
__device__ __forceinline__ float ToFloat(f16 v) { return F16ToFloat(v); }
__device__ __forceinline__ float ToFloat(s8 v) { return static_cast<float>(v); }  // exact
template <typename T>
__device__ __forceinline__ T FromFloat(float v);
template <>
__device__ __forceinline__ float FromFloat<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ s8 FromFloat<s8>(float v) {  // int8 layout changes only: exact
  return static_cast<s8>(v);
}
template <>
__device__ __forceinline__ f16 FromFloat<f16>(float v) {
  return f16{FloatToF16Bits(v)};
}

constexpr int kEpiBias = 1;
constexpr int kEpiRelu = 2;
constexpr int kEpiOutAccumulator = 0;
constexpr int kEpiOutFloat32 = 1;
constexpr int kEpiOutInt8 = 2;
// A residual: the value of a tensor shaped like the output, in the output's type, added before
// the ReLU (ResNet's skip connection read in the conv's epilogue): float16 (AddResidualF16), or
// int8 into a requantized int8 output (AddResidualI8, with Int8ResidualScales). Only the
// templates whose epilogue reads it take it (wgmma_core.cuh).
constexpr int kEpiResidual = 16;

// ---- activations: the element-wise steps an epilogue may absorb ----
// One definition of each, for the separate steps (elementwise.cu clip, tensor_ops.cu unary) and
// the epilogues that fuse them (Act), so that a fused activation computes what the step did, bit
// for bit: the same expressions under the same NVRTC options. The arithmetic is spelled with _rn
// intrinsics so that no FMA contraction can differ between the two places they are inlined in;
// expf is the accurate one (no __expf: -use_fast_math is never on). Bit-identity with the CPU
// reference (std::exp) is not possible: its exp differs from expf by up to 2 ulp, so the tests
// compare those with a tolerance.

// min(max(v, lo), hi), NaN passing through (as the CPU reference's comparisons do).
__device__ __forceinline__ float ClipValue(float v, float lo, float hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}
__device__ __forceinline__ float SigmoidValue(float x) {
  return __fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-x)));
}
// x * sigmoid(x) as x / (1 + exp(-x)): one rounding fewer than the product.
__device__ __forceinline__ float SiluValue(float x) {
  return __fdiv_rn(x, __fadd_rn(1.0f, expf(-x)));
}
// x * min(max(x / 6 + 1 / 2, 0), 1).
__device__ __forceinline__ float HardSwishValue(float x) {
  return __fmul_rn(x, fminf(fmaxf(__fadd_rn(__fdiv_rn(x, 6.0f), 0.5f), 0.0f), 1.0f));
}
// The exact GELU, x * (1 + erf(x / sqrt(2))) / 2.
__device__ __forceinline__ float GeluValue(float x) {
  return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
}
// The tanh GELU (GPT-2's gelu_new), x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))) / 2.
__device__ __forceinline__ float GeluTanhValue(float x) {
  return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
}

// The activation of an epilogue (ops/op_template.h Epilogue::activation), applied after
// everything else in it (bias, ReLU, the residual add). A clip's bounds are the float bits of
// kLoBits and kHiBits (a float is no template argument before C++20). On a float16 output it
// reads the value as the op would have stored it, already rounded to float16 (ApplyF16), as the
// separate step reads the op's output, and rounds its result again; on a float32 output it
// takes the float value (Apply). Fusing therefore changes no bit.
enum class ActKind : int {
  kNone = 0,
  kClip = 1,
  kSilu = 2,
  kHardSwish = 3,
  kGelu = 4,
  kGeluTanh = 5
};
template <ActKind kKind = ActKind::kNone, int kLoBits = 0, int kHiBits = 0>
struct Act {
  static constexpr bool kActive = kKind != ActKind::kNone;
  static_assert(kKind == ActKind::kClip || (kLoBits == 0 && kHiBits == 0), "bounds are a clip's");
  __device__ __forceinline__ static float Apply(float v) {
    if constexpr (kKind == ActKind::kClip) {
      return ClipValue(v, __int_as_float(kLoBits), __int_as_float(kHiBits));
    } else if constexpr (kKind == ActKind::kSilu) {
      return SiluValue(v);
    } else if constexpr (kKind == ActKind::kHardSwish) {
      return HardSwishValue(v);
    } else if constexpr (kKind == ActKind::kGelu) {
      return GeluValue(v);
    } else if constexpr (kKind == ActKind::kGeluTanh) {
      return GeluTanhValue(v);
    } else {
      return v;
    }
  }
  __device__ __forceinline__ static unsigned short ApplyF16(unsigned short h) {
    if constexpr (kActive) {
      return FloatToF16Bits(Apply(F16ToFloat(f16{h})));
    } else {
      return h;
    }
  }
  // Two float16 values packed in a word; eight in 16 bytes.
  __device__ __forceinline__ static unsigned int ApplyF16x2(unsigned int w) {
    if constexpr (kActive) {
      return ApplyF16(w & 0xffffu) | static_cast<unsigned int>(ApplyF16(w >> 16)) << 16;
    } else {
      return w;
    }
  }
  __device__ __forceinline__ static uint4 ApplyF16x8(uint4 v) {
    return make_uint4(ApplyF16x2(v.x), ApplyF16x2(v.y), ApplyF16x2(v.z), ApplyF16x2(v.w));
  }
};

// An epilogue by name (ops/op_template.h Epilogue): what the newer templates take as a template
// argument, e.g. Epi<true, true, EpiOut::kInt8>; kCode is the packed form EpilogueOp decodes,
// Activation the activation after it (Act<> for none).
enum class EpiOut : int { kAccumulator = 0, kFloat32 = 1, kInt8 = 2 };
template <bool kBias, bool kRelu, EpiOut kOut, bool kResidual = false, typename A = Act<>>
struct Epi {
  static constexpr int kCode = (kBias ? kEpiBias : 0) | (kRelu ? kEpiRelu : 0) |
                               (static_cast<int>(kOut) << 2) | (kResidual ? kEpiResidual : 0);
  typedef A Activation;
  static_assert(!A::kActive || kOut != EpiOut::kInt8, "an activation into float outputs only");
};

template <bool kCond, typename A, typename B>
struct Conditional {
  typedef A type;
};
template <typename A, typename B>
struct Conditional<false, A, B> {
  typedef B type;
};

template <typename T>
struct IsFloatAcc {
  static constexpr bool value = false;
};
template <>
struct IsFloatAcc<float> {
  static constexpr bool value = true;
};

// Round to nearest even, then saturate to int8 (the requantize rule of the CPU reference).
__device__ __forceinline__ s8 SaturateToInt8(float v) {
  int q = __float2int_rn(v);
  q = q < -128 ? -128 : (q > 127 ? 127 : q);
  return static_cast<s8>(q);
}

// SaturateToInt8 of v0..v3 as the bytes 0..3 of a word, by two cvt.pack.sat (sm_72+: d = c << 16 |
// sat(a) << 8 | sat(b)), which ptxas folds with their __float2int_rn into two F2IP.S8, where
// SaturateToInt8 takes two IMNMX a value and PRMTs to pack. The same bytes for every float:
// __float2int_rn rounds to nearest even and saturates to int32 (NaN gives 0, by PTX's cvt), and
// the pack's saturation is SaturateToInt8's clamp.
__device__ __forceinline__ unsigned SaturateToInt8x4(float v0, float v1, float v2, float v3) {
  unsigned hi, d;
  asm("cvt.pack.sat.s8.s32.b32 %0, %1, %2, 0;"
      : "=r"(hi)
      : "r"(__float2int_rn(v3)), "r"(__float2int_rn(v2)));
  asm("cvt.pack.sat.s8.s32.b32 %0, %1, %2, %3;"
      : "=r"(d)
      : "r"(__float2int_rn(v1)), "r"(__float2int_rn(v0)), "r"(hi));
  return d;
}

// The residual's step (kEpiResidual): the epilogue's float16 value `a` plus the residual's `b`,
// summed in float and rounded to float16, then the ReLU: what an add kernel computes from the
// float16 output of a conv without it, so fusing the add changes no bit.
template <bool kRelu>
__device__ __forceinline__ unsigned short AddResidualF16(unsigned short a, unsigned short b) {
  float v = __fadd_rn(F16ToFloat(f16{a}), F16ToFloat(f16{b}));
  if (kRelu) v = v < 0.0f ? 0.0f : v;
  return FloatToF16Bits(v);
}
// The same over two float16 values packed in a word.
template <bool kRelu>
__device__ __forceinline__ unsigned int AddResidualF16x2(unsigned int a, unsigned int b) {
  return AddResidualF16<kRelu>(a & 0xffffu, b & 0xffffu) |
         static_cast<unsigned int>(AddResidualF16<kRelu>(a >> 16, b >> 16)) << 16;
}
// The same over eight (a 16-byte store).
template <bool kRelu>
__device__ __forceinline__ uint4 AddResidualF16x8(uint4 a, uint4 b) {
  return make_uint4(AddResidualF16x2<kRelu>(a.x, b.x), AddResidualF16x2<kRelu>(a.y, b.y),
                    AddResidualF16x2<kRelu>(a.z, b.z), AddResidualF16x2<kRelu>(a.w, b.w));
}

// The residual's step of the int8 modes: the sum of two int8 values, each dequantized with its
// tensor's scale (each product and the sum rounded once), then the ReLU. add_int8 and the int8
// residual epilogue (AddResidualI8) share it, so fusing the add changes no bit.
template <bool kRelu>
__device__ __forceinline__ float Int8SumValue(s8 x, s8 r, float scale_x, float scale_r) {
  float v = __fadd_rn(__fmul_rn(static_cast<float>(x), scale_x),
                      __fmul_rn(static_cast<float>(r), scale_r));
  if (kRelu) v = v < 0.0f ? 0.0f : v;
  return v;
}

// The scales of an int8 residual epilogue: the conv's own output (its value is rounded to int8
// there first, as the conv without the add wrote it), the residual's, and the sum's. They follow
// the output channels' scales in the epilogue's scale vector: scale[n], scale[n + 1],
// scale[n + 2] for n channels.
struct Int8ResidualScales {
  float x, r, out;
  __device__ __forceinline__ static Int8ResidualScales Load(const float* scale, int n) {
    return {__ldg(scale + n), __ldg(scale + n + 1), __ldg(scale + n + 2)};
  }
};

// The int8 residual's step (kEpiResidual into an int8 output): the conv's requantized value `q`
// plus the residual's `r`, then the ReLU, requantized to the sum's scale: what add_int8 computes
// from the conv's int8 output.
template <bool kRelu>
__device__ __forceinline__ s8 AddResidualI8(s8 q, s8 r, const Int8ResidualScales& s) {
  return SaturateToInt8(__fdiv_rn(Int8SumValue<kRelu>(q, r, s.x, s.r), s.out));
}
// The same over the 4 bytes of a word, and over 16 (a 16-byte store).
template <bool kRelu>
__device__ __forceinline__ unsigned int AddResidualI8x4(unsigned int a, unsigned int b,
                                                        const Int8ResidualScales& s) {
  unsigned int d = 0;
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const s8 v =
        AddResidualI8<kRelu>(static_cast<s8>(a >> (8 * e)), static_cast<s8>(b >> (8 * e)), s);
    d |= static_cast<unsigned int>(static_cast<unsigned char>(v)) << (8 * e);
  }
  return d;
}
template <bool kRelu>
__device__ __forceinline__ uint4 AddResidualI8x16(uint4 a, uint4 b, const Int8ResidualScales& s) {
  return make_uint4(AddResidualI8x4<kRelu>(a.x, b.x, s), AddResidualI8x4<kRelu>(a.y, b.y, s),
                    AddResidualI8x4<kRelu>(a.z, b.z, s), AddResidualI8x4<kRelu>(a.w, b.w, s));
}

template <int kEpi, typename Acc>
struct EpilogueOp {
  static constexpr bool kBias = (kEpi & kEpiBias) != 0;
  static constexpr bool kRelu = (kEpi & kEpiRelu) != 0;
  static constexpr int kOut = (kEpi >> 2) & 3;
  static constexpr bool kResidual = (kEpi & kEpiResidual) != 0;
  // The int32 accumulator output cannot hold a float bias: ops reject that combination.
  static_assert(IsFloatAcc<Acc>::value || kOut != kEpiOutAccumulator || !kBias,
                "bias needs a float output for an int32 accumulator");
  typedef
      typename Conditional<kOut == kEpiOutAccumulator, Acc,
                           typename Conditional<kOut == kEpiOutFloat32, float, s8>::type>::type Out;

  // The float value of one accumulator before any int8 rounding: scaled, biased, ReLU'd, given
  // its channel's bias and scale (each ignored when the epilogue has none). Explicit _rn
  // intrinsics: no fma contraction, so the result is bit-identical to the CPU reference whenever
  // the accumulator is.
  __device__ __forceinline__ static float Apply(Acc acc, float bias, float scale) {
    float v = static_cast<float>(acc);
    if (kOut != kEpiOutAccumulator) v = __fmul_rn(v, scale);
    if (kBias) v = __fadd_rn(v, bias);
    if (kRelu) v = v < 0.0f ? 0.0f : v;
    return v;
  }

  __device__ __forceinline__ static void Store(void* out, s64 index, Acc acc, int channel,
                                               const float* bias, const float* scale) {
    if constexpr (!IsFloatAcc<Acc>::value && kOut == kEpiOutAccumulator) {
      Acc v = acc;
      if (kRelu) v = v < 0 ? 0 : v;
      static_cast<Acc*>(out)[index] = v;
    } else {
      const float v = Apply(acc, kBias ? __ldg(bias + channel) : 0.0f,
                            kOut != kEpiOutAccumulator ? __ldg(scale + channel) : 1.0f);
      if constexpr (kOut == kEpiOutInt8) {
        static_cast<s8*>(out)[index] = SaturateToInt8(v);
      } else {
        static_cast<float*>(out)[index] = v;
      }
    }
  }
};

// auto_unroll_max_step emulation (TVM's UnrollLoop, innermost first): a loop of `trip` iterations
// whose body holds `body` statements after unrolling what is inside it is unrolled when
// trip * body <= step. The result is the argument of `#pragma unroll (N)`: trip, or 1 (keep).
__host__ __device__ constexpr int UnrollIf(int step, int trip, int body) {
  return (step > 0 && trip * body <= step) ? trip : 1;
}

__host__ __device__ constexpr int CeilDiv(int a, int b) { return (a + b - 1) / b; }
__host__ __device__ constexpr int MinInt(int a, int b) { return a < b ? a : b; }

// The sum, and the maximum, of one float per lane over a full warp, valid in every lane.
__device__ __forceinline__ float WarpAllSum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}
__device__ __forceinline__ float WarpAllMax(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  }
  return v;
}

// Sum of one float per thread over a 1-D block of kThreads threads (kThreads == blockDim.x).
// Warp shuffles, then one shared slot per warp. The result is valid in thread 0.
template <int kThreads>
__device__ __forceinline__ float BlockSum(float v) {
  constexpr int kWarps = CeilDiv(kThreads, 32);
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  // Lanes that do not exist in a partial last warp are left out of the mask.
  const int warp_threads = (warp == kWarps - 1) ? kThreads - warp * 32 : 32;
  const unsigned mask = warp_threads == 32 ? 0xffffffffu : ((1u << warp_threads) - 1u);
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    float other = __shfl_down_sync(mask, v, offset);
    if (lane + offset < warp_threads) v += other;
  }
  if constexpr (kWarps == 1) {
    return v;
  } else {
    __shared__ float partial[kWarps];
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    float sum = 0.0f;
    if (threadIdx.x == 0) {
#pragma unroll
      for (int i = 0; i < kWarps; ++i) sum += partial[i];
    }
    return sum;
  }
}

// Writes one thread's accumulators of a TVM-style tiled NCHW output (conv2d_nchw, depthwise): the
// f, y, x axes are each split [blocks, V virtual threads, T threads, I inner], so the thread
// (tz, ty, tx) owns f = f0 + (vf*TF + tz)*FI + fi (and likewise y, x). Out-of-range outputs (tails)
// are skipped; the epilogue runs on each stored value.
template <int VF, int TF, int FI, int VY, int TY, int YI, int VX, int TX, int XI, int kEpi>
__device__ __forceinline__ void StoreTiledNchw(const float (&acc)[VF * FI][VY * YI][VX * XI],
                                               void* out, int nn, int co, int oh, int ow, int f0,
                                               int y0, int x0, const float* __restrict__ bias,
                                               const float* __restrict__ scale) {
  const int tx = threadIdx.x;
  const int ty = threadIdx.y;
  const int tz = threadIdx.z;
#pragma unroll
  for (int vf = 0; vf < VF; ++vf)
#pragma unroll
    for (int fi = 0; fi < FI; ++fi) {
      const int f = f0 + (vf * TF + tz) * FI + fi;
      if (f >= co) continue;
#pragma unroll
      for (int vy = 0; vy < VY; ++vy)
#pragma unroll
        for (int yi = 0; yi < YI; ++yi) {
          const int y = y0 + (vy * TY + ty) * YI + yi;
          if (y >= oh) continue;
#pragma unroll
          for (int vx = 0; vx < VX; ++vx)
#pragma unroll
            for (int xi = 0; xi < XI; ++xi) {
              const int x = x0 + (vx * TX + tx) * XI + xi;
              if (x >= ow) continue;
              const s64 index = ((static_cast<s64>(nn) * co + f) * oh + y) * ow + x;
              EpilogueOp<kEpi, float>::Store(
                  out, index, acc[vf * FI + fi][vy * YI + yi][vx * XI + xi], f, bias, scale);
            }
        }
    }
}

}  // namespace tunejit

#endif  // TUNEJIT_KERNEL_SOURCES_COMMON_CUH_
