// File: kernel_sources/attention.cu
// The fused attention of attention_mma.cuda (ops/attention.h), FlashAttention-2's forward pass:
//   O[b, h, i, :] = softmax_j(scale * Q[b, h, i, :] . K[b, h, j, :] + mask[b, j]) V[b, h, j, :]
// (causal: over keys j <= i only) float16 Q, K, V and O, float32 accumulation and softmax. A CTA
// takes BLOCK_M query rows of one (batch, head); each of its warps owns 16 (or 32) of those rows
// for the whole key sequence, so the softmax's row max and sum never leave the warp. The keys
// stream through shared memory in BLOCK_N-row tiles of K and V (cp.async, `stages` deep); per tile
// a warp computes S = Q K^T on mma.sync m16n8k16 (Q's fragments stay in registers), rescales its
// running output by the new row max (the online softmax, in base 2: exp2f of scores prescaled by
// scale * log2(e)), and adds P V, P taken straight from S's accumulators as the A operand. V's B
// fragments come from ldmatrix.trans, as V is stored [key, d] like K.
//
// Tails: query rows past seq_q are loaded as zeros and not stored; key rows past seq_kv are
// loaded as zeros (so P V never reads garbage: 0 * NaN would poison the sum) and their scores
// are -inf. A row whose every score is -inf (a mask of -inf on all keys) gives 0, not NaN.
//
// Addressing: every tensor is a base pointer, an element offset and element strides for (batch,
// head, seq), its last dimension (D) contiguous, so the kernel reads Q, K and V out of a
// projection's [B, S, H*D] or packed [B, S, 3, H, D] output and writes O as [B, S, H, D]: no
// transpose copies around it. Strides and offsets are multiples of 8 and bases 16-byte aligned
// (16-byte cp.async; the host checks). The mask, when there is one, is [B, 1, 1, S_kv] (float32 or
// float16; BERT's extended attention mask): mask[b * mask_batch_stride + j], broadcast over heads
// and query rows.
//
// Shared memory (dynamic): Q [BLOCK_M, D], then `stages` x (K [BLOCK_N, D], V [BLOCK_N, D]), all
// float16, each row's 16-byte chunks XOR-swizzled by the row's low 3 bits so that ldmatrix's
// eight row addresses hit eight different bank groups. The output is staged through Q's rows.
//
//   KernelSpec{"attention.cu",
//              "tunejit::attention_fwd<tunejit::AttnTile<64, 64, 64, 4, 2>,
//              tunejit::AttnMask::kNone>"}
#include "common.cuh"
#include "mma_sync.cuh"

