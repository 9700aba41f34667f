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
// Layout of one stage: A atoms then B atoms, each atom [rows][128 bytes] with 128-byte swizzle
// (or [rows][64 bytes] with 64-byte swizzle: WgmmaStage's ATOM).
// kInt8 selects the element kind: 0 fp16 (HGMMA k16, float accumulators, 64 elements per 128-byte
// row), 1 int8 (IGMMA k32, int32 accumulators, 128 per row). At the byte level the two are the
// same kernel: 32 bytes of K per instruction, the same descriptors and accumulator layout.
//
// Two consumer warpgroups either share each tile (cooperative: each takes half its rows) or take
// whole tiles in turn (kPingPong, tensorcore-design.md 2.1): then one consumer's epilogue runs
// while the other's wgmmas keep the tensor cores busy. Two `turn` mbarriers order the consumers'
// mainloops (the stage ring is consumed in the order the producer fills it, which also keeps its
// parity waits sound: no consumer waits on a stage more than one round ahead).
// kCluster = 2: the template's producer multicasts part of each stage into both blocks of a
// cluster (conv2d_wgmma.cu: half of the pixel tile each), so every consumer hands its stage back
// to both blocks' producers (WgmmaReleaseStage) and the block syncs its cluster after the barrier
// init and before exit. A version that released stages with one thread's sequential
// cluster-scope arrivals ran 1.5x slower; lanes arriving in parallel at CTA scope made it
// faster than no cluster (tools/wgmma_probe, docs/history/2026-12-03-twelfth-session.md).
// The epilogue writes 16-byte pieces (WgmmaStoreWide) where the output's row length allows; a
// pooled conv (kPoolW) first reduces each 2x2 window of its accumulators (WgmmaPool2x2).
// kSwapAB (BN = 64): the consumers compute their tiles transposed, the B rows as wgmma's A, and
// write them through shared memory (WgmmaSwappedEpilogue).
// Deliberately left for later: an smem + TMA store epilogue, split-K.
#ifndef TUNEJIT_KERNEL_SOURCES_WGMMA_CORE_CUH_
#define TUNEJIT_KERNEL_SOURCES_WGMMA_CORE_CUH_

#include "common.cuh"
#include "hopper_ptx.cuh"

