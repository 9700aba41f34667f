// File: kernel_sources/gemm_wgmma.cu
// dense_wgmma.cuda (issue 7; shared/docs/tensorcore-design.md 1.2 and 6.1 step 1): a first Hopper
// tensor-core GEMM, written to be correct by construction rather than fast.
//   C[i, j] = epilogue(sum_k A[i, k] * B[j, k]),  A [M, K] and B [N, K] fp16 row-major (K-major),
//   fp32 accumulation, C [M, N] fp32 or fp16 (kOutF16), epilogue of common.cuh on channel j.
//
//   gemm_wgmma<BM, BN, BK, STAGES, CONS_WG, kEpi, kOutF16>
//   grid (ceil(M / BM), ceil(N / BN)), block 128 * (1 + CONS_WG), dynamic shared memory
//   GemmWgmmaSmemBytes(BM, BN, BK, STAGES) (over 48 KiB: the launch raises the opt-in limit).
//
// Warp specialisation: warpgroup 0 is the producer; one elected thread issues, per k tile, the
// TMA loads of A [BM x BK] and B [BN x BK] into stage s = kt % STAGES of a ring of shared buffers.
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
// Deliberately left for later (each is a knob of design section 2.1): consumers wait for their
// wgmma batch to finish (wait_group 0) before releasing the stage instead of keeping one in flight;
// no thread-block clusters or TMA multicast; one tile per CTA (no persistent scheduler, raster
// order or swizzle); direct register -> global epilogue (no smem + TMA store); no split-K; no int8
// (IGMMA k32, s8/u8) or requantize epilogue; no ping-pong consumer schedule.
#include "common.cuh"
#include "hopper_ptx.cuh"