namespace tunejit {

// The mask's element type; kNone: no mask argument is read. kCausal: no mask argument either;
// query i sees keys j <= i only (a decoder's causal mask, top-left aligned), and the key tiles
// past a CTA's last query row are not loaded.
enum class AttnMask { kNone = 0, kF32 = 1, kF16 = 2, kCausal = 3 };

// The tile policy (the template's knobs): head dim D, query rows per CTA, key rows per tile,
// warps, pipeline depth. Each warp owns kRowsPerWarp = BLOCK_M / kWarps query rows, kMTiles
// m16 tiles of them.
template <int kD_, int kBlockM_, int kBlockN_, int kWarps_, int kStages_>
struct AttnTile {
  static constexpr int kD = kD_;
  static constexpr int kBlockM = kBlockM_;
  static constexpr int kBlockN = kBlockN_;
  static constexpr int kWarps = kWarps_;
  static constexpr int kStages = kStages_;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kRowsPerWarp = kBlockM / kWarps;
  static constexpr int kMTiles = kRowsPerWarp / 16;
  static constexpr int kNTiles = kBlockN / 8;  // n8 tiles of S per warp row tile
  static constexpr int kDTiles = kD / 8;       // n8 tiles of O
  static constexpr int kKSteps = kD / 16;      // k16 steps of Q K^T
  static constexpr int kChunks = kD / 8;       // 16-byte chunks per row
  static constexpr int kQElems = kBlockM * kD;
  static constexpr int kKvElems = kBlockN * kD;
  static constexpr int kSmemBytes = (kQElems + 2 * kStages * kKvElems) * 2;
  static_assert(kD == 64 || kD == 128, "D is 64 or 128");
  static_assert(kRowsPerWarp % 16 == 0, "each warp owns whole m16 tiles of query rows");
  static_assert(kBlockN % 16 == 0, "BLOCK_N is a multiple of 16 (P V's k16 steps)");
  static_assert(kStages >= 2, "at least double buffering");
};

// Element strides (batch, head, seq) and the element offset of the first row of Q, K, V and O,
// and the mask's batch stride: 17 int64 by value (KernelArg::kInt64Array).
struct AttnStrides {
  s64 q[4], k[4], v[4], o[4];
  s64 mask_batch;
};

// ---- PTX wrappers (cp.async and ldmatrix: sm_80+; mma.sync m16n8k16: sm_80+) ----

// 16 bytes global -> shared, asynchronously; `valid` false writes 16 zero bytes instead.
__device__ __forceinline__ void AttnCpAsync16(void* smem, const void* gmem, bool valid) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const int src_bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(gmem), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void AttnCpAsyncCommit() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}
// Waits until at most N of this thread's committed groups are pending.
template <int N>
__device__ __forceinline__ void AttnCpAsyncWait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

__device__ __forceinline__ void AttnLdmatrixX4(unsigned (&r)[4], const void* smem) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}
__device__ __forceinline__ void AttnLdmatrixX4Trans(unsigned (&r)[4], const void* smem) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}

// Two floats as a packed f16x2 (the low half first: the fragment's lower column).
__device__ __forceinline__ unsigned AttnPackF16x2(float lo, float hi) {
  return static_cast<unsigned>(FloatToF16Bits(lo)) |
         (static_cast<unsigned>(FloatToF16Bits(hi)) << 16);
}

// ---- shared memory tiles ----

// Element offset of (row, col) in a swizzled [rows, kD] tile; col a multiple of 8 for the
// 16-byte accesses (cp.async, ldmatrix rows), any col for single elements.
template <int kD>
__device__ __forceinline__ int AttnSwizzle(int row, int col) {
  return row * kD + (((col >> 3) ^ (row & 7)) << 3) + (col & 7);
}

// rows x kD elements from `g` (row stride `row_stride`) into the swizzled tile `s`; rows at or past
// `valid_rows` are zero-filled (their address clamped to row 0, which is never read).
template <typename Tile, int kRows>
__device__ __forceinline__ void AttnLoadTile(f16* s, const f16* g, s64 row_stride, int valid_rows) {
  constexpr int kTotal = kRows * Tile::kChunks;
  for (int c = threadIdx.x; c < kTotal; c += Tile::kThreads) {
    const int row = c / Tile::kChunks, col = (c % Tile::kChunks) * 8;
    const bool valid = row < valid_rows;
    const f16* src = g + (valid ? row * row_stride : 0) + col;
    AttnCpAsync16(s + AttnSwizzle<Tile::kD>(row, col), src, valid);
  }
}

// The mask value of key `j` in log2 units (0 without a mask).
template <AttnMask kMask>
__device__ __forceinline__ float AttnMaskLog2(const void* mask, int j) {
  constexpr float kLog2e = 1.4426950408889634f;
  if constexpr (kMask == AttnMask::kF32) {
    return static_cast<const float*>(mask)[j] * kLog2e;
  } else if constexpr (kMask == AttnMask::kF16) {
    return F16ToFloat(static_cast<const f16*>(mask)[j]) * kLog2e;
  } else {
    return 0.0f;
  }
}

// ---- the per-warp state: Q fragments, running output, row max and sum ----

