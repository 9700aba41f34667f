// File: kernel_sources/gemm_wgmma.cu
// dense_wgmma.cuda (docs/tensorcore-design.md 1.2 and 6.1 step 1): a first Hopper
// tensor-core GEMM, written to be correct by construction rather than fast.
//   C[i, j] = epilogue(sum_k A[i, k] * B[j, k]),  A [M, K] and B [N, K] row-major (K-major): fp16
//   with fp32 accumulation, C fp32 or fp16 (kOutF16); or int8 (kInt8) with int32 accumulation, C
//   int32, fp32 or requantized int8. The epilogue of common.cuh on channel j.
//
//   gemm_wgmma<BM, BN, BK, STAGES, CONS_WG, kInt8, kEpi, kOutF16, SPLIT[, A]>
//   (A: the activation after the epilogue, common.cuh Act, into a float16 or float32 output of
//   fp16 operands: MobileNetV3's hard_swish classifier; Act<> none; with SPLIT > 1 the sum
//   kernel applies it)
//   grid (at most ceil(M / BM) * ceil(N / BN) * SPLIT output tiles; one block per SM makes it
//   persistent:
//   wgmma_core.cuh WgmmaBlock), block 128 * (1 + CONS_WG), dynamic shared memory
//   WgmmaSmemBytes(BM, BN, BK * element bytes, STAGES) (over 48 KiB: the launch raises the opt-in
//   limit).
//
// Warp specialisation: warpgroup 0 is the producer; one elected thread issues, per k tile, the
// TMA loads of A [BM x BK] and B [BN x BK] into the next stage of a ring of shared buffers.
// Each stage has a "full" mbarrier (1 arrival + the stage's bytes: TMA completes it) and an "empty"
// one (one arrival per consumer warp: the buffers may be overwritten). Warpgroups 1..CONS_WG are
// consumers; consumer c owns rows [c * BM / CONS_WG, (c + 1) * BM / CONS_WG) of the tile
// (cooperative schedule) and issues BM / CONS_WG / 64 wgmma m64nBNk16 per k16 step, operands
// straight from shared memory. K is walked in "atoms" of 64 fp16 = one 128-byte swizzled row; a
// stage holds BK / 64 atoms of A and of B, each loaded by one TMA box {64, BM} / {64, BN}.
// Tails: TMA zero-fills rows past M/N and columns past K, so only the epilogue checks bounds.
//
// Kernel parameters: a_map, b_map are CUtensorMaps encoded on the host (cuTensorMapEncodeTiled:
// fp16, 2-D {K, rows}, row stride K * 2 bytes (K % 8 == 0), box {64, BM} resp. {64, BN},
// CU_TENSOR_MAP_SWIZZLE_128B, OOB fill zero), passed by value; bias/scale/out/m/n/k as the other
// dense templates (ops/op_template.h conventions); residual: with kEpiResidual (common.cuh), a
// float16 [M, N] tensor added to the float16 output in the epilogue (a transformer's residual
// stream after its out-projection and second MLP layer), else null.
//
// Split-K (SPLIT > 1): tile t of split s = t / (M and N tiles) sums K tiles [s * kt, (s + 1) * kt)
// (kt = ceil(ceil(K / BK) / SPLIT); TMA zero-fills past K) and stores its raw accumulators (kEpi 0,
// fp32 or int32) into slice s of `out`, a workspace [SPLIT, M, N]; gemm_split_k_sum then adds the
// slices in order and applies the epilogue. For GEMMs with few output tiles and a long K (VGG's
// first classifier layer: 32 tiles of 128 x 128, K = 25088), where the tiles alone leave most SMs
// idle and each busy one streams more than its share of the weight.
//
// What is left for later: kernel_sources/wgmma_core.cuh.
#include "wgmma_core.cuh"