namespace tunejit {

constexpr int kWgmmaAtomBytes = 128;       // bytes of one 128-byte swizzled row (an "atom")
constexpr int kWgmmaNarrowAtomBytes = 64;  // rows of 64 bytes, 64-byte swizzle (narrow channels)
constexpr int kWgmmaProducerRegs = 40;     // setmaxnreg split with 2 consumer warpgroups:
constexpr int kWgmmaConsumerRegs = 232;    // 128 * (40 + 2 * 232) = 64512 <= 65536

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

// Bytes of one stage (WgmmaStage), BK in bytes of K per stage: A then B, each bm / bn rows of
// bk_bytes; or, where the A atoms overlap (shift > 0 rows apart, rows of `atom` bytes), one block
// of A rows for all of them.
__host__ __device__ constexpr int WgmmaStageBytes(int bm, int bn, int bk_bytes, int atom = 128,
                                                  int shift = 0) {
  return (shift == 0 ? bm * bk_bytes : (bm + (bk_bytes / atom - 1) * shift) * atom) + bn * bk_bytes;
}

// Dynamic shared memory of a wgmma template: the stage ring, 2 mbarriers per stage and the 2
// turn mbarriers, and 1 KiB of slack to align the ring to 1024 bytes (128-byte swizzle atoms).
// ops/wgmma_rules.h mirrors this.
__host__ __device__ constexpr int WgmmaSmemBytes(int bm, int bn, int bk_bytes, int stages,
                                                 int atom = 128, int shift = 0) {
  return stages * WgmmaStageBytes(bm, bn, bk_bytes, atom, shift) + (stages + 1) * 2 * 8 + 1024;
}

// The 2x2 max-pool exchange (WgmmaPool2x2) after the barriers, for tiles of image rows of `tw`
// pixels (0: no pooling): per consumer warpgroup one accumulator per window of a group of rows
// (two image rows, at least one 64-row subtile) and column of a 64-column chunk, window rows
// padded from 64 to 72 words so that the 4 windows one store instruction touches use distinct
// banks. ops/wgmma_rules.h mirrors this.
constexpr int kWgmmaPoolChunk = 64;   // columns exchanged at once
constexpr int kWgmmaPoolStride = 72;  // words per window row
__host__ __device__ constexpr int WgmmaPoolGroupRows(int tw) { return 2 * tw > 64 ? 2 * tw : 64; }
__host__ __device__ constexpr int WgmmaPoolWords(int tw) {
  return tw == 0 ? 0 : WgmmaPoolGroupRows(tw) / 4 * kWgmmaPoolStride;
}
__host__ __device__ constexpr int WgmmaPoolBytes(int tw, int consumers) {
  return consumers * WgmmaPoolWords(tw) * 4;
}

// Which consumer warpgroup computes what: cooperative, the CONS_WG warpgroups split each tile's
// BM rows; ping-pong (two warpgroups), each takes every other tile whole.
template <int BM, int CONS_WG, int kPingPong>
struct WgmmaConsumers {
  static_assert(kPingPong == 0 || CONS_WG == 2, "ping-pong takes two consumer warpgroups");
  static constexpr int kRows = kPingPong ? BM : BM / CONS_WG;    // rows one consumer accumulates
  static constexpr int kSubtiles = kRows / 64;                   // its m64 wgmmas per k step
  static constexpr int kTileStride = kPingPong ? CONS_WG : 1;    // a consumer's tiles: every n-th
  static constexpr int kStageReaders = kPingPong ? 1 : CONS_WG;  // consumers reading each stage
  // The first row of consumer `wg` (0-based) in its tiles.
  __device__ __forceinline__ static int RowOffset(int wg) { return kPingPong ? 0 : wg * kRows; }
};

// One stage of BK_BYTES of K: kAtoms atoms of A then of B, each atom [rows][ATOM bytes]: 128-byte
// rows with 128-byte swizzle, or 64-byte rows with 64-byte swizzle (ATOM = 64: a conv whose
// channels fill only 64 bytes loads two taps per stage instead of one tap and 64 zero bytes).
// kShift > 0: the A atoms overlap, atom k being the BM rows from row k * kShift of one block of
// BM + (kAtoms - 1) * kShift rows (a conv's filter rows over one input box: conv2d_wgmma.cu
// HALO), so that the stage loads those rows once rather than once per atom. Every atom must start
// on a swizzle group (8 rows).
template <int BM, int BN, int BK_BYTES, int ATOM = kWgmmaAtomBytes, int kShift = 0>
struct WgmmaStage {
  static_assert(ATOM == kWgmmaAtomBytes || ATOM == kWgmmaNarrowAtomBytes, "128- or 64-byte rows");
  static_assert(kShift % 8 == 0, "overlapping A atoms start on whole swizzle groups");
  static constexpr int kAAtomBytes = BM * ATOM;
  static constexpr int kBAtomBytes = BN * ATOM;
  static constexpr int kAtoms = BK_BYTES / ATOM;
  static constexpr int kAAtomStride = (kShift == 0 ? BM : kShift) * ATOM;  // A atom k at k x this
  static constexpr int kABytes = WgmmaStageBytes(BM, 0, BK_BYTES, ATOM, kShift);
  static constexpr int kBytes = WgmmaStageBytes(BM, BN, BK_BYTES, ATOM, kShift);
  // The wgmma descriptor of rows at `tile` (the atom's 8-row swizzle group aligned), k_bytes in.
  __device__ __forceinline__ static hopper::u64 Descriptor(const void* tile, int k_bytes) {
    if constexpr (ATOM == kWgmmaAtomBytes) return hopper::SmemDescriptorSw128(tile, k_bytes);
    return hopper::SmemDescriptorSw64(tile, k_bytes);
  }
};

// Producer thread: walks the k tiles of one output tile, refilling the ring. `first` is the ring
// position (the k tiles this CTA issued for its earlier output tiles), so stages and phases run
// on across a persistent CTA's tiles. Waiting on an empty barrier with the opposite parity passes
// at once in the first round, when no consumer has released anything.
template <int BM, int BN, int BK_BYTES, int STAGES, int ATOM, int kShift, class Producer>
__device__ __forceinline__ void WgmmaProduce(const Producer& produce, unsigned char* ring,
                                             hopper::u64* full, hopper::u64* empty, int k_tiles,
                                             int first) {
  using Stage = WgmmaStage<BM, BN, BK_BYTES, ATOM, kShift>;
  for (int kt = 0; kt < k_tiles; ++kt) {
    const int g = first + kt;
    const int s = g % STAGES;
    hopper::MbarrierWait(&empty[s], ((g / STAGES) & 1) ^ 1);
    hopper::MbarrierArriveExpectTx(&full[s], Stage::kBytes);
    unsigned char* a_stage = ring + s * Stage::kBytes;
    produce(a_stage, a_stage + Stage::kABytes, &full[s], kt);
  }
}

// Hands stage barrier `empty` back: one arrival per warp (called by every lane, after the warp's
// own wgmma wait), on this CTA's barrier, and in a cluster on every CTA's, since each peer's
// multicast loads write into this CTA's stage too. Lane r signals CTA r, so the remote arrivals
// go out in parallel.
template <int kCluster>
__device__ __forceinline__ void WgmmaReleaseStage(hopper::u64* empty) {
  const int lane = threadIdx.x % 32;
  if constexpr (kCluster == 1) {
    if (lane == 0) hopper::MbarrierArrive(empty);
  } else {
    if (lane < kCluster) hopper::MbarrierArriveCluster(empty, lane);
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

// A consumer warpgroup accumulates kSubtiles x 64 rows x BN of one output tile, from its tile
// row `row0` on, and from ring position `first` (as WgmmaProduce). kSwapAB: the operands trade
// places (see WgmmaSwappedEpilogue), one accumulator of the BN = 64 columns by the consumer's
// kAccN rows.
template <int BM, int BN, int BK_BYTES, int STAGES, int ATOM, int kShift, int kInt8, int kCluster,
          int kSubtiles, int kAccN = BN, int kSwapAB = 0>
__device__ __forceinline__ void WgmmaConsume(
    typename WgmmaKind<kInt8>::Acc (&acc)[kSubtiles][kAccN / 2], const unsigned char* ring,
    hopper::u64* full, hopper::u64* empty, int row0, int k_tiles, int first) {
  static_assert(kSwapAB == 0 || (BN == 64 && kSubtiles == 1), "one m64 wgmma of the 64 columns");
  using Stage = WgmmaStage<BM, BN, BK_BYTES, ATOM, kShift>;
  for (int kt = 0; kt < k_tiles; ++kt) {
    const int g = first + kt;
    const int s = g % STAGES;
    hopper::MbarrierWait(&full[s], (g / STAGES) & 1);
    const unsigned char* a_stage = ring + s * Stage::kBytes;
    const unsigned char* b_stage = a_stage + Stage::kABytes;
    WgmmaFenceAccumulators(acc);
    hopper::WgmmaFence();
#pragma unroll
    for (int atom = 0; atom < Stage::kAtoms; ++atom) {
#pragma unroll
      for (int kk = 0; kk < ATOM / 32; ++kk) {  // 32 bytes of K per instruction
        const hopper::u64 desc_b = Stage::Descriptor(b_stage + atom * Stage::kBAtomBytes, 32 * kk);
        if constexpr (kSwapAB != 0) {  // the 64 B rows as wgmma's A, the consumer's A rows as B
          const unsigned char* a_rows = a_stage + atom * Stage::kAAtomStride + row0 * ATOM;
          WgmmaKind<kInt8>::template Mma<kAccN>::Mma(acc[0], desc_b,
                                                     Stage::Descriptor(a_rows, 32 * kk), 1);
        } else {
#pragma unroll
          for (int t = 0; t < kSubtiles; ++t) {
            const unsigned char* a_rows =
                a_stage + atom * Stage::kAAtomStride + (row0 + t * 64) * ATOM;
            WgmmaKind<kInt8>::template Mma<BN>::Mma(acc[t], Stage::Descriptor(a_rows, 32 * kk),
                                                    desc_b, 1);
          }
        }
      }
    }
    hopper::WgmmaCommit();
    // One batch stays in flight, so the tensor cores never drain between k tiles: wait for the
    // previous tile's batch only, then hand its stage back (this tile's wgmmas still read theirs).
    hopper::WgmmaWait<1>();
    WgmmaFenceAccumulators(acc);
    if (kt > 0) WgmmaReleaseStage<kCluster>(&empty[(g - 1) % STAGES]);
  }
  hopper::WgmmaWait<0>();
  WgmmaFenceAccumulators(acc);
  // The last stage goes back too: the next output tile's loads reuse it.
  if (k_tiles > 0) {
    WgmmaReleaseStage<kCluster>(&empty[(first + k_tiles - 1) % STAGES]);
  }
}

// The epilogue parameters of the 4 columns a consumer thread holds in two neighbouring column
// groups of 8 (accumulator layout: hopper_ptx.cuh, WgmmaF16F32): col, col + 1, col + 8, col + 9
// with col = col0 + 8q + 2 (t % 4). They are loaded once per tile and serve all its rows: loads
// per accumulator made the epilogue the slowest part of the layers whose K is short (the stem,
// 64-channel convs), where it is most of the kernel.
struct WgmmaColumns {
  float bias[4], scale[4];
};

template <int kEpi>
__device__ __forceinline__ WgmmaColumns WgmmaLoadColumns(int col, int n, const float* bias,
                                                         const float* scale) {
  WgmmaColumns p;
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const int c = col + (e & 1) + 8 * (e >> 1);
    p.bias[e] = (kEpi & kEpiBias) != 0 && c < n ? __ldg(bias + c) : 0.0f;
    p.scale[e] =
        EpilogueOp<kEpi, float>::kOut != kEpiOutAccumulator && c < n ? __ldg(scale + c) : 1.0f;
  }
  return p;
}

// The epilogue a residual (kEpiResidual) is added after: kEpi without its residual and ReLU,
// which follow the add (common.cuh AddResidualF16); kEpi itself otherwise.
__host__ __device__ constexpr int WgmmaEpiBeforeResidual(int epi) {
  return (epi & kEpiResidual) != 0 ? epi & ~(kEpiResidual | kEpiRelu) : epi;
}

// The residual's add in an epilogue (kEpiResidual) to output elements of kBytes bytes: float16
// (AddResidualF16) or requantized int8 (AddResidualI8, with the scales after the channels' in
// `scale`). kRelu: the ReLU after the add.
template <int kBytes, bool kRelu>
struct WgmmaResidual {
  static_assert(kBytes == 2, "a residual is added to float16 or requantized int8 outputs");
  __device__ __forceinline__ static WgmmaResidual Load(const float*, int) { return {}; }
  __device__ __forceinline__ uint4 Add16(uint4 a, uint4 b) const {
    return AddResidualF16x8<kRelu>(a, b);
  }
  // Element e of src plus element e of skip, to element e of dst.
  __device__ __forceinline__ void AddOne(const unsigned char* src, const unsigned char* skip,
                                         unsigned char* dst, int e) const {
    reinterpret_cast<unsigned short*>(dst)[e] =
        AddResidualF16<kRelu>(reinterpret_cast<const unsigned short*>(src)[e],
                              reinterpret_cast<const unsigned short*>(skip)[e]);
  }
};
template <bool kRelu>
struct WgmmaResidual<1, kRelu> {
  Int8ResidualScales s;
  __device__ __forceinline__ static WgmmaResidual Load(const float* scale, int n) {
    return {Int8ResidualScales::Load(scale, n)};
  }
  __device__ __forceinline__ uint4 Add16(uint4 a, uint4 b) const {
    return AddResidualI8x16<kRelu>(a, b, s);
  }
  __device__ __forceinline__ void AddOne(const unsigned char* src, const unsigned char* skip,
                                         unsigned char* dst, int e) const {
    reinterpret_cast<s8*>(dst)[e] = AddResidualI8<kRelu>(reinterpret_cast<const s8*>(src)[e],
                                                         reinterpret_cast<const s8*>(skip)[e], s);
  }
};
// No residual (the epilogue's WgmmaResidual when it has none).
struct WgmmaNoResidual {};

// One row's 4 values of a thread (columns as WgmmaColumns) to out[base + column], for columns < n
// (the caller has checked base >= 0), as float16 (plus the residual's values at the same index
// with kEpiResidual), or through common.cuh's epilogue formula as int32, float32 or int8; then
// the Activation (common.cuh Act) on a float16 or float32 output.
// Adjacent column pairs go out as one store where aligned: 2-byte stores made the fp16 output
// slower to write than the fp32 one (docs/history/2026-12-01-fifth-session.md).
template <int kEpi, int kOutF16, class Activation, typename Acc>
__device__ __forceinline__ void WgmmaStorePairs(const Acc (&v)[4], const WgmmaColumns& p, s64 base,
                                                void* out, const void* residual, int col, int n) {
  typedef EpilogueOp<WgmmaEpiBeforeResidual(kEpi), Acc> Op;
  constexpr bool kResidual = EpilogueOp<kEpi, Acc>::kResidual;
  static_assert(!kResidual || kOutF16 != 0, "a residual is added to float16 outputs");
  const bool pairs = n % 2 == 0 && base % 2 == 0;  // col is even: a pair is whole and aligned
#pragma unroll
  for (int g = 0; g < 2; ++g) {  // column pairs (col, col + 1), (col + 8, col + 9)
    const int c = col + 8 * g;
    if constexpr (kOutF16 != 0) {
      static_assert(IsFloatAcc<Acc>::value && Op::kOut == kEpiOutAccumulator,
                    "fp16 output from fp16 operands, no scale");
      unsigned short h[2];
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        h[e] = FloatToF16Bits(Op::Apply(v[2 * g + e], p.bias[2 * g + e], 1.0f));
        if constexpr (kResidual) {
          const unsigned short* skip = static_cast<const unsigned short*>(residual) + base;
          if (c + e < n) h[e] = AddResidualF16<EpilogueOp<kEpi, Acc>::kRelu>(h[e], skip[c + e]);
        }
        h[e] = Activation::ApplyF16(h[e]);
      }
      unsigned short* row = static_cast<unsigned short*>(out) + base;
      if (pairs && c + 1 < n) {
        *reinterpret_cast<unsigned int*>(row + c) = h[0] | static_cast<unsigned int>(h[1]) << 16;
      } else {
        if (c < n) row[c] = h[0];
        if (c + 1 < n) row[c + 1] = h[1];
      }
    } else if constexpr (!IsFloatAcc<Acc>::value && Op::kOut == kEpiOutAccumulator) {
      static_assert(!Activation::kActive, "an activation into float outputs only");
      Acc a[2] = {v[2 * g], v[2 * g + 1]};
      if (Op::kRelu) {
        a[0] = a[0] < 0 ? 0 : a[0];
        a[1] = a[1] < 0 ? 0 : a[1];
      }
      Acc* row = static_cast<Acc*>(out) + base;
      if (pairs && c + 1 < n) {
        *reinterpret_cast<int2*>(row + c) = make_int2(a[0], a[1]);
      } else {
        if (c < n) row[c] = a[0];
        if (c + 1 < n) row[c + 1] = a[1];
      }
    } else {
      static_assert(Op::kOut != kEpiOutInt8, "int8 outputs go through WgmmaStoreInt8Row");
      const float f0 = Activation::Apply(Op::Apply(v[2 * g], p.bias[2 * g], p.scale[2 * g]));
      const float f1 =
          Activation::Apply(Op::Apply(v[2 * g + 1], p.bias[2 * g + 1], p.scale[2 * g + 1]));
      float* row = static_cast<float*>(out) + base;
      if (pairs && c + 1 < n) {
        *reinterpret_cast<float2*>(row + c) = make_float2(f0, f1);
      } else {
        if (c < n) row[c] = f0;
        if (c + 1 < n) row[c + 1] = f1;
      }
    }
  }
}

// One row's 4 values of a thread, requantized to int8. Lanes t and t ^ 1 hold the same row and
// swap column pairs: after the swap the even lane holds the 4 bytes of its pair and its
// partner's in group q (columns col .. col + 3), the odd lane those of group q + 1 (col + 6 ..
// col + 9), and each writes one aligned 4-byte word. A row past the output (base < 0) still takes
// part in the shuffle (the whole warp must), then writes nothing.
// With kEpiResidual each value is first requantized without the ReLU, then the residual's value
// at its index added (AddResidualI8), then the ReLU.
template <int kEpi, typename Acc>
__device__ __forceinline__ void WgmmaStoreInt8Row(const Acc (&v)[4], const WgmmaColumns& p,
                                                  s64 base, void* out, const void* residual,
                                                  const Int8ResidualScales& rs, int col, int n) {
  typedef EpilogueOp<WgmmaEpiBeforeResidual(kEpi), Acc> Op;
  typedef EpilogueOp<kEpi, Acc> Full;
  unsigned int bytes[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    bytes[e] = static_cast<unsigned char>(SaturateToInt8(Op::Apply(v[e], p.bias[e], p.scale[e])));
  }
  if constexpr (Full::kResidual) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int c = col + (e & 1) + 8 * (e >> 1);
      if (base >= 0 && c < n) {
        const s8 r = static_cast<const s8*>(residual)[base + c];
        bytes[e] = static_cast<unsigned char>(
            AddResidualI8<Full::kRelu>(static_cast<s8>(bytes[e]), r, rs));
      }
    }
  }
  const unsigned int mine_q = bytes[0] | bytes[1] << 8;   // columns col, col + 1
  const unsigned int mine_q1 = bytes[2] | bytes[3] << 8;  // col + 8, col + 9
  const bool odd = (threadIdx.x & 1) != 0;
  const unsigned int theirs = __shfl_xor_sync(0xffffffffu, odd ? mine_q : mine_q1, 1);
  if (base < 0) return;
  s8* row = static_cast<s8*>(out) + base;
  if (n % 4 == 0 && base % 4 == 0) {  // whole, aligned words
    const int at = odd ? col + 6 : col;
    if (at < n) {
      *reinterpret_cast<unsigned int*>(row + at) =
          odd ? (theirs | mine_q1 << 16) : (mine_q | theirs << 16);
    }
    return;
  }
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const int c = col + (e & 1) + 8 * (e >> 1);
    if (c < n) row[c] = static_cast<s8>(bytes[e]);
  }
}

