// File: kernel_sources/wgmma_core.cuh
// The part of the Hopper tensor-core templates (gemm_wgmma.cu, conv2d_wgmma.cu) that does not
// depend on where the operands come from: the shared-memory stage ring and its mbarriers, the
// warp-specialised block (warpgroup 0 produces, warpgroups 1..CONS_WG consume), the consumers'
// wgmma loop over a stage, and the register -> global epilogue. A template supplies
//   - a producer: `void operator()(unsigned char* a, unsigned char* b, u64* full, int kt)` that
//     issues the TMA loads of k tile `kt` (A [BM rows x BK] and B [BN rows x BK], each as BK / 64
//     boxes of 64 fp16 = one 128-byte swizzled row per tile row) completing on `full`;
//   - a row map: `s64 operator()(int row)`, the output element index of the tile row's column 0
//     (row = position in the grid's M order), or -1 where the row is past the output's end.
// Layout of one stage: A atoms then B atoms, each atom [rows][128 bytes] with 128-byte swizzle.
//
// Deliberately left for later (each is a knob of tensorcore-design.md 2.1): consumers wait for
// their wgmma batch to finish (wait_group 0) before releasing the stage instead of keeping one in
// flight; no clusters or TMA multicast; one tile per CTA (no persistent scheduler); direct
// register -> global epilogue (no smem + TMA store); no split-K; no int8 (IGMMA k32).
#ifndef TUNEJIT_KERNEL_SOURCES_WGMMA_CORE_CUH_
#define TUNEJIT_KERNEL_SOURCES_WGMMA_CORE_CUH_

#include "common.cuh"
#include "hopper_ptx.cuh"