template <typename Tile>
struct AttnWarpState {
  unsigned q[Tile::kMTiles][Tile::kKSteps][4];
  float o[Tile::kMTiles][Tile::kDTiles][4];
  // Per m tile, rows g and g + 8 (g = lane / 4): the running max (log2 units) and this thread's
  // share of the running sum (its columns; the quad's shares are added at the end).
  float row_max[Tile::kMTiles][2];
  float row_sum[Tile::kMTiles][2];
};

// The warp's Q rows [row0, row0 + kRowsPerWarp) as m16n8k16 A fragments.
template <typename Tile>
__device__ __forceinline__ void AttnLoadQ(AttnWarpState<Tile>& st, const f16* sq, int row0) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int mt = 0; mt < Tile::kMTiles; ++mt) {
#pragma unroll
    for (int ks = 0; ks < Tile::kKSteps; ++ks) {
      const int row = row0 + mt * 16 + (lane & 15);
      const int col = ks * 16 + (lane >> 4) * 8;
      AttnLdmatrixX4(st.q[mt][ks], sq + AttnSwizzle<Tile::kD>(row, col));
    }
  }
}

// S = Q K^T for the warp's rows and the tile's kBlockN keys: K's rows as B's columns, two n8
// tiles per ldmatrix.x4.
template <typename Tile>
__device__ __forceinline__ void AttnScores(float (&s)[Tile::kMTiles][Tile::kNTiles][4],
                                           const AttnWarpState<Tile>& st, const f16* sk) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int mt = 0; mt < Tile::kMTiles; ++mt) {
#pragma unroll
    for (int nt = 0; nt < Tile::kNTiles; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) s[mt][nt][e] = 0.0f;
    }
  }
#pragma unroll
  for (int ks = 0; ks < Tile::kKSteps; ++ks) {
#pragma unroll
    for (int np = 0; np < Tile::kNTiles / 2; ++np) {
      unsigned b[4];
      const int key = np * 16 + (lane & 7) + (lane >> 4) * 8;
      const int col = ks * 16 + ((lane >> 3) & 1) * 8;
      AttnLdmatrixX4(b, sk + AttnSwizzle<Tile::kD>(key, col));
#pragma unroll
      for (int mt = 0; mt < Tile::kMTiles; ++mt) {
        MmaF16M16N8K16(s[mt][2 * np], st.q[mt][ks], b[0], b[1]);
        MmaF16M16N8K16(s[mt][2 * np + 1], st.q[mt][ks], b[2], b[3]);
      }
    }
  }
}

// The online softmax step: S into log2 units (scale, mask, -inf past seq_kv and, causal, past
// each query row `query0` + its row in the warp), the new row max, the running output and sum
// rescaled to it, and S replaced by P = exp2(S - max).
template <typename Tile, AttnMask kMask>
__device__ __forceinline__ void AttnSoftmaxStep(float (&s)[Tile::kMTiles][Tile::kNTiles][4],
                                                AttnWarpState<Tile>& st, const void* mask, int key0,
                                                int seq_kv, float scale_log2, int query0) {
  const int lane = threadIdx.x & 31;
  float bias[Tile::kNTiles][2];
#pragma unroll
  for (int nt = 0; nt < Tile::kNTiles; ++nt) {
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      const int j = key0 + nt * 8 + (lane & 3) * 2 + c;
      bias[nt][c] = j < seq_kv ? AttnMaskLog2<kMask>(mask, j) : -__int_as_float(0x7f800000);
    }
  }