// A 4 x 4 transpose of 32-bit words across the 4 lanes of a quad (lanes 4i .. 4i + 3): lane j's
// w[k] becomes lane k's w[j]. Two butterfly rounds, each swapping two words with the partner.
__device__ __forceinline__ void TransposeQuad(unsigned int (&w)[4]) {
  const bool b1 = (threadIdx.x & 2) != 0;  // round 1, partner lane ^ 2: swap the 2 x 2 blocks
  unsigned int r0 = __shfl_xor_sync(0xffffffffu, b1 ? w[0] : w[2], 2);
  unsigned int r1 = __shfl_xor_sync(0xffffffffu, b1 ? w[1] : w[3], 2);
  if (b1) {
    w[0] = r0;
    w[1] = r1;
  } else {
    w[2] = r0;
    w[3] = r1;
  }
  const bool b0 = (threadIdx.x & 1) != 0;  // round 2, partner lane ^ 1: within the blocks
  r0 = __shfl_xor_sync(0xffffffffu, b0 ? w[0] : w[1], 1);
  r1 = __shfl_xor_sync(0xffffffffu, b0 ? w[2] : w[3], 1);
  if (b0) {
    w[0] = r0;
    w[2] = r1;
  } else {
    w[1] = r0;
    w[3] = r1;
  }
}

