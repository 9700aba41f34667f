// File: kernel_sources/wgmma_core.cuh
// The part of the Hopper tensor-core templates (gemm_wgmma.cu, conv2d_wgmma.cu) that does not
// depend on where the operands come from: the shared-memory stage ring and its mbarriers, the
// warp-specialised block (warpgroup 0 produces, warpgroups 1..CONS_WG consume), the consumers'
// wgmma loop over a stage, and the register -> global epilogue. A template supplies its output
// tiles: `int count()` and `WgmmaTile At(int t)`, each tile with
//   - a producer: `void operator()(unsigned char* a, unsigned char* b, u64* full, int kt)` that
//     issues the TMA loads of k tile `kt` (A [BM rows x BK_BYTES] and B [BN rows x BK_BYTES], each
//     as BK_BYTES / 128 boxes of one 128-byte swizzled row per tile row) completing on `full`;
//   - a row map: `s64 operator()(int row)`, the output element index of the tile row's column 0
//     (row = m0 + position in the tile), or -1 where the row is past the output's end;
//   - its first row m0 and column n0.
// Blocks are persistent (WgmmaBlock): a grid of one block per SM walks all the tiles.
// Layout of one stage: A atoms then B atoms, each atom [rows][128 bytes] with 128-byte swizzle.
// kInt8 selects the element kind: 0 fp16 (HGMMA k16, float accumulators, 64 elements per 128-byte
// row), 1 int8 (IGMMA k32, int32 accumulators, 128 per row). At the byte level the two are the
// same kernel: 32 bytes of K per instruction, the same descriptors and accumulator layout.
//
// Deliberately left for later (each is a knob of tensorcore-design.md 2.1): no clusters or TMA
// multicast; the two consumer warpgroups share each tile (no ping-pong, so the tensor cores wait
// during the epilogue, though the next tile's loads do not); direct register -> global epilogue
// (no smem + TMA store); no split-K.
#ifndef TUNEJIT_KERNEL_SOURCES_WGMMA_CORE_CUH_
#define TUNEJIT_KERNEL_SOURCES_WGMMA_CORE_CUH_

#include "common.cuh"
#include "hopper_ptx.cuh"