#pragma unroll
  for (int mt = 0; mt < Tile::kMTiles; ++mt) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {  // rows g and g + 8
      float m = st.row_max[mt][half];
      // This lane's query row of m16 tile mt (accumulator rows lane / 4 and lane / 4 + 8).
      [[maybe_unused]] const int row = query0 + mt * 16 + (lane >> 2) + half * 8;
#pragma unroll
      for (int nt = 0; nt < Tile::kNTiles; ++nt) {
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          float& x = s[mt][nt][half * 2 + c];
          x = fmaf(x, scale_log2, bias[nt][c]);
          if constexpr (kMask == AttnMask::kCausal) {
            if (key0 + nt * 8 + (lane & 3) * 2 + c > row) x = -__int_as_float(0x7f800000);
          }
          m = fmaxf(m, x);
        }
      }
      m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
      m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
      // A row with no finite score yet: subtract 0, so that exp2(-inf - -inf) is not NaN.
      const float base = m == -__int_as_float(0x7f800000) ? 0.0f : m;
      const float alpha = exp2f(st.row_max[mt][half] - base);
      st.row_max[mt][half] = m;
      float sum = 0.0f;
#pragma unroll
      for (int nt = 0; nt < Tile::kNTiles; ++nt) {
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          float& x = s[mt][nt][half * 2 + c];
          x = exp2f(x - base);
          sum += x;
        }
      }
      st.row_sum[mt][half] = st.row_sum[mt][half] * alpha + sum;
#pragma unroll
      for (int dt = 0; dt < Tile::kDTiles; ++dt) {
        st.o[mt][dt][half * 2] *= alpha;
        st.o[mt][dt][half * 2 + 1] *= alpha;
      }
    }
  }
}

// O += P V: P's accumulators of n8 tiles 2k and 2k + 1 are the A fragment of k16 step k; V's B
// fragments by ldmatrix.trans, two d8 tiles per x4.
template <typename Tile>
__device__ __forceinline__ void AttnAccumulate(const float (&p)[Tile::kMTiles][Tile::kNTiles][4],
                                               AttnWarpState<Tile>& st, const f16* sv) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int kk = 0; kk < Tile::kNTiles / 2; ++kk) {
    unsigned a[Tile::kMTiles][4];
#pragma unroll
    for (int mt = 0; mt < Tile::kMTiles; ++mt) {
      a[mt][0] = AttnPackF16x2(p[mt][2 * kk][0], p[mt][2 * kk][1]);
      a[mt][1] = AttnPackF16x2(p[mt][2 * kk][2], p[mt][2 * kk][3]);
      a[mt][2] = AttnPackF16x2(p[mt][2 * kk + 1][0], p[mt][2 * kk + 1][1]);
      a[mt][3] = AttnPackF16x2(p[mt][2 * kk + 1][2], p[mt][2 * kk + 1][3]);
    }
#pragma unroll
    for (int dp = 0; dp < Tile::kDTiles / 2; ++dp) {
      unsigned b[4];
      const int key = kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
      const int col = dp * 16 + (lane >> 4) * 8;
      AttnLdmatrixX4Trans(b, sv + AttnSwizzle<Tile::kD>(key, col));
#pragma unroll
      for (int mt = 0; mt < Tile::kMTiles; ++mt) {
        MmaF16M16N8K16(st.o[mt][2 * dp], a[mt], b[0], b[1]);
        MmaF16M16N8K16(st.o[mt][2 * dp + 1], a[mt], b[2], b[3]);
      }
    }
  }
}

// O / row sum, rounded to float16, into the warp's rows of the (now free) Q tile, then out to
// global memory 16 bytes at a time, rows at or past `valid_rows` (relative to the CTA) skipped.
template <typename Tile>
__device__ __forceinline__ void AttnStore(AttnWarpState<Tile>& st, f16* sq, int row0, f16* o,
                                          s64 row_stride, int valid_rows) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int mt = 0; mt < Tile::kMTiles; ++mt) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      float l = st.row_sum[mt][half];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      const float inv = l > 0.0f ? 1.0f / l : 0.0f;
      const int row = row0 + mt * 16 + (lane >> 2) + half * 8;