// 16-byte output stores (WgmmaStoreWide). In the accumulator layout a quad's 4 lanes hold 2
// columns each of every 8-column group, so a row went out as 4-byte pieces, each warp store
// touching 8 rows: the stores of a 128 x 128 tile took longer than writing its 32 KiB needs
// (tools/wgmma_probe, docs/history/2026-12-03-twelfth-session.md). Instead each lane packs its
// 4-byte piece of 4 neighbouring "spans" of columns, the quad transposes them (TransposeQuad), and
// lane j writes span j whole, 16 bytes: a quarter of the store instructions, each sector written
// whole. The two outputs differ in their span and its pieces:
//   fp16: a span is one 8-column group; a lane's piece is its 2 columns of it, in fp16.
//   int8 (requantized): a span is two groups, 16 columns; a lane's piece is its 2 columns of
//   each (low and high half), and the span's 16 bytes interleave the 4 lanes' halves.
template <int kEpi, int kInt8Out>
struct WgmmaWideSpan;

template <int kEpi>
struct WgmmaWideSpan<kEpi, 0> {
  static constexpr int kGroups = 1;  // 8-column accumulator groups per span
  struct Columns {                   // this lane's 2 columns of the span
    float bias[2];
  };
  __device__ __forceinline__ static Columns Load(int col, int n, const float* bias, const float*) {
    Columns p;
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      p.bias[e] = EpilogueOp<kEpi, float>::kBias && col + e < n ? __ldg(bias + col + e) : 0.0f;
    }
    return p;
  }
  // acc[i], acc[i + 1]: this lane's columns of the span in one row.
  template <int kRegs>
  __device__ __forceinline__ static unsigned int Piece(const float (&acc)[kRegs], int i,
                                                       const Columns& p) {
    typedef EpilogueOp<kEpi, float> Op;
    return FloatToF16Bits(Op::Apply(acc[i], p.bias[0], 1.0f)) |
           static_cast<unsigned int>(FloatToF16Bits(Op::Apply(acc[i + 1], p.bias[1], 1.0f))) << 16;
  }
  // w[k]: lane k's piece (columns 2k, 2k + 1).
  __device__ __forceinline__ static uint4 Bytes(const unsigned int (&w)[4]) {
    return make_uint4(w[0], w[1], w[2], w[3]);
  }
  static constexpr int kElementBytes = 2;
};

template <int kEpi>
struct WgmmaWideSpan<kEpi, 1> {
  static constexpr int kGroups = 2;
  typedef WgmmaColumns Columns;  // columns col, col + 1, col + 8, col + 9
  __device__ __forceinline__ static Columns Load(int col, int n, const float* bias,
                                                 const float* scale) {
    return WgmmaLoadColumns<kEpi>(col, n, bias, scale);
  }
  // As WgmmaEpilogue's v: acc[i], acc[i + 1] (first group), acc[i + 4], acc[i + 5] (second).
  template <typename Acc, int kRegs>
  __device__ __forceinline__ static unsigned int Piece(const Acc (&acc)[kRegs], int i,
                                                       const Columns& p) {
    typedef EpilogueOp<kEpi, Acc> Op;
    const Acc v[4] = {acc[i], acc[i + 1], acc[i + 4], acc[i + 5]};
    unsigned int w = 0;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      w |= static_cast<unsigned int>(
               static_cast<unsigned char>(SaturateToInt8(Op::Apply(v[e], p.bias[e], p.scale[e]))))
           << (8 * e);
    }
    return w;
  }
  // w[k]: lane k's piece, columns 2k, 2k + 1 in its low half and 8 + 2k, 9 + 2k in its high one.
  __device__ __forceinline__ static uint4 Bytes(const unsigned int (&w)[4]) {
    return make_uint4(__byte_perm(w[0], w[1], 0x5410), __byte_perm(w[2], w[3], 0x5410),
                      __byte_perm(w[0], w[1], 0x7632), __byte_perm(w[2], w[3], 0x7632));
  }
  static constexpr int kElementBytes = 1;
};

// The rows of a consumer thread in 16-byte stores (Span: WgmmaWideSpan). The caller has checked
// that n is a multiple of the span (8 fp16 or 16 int8 columns) and `out` 16-byte aligned (and
// `residual`, read 16 bytes at a time at the output's offsets, in the output's type, with
// kResidual: 0, 1 the residual and no ReLU after it, 2 the residual and the ReLU; WgmmaResidual).
// The Activation (float16 spans only) last.
template <int BN, class Span, int kResidual, class Activation, typename Acc, int kSubtiles>
__device__ __forceinline__ void WgmmaStoreWide(const Acc (&acc)[kSubtiles][BN / 2],
                                               const s64 (&base)[kSubtiles][2], void* out,
                                               const void* residual, const float* bias,
                                               const float* scale, int col0, int n) {
  constexpr int kGroups = Span::kGroups;
  static_assert(BN % (32 * kGroups) == 0, "whole blocks of 4 spans");
  static_assert(!Activation::kActive || Span::kElementBytes == 2, "an activation into float16");
  const int j = threadIdx.x % 4;
  constexpr int kStep = 4 * kGroups;
  typedef typename Conditional<kResidual != 0, WgmmaResidual<Span::kElementBytes, kResidual == 2>,
                               WgmmaNoResidual>::type Residual;
  [[maybe_unused]] Residual add{};
  if constexpr (kResidual != 0) add = Residual::Load(scale, n);
  // The residual's spans of a block of columns, loaded a block ahead of their stores: out and
  // residual may alias as far as the compiler knows, so a load after a store waits for it, and
  // one load in flight at a time made the residual epilogue latency-bound (3-4x the time of the
  // plain one).
  [[maybe_unused]] uint4 skip[2][kSubtiles][2];
  [[maybe_unused]] auto load_skips = [&](int q0, uint4(&s)[kSubtiles][2]) {
    const int c = col0 + 8 * (q0 + kGroups * j);
#pragma unroll
    for (int sub = 0; sub < kSubtiles; ++sub) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        s[sub][half] =
            base[sub][half] >= 0 && c < n
                ? *reinterpret_cast<const uint4*>(static_cast<const unsigned char*>(residual) +
                                                  (base[sub][half] + c) * Span::kElementBytes)
                : make_uint4(0, 0, 0, 0);
      }
    }
  };
  if constexpr (kResidual != 0) load_skips(0, skip[0]);
#pragma unroll
  for (int q0 = 0; q0 < BN / 8; q0 += kStep) {  // spans q0 + kGroups k, k = 0..3
    const int block = q0 / kStep;
    if constexpr (kResidual != 0) {
      if (q0 + kStep < BN / 8) load_skips(q0 + kStep, skip[(block + 1) % 2]);
    }
    typename Span::Columns p[4];
#pragma unroll
    for (int k = 0; k < 4; ++k)
      p[k] = Span::Load(col0 + 8 * (q0 + kGroups * k) + 2 * j, n, bias, scale);
    const int c = col0 + 8 * (q0 + kGroups * j);  // this lane's span after the transpose
#pragma unroll
    for (int sub = 0; sub < kSubtiles; ++sub) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        unsigned int w[4];
#pragma unroll
        for (int k = 0; k < 4; ++k)
          w[k] = Span::Piece(acc[sub], 4 * (q0 + kGroups * k) + 2 * half, p[k]);
        TransposeQuad(w);
        if (base[sub][half] >= 0 && c < n) {
          const s64 at = (base[sub][half] + c) * Span::kElementBytes;
          uint4 bytes = Span::Bytes(w);
          if constexpr (kResidual != 0) {
            bytes = add.Add16(bytes, skip[block % 2][sub][half]);
          }
          bytes = Activation::ApplyF16x8(bytes);
          *reinterpret_cast<uint4*>(static_cast<unsigned char*>(out) + at) = bytes;
        }
      }
    }
  }
}