namespace tunejit {

// Rows of C as the epilogue addresses them: row-major [M, N], from `offset` (split-K's slice).
struct GemmRows {
  int m, n;
  s64 offset;
  __device__ __forceinline__ s64 operator()(int row) const {
    return row < m ? offset + static_cast<s64>(row) * n : -1;
  }
};

// K tile kt0 + kt of A rows [m0, m0 + BM) and B rows [n0, n0 + BN): one {row of K, rows} box per
// atom.
template <int BM, int BN, int BK, int kInt8>
struct GemmProducer {
  const hopper::TmaDescriptor* a_map;
  const hopper::TmaDescriptor* b_map;
  int m0, n0, kt0;
  __device__ __forceinline__ void operator()(unsigned char* a, unsigned char* b, hopper::u64* full,
                                             int kt) const {
    constexpr int kAtomElems = WgmmaKind<kInt8>::kAtomElems;
    using Stage = WgmmaStage<BM, BN, BK / kAtomElems * kWgmmaAtomBytes>;
#pragma unroll
    for (int atom = 0; atom < Stage::kAtoms; ++atom) {
      const int k0 = (kt0 + kt) * BK + atom * kAtomElems;
      hopper::TmaLoad2d(a + atom * Stage::kAAtomBytes, a_map, full, k0, m0);
      hopper::TmaLoad2d(b + atom * Stage::kBAtomBytes, b_map, full, k0, n0);
    }
  }
};

// The output tiles of the GEMM, for WgmmaBlock: tile t is column tile t % n_tiles of row tile
// t / n_tiles % m_tiles, over K tiles [s * k_tiles, (s + 1) * k_tiles) of split s = t / (m_tiles *
// n_tiles), into slice s of the output.
template <int BM, int BN, int BK, int kInt8>
struct GemmTiles {
  const hopper::TmaDescriptor* a_map;
  const hopper::TmaDescriptor* b_map;
  int m, n, m_tiles, n_tiles, k_tiles, splits;
  __device__ __forceinline__ int count() const { return m_tiles * n_tiles * splits; }
  __device__ __forceinline__ WgmmaTile<GemmProducer<BM, BN, BK, kInt8>, GemmRows> At(int t) const {
    const int split = t / (m_tiles * n_tiles), mn = t % (m_tiles * n_tiles);
    const int m0 = mn / n_tiles * BM, n0 = mn % n_tiles * BN;
    return {GemmProducer<BM, BN, BK, kInt8>{a_map, b_map, m0, n0, split * k_tiles},
            GemmRows{m, n, static_cast<s64>(split) * m * n}, m0, n0};
  }
};

template <int BM, int BN, int BK, int STAGES, int CONS_WG, int kInt8, int kEpi, int kOutF16,
          int SPLIT, class A = Act<>>
__global__ void __launch_bounds__(128 * (1 + CONS_WG), 1)
    gemm_wgmma(const __grid_constant__ hopper::TmaDescriptor a_map,
               const __grid_constant__ hopper::TmaDescriptor b_map, const float* __restrict__ bias,
               const float* __restrict__ scale, void* out, int m, int n, int k,
               const void* residual) {
  static_assert(BM <= 256, "a TMA box dimension is at most 256");
  static_assert(BK % WgmmaKind<kInt8>::kAtomElems == 0, "BK is whole 128-byte rows");
  static_assert(SPLIT == 1 || (kEpi == 0 && kOutF16 == 0 && !A::kActive),
                "split-K stores raw accumulators");
  static_assert(kInt8 == 0 || !A::kActive, "an activation on fp16 GEMMs only");
  constexpr int kBkBytes = BK / WgmmaKind<kInt8>::kAtomElems * kWgmmaAtomBytes;
  const int k_tiles = CeilDiv(CeilDiv(k, BK), SPLIT);
  WgmmaBlock<BM, BN, kBkBytes, STAGES, CONS_WG, kInt8, kEpi, kOutF16, 0, kWgmmaAtomBytes, 1, 0, 0,
             0, A>(GemmTiles<BM, BN, BK, kInt8>{&a_map, &b_map, m, n, CeilDiv(m, BM),
                                                CeilDiv(n, BN), k_tiles, SPLIT},
                   &a_map, &b_map, out, bias, scale, n, k_tiles, residual);
}

// Split-K's second pass: C[i, j] = epilogue(sum over s of partial[s, i, j]) on channel j, the
// slices added in order (the result does not depend on which split finished first), then the
// activation A. Launched right behind gemm_wgmma (overlaps_previous): its blocks wait for the
// partial sums.
template <int SPLIT, int kInt8, int kEpi, int kOutF16, class A = Act<>>
__global__ void __launch_bounds__(256)
    gemm_split_k_sum(const void* __restrict__ partial, const float* __restrict__ bias,
                     const float* __restrict__ scale, void* out, int m, int n) {
  typedef typename WgmmaKind<kInt8>::Acc Acc;
  typedef EpilogueOp<kEpi, Acc> Op;
  static_assert(!A::kActive || (IsFloatAcc<Acc>::value && Op::kOut != kEpiOutInt8),
                "an activation into float outputs only");
  GridDependencyWait();
  const s64 total = static_cast<s64>(m) * n;
  const Acc* slices = static_cast<const Acc*>(partial);
  for (s64 i = static_cast<s64>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<s64>(gridDim.x) * blockDim.x) {
    Acc sum = slices[i];
#pragma unroll
    for (int s = 1; s < SPLIT; ++s) sum += slices[s * total + i];
    const int channel = static_cast<int>(i % n);
    if constexpr (kOutF16 != 0) {
      static_assert(IsFloatAcc<Acc>::value && Op::kOut == kEpiOutAccumulator,
                    "fp16 output from fp16 operands, no scale");
      static_cast<unsigned short*>(out)[i] = A::ApplyF16(
          FloatToF16Bits(Op::Apply(sum, Op::kBias ? __ldg(bias + channel) : 0.0f, 1.0f)));
    } else if constexpr (A::kActive) {
      static_cast<float*>(out)[i] =
          A::Apply(Op::Apply(sum, Op::kBias ? __ldg(bias + channel) : 0.0f,
                             Op::kOut != kEpiOutAccumulator ? __ldg(scale + channel) : 1.0f));
    } else {
      Op::Store(out, i, sum, channel, bias, scale);
    }
  }
}

}  // namespace tunejit