namespace tunejit {

constexpr int kWgmmaAtomK = 64;          // fp16 per 128-byte swizzled row
constexpr int kWgmmaAtomBytes = 128;     // bytes of one such row
constexpr int kWgmmaProducerRegs = 40;   // setmaxnreg split with 2 consumer warpgroups:
constexpr int kWgmmaConsumerRegs = 232;  // 128 * (40 + 2 * 232) = 64512 <= 65536

// Dynamic shared memory of gemm_wgmma: the stage ring, 2 mbarriers per stage, and 1 KiB of slack
// to align the ring to 1024 bytes (128-byte swizzle atoms). ops/gemm_wgmma.cc mirrors this.
__host__ __device__ constexpr int GemmWgmmaSmemBytes(int bm, int bn, int bk, int stages) {
  return stages * (bm + bn) * bk * 2 + stages * 2 * 8 + 1024;
}

// Stores one accumulator: float through the common epilogue, fp16 after it (round to nearest).
template <int kEpi, int kOutF16>
__device__ __forceinline__ void GemmWgmmaStore(void* out, s64 index, float acc, int col,
                                               const float* bias, const float* scale) {
  if constexpr (kOutF16 == 0) {
    EpilogueOp<kEpi, float>::Store(out, index, acc, col, bias, scale);
  } else {
    static_assert((kEpi >> 2) == kEpiOutAccumulator, "fp16 output takes no scale");
    float v = acc;
    if (kEpi & kEpiBias) v = __fadd_rn(v, __ldg(bias + col));
    if (kEpi & kEpiRelu) v = v < 0.0f ? 0.0f : v;
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
    static_cast<unsigned short*>(out)[index] = h;
  }
}

// Producer: one thread walks the k tiles, refilling the ring. Waiting on an empty barrier with
// the opposite parity passes at once in the first round, when no consumer has released anything.
template <int BM, int BN, int BK, int STAGES>
__device__ __forceinline__ void GemmWgmmaProduce(const hopper::TmaDescriptor* a_map,
                                                 const hopper::TmaDescriptor* b_map,
                                                 unsigned char* ring, hopper::u64* full,
                                                 hopper::u64* empty, int m0, int n0, int k) {
  constexpr int kABytes = BM * kWgmmaAtomBytes;  // one A atom
  constexpr int kBBytes = BN * kWgmmaAtomBytes;
  constexpr int kStageBytes = (kABytes + kBBytes) * (BK / kWgmmaAtomK);
  const int k_tiles = CeilDiv(k, BK);
  for (int kt = 0; kt < k_tiles; ++kt) {
    const int s = kt % STAGES;
    hopper::MbarrierWait(&empty[s], ((kt / STAGES) & 1) ^ 1);
    hopper::MbarrierArriveExpectTx(&full[s], kStageBytes);
    unsigned char* a_stage = ring + s * kStageBytes;
    unsigned char* b_stage = a_stage + kABytes * (BK / kWgmmaAtomK);
#pragma unroll
    for (int atom = 0; atom < BK / kWgmmaAtomK; ++atom) {
      const int k0 = kt * BK + atom * kWgmmaAtomK;
      hopper::TmaLoad2d(a_stage + atom * kABytes, a_map, &full[s], k0, m0);
      hopper::TmaLoad2d(b_stage + atom * kBBytes, b_map, &full[s], k0, n0);
    }
  }
}

// Consumer warpgroup `wg` (0-based among consumers): accumulates its kRows x BN slice of the tile.
template <int BM, int BN, int BK, int STAGES, int CONS_WG>
__device__ __forceinline__ void GemmWgmmaConsume(float (&acc)[BM / CONS_WG / 64][BN / 2],
                                                 const unsigned char* ring, hopper::u64* full,
                                                 hopper::u64* empty, int wg, int k) {
  constexpr int kRows = BM / CONS_WG;
  constexpr int kSubtiles = kRows / 64;
  constexpr int kABytes = BM * kWgmmaAtomBytes;
  constexpr int kBBytes = BN * kWgmmaAtomBytes;
  constexpr int kStageBytes = (kABytes + kBBytes) * (BK / kWgmmaAtomK);
  const int k_tiles = CeilDiv(k, BK);
  for (int kt = 0; kt < k_tiles; ++kt) {
    const int s = kt % STAGES;
    hopper::MbarrierWait(&full[s], (kt / STAGES) & 1);
    const unsigned char* a_stage = ring + s * kStageBytes;
    const unsigned char* b_stage = a_stage + kABytes * (BK / kWgmmaAtomK);
#pragma unroll
    for (int t = 0; t < kSubtiles; ++t) {
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) hopper::FenceOperand(acc[t][i]);
    }
    hopper::WgmmaFence();
#pragma unroll
    for (int atom = 0; atom < BK / kWgmmaAtomK; ++atom) {
#pragma unroll
      for (int kk = 0; kk < kWgmmaAtomK / 16; ++kk) {  // k16 steps: 32 bytes along the row
        const hopper::u64 desc_b = hopper::SmemDescriptorSw128(b_stage + atom * kBBytes, 32 * kk);
#pragma unroll
        for (int t = 0; t < kSubtiles; ++t) {
          const unsigned char* a_rows =
              a_stage + atom * kABytes + (wg * kRows + t * 64) * kWgmmaAtomBytes;
          hopper::WgmmaF16F32<BN>::Mma(acc[t], hopper::SmemDescriptorSw128(a_rows, 32 * kk), desc_b,
                                       1);
        }
      }
    }
    hopper::WgmmaCommit();
    // Simple and safe: the whole batch completes before the stage is handed back.
    hopper::WgmmaWait<0>();
#pragma unroll
    for (int t = 0; t < kSubtiles; ++t) {
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) hopper::FenceOperand(acc[t][i]);
    }
    // One arrival per warp, after that warp's own wait: no warp's reads are still pending.
    if (threadIdx.x % 32 == 0) hopper::MbarrierArrive(&empty[s]);
  }
}

// Writes a consumer thread's accumulators (layout: hopper_ptx.cuh, WgmmaF16F32) with bounds checks.
template <int BM, int BN, int CONS_WG, int kEpi, int kOutF16>
__device__ __forceinline__ void GemmWgmmaEpilogue(const float (&acc)[BM / CONS_WG / 64][BN / 2],
                                                  void* out, const float* bias, const float* scale,
                                                  int row0, int col0, int m, int n) {
  const int t = threadIdx.x % 128;
#pragma unroll
  for (int sub = 0; sub < BM / CONS_WG / 64; ++sub) {
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) {
      const int row = row0 + sub * 64 + 16 * (t / 32) + (t % 32) / 4 + 8 * ((i / 2) % 2);
      const int col = col0 + 8 * (i / 4) + 2 * (t % 4) + (i % 2);
      if (row < m && col < n) {
        GemmWgmmaStore<kEpi, kOutF16>(out, static_cast<s64>(row) * n + col, acc[sub][i], col, bias,
                                      scale);
      }
    }
  }
}