// Writes a consumer thread's accumulators (layout: hopper_ptx.cuh, WgmmaF16F32): tile row r of
// this consumer goes to out[row_index(row0 + r) + col] for col < n (with kEpiResidual plus
// residual[the same index]), then the Activation. Columns outermost, so each column's bias and
// scale are loaded once (WgmmaColumns); the rows' output offsets are computed once before.
template <int BN, int kEpi, int kOutF16, class Activation, typename Acc, int kSubtiles,
          class RowMap>
__device__ __forceinline__ void WgmmaEpilogue(const Acc (&acc)[kSubtiles][BN / 2],
                                              const RowMap& row_index, void* out,
                                              const void* residual, const float* bias,
                                              const float* scale, int row0, int col0, int n) {
  constexpr bool kInt8Out = kOutF16 == 0 && EpilogueOp<kEpi, Acc>::kOut == kEpiOutInt8;
  typedef EpilogueOp<kEpi, Acc> Op;
  constexpr int kResidual = Op::kResidual ? (Op::kRelu ? 2 : 1) : 0;
  static_assert(!Op::kResidual || kOutF16 != 0 || kInt8Out,
                "a residual is added to float16 or requantized int8 outputs");
  static_assert(!kInt8Out || !Activation::kActive, "an activation into float outputs only");
  const int t = threadIdx.x % 128;
  s64 base[kSubtiles][2];
#pragma unroll
  for (int sub = 0; sub < kSubtiles; ++sub) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      base[sub][half] = row_index(row0 + sub * 64 + 16 * (t / 32) + (t % 32) / 4 + 8 * half);
    }
  }
  if constexpr (kOutF16 != 0 || kInt8Out) {
    typedef WgmmaWideSpan<WgmmaEpiBeforeResidual(kEpi), kInt8Out ? 1 : 0> Span;
    if (n % (8 * Span::kGroups) == 0 && reinterpret_cast<unsigned long long>(out) % 16 == 0 &&
        reinterpret_cast<unsigned long long>(residual) % 16 == 0) {
      WgmmaStoreWide<BN, Span, kResidual, Activation>(acc, base, out, residual, bias, scale, col0,
                                                      n);
      return;
    }
  }
  [[maybe_unused]] Int8ResidualScales rs{};
  if constexpr (kInt8Out && Op::kResidual) rs = Int8ResidualScales::Load(scale, n);
#pragma unroll
  for (int q = 0; q < BN / 8; q += 2) {
    const int col = col0 + 8 * q + 2 * (t % 4);
    const WgmmaColumns p = WgmmaLoadColumns<kEpi>(col, n, bias, scale);
#pragma unroll
    for (int sub = 0; sub < kSubtiles; ++sub) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int i = 4 * q + 2 * half;  // acc i = 4q + 2 half + e holds column 8q + 2 (t % 4) + e
        const Acc v[4] = {acc[sub][i], acc[sub][i + 1], acc[sub][i + 4], acc[sub][i + 5]};
        if constexpr (kInt8Out) {
          WgmmaStoreInt8Row<kEpi>(v, p, base[sub][half], out, residual, rs, col, n);
        } else if (base[sub][half] >= 0) {
          WgmmaStorePairs<kEpi, kOutF16, Activation>(v, p, base[sub][half], out, residual, col, n);
        }
      }
    }
  }
}

// Negates the accumulators of the columns in `negative` (bit 2 q + e: column col0 + 8 q +
// 2 (t % 4) + e, the layout of hopper_ptx.cuh WgmmaF16F32), so that a max pools them as a min.
template <int BN, typename Acc, int kSubtiles>
__device__ __forceinline__ void WgmmaFlipColumns(Acc (&acc)[kSubtiles][BN / 2],
                                                 unsigned long long negative) {
#pragma unroll
  for (int sub = 0; sub < kSubtiles; ++sub) {
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) {
      if ((negative >> (2 * (i / 4) + i % 2)) & 1) acc[sub][i] = -acc[sub][i];
    }
  }
}

// This thread's columns (numbered as WgmmaFlipColumns does) whose epilogue scale is negative;
// none when the epilogue does not scale.
template <int BN, int kEpi, typename Acc>
__device__ __forceinline__ unsigned long long WgmmaNegativelyScaled(const float* scale, int col0,
                                                                    int n) {
  static_assert(BN / 4 <= 64, "a thread's columns fit one mask");
  unsigned long long negative = 0;
  if constexpr (EpilogueOp<kEpi, Acc>::kOut != kEpiOutAccumulator) {
#pragma unroll
    for (int b = 0; b < BN / 4; ++b) {
      const int col = col0 + 8 * (b / 2) + 2 * (threadIdx.x % 4) + b % 2;
      if (col < n && __ldg(scale + col) < 0.0f) negative |= 1ull << b;
    }
  }
  return negative;
}

// Whether any of the tile's BN columns from col0 has a negative epilogue scale: one vote of the
// warp, each lane reading BN / 32 of them. Every warp of a consumer holds the same columns, so
// they all agree. The network's scales are positive: then the pool skips the per-thread masks
// and the flips (they cost conv1_2 and conv2_2's int8 pooled layers 13-30% when always run).
template <int BN, int kEpi, typename Acc>
__device__ __forceinline__ bool WgmmaAnyNegativelyScaled(const float* scale, int col0, int n) {
  bool negative = false;
  if constexpr (EpilogueOp<kEpi, Acc>::kOut != kEpiOutAccumulator) {
#pragma unroll
    for (int c = threadIdx.x % 32; c < BN; c += 32) {
      negative |= col0 + c < n && __ldg(scale + col0 + c) < 0.0f;
    }
  }
  return __any_sync(0xffffffffu, negative);
}

// 2x2 max pooling (stride 2) of a consumer's accumulators, for conv tiles of TW-pixel image rows
// (tile row m = y * TW + x, the tile and the consumer's first row at an even image row): each
// window's max lands in its top-left row, the only row of it the template's row map gives an
// output (conv2d_wgmma.cu ConvPoolRows). The epilogue (scale, bias, relu, rounding) is monotonic
// per column, increasing where the column's scale is positive (always, for the network's
// requantize and dequantize scales) and decreasing where it is negative: pooling the accumulators
// first (their max, or in a negatively scaled column their min: WgmmaNegativelyScaled) writes the
// same values as pooling the written outputs, a quarter of the stores. Neighbours along x are
// rows r and r + 1:
// lanes t and t ^ 4. Along y (row r + TW) the partner is this thread's row r + 8 (TW 8), another
// warp's (TW 16, 32) or the next subtile's (TW 64), so it goes through shared memory `buf`
// (WgmmaPoolWords): a group of WgmmaPoolGroupRows rows and 64 columns at a time, the bottom rows
// writing and the top rows reading, with the warpgroup's named barrier `barrier` in between.
template <int TW, int BN, int kEpi, typename Acc, int kSubtiles>
__device__ __forceinline__ void WgmmaPool2x2(Acc (&acc)[kSubtiles][BN / 2], Acc* buf, int barrier,
                                             const float* scale, int col0, int n) {
  constexpr int kGroupSubtiles = WgmmaPoolGroupRows(TW) / 64;
  static_assert(TW % 8 == 0 && TW <= 64, "image rows of 8 to 64 pixels, whole 8-row blocks");
  static_assert(kSubtiles % kGroupSubtiles == 0, "a consumer holds whole pairs of image rows");
  static_assert(BN % kWgmmaPoolChunk == 0, "whole 64-column chunks");
  const int t = threadIdx.x % 128;
  const bool flip = WgmmaAnyNegativelyScaled<BN, kEpi, Acc>(scale, col0, n);
  const unsigned long long negative =
      flip ? WgmmaNegativelyScaled<BN, kEpi, Acc>(scale, col0, n) : 0ull;
  if (flip) WgmmaFlipColumns<BN>(acc, negative);
#pragma unroll
  for (int sub = 0; sub < kSubtiles; ++sub) {
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) {
      const Acc right = __shfl_xor_sync(0xffffffffu, acc[sub][i], 4);
      acc[sub][i] = right > acc[sub][i] ? right : acc[sub][i];
    }
  }