#ifdef TUNEJIT_NVCC_CHECK
#define TUNEJIT_GEMM_WGMMA(BM, BN, BK, STAGES, CONS_WG, I8, EPI, F16, SPLIT, ...)                \
  template __global__ void                                                                       \
  tunejit::gemm_wgmma<BM, BN, BK, STAGES, CONS_WG, I8, EPI, F16, SPLIT, ##__VA_ARGS__>(          \
      const __grid_constant__ tunejit::hopper::TmaDescriptor,                                    \
      const __grid_constant__ tunejit::hopper::TmaDescriptor, const float*, const float*, void*, \
      int, int, int, const void*)
TUNEJIT_GEMM_WGMMA(128, 128, 64, 4, 2, 0, 0, 0, 1);    // the fallback config, fp32 out
TUNEJIT_GEMM_WGMMA(128, 256, 64, 3, 2, 0, 3, 1, 1);    // bias + relu, fp16 out
TUNEJIT_GEMM_WGMMA(64, 192, 128, 2, 1, 0, 7, 0, 1);    // one consumer, scaled fp32 out
TUNEJIT_GEMM_WGMMA(256, 64, 64, 4, 2, 0, 1, 1, 1);     // two m64 subtiles per consumer
TUNEJIT_GEMM_WGMMA(128, 192, 64, 4, 2, 0, 17, 1, 1);   // bias + residual into fp16
TUNEJIT_GEMM_WGMMA(128, 128, 128, 4, 2, 1, 0, 0, 1);   // int8, int32 out
TUNEJIT_GEMM_WGMMA(128, 128, 256, 3, 2, 1, 11, 0, 1);  // int8, bias + relu + requantize to int8
TUNEJIT_GEMM_WGMMA(128, 128, 128, 4, 1, 0, 0, 0, 4);   // split-K: 4 slices of fp32 partials
TUNEJIT_GEMM_WGMMA(128, 128, 256, 4, 1, 1, 0, 0, 2);   // split-K: 2 slices of int32 partials
// Activations: hard_swish into fp16 (MobileNetV3's classifier), ReLU6 into fp32.
TUNEJIT_GEMM_WGMMA(128, 128, 64, 4, 2, 0, 1, 1, 1, tunejit::Act<tunejit::ActKind::kHardSwish>);
TUNEJIT_GEMM_WGMMA(128, 128, 64, 4, 2, 0, 1, 0, 1,
                   tunejit::Act<tunejit::ActKind::kClip, 0, 1086324736>);
#define TUNEJIT_GEMM_SPLIT_K_SUM(SPLIT, I8, EPI, F16, ...)                                        \
  template __global__ void tunejit::gemm_split_k_sum<SPLIT, I8, EPI, F16, ##__VA_ARGS__>(         \
      const void* __restrict__, const float* __restrict__, const float* __restrict__, void*, int, \
      int)
TUNEJIT_GEMM_SPLIT_K_SUM(4, 0, 3, 1);   // bias + relu into fp16
TUNEJIT_GEMM_SPLIT_K_SUM(2, 0, 1, 0);   // bias into fp32
TUNEJIT_GEMM_SPLIT_K_SUM(2, 1, 11, 0);  // int8: bias + relu + requantize
TUNEJIT_GEMM_SPLIT_K_SUM(8, 1, 7, 0);   // int8: scaled fp32 with bias and relu
TUNEJIT_GEMM_SPLIT_K_SUM(4, 0, 1, 1, tunejit::Act<tunejit::ActKind::kHardSwish>);  // into fp16
TUNEJIT_GEMM_SPLIT_K_SUM(2, 0, 1, 0, tunejit::Act<tunejit::ActKind::kSilu>);       // into fp32
#endif  // TUNEJIT_NVCC_CHECK