namespace tunejit {

constexpr int kWgmmaAtomK = 64;          // fp16 per 128-byte swizzled row
constexpr int kWgmmaAtomBytes = 128;     // bytes of one such row
constexpr int kWgmmaProducerRegs = 40;   // setmaxnreg split with 2 consumer warpgroups:
constexpr int kWgmmaConsumerRegs = 232;  // 128 * (40 + 2 * 232) = 64512 <= 65536

// Dynamic shared memory of a wgmma template: the stage ring, 2 mbarriers per stage, and 1 KiB of
// slack to align the ring to 1024 bytes (128-byte swizzle atoms). ops/ mirror this.
__host__ __device__ constexpr int WgmmaSmemBytes(int bm, int bn, int bk, int stages) {
  return stages * (bm + bn) * bk * 2 + stages * 2 * 8 + 1024;
}

template <int BM, int BN, int BK>
struct WgmmaStage {
  static constexpr int kAAtomBytes = BM * kWgmmaAtomBytes;
  static constexpr int kBAtomBytes = BN * kWgmmaAtomBytes;
  static constexpr int kAtoms = BK / kWgmmaAtomK;
  static constexpr int kBytes = (kAAtomBytes + kBAtomBytes) * kAtoms;
};

// Stores one accumulator: float through the common epilogue, fp16 after it (round to nearest).
template <int kEpi, int kOutF16>
__device__ __forceinline__ void WgmmaStore(void* out, s64 index, float acc, int col,
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

// Producer thread: walks the k tiles, refilling the ring. Waiting on an empty barrier with the
// opposite parity passes at once in the first round, when no consumer has released anything.
template <int BM, int BN, int BK, int STAGES, class Producer>
__device__ __forceinline__ void WgmmaProduce(const Producer& produce, unsigned char* ring,
                                             hopper::u64* full, hopper::u64* empty, int k_tiles) {
  using Stage = WgmmaStage<BM, BN, BK>;
  for (int kt = 0; kt < k_tiles; ++kt) {
    const int s = kt % STAGES;
    hopper::MbarrierWait(&empty[s], ((kt / STAGES) & 1) ^ 1);
    hopper::MbarrierArriveExpectTx(&full[s], Stage::kBytes);
    unsigned char* a_stage = ring + s * Stage::kBytes;
    produce(a_stage, a_stage + Stage::kAAtomBytes * Stage::kAtoms, &full[s], kt);
  }
}

// Consumer warpgroup `wg` (0-based among consumers): accumulates its BM / CONS_WG rows x BN.
template <int BM, int BN, int BK, int STAGES, int CONS_WG>
__device__ __forceinline__ void WgmmaConsume(float (&acc)[BM / CONS_WG / 64][BN / 2],
                                             const unsigned char* ring, hopper::u64* full,
                                             hopper::u64* empty, int wg, int k_tiles) {
  using Stage = WgmmaStage<BM, BN, BK>;
  constexpr int kRows = BM / CONS_WG;
  constexpr int kSubtiles = kRows / 64;
  for (int kt = 0; kt < k_tiles; ++kt) {
    const int s = kt % STAGES;
    hopper::MbarrierWait(&full[s], (kt / STAGES) & 1);
    const unsigned char* a_stage = ring + s * Stage::kBytes;
    const unsigned char* b_stage = a_stage + Stage::kAAtomBytes * Stage::kAtoms;
#pragma unroll
    for (int t = 0; t < kSubtiles; ++t) {
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) hopper::FenceOperand(acc[t][i]);
    }
    hopper::WgmmaFence();
#pragma unroll
    for (int atom = 0; atom < Stage::kAtoms; ++atom) {
#pragma unroll
      for (int kk = 0; kk < kWgmmaAtomK / 16; ++kk) {  // k16 steps: 32 bytes along the row
        const hopper::u64 desc_b =
            hopper::SmemDescriptorSw128(b_stage + atom * Stage::kBAtomBytes, 32 * kk);
#pragma unroll
        for (int t = 0; t < kSubtiles; ++t) {
          const unsigned char* a_rows =
              a_stage + atom * Stage::kAAtomBytes + (wg * kRows + t * 64) * kWgmmaAtomBytes;
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

// Writes a consumer thread's accumulators (layout: hopper_ptx.cuh, WgmmaF16F32): tile row r of
// this consumer goes to out[row_index(row0 + r) + col] for col < n.
template <int BM, int BN, int CONS_WG, int kEpi, int kOutF16, class RowMap>
__device__ __forceinline__ void WgmmaEpilogue(const float (&acc)[BM / CONS_WG / 64][BN / 2],
                                              const RowMap& row_index, void* out, const float* bias,
                                              const float* scale, int row0, int col0, int n) {
  const int t = threadIdx.x % 128;
#pragma unroll
  for (int sub = 0; sub < BM / CONS_WG / 64; ++sub) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const s64 base = row_index(row0 + sub * 64 + 16 * (t / 32) + (t % 32) / 4 + 8 * half);
      if (base < 0) continue;
#pragma unroll
      for (int i = 2 * half; i < BN / 2; i += 4) {  // i / 2 % 2 == half: i = 4q + 2 half + {0, 1}
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int col = col0 + 8 * ((i + e) / 4) + 2 * (t % 4) + e;
          if (col < n) {
            WgmmaStore<kEpi, kOutF16>(out, base + col, acc[sub][i + e], col, bias, scale);
          }
        }
      }
    }
  }
}

// The whole block: ring setup, the producer warpgroup (one thread issues every load), the
// consumers' accumulation and epilogue. `m0`/`n0` are the tile's first row and column.
template <int BM, int BN, int BK, int STAGES, int CONS_WG, int kEpi, int kOutF16, class Producer,
          class RowMap>
__device__ __forceinline__ void WgmmaBlock(const Producer& produce, const RowMap& row_index,
                                           const hopper::TmaDescriptor* a_map,
                                           const hopper::TmaDescriptor* b_map, void* out,
                                           const float* bias, const float* scale, int m0, int n0,
                                           int n, int k_tiles) {
  static_assert(CONS_WG == 1 || CONS_WG == 2, "one or two consumer warpgroups");
  static_assert(BM % (64 * CONS_WG) == 0, "each consumer warpgroup issues m64 wgmmas");
  static_assert(BN == 64 || BN == 128 || BN == 192 || BN == 256, "wgmma N of hopper_ptx.cuh");
  static_assert(BK % kWgmmaAtomK == 0, "BK is a whole number of 128-byte swizzle rows");
  static_assert(BN <= 256, "a TMA box dimension is at most 256");
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
  if (wg == 0) {
    // setmaxnreg only pays (and its budget only balances) with two consumer warpgroups; with one,
    // ptxas may already use up to 255 registers and an .inc below that would be undefined.
    if constexpr (CONS_WG == 2) hopper::SetMaxNRegDec<kWgmmaProducerRegs>();
    if (threadIdx.x == 0) {
      hopper::TmaPrefetchDescriptor(a_map);
      hopper::TmaPrefetchDescriptor(b_map);
      WgmmaProduce<BM, BN, BK, STAGES>(produce, ring, full, empty, k_tiles);
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
  WgmmaConsume<BM, BN, BK, STAGES, CONS_WG>(acc, ring, full, empty, wg - 1, k_tiles);
  WgmmaEpilogue<BM, BN, CONS_WG, kEpi, kOutF16>(acc, row_index, out, bias, scale,
                                                m0 + (wg - 1) * (BM / CONS_WG), n0, n);
}

}  // namespace tunejit

#endif  // TUNEJIT_KERNEL_SOURCES_WGMMA_CORE_CUH_