#pragma unroll
  for (int group = 0; group < kSubtiles / kGroupSubtiles; ++group) {
#pragma unroll
    for (int chunk = 0; chunk < BN / kWgmmaPoolChunk; ++chunk) {
#pragma unroll
      for (int pass = 0; pass < 2; ++pass) {  // 0: odd image rows write; 1: even rows read
#pragma unroll
        for (int s = 0; s < kGroupSubtiles; ++s) {
#pragma unroll
          for (int half = 0; half < 2; ++half) {
            const int r = s * 64 + 16 * (t / 32) + (t % 32) / 4 + 8 * half;  // row in the group
            const int y = r / TW, x = r % TW;
            if (x % 2 != 0 || y % 2 != 1 - pass) continue;
            Acc* window = buf + ((y / 2) * (TW / 2) + x / 2) * kWgmmaPoolStride;
#pragma unroll
            for (int q = 0; q < kWgmmaPoolChunk / 8; ++q) {
#pragma unroll
              for (int e = 0; e < 2; ++e) {
                Acc& v = acc[group * kGroupSubtiles + s][4 * (chunk * 8 + q) + 2 * half + e];
                Acc* slot = window + 8 * q + 2 * (t % 4) + e;
                if (pass == 0) {
                  *slot = v;
                } else {
                  v = *slot > v ? *slot : v;
                }
              }
            }
          }
        }
        hopper::NamedBarrierSync(barrier, 128);
      }
    }
  }
  if (flip) WgmmaFlipColumns<BN>(acc, negative);
}

// Swapped operands (kSwapAB; conv2d_wgmma.cu SWAP_AB): with only 64 output columns (BN = 64, a
// conv with 64 channels out) each m64n64 wgmma reads as many A bytes as B bytes from shared memory
// for its 64 x 64 x 16 products, 4 KiB per 32 tensor-core cycles, which with the TMA writes is
// more than shared memory's 128 bytes a cycle. Computing the transposed tile instead, the 64
// columns' B rows as wgmma's A and the consumer's A rows as its B (m64nNk16, N = the consumer's
// rows, up to 256), reads 10 KiB per 128 cycles. The accumulator is then [64 columns][N rows]:
// register i of thread t holds tile column 16 w + l / 4 + 8 ((i / 2) % 2) of row
// 8 (i / 4) + 2 (l % 4) + (i % 2) (hopper_ptx.cuh's layout, transposed), so a 2x2 pool window of
// TW-pixel image rows (rows r, r + 1, r + TW, r + TW + 1, r even) lies in registers i, i + 1,
// i + TW / 2, i + TW / 2 + 1 of one thread, and the output rows go out through shared memory
// (WgmmaSwapStagingBytes per consumer): each row's 64 values written by 32 threads there, then
// copied out in 16-byte pieces.

// The element a template writes (kEpi, kOutF16, its accumulator): float16, requantized int8,
// float32, or the int32 accumulator.
template <int kEpi, int kOutF16, typename Acc>
struct WgmmaOutElement {
  typedef EpilogueOp<kEpi, Acc> Op;
  static constexpr int kBytes = kOutF16 != 0 ? 2 : Op::kOut == kEpiOutInt8 ? 1 : 4;
  // Writes accumulator `v` of a column with `bias` and `scale` to `dst`.
  __device__ __forceinline__ static void Put(unsigned char* dst, Acc v, float bias, float scale) {
    if constexpr (kOutF16 != 0) {
      *reinterpret_cast<unsigned short*>(dst) = FloatToF16Bits(Op::Apply(v, bias, 1.0f));
    } else if constexpr (!IsFloatAcc<Acc>::value && Op::kOut == kEpiOutAccumulator) {
      *reinterpret_cast<Acc*>(dst) = Op::kRelu && v < 0 ? 0 : v;
    } else if constexpr (Op::kOut == kEpiOutInt8) {
      *reinterpret_cast<s8*>(dst) = SaturateToInt8(Op::Apply(v, bias, scale));
    } else {
      *reinterpret_cast<float*>(dst) = Op::Apply(v, bias, scale);
    }
  }
};

// A staged output row: 64 elements and 16 bytes of padding, so that the 4 rows (2 apart) one
// store instruction of the accumulators writes fall on distinct banks. ops/wgmma_rules.h mirrors
// these.
__host__ __device__ constexpr int WgmmaSwapRowBytes(int out_bytes) { return 64 * out_bytes + 16; }
__host__ __device__ constexpr int WgmmaSwapStagingBytes(int rows, int pooled, int out_bytes) {
  return (pooled != 0 ? rows / 4 : rows) * WgmmaSwapRowBytes(out_bytes);
}

// The Activation on one staged 16-byte piece of an output row: 8 float16 or 4 float32 values.
template <class Activation, int kBytes>
__device__ __forceinline__ uint4 WgmmaActivatePiece(uint4 v) {
  if constexpr (!Activation::kActive) {
    return v;
  } else if constexpr (kBytes == 2) {
    return Activation::ApplyF16x8(v);
  } else {
    static_assert(kBytes == 4, "float16 or float32 outputs");
    return make_uint4(__float_as_uint(Activation::Apply(__uint_as_float(v.x))),
                      __float_as_uint(Activation::Apply(__uint_as_float(v.y))),
                      __float_as_uint(Activation::Apply(__uint_as_float(v.z))),
                      __float_as_uint(Activation::Apply(__uint_as_float(v.w))));
  }
}

// A consumer's swapped accumulators (kRows rows from tile row row0, the 64 columns from col0) to
// `out`, through its staging rows `stage` and named barrier `barrier`; kPoolW != 0: pooled 2x2
// first over TW = kPoolW-pixel image rows, as WgmmaPool2x2 (the row map gives the windows'
// top-left rows their pooled output; a negatively scaled column pools its accumulators' min).
// The Activation applies in the copy out, after the residual, as in WgmmaEpilogue.
template <int kRows, int kPoolW, int kEpi, int kOutF16, class Activation, typename Acc,
          class RowMap>
__device__ __forceinline__ void WgmmaSwappedEpilogue(const Acc (&acc)[kRows / 2],
                                                     const RowMap& row_index, void* out,
                                                     const void* residual, const float* bias,
                                                     const float* scale, unsigned char* stage,
                                                     int barrier, int row0, int col0, int n) {
  // With a residual the staged rows hold the epilogue before it; the copy out adds it (and the
  // ReLU after it).
  typedef WgmmaOutElement<WgmmaEpiBeforeResidual(kEpi), kOutF16, Acc> Out;
  typedef EpilogueOp<kEpi, Acc> Op;
  static_assert(!Op::kResidual || ((kOutF16 != 0 || Op::kOut == kEpiOutInt8) && kPoolW == 0),
                "a residual is added to unpooled float16 or requantized int8 outputs");
  static_assert(kPoolW == 0 || (kPoolW % 8 == 0 && kRows % (2 * kPoolW) == 0),
                "pooled rows: whole pairs of image rows of whole 8-row blocks");
  static_assert(
      !Activation::kActive || (kPoolW == 0 && IsFloatAcc<Acc>::value && Op::kOut != kEpiOutInt8),
      "an activation into unpooled float16 or float32 outputs");
  constexpr int kRowBytes = WgmmaSwapRowBytes(Out::kBytes);
  typedef typename Conditional<Op::kResidual, WgmmaResidual<Out::kBytes, Op::kRelu>,
                               WgmmaNoResidual>::type Residual;
  [[maybe_unused]] Residual add{};
  if constexpr (Op::kResidual) add = Residual::Load(scale, n);
  const int t = threadIdx.x % 128;
  const int ch = 16 * (t / 32) + (t % 32) / 4;  // this thread's columns: ch, ch + 8
  float b[2], s[2];
  bool negative[2];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int c = col0 + ch + 8 * half;
    b[half] = Op::kBias && c < n ? __ldg(bias + c) : 0.0f;
    s[half] = Op::kOut != kEpiOutAccumulator && c < n ? __ldg(scale + c) : 1.0f;
    negative[half] = s[half] < 0.0f;
  }
  hopper::NamedBarrierSync(barrier, 128);  // the previous tile's rows have gone out