namespace tunejit {

constexpr int kWgmmaAtomBytes = 128;     // bytes of one 128-byte swizzled row (an "atom")
constexpr int kWgmmaProducerRegs = 40;   // setmaxnreg split with 2 consumer warpgroups:
constexpr int kWgmmaConsumerRegs = 232;  // 128 * (40 + 2 * 232) = 64512 <= 65536

// The element kinds (kInt8 = 0 / 1).
template <int kInt8>
struct WgmmaKind {
  typedef float Acc;
  static constexpr int kAtomElems = 64;  // fp16 per 128-byte row
  template <int N>
  using Mma = hopper::WgmmaF16F32<N>;
};
template <>
struct WgmmaKind<1> {
  typedef int Acc;
  static constexpr int kAtomElems = 128;  // int8 per 128-byte row
  template <int N>
  using Mma = hopper::WgmmaS8S32<N>;
};

// Dynamic shared memory of a wgmma template, BK in bytes of K per stage: the stage ring, 2
// mbarriers per stage, and 1 KiB of slack to align the ring to 1024 bytes (128-byte swizzle
// atoms). ops/wgmma_rules.h mirrors this.
__host__ __device__ constexpr int WgmmaSmemBytes(int bm, int bn, int bk_bytes, int stages) {
  return stages * (bm + bn) * bk_bytes + stages * 2 * 8 + 1024;
}

// One stage of BK_BYTES of K: kAtoms atoms of A then of B.
template <int BM, int BN, int BK_BYTES>
struct WgmmaStage {
  static constexpr int kAAtomBytes = BM * kWgmmaAtomBytes;
  static constexpr int kBAtomBytes = BN * kWgmmaAtomBytes;
  static constexpr int kAtoms = BK_BYTES / kWgmmaAtomBytes;
  static constexpr int kBytes = (kAAtomBytes + kBAtomBytes) * kAtoms;
};

// The fp16 output's epilogue for one accumulator: bias and ReLU, then round to nearest even.
template <int kEpi>
__device__ __forceinline__ unsigned short WgmmaF16Value(float v, int col, const float* bias) {
  static_assert((kEpi >> 2) == kEpiOutAccumulator, "fp16 output takes no scale");
  if (kEpi & kEpiBias) v = __fadd_rn(v, __ldg(bias + col));
  if (kEpi & kEpiRelu) v = v < 0.0f ? 0.0f : v;
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
  return h;
}

// Stores one accumulator: through the common epilogue (float, or int32 for int8: int32 out,
// float32, or requantized int8), or as fp16 (WgmmaF16Value).
template <int kEpi, int kOutF16, typename Acc>
__device__ __forceinline__ void WgmmaStore(void* out, s64 index, Acc acc, int col,
                                           const float* bias, const float* scale) {
  if constexpr (kOutF16 == 0) {
    EpilogueOp<kEpi, Acc>::Store(out, index, acc, col, bias, scale);
  } else {
    static_assert(IsFloatAcc<Acc>::value, "fp16 output from fp16 operands only");
    static_cast<unsigned short*>(out)[index] = WgmmaF16Value<kEpi>(acc, col, bias);
  }
}

// Producer thread: walks the k tiles of one output tile, refilling the ring. `first` is the ring
// position (the k tiles this CTA issued for its earlier output tiles), so stages and phases run
// on across a persistent CTA's tiles. Waiting on an empty barrier with the opposite parity passes
// at once in the first round, when no consumer has released anything.
template <int BM, int BN, int BK_BYTES, int STAGES, class Producer>
__device__ __forceinline__ void WgmmaProduce(const Producer& produce, unsigned char* ring,
                                             hopper::u64* full, hopper::u64* empty, int k_tiles,
                                             int first) {
  using Stage = WgmmaStage<BM, BN, BK_BYTES>;
  for (int kt = 0; kt < k_tiles; ++kt) {
    const int g = first + kt;
    const int s = g % STAGES;
    hopper::MbarrierWait(&empty[s], ((g / STAGES) & 1) ^ 1);
    hopper::MbarrierArriveExpectTx(&full[s], Stage::kBytes);
    unsigned char* a_stage = ring + s * Stage::kBytes;
    produce(a_stage, a_stage + Stage::kAAtomBytes * Stage::kAtoms, &full[s], kt);
  }
}

// FenceOperand on every accumulator register: around the wgmma fence and waits.
template <typename Acc, int kSubtiles, int kRegs>
__device__ __forceinline__ void WgmmaFenceAccumulators(Acc (&acc)[kSubtiles][kRegs]) {
#pragma unroll
  for (int t = 0; t < kSubtiles; ++t) {
#pragma unroll
    for (int i = 0; i < kRegs; ++i) hopper::FenceOperand(acc[t][i]);
  }
}

// Consumer warpgroup `wg` (0-based among consumers): accumulates its BM / CONS_WG rows x BN of
// one output tile, from ring position `first` (as WgmmaProduce).
template <int BM, int BN, int BK_BYTES, int STAGES, int CONS_WG, int kInt8>
__device__ __forceinline__ void WgmmaConsume(
    typename WgmmaKind<kInt8>::Acc (&acc)[BM / CONS_WG / 64][BN / 2], const unsigned char* ring,
    hopper::u64* full, hopper::u64* empty, int wg, int k_tiles, int first) {
  using Stage = WgmmaStage<BM, BN, BK_BYTES>;
  constexpr int kRows = BM / CONS_WG;
  constexpr int kSubtiles = kRows / 64;
  for (int kt = 0; kt < k_tiles; ++kt) {
    const int g = first + kt;
    const int s = g % STAGES;
    hopper::MbarrierWait(&full[s], (g / STAGES) & 1);
    const unsigned char* a_stage = ring + s * Stage::kBytes;
    const unsigned char* b_stage = a_stage + Stage::kAAtomBytes * Stage::kAtoms;
    WgmmaFenceAccumulators(acc);
    hopper::WgmmaFence();
#pragma unroll
    for (int atom = 0; atom < Stage::kAtoms; ++atom) {
#pragma unroll
      for (int kk = 0; kk < kWgmmaAtomBytes / 32; ++kk) {  // 32 bytes of K per instruction
        const hopper::u64 desc_b =
            hopper::SmemDescriptorSw128(b_stage + atom * Stage::kBAtomBytes, 32 * kk);
#pragma unroll
        for (int t = 0; t < kSubtiles; ++t) {
          const unsigned char* a_rows =
              a_stage + atom * Stage::kAAtomBytes + (wg * kRows + t * 64) * kWgmmaAtomBytes;
          WgmmaKind<kInt8>::template Mma<BN>::Mma(
              acc[t], hopper::SmemDescriptorSw128(a_rows, 32 * kk), desc_b, 1);
        }
      }
    }
    hopper::WgmmaCommit();
    // One batch stays in flight, so the tensor cores never drain between k tiles: wait for the
    // previous tile's batch only, then hand its stage back (this tile's wgmmas still read theirs).
    hopper::WgmmaWait<1>();
    WgmmaFenceAccumulators(acc);
    // One arrival per warp, after that warp's own wait: no warp's reads are still pending.
    if (kt > 0 && threadIdx.x % 32 == 0) hopper::MbarrierArrive(&empty[(g - 1) % STAGES]);
  }
  hopper::WgmmaWait<0>();
  WgmmaFenceAccumulators(acc);
  // The last stage goes back too: the next output tile's loads reuse it.
  if (k_tiles > 0 && threadIdx.x % 32 == 0) {
    hopper::MbarrierArrive(&empty[(first + k_tiles - 1) % STAGES]);
  }
}

// Writes a consumer thread's accumulators (layout: hopper_ptx.cuh, WgmmaF16F32): tile row r of
// this consumer goes to out[row_index(row0 + r) + col] for col < n.
template <int BM, int BN, int CONS_WG, int kEpi, int kOutF16, typename Acc, class RowMap>
__device__ __forceinline__ void WgmmaEpilogue(const Acc (&acc)[BM / CONS_WG / 64][BN / 2],
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
        if constexpr (kOutF16 != 0) {
          // Both columns of the pair in one 4-byte store: 2-byte stores made the fp16 output
          // slower to write than the fp32 one (docs/benchmarks.md, fifth session). The pair
          // starts at an even column of a row of n (even) values, so it is 4-byte aligned.
          const int col = col0 + 8 * (i / 4) + 2 * (t % 4);
          if (n % 2 == 0 && col + 1 < n) {
            const unsigned int lo = WgmmaF16Value<kEpi>(acc[sub][i], col, bias);
            const unsigned int hi = WgmmaF16Value<kEpi>(acc[sub][i + 1], col + 1, bias);
            *reinterpret_cast<unsigned int*>(static_cast<unsigned short*>(out) + base + col) =
                lo | (hi << 16);
            continue;
          }
        }
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

// One output tile of a template: the loads of its k tiles, where its rows go, its first row and
// column.
template <class Producer, class RowMap>
struct WgmmaTile {
  Producer produce;
  RowMap rows;
  int m0, n0;
};

// The whole block: ring setup, the producer warpgroup (one thread issues every load), the
// consumers' accumulation and epilogue. The block is persistent: it takes output tiles
// blockIdx.x, blockIdx.x + gridDim.x, ... of `tiles` (count(), At(t) -> WgmmaTile), so the
// producer loads the next tile while the consumers write the last one out, and a grid of one
// block per SM pays the setup once. A grid of count() blocks is the one-tile-per-block kernel.
template <int BM, int BN, int BK_BYTES, int STAGES, int CONS_WG, int kInt8, int kEpi, int kOutF16,
          class Tiles>
__device__ __forceinline__ void WgmmaBlock(const Tiles& tiles, const hopper::TmaDescriptor* a_map,
                                           const hopper::TmaDescriptor* b_map, void* out,
                                           const float* bias, const float* scale, int n,
                                           int k_tiles) {
  static_assert(CONS_WG == 1 || CONS_WG == 2, "one or two consumer warpgroups");
  static_assert(BM % (64 * CONS_WG) == 0, "each consumer warpgroup issues m64 wgmmas");
  static_assert(BN == 64 || BN == 128 || BN == 192 || BN == 256, "wgmma N of hopper_ptx.cuh");
  static_assert(BK_BYTES % kWgmmaAtomBytes == 0, "K per stage is whole 128-byte swizzle rows");
  static_assert(BN <= 256, "a TMA box dimension is at most 256");
  static_assert(STAGES >= 2, "at least double buffering");
  extern __shared__ unsigned char smem_raw[];
  // Swizzled TMA tiles need 1024-byte alignment; dynamic shared memory only promises 16 bytes.
  unsigned char* ring = smem_raw + ((1024 - hopper::SharedAddress(smem_raw) % 1024) % 1024);
  hopper::u64* full = reinterpret_cast<hopper::u64*>(ring + STAGES * (BM + BN) * BK_BYTES);
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
      int first = 0;
      for (int t = blockIdx.x; t < tiles.count(); t += gridDim.x, first += k_tiles) {
        WgmmaProduce<BM, BN, BK_BYTES, STAGES>(tiles.At(t).produce, ring, full, empty, k_tiles,
                                               first);
      }
    }
    return;
  }
  if constexpr (CONS_WG == 2) hopper::SetMaxNRegInc<kWgmmaConsumerRegs>();
  typename WgmmaKind<kInt8>::Acc acc[BM / CONS_WG / 64][BN / 2];
  int first = 0;
  for (int t = blockIdx.x; t < tiles.count(); t += gridDim.x, first += k_tiles) {
    const auto tile = tiles.At(t);
#pragma unroll
    for (int i = 0; i < BM / CONS_WG / 64; ++i) {
#pragma unroll
      for (int j = 0; j < BN / 2; ++j) acc[i][j] = 0;
    }
    WgmmaConsume<BM, BN, BK_BYTES, STAGES, CONS_WG, kInt8>(acc, ring, full, empty, wg - 1, k_tiles,
                                                           first);
    WgmmaEpilogue<BM, BN, CONS_WG, kEpi, kOutF16>(acc, tile.rows, out, bias, scale,
                                                  tile.m0 + (wg - 1) * (BM / CONS_WG), tile.n0, n);
  }
}

}  // namespace tunejit

#endif  // TUNEJIT_KERNEL_SOURCES_WGMMA_CORE_CUH_
