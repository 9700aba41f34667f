// File: kernel_sources/gemm_wgmma.cu
// dense_wgmma.cuda (issue 7; shared/docs/tensorcore-design.md 1.2 and 6.1 step 1): a first Hopper
// tensor-core GEMM, written to be correct by construction rather than fast.
//   C[i, j] = epilogue(sum_k A[i, k] * B[j, k]),  A [M, K] and B [N, K] row-major (K-major): fp16
//   with fp32 accumulation, C fp32 or fp16 (kOutF16); or int8 (kInt8) with int32 accumulation, C
//   int32, fp32 or requantized int8. The epilogue of common.cuh on channel j.
//
//   gemm_wgmma<BM, BN, BK, STAGES, CONS_WG, kInt8, kEpi, kOutF16>
//   grid (at most ceil(M / BM) * ceil(N / BN) output tiles; one block per SM makes it persistent:
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
// dense templates (ops/op_template.h conventions).
//
// What is left for later: kernel_sources/wgmma_core.cuh.
#include "wgmma_core.cuh"

namespace tunejit {

// Rows of C as the epilogue addresses them: row-major [M, N].
struct GemmRows {
  int m, n;
  __device__ __forceinline__ s64 operator()(int row) const {
    return row < m ? static_cast<s64>(row) * n : -1;
  }
};

// K tile kt of A rows [m0, m0 + BM) and B rows [n0, n0 + BN): one {row of K, rows} box per atom.
template <int BM, int BN, int BK, int kInt8>
struct GemmProducer {
  const hopper::TmaDescriptor* a_map;
  const hopper::TmaDescriptor* b_map;
  int m0, n0;
  __device__ __forceinline__ void operator()(unsigned char* a, unsigned char* b, hopper::u64* full,
                                             int kt) const {
    constexpr int kAtomElems = WgmmaKind<kInt8>::kAtomElems;
    using Stage = WgmmaStage<BM, BN, BK / kAtomElems * kWgmmaAtomBytes>;
#pragma unroll
    for (int atom = 0; atom < Stage::kAtoms; ++atom) {
      const int k0 = kt * BK + atom * kAtomElems;
      hopper::TmaLoad2d(a + atom * Stage::kAAtomBytes, a_map, full, k0, m0);
      hopper::TmaLoad2d(b + atom * Stage::kBAtomBytes, b_map, full, k0, n0);
    }
  }
};

// The output tiles of the GEMM, for WgmmaBlock: tile t is column tile t % n_tiles of row tile
// t / n_tiles.
template <int BM, int BN, int BK, int kInt8>
struct GemmTiles {
  const hopper::TmaDescriptor* a_map;
  const hopper::TmaDescriptor* b_map;
  int m, n, m_tiles, n_tiles;
  __device__ __forceinline__ int count() const { return m_tiles * n_tiles; }
  __device__ __forceinline__ WgmmaTile<GemmProducer<BM, BN, BK, kInt8>, GemmRows> At(int t) const {
    const int m0 = t / n_tiles * BM, n0 = t % n_tiles * BN;
    return {GemmProducer<BM, BN, BK, kInt8>{a_map, b_map, m0, n0}, GemmRows{m, n}, m0, n0};
  }
};

template <int BM, int BN, int BK, int STAGES, int CONS_WG, int kInt8, int kEpi, int kOutF16>
__global__ void __launch_bounds__(128 * (1 + CONS_WG), 1)
    gemm_wgmma(const __grid_constant__ hopper::TmaDescriptor a_map,
               const __grid_constant__ hopper::TmaDescriptor b_map, const float* __restrict__ bias,
               const float* __restrict__ scale, void* out, int m, int n, int k) {
  static_assert(BM <= 256, "a TMA box dimension is at most 256");
  static_assert(BK % WgmmaKind<kInt8>::kAtomElems == 0, "BK is whole 128-byte rows");
  constexpr int kBkBytes = BK / WgmmaKind<kInt8>::kAtomElems * kWgmmaAtomBytes;
  WgmmaBlock<BM, BN, kBkBytes, STAGES, CONS_WG, kInt8, kEpi, kOutF16>(
      GemmTiles<BM, BN, BK, kInt8>{&a_map, &b_map, m, n, CeilDiv(m, BM), CeilDiv(n, BN)}, &a_map,
      &b_map, out, bias, scale, n, CeilDiv(k, BK));
}

}  // namespace tunejit

#ifdef TUNEJIT_NVCC_CHECK
#define TUNEJIT_GEMM_WGMMA(BM, BN, BK, STAGES, CONS_WG, I8, EPI, F16)                            \
  template __global__ void tunejit::gemm_wgmma<BM, BN, BK, STAGES, CONS_WG, I8, EPI, F16>(       \
      const __grid_constant__ tunejit::hopper::TmaDescriptor,                                    \
      const __grid_constant__ tunejit::hopper::TmaDescriptor, const float*, const float*, void*, \
      int, int, int)
TUNEJIT_GEMM_WGMMA(128, 128, 64, 4, 2, 0, 0, 0);    // the fallback config, fp32 out
TUNEJIT_GEMM_WGMMA(128, 256, 64, 3, 2, 0, 3, 1);    // bias + relu, fp16 out
TUNEJIT_GEMM_WGMMA(64, 192, 128, 2, 1, 0, 7, 0);    // one consumer, scaled fp32 out
TUNEJIT_GEMM_WGMMA(256, 64, 64, 4, 2, 0, 1, 1);     // two m64 subtiles per consumer
TUNEJIT_GEMM_WGMMA(128, 128, 128, 4, 2, 1, 0, 0);   // int8, int32 out
TUNEJIT_GEMM_WGMMA(128, 128, 256, 3, 2, 1, 11, 0);  // int8, bias + relu + requantize to int8
#endif                                              // TUNEJIT_NVCC_CHECK