#pragma unroll
      for (int dt = 0; dt < Tile::kDTiles; ++dt) {
        const int col = dt * 8 + (lane & 3) * 2;
        *reinterpret_cast<unsigned*>(sq + AttnSwizzle<Tile::kD>(row, col)) =
            AttnPackF16x2(st.o[mt][dt][half * 2] * inv, st.o[mt][dt][half * 2 + 1] * inv);
      }
    }
  }
  __syncwarp();
  constexpr int kTotal = Tile::kRowsPerWarp * Tile::kChunks;
  for (int c = lane; c < kTotal; c += 32) {
    const int row = row0 + c / Tile::kChunks, col = (c % Tile::kChunks) * 8;
    if (row >= valid_rows) continue;
    *reinterpret_cast<uint4*>(o + row * row_stride + col) =
        *reinterpret_cast<const uint4*>(sq + AttnSwizzle<Tile::kD>(row, col));
  }
}

// grid (ceil(seq_q / BLOCK_M), batch * heads), Tile::kThreads threads, Tile::kSmemBytes of
// dynamic shared memory. `mask` is read only when kMask != kNone.
template <typename Tile, AttnMask kMask>
__global__ void __launch_bounds__(Tile::kThreads)
    attention_fwd(const f16* __restrict__ q, const f16* __restrict__ k, const f16* __restrict__ v,
                  const void* __restrict__ mask, f16* __restrict__ o, AttnStrides st_, int heads,
                  int seq_q, int seq_kv, float scale_log2) {
  extern __shared__ __align__(128) unsigned char attn_smem[];
  f16* sq = reinterpret_cast<f16*>(attn_smem);
  f16* skv = sq + Tile::kQElems;  // stage s: K at 2 s kKvElems, V after it
  const int b = blockIdx.y / heads, h = blockIdx.y % heads;
  const int m0 = blockIdx.x * Tile::kBlockM;
  const f16* qg = q + st_.q[3] + b * st_.q[0] + h * st_.q[1] + m0 * st_.q[2];
  const f16* kg = k + st_.k[3] + b * st_.k[0] + h * st_.k[1];
  const f16* vg = v + st_.v[3] + b * st_.v[0] + h * st_.v[1];
  const void* mask_b = nullptr;
  if constexpr (kMask == AttnMask::kF32) {
    mask_b = static_cast<const float*>(mask) + b * st_.mask_batch;
  } else if constexpr (kMask == AttnMask::kF16) {
    mask_b = static_cast<const f16*>(mask) + b * st_.mask_batch;
  }
  const int q_rows = seq_q - m0;
  // Causal: keys past the CTA's last query row are masked for all its rows; their tiles are
  // skipped.
  const int keys = kMask == AttnMask::kCausal ? min(seq_kv, m0 + Tile::kBlockM) : seq_kv;
  const int tiles = (keys + Tile::kBlockN - 1) / Tile::kBlockN;

  GridDependencyWait();
  AttnLoadTile<Tile, Tile::kBlockM>(sq, qg, st_.q[2], q_rows);
  AttnCpAsyncCommit();
#pragma unroll
  for (int s = 0; s < Tile::kStages - 1; ++s) {
    if (s < tiles) {
      const int key0 = s * Tile::kBlockN;
      f16* stage = skv + 2 * s * Tile::kKvElems;
      AttnLoadTile<Tile, Tile::kBlockN>(stage, kg + key0 * st_.k[2], st_.k[2], seq_kv - key0);
      AttnLoadTile<Tile, Tile::kBlockN>(stage + Tile::kKvElems, vg + key0 * st_.v[2], st_.v[2],
                                        seq_kv - key0);
    }
    AttnCpAsyncCommit();  // empty groups keep the count uniform
  }

  AttnWarpState<Tile> st;
  const int warp = threadIdx.x >> 5;
  const int row0 = warp * Tile::kRowsPerWarp;
  AttnCpAsyncWait<Tile::kStages - 1>();  // Q's group
  __syncthreads();
  AttnLoadQ(st, sq, row0);
#pragma unroll
  for (int mt = 0; mt < Tile::kMTiles; ++mt) {
#pragma unroll
    for (int dt = 0; dt < Tile::kDTiles; ++dt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) st.o[mt][dt][e] = 0.0f;
    }
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      st.row_max[mt][half] = -__int_as_float(0x7f800000);
      st.row_sum[mt][half] = 0.0f;
    }
  }

  for (int j = 0; j < tiles; ++j) {
    AttnCpAsyncWait<Tile::kStages - 2>();  // tile j's group
    __syncthreads();  // every thread's part of tile j is in; tile j - 1's stage is free
    const int next = j + Tile::kStages - 1;
    if (next < tiles) {
      const int key0 = next * Tile::kBlockN;
      f16* stage = skv + 2 * (next % Tile::kStages) * Tile::kKvElems;
      AttnLoadTile<Tile, Tile::kBlockN>(stage, kg + key0 * st_.k[2], st_.k[2], seq_kv - key0);
      AttnLoadTile<Tile, Tile::kBlockN>(stage + Tile::kKvElems, vg + key0 * st_.v[2], st_.v[2],
                                        seq_kv - key0);
    }
    AttnCpAsyncCommit();
    const f16* sk = skv + 2 * (j % Tile::kStages) * Tile::kKvElems;
    float s[Tile::kMTiles][Tile::kNTiles][4];
    AttnScores(s, st, sk);
    AttnSoftmaxStep<Tile, kMask>(s, st, mask_b, j * Tile::kBlockN, seq_kv, scale_log2, m0 + row0);
    AttnAccumulate(s, st, sk + Tile::kKvElems);
  }
  AttnCpAsyncWait<0>();
  LaunchDependents();
  AttnStore(st, sq, row0, o + st_.o[3] + b * st_.o[0] + h * st_.o[1] + m0 * st_.o[2], st_.o[2],
            q_rows);
}

}  // namespace tunejit