template <int BM, int BN, int BK, int STAGES, int CONS_WG, int kEpi, int kOutF16>
__global__ void __launch_bounds__(128 * (1 + CONS_WG), 1)
    gemm_wgmma(const __grid_constant__ hopper::TmaDescriptor a_map,
               const __grid_constant__ hopper::TmaDescriptor b_map, const float* __restrict__ bias,
               const float* __restrict__ scale, void* out, int m, int n, int k) {
  static_assert(CONS_WG == 1 || CONS_WG == 2, "one or two consumer warpgroups");
  static_assert(BM % (64 * CONS_WG) == 0, "each consumer warpgroup issues m64 wgmmas");
  static_assert(BN == 64 || BN == 128 || BN == 192 || BN == 256, "wgmma N of hopper_ptx.cuh");
  static_assert(BK % kWgmmaAtomK == 0, "BK is a whole number of 128-byte swizzle rows");
  static_assert(BM <= 256 && BN <= 256, "a TMA box dimension is at most 256");
  static_assert(STAGES >= 2, "at least double buffering");
  extern __shared__ unsigned char smem_raw[];
  // Swizzled TMA tiles need 1024-byte alignment; dynamic shared memory only promises 16 bytes.
  unsigned char* ring = smem_raw + ((1024 - hopper::SharedAddress(smem_raw) % 1024) % 1024);
  hopper::u64* full = reinterpret_cast<hopper::u64*>(ring + STAGES * (BM + BN) * BK * 2);
  hopper::u64* empty = full + STAGES;
  const int wg = threadIdx.x / 128;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      hopper::MbarrierInit(&full[s], 1);
      hopper::MbarrierInit(&empty[s], CONS_WG * 4);
    }
    hopper::FenceBarrierInit();
  }
  __syncthreads();
  const int m0 = blockIdx.x * BM;
  const int n0 = blockIdx.y * BN;
  if (wg == 0) {
    // setmaxnreg only pays (and its budget only balances) with two consumer warpgroups; with one,
    // ptxas may already use up to 255 registers and an .inc below that would be undefined.
    if constexpr (CONS_WG == 2) hopper::SetMaxNRegDec<kWgmmaProducerRegs>();
    if (threadIdx.x == 0) {
      hopper::TmaPrefetchDescriptor(&a_map);
      hopper::TmaPrefetchDescriptor(&b_map);
      GemmWgmmaProduce<BM, BN, BK, STAGES>(&a_map, &b_map, ring, full, empty, m0, n0, k);
    }
    return;
  }
  if constexpr (CONS_WG == 2) hopper::SetMaxNRegInc<kWgmmaConsumerRegs>();
  float acc[BM / CONS_WG / 64][BN / 2];
#pragma unroll
  for (int t = 0; t < BM / CONS_WG / 64; ++t) {
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) acc[t][i] = 0.0f;
  }
  GemmWgmmaConsume<BM, BN, BK, STAGES, CONS_WG>(acc, ring, full, empty, wg - 1, k);
  GemmWgmmaEpilogue<BM, BN, CONS_WG, kEpi, kOutF16>(acc, out, bias, scale,
                                                    m0 + (wg - 1) * (BM / CONS_WG), n0, m, n);
}

}  // namespace tunejit

#ifdef TUNEJIT_NVCC_CHECK
#define TUNEJIT_GEMM_WGMMA(BM, BN, BK, STAGES, CONS_WG, EPI, F16)                                \
  template __global__ void tunejit::gemm_wgmma<BM, BN, BK, STAGES, CONS_WG, EPI, F16>(           \
      const __grid_constant__ tunejit::hopper::TmaDescriptor,                                    \
      const __grid_constant__ tunejit::hopper::TmaDescriptor, const float*, const float*, void*, \
      int, int, int)
TUNEJIT_GEMM_WGMMA(128, 128, 64, 4, 2, 0, 0);  // the fallback config, fp32 out
TUNEJIT_GEMM_WGMMA(128, 256, 64, 3, 2, 3, 1);  // bias + relu, fp16 out
TUNEJIT_GEMM_WGMMA(64, 192, 128, 2, 1, 7, 0);  // one consumer, scaled fp32 out
TUNEJIT_GEMM_WGMMA(256, 64, 64, 4, 2, 1, 1);   // two m64 subtiles per consumer
#endif                                         // TUNEJIT_NVCC_CHECK