#pragma unroll
  for (int i = 0; i < kRows / 2; i += 1 + (kPoolW != 0 ? 1 : 0)) {
    const int half = (i / 2) % 2;
    const int row = 8 * (i / 4) + 2 * (t % 4) + i % 2;
    unsigned char* dst = stage + (ch + 8 * half) * Out::kBytes;
    if constexpr (kPoolW == 0) {
      Out::Put(dst + row * kRowBytes, acc[i], b[half], s[half]);
    } else {
      if ((8 * (i / 4) / kPoolW) % 2 != 0) continue;  // odd image rows: windows' bottom halves
      constexpr int kBelow = kPoolW / 2;              // register of the row TW pixels on
      const Acc top = acc[i] > acc[i + 1] ? acc[i] : acc[i + 1];
      const Acc bottom =
          acc[i + kBelow] > acc[i + kBelow + 1] ? acc[i + kBelow] : acc[i + kBelow + 1];
      const Acc top_min = acc[i] < acc[i + 1] ? acc[i] : acc[i + 1];
      const Acc bottom_min =
          acc[i + kBelow] < acc[i + kBelow + 1] ? acc[i + kBelow] : acc[i + kBelow + 1];
      const Acc pooled = negative[half] ? (top_min < bottom_min ? top_min : bottom_min)
                                        : (top > bottom ? top : bottom);
      const int window = (row / kPoolW / 2) * (kPoolW / 2) + row % kPoolW / 2;
      Out::Put(dst + window * kRowBytes, pooled, b[half], s[half]);
    }
  }
  hopper::NamedBarrierSync(barrier, 128);
  constexpr int kOutRows = kPoolW == 0 ? kRows : kRows / 4;
  constexpr int kPieceElems = 16 / Out::kBytes;
  constexpr int kPieces = 64 / kPieceElems;  // 16-byte pieces per row
  const int cols = n - col0 < 64 ? n - col0 : 64;
  const bool wide = (static_cast<s64>(n) * Out::kBytes) % 16 == 0 &&
                    reinterpret_cast<unsigned long long>(out) % 16 == 0 &&
                    reinterpret_cast<unsigned long long>(residual) % 16 == 0;
  constexpr int kTotal = kOutRows * kPieces;
  // Piece k's staged row, its first column and its output row's offset (-1: none).
  auto piece = [&](int k, int* r, int* c) {
    *r = k / kPieces;
    *c = k % kPieces * kPieceElems;
    const int row = kPoolW == 0 ? *r : *r / (kPoolW / 2) * 2 * kPoolW + *r % (kPoolW / 2) * 2;
    return row_index(row0 + row);
  };
  // The residual's pieces of a batch are loaded before its first store (as in WgmmaStoreWide:
  // one load in flight at a time, each behind a store, made the epilogue latency-bound).
  constexpr int kBatch = 4;
  for (int k0 = t; k0 < kTotal; k0 += kBatch * 128) {
    [[maybe_unused]] uint4 skip[kBatch];
    if constexpr (Op::kResidual) {
#pragma unroll
      for (int i = 0; i < kBatch; ++i) {
        int r = 0, c = 0;
        const s64 base = k0 + i * 128 < kTotal ? piece(k0 + i * 128, &r, &c) : -1;
        skip[i] =
            wide && base >= 0 && c + kPieceElems <= cols
                ? *reinterpret_cast<const uint4*>(static_cast<const unsigned char*>(residual) +
                                                  (base + col0 + c) * Out::kBytes)
                : make_uint4(0, 0, 0, 0);
      }
    }
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      const int k = k0 + i * 128;
      if (k >= kTotal) break;
      int r = 0, c = 0;
      const s64 base = piece(k, &r, &c);
      if (base < 0 || c >= cols) continue;
      const unsigned char* src = stage + r * kRowBytes + c * Out::kBytes;
      unsigned char* dst = static_cast<unsigned char*>(out) + (base + col0 + c) * Out::kBytes;
      const s64 at = (base + col0 + c) * Out::kBytes;
      if (wide && c + kPieceElems <= cols) {
        uint4 bytes = *reinterpret_cast<const uint4*>(src);
        if constexpr (Op::kResidual) bytes = add.Add16(bytes, skip[i]);
        *reinterpret_cast<uint4*>(dst) = WgmmaActivatePiece<Activation, Out::kBytes>(bytes);
      } else if constexpr (Op::kResidual) {  // the channel tail, or unaligned rows: value by value
        const unsigned char* tail = static_cast<const unsigned char*>(residual) + at;
        const int values = cols - c < kPieceElems ? cols - c : kPieceElems;
#pragma unroll 1
        for (int e = 0; e < values; ++e) {
          add.AddOne(src, tail, dst, e);
          if constexpr (Activation::kActive) {
            reinterpret_cast<unsigned short*>(dst)[e] =
                Activation::ApplyF16(reinterpret_cast<const unsigned short*>(dst)[e]);
          }
        }
      } else if constexpr (Activation::kActive) {  // the tail, or unaligned rows: value by value
        const int values = cols - c < kPieceElems ? cols - c : kPieceElems;
#pragma unroll 1
        for (int e = 0; e < values; ++e) {
          if constexpr (Out::kBytes == 2) {
            reinterpret_cast<unsigned short*>(dst)[e] =
                Activation::ApplyF16(reinterpret_cast<const unsigned short*>(src)[e]);
          } else {
            reinterpret_cast<float*>(dst)[e] =
                Activation::Apply(reinterpret_cast<const float*>(src)[e]);
          }
        }
      } else {  // the channel tail, or rows not 16-byte aligned: byte by byte (rare, kept small)
        const int bytes = (cols - c < kPieceElems ? cols - c : kPieceElems) * Out::kBytes;
#pragma unroll 1
        for (int e = 0; e < bytes; ++e) dst[e] = src[e];
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

// The consumer warpgroups' part of WgmmaBlock: accumulate and write out their tiles.
template <int BM, int BN, int BK_BYTES, int STAGES, int CONS_WG, int kInt8, int kEpi, int kOutF16,
          int kPingPong, int ATOM, int kCluster, int kPoolW, int kShift, int kSwapAB,
          class Activation, class Tiles>
__device__ __forceinline__ void WgmmaConsumeTiles(const Tiles& tiles, const unsigned char* ring,
                                                  hopper::u64* full, hopper::u64* empty,
                                                  hopper::u64* turn, unsigned char* pool, void* out,
                                                  const void* residual, const float* bias,
                                                  const float* scale, int n, int k_tiles) {
  using Consumers = WgmmaConsumers<BM, CONS_WG, kPingPong>;
  const int wg = threadIdx.x / 128;
  if constexpr (CONS_WG == 2) hopper::SetMaxNRegInc<kWgmmaConsumerRegs>();
  const int c = wg - 1;  // this consumer, 0-based
  typedef typename WgmmaKind<kInt8>::Acc Acc;
  static_assert(kPoolW == 0 || !Activation::kActive, "no activation before a pool");
  // [m64 subtiles][BN / 2], or swapped [1][the consumer's rows / 2] (WgmmaSwappedEpilogue).
  constexpr int kAccTiles = kSwapAB != 0 ? 1 : Consumers::kSubtiles;
  constexpr int kAccN = kSwapAB != 0 ? Consumers::kRows : BN;
  Acc acc[kAccTiles][kAccN / 2];
  // Ping-pong: consumer c takes the block's tiles j = c, c + 2, ...; cooperative: every tile.
  int j = kPingPong ? c : 0;
  for (int t = blockIdx.x + j * gridDim.x; t < tiles.count();
       t += Consumers::kTileStride * gridDim.x, j += Consumers::kTileStride) {
    const auto tile = tiles.At(t);
#pragma unroll
    for (int i = 0; i < kAccTiles; ++i) {
#pragma unroll
      for (int v = 0; v < kAccN / 2; ++v) acc[i][v] = 0;
    }
    if constexpr (kPingPong != 0) {
      // The i-th mainloop (i = j / 2) of consumer 0 waits for consumer 1's (i - 1)-th (the wait
      // on the opposite parity passes at once for i = 0), consumer 1's i-th for consumer 0's.
      const int i = j / 2;
      hopper::MbarrierWait(&turn[c], (i & 1) ^ (c == 0 ? 1 : 0));
    }
    WgmmaConsume<BM, BN, BK_BYTES, STAGES, ATOM, kShift, kInt8, kCluster, kAccTiles, kAccN,
                 kSwapAB>(acc, ring, full, empty, Consumers::RowOffset(c), k_tiles, j * k_tiles);
    if constexpr (kPingPong != 0) {
      if (threadIdx.x % 32 == 0) hopper::MbarrierArrive(&turn[1 - c]);
    }
    const int row0 = tile.m0 + Consumers::RowOffset(c);
    if constexpr (kSwapAB != 0) {  // each consumer its own staging rows and named barrier (1 + c)
      constexpr int kStaging = WgmmaSwapStagingBytes(Consumers::kRows, kPoolW,
                                                     WgmmaOutElement<kEpi, kOutF16, Acc>::kBytes);
      WgmmaSwappedEpilogue<Consumers::kRows, kPoolW, kEpi, kOutF16, Activation>(
          acc[0], tile.rows, out, residual, bias, scale, pool + c * kStaging, 1 + c, row0, tile.n0,
          n);
    } else {
      if constexpr (kPoolW != 0) {  // each consumer its own exchange and named barrier (1 + c)
        WgmmaPool2x2<kPoolW, BN, kEpi>(acc,
                                       reinterpret_cast<Acc*>(pool) + c * WgmmaPoolWords(kPoolW),
                                       1 + c, scale, tile.n0, n);
      }
      WgmmaEpilogue<BN, kEpi, kOutF16, Activation>(acc, tile.rows, out, residual, bias, scale, row0,
                                                   tile.n0, n);
    }
  }
}

// The whole block: ring setup, the producer warpgroup (one thread issues every load), the
// consumers' accumulation and epilogue (kPoolW != 0: with WgmmaPool2x2 first). The block is
// persistent: it takes output tiles blockIdx.x, blockIdx.x + gridDim.x, ... of `tiles` (count(),
// At(t) -> WgmmaTile), so the producer loads the next tile while the consumers write the last one
// out, and a grid of one block per SM pays the setup once. A grid of count() blocks is the
// one-tile-per-block kernel. Activation (common.cuh Act): the epilogue's activation, after
// everything kEpi does, into a float16 or float32 output without a pool.
template <int BM, int BN, int BK_BYTES, int STAGES, int CONS_WG, int kInt8, int kEpi, int kOutF16,
          int kPingPong = 0, int ATOM = kWgmmaAtomBytes, int kCluster = 1, int kPoolW = 0,
          int kShift = 0, int kSwapAB = 0, class Activation = Act<>, class Tiles>
__device__ __forceinline__ void WgmmaBlock(const Tiles& tiles, const hopper::TmaDescriptor* a_map,
                                           const hopper::TmaDescriptor* b_map, void* out,
                                           const float* bias, const float* scale, int n,
                                           int k_tiles, const void* residual = nullptr) {
  using Consumers = WgmmaConsumers<BM, CONS_WG, kPingPong>;
  static_assert(CONS_WG == 1 || CONS_WG == 2, "one or two consumer warpgroups");
  static_assert(Consumers::kRows % 64 == 0, "each consumer warpgroup issues m64 wgmmas");
  static_assert(BN == 64 || BN == 128 || BN == 192 || BN == 256, "wgmma N of hopper_ptx.cuh");
  static_assert(BK_BYTES % ATOM == 0, "K per stage is whole swizzled rows");
  static_assert(BN <= 256, "a TMA box dimension is at most 256");
  static_assert(STAGES >= 2, "at least double buffering");
  extern __shared__ unsigned char smem_raw[];
  // Swizzled TMA tiles need 1024-byte alignment; dynamic shared memory only promises 16 bytes.
  unsigned char* ring = smem_raw + ((1024 - hopper::SharedAddress(smem_raw) % 1024) % 1024);
  hopper::u64* full = reinterpret_cast<hopper::u64*>(
      ring + STAGES * WgmmaStage<BM, BN, BK_BYTES, ATOM, kShift>::kBytes);
  hopper::u64* empty = full + STAGES;
  hopper::u64* turn = empty + STAGES;  // ping-pong: turn[c] opens consumer c's next mainloop
  // WgmmaPoolBytes, or with kSwapAB WgmmaSwapStagingBytes per consumer (16-byte aligned).
  unsigned char* pool = reinterpret_cast<unsigned char*>(turn + 2);
  const int wg = threadIdx.x / 128;
  // The next kernel's blocks may take the SMs this grid frees; they wait for it in their own
  // GridDependencyWait.
  LaunchDependents();
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      hopper::MbarrierInit(&full[s], 1);
      hopper::MbarrierInit(&empty[s], Consumers::kStageReaders * 4 * kCluster);
    }
    for (int c = 0; c < 2; ++c) hopper::MbarrierInit(&turn[c], 4);
    hopper::FenceBarrierInit();
  }
  // In a cluster no peer may signal our barriers before they exist.
  if constexpr (kCluster == 1) {
    __syncthreads();
  } else {
    hopper::ClusterSync();
  }
  // The setup above may have run during the previous kernel's tail (overlaps_previous launches);
  // its output is our input, and our output may be what it still reads.
  GridDependencyWait();
  if (wg == 0) {
    // setmaxnreg only pays (and its budget only balances) with two consumer warpgroups; with one,
    // ptxas may already use up to 255 registers and an .inc below that would be undefined.
    if constexpr (CONS_WG == 2) hopper::SetMaxNRegDec<kWgmmaProducerRegs>();
    if (threadIdx.x == 0) {
      hopper::TmaPrefetchDescriptor(a_map);
      hopper::TmaPrefetchDescriptor(b_map);
      int first = 0;
      for (int t = blockIdx.x; t < tiles.count(); t += gridDim.x, first += k_tiles) {
        WgmmaProduce<BM, BN, BK_BYTES, STAGES, ATOM, kShift>(tiles.At(t).produce, ring, full, empty,
                                                             k_tiles, first);
      }
    }
  } else {
    WgmmaConsumeTiles<BM, BN, BK_BYTES, STAGES, CONS_WG, kInt8, kEpi, kOutF16, kPingPong, ATOM,
                      kCluster, kPoolW, kShift, kSwapAB, Activation>(
        tiles, ring, full, empty, turn, pool, out, residual, bias, scale, n, k_tiles);
  }
  // The peer's consumers still hand stages back to this CTA's barriers until they are done.
  if constexpr (kCluster > 1) hopper::ClusterSync();
}

}  // namespace tunejit

#endif  // TUNEJIT_KERNEL_SOURCES_WGMMA_CORE_CUH_