#ifdef TUNEJIT_NVCC_CHECK
// ViT-B/16 and BERT-base (D 64) without and with a float32 mask, and D 128 with a float16 mask,
// two m16 tiles per warp and three stages.
template __global__ void
tunejit::attention_fwd<tunejit::AttnTile<64, 64, 64, 4, 2>, tunejit::AttnMask::kNone>(
    const tunejit::f16*, const tunejit::f16*, const tunejit::f16*, const void*, tunejit::f16*,
    tunejit::AttnStrides, int, int, int, float);
template __global__ void
tunejit::attention_fwd<tunejit::AttnTile<64, 128, 128, 8, 3>, tunejit::AttnMask::kF32>(
    const tunejit::f16*, const tunejit::f16*, const tunejit::f16*, const void*, tunejit::f16*,
    tunejit::AttnStrides, int, int, int, float);
template __global__ void
tunejit::attention_fwd<tunejit::AttnTile<128, 128, 32, 4, 3>, tunejit::AttnMask::kF16>(
    const tunejit::f16*, const tunejit::f16*, const tunejit::f16*, const void*, tunejit::f16*,
    tunejit::AttnStrides, int, int, int, float);
// GPT-2 small and Llama (D 64 and 128) causal.
template __global__ void
tunejit::attention_fwd<tunejit::AttnTile<64, 128, 64, 8, 2>, tunejit::AttnMask::kCausal>(
    const tunejit::f16*, const tunejit::f16*, const tunejit::f16*, const void*, tunejit::f16*,
    tunejit::AttnStrides, int, int, int, float);
template __global__ void
tunejit::attention_fwd<tunejit::AttnTile<128, 64, 64, 4, 2>, tunejit::AttnMask::kCausal>(
    const tunejit::f16*, const tunejit::f16*, const tunejit::f16*, const void*, tunejit::f16*,
    tunejit::AttnStrides, int, int, int, float);
#endif  // TUNEJIT_NVCC_CHECK
