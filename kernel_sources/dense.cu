// File: kernel_sources/dense.cu
// AutoTVM's two CUDA dense schedules (TVM 0.7.dev1; docs/tvm-templates.md sections 2 and 3):
// C[i, j] = sum_k A[i, k] * W[j, k], A [M, K], W [N, K] (not transposed), C [M, N], then the fused
// epilogue (common.cuh) on output channel j.
//
//   dense_small_batch<KF, kEpi>: grid (N, M), block (KF). One output per block; thread t sums
//     k = t, t + KF, ... (coalesced), then a block reduction (warp shuffles instead of TVM's shared
//     tree: same geometry, last-bit differences only). KF = tile_k[1].
//   dense_large_batch<VX, TX, XI, VY, TY, YI, KT, KI, kEpi>: grid (ceil(M/BX), ceil(N/BY)),
//     block (TX, TY), BX = VX*TX*XI, BY = VY*TY*YI, KC = KT*KI. Thread (tx, ty) owns rows
//     bx*BX + vx*TX*XI + tx*XI + xi and columns by*BY + vy*TY*YI + ty*YI + yi. Double-buffered
//     shared tiles AA[BX][KC], BB[BY][KC] loaded with TVM's loader mapping (rows in TX groups on
//     threadIdx.y, k in chunks of 4*TX, 4 consecutive k per threadIdx.x); requires TX == TY.
// Every bound is guarded, so any M, N, K is correct.
#include "common.cuh"

namespace tunejit {

template <int KF, int kEpi>
__global__ void __launch_bounds__(KF)
    dense_small_batch(const float* __restrict__ a, const float* __restrict__ w,
                      const float* __restrict__ bias, const float* __restrict__ scale, void* out,
                      int m, int n, int k) {
  const int j = blockIdx.x;
  const int i = blockIdx.y;
  const float* a_row = a + static_cast<s64>(i) * k;
  const float* w_row = w + static_cast<s64>(j) * k;
  float partial = 0.0f;
#pragma unroll 4
  for (int kk = threadIdx.x; kk < k; kk += KF) partial += __ldg(a_row + kk) * __ldg(w_row + kk);
  const float sum = BlockSum<KF>(partial);
  if (threadIdx.x == 0) {
    EpilogueOp<kEpi, float>::Store(out, static_cast<s64>(i) * n + j, sum, j, bias, scale);
  }
  (void)m;
}

// Loads rows [row0, row0 + kRows) x k-slice [k0, k0 + KC) of a row-major [rows_total, k] matrix
// into tile[kRows][KC] with the dense_large_batch loader mapping of `kThreads` x `kThreads`
// threads. Out-of-range elements are 0.
template <int kRows, int KC, int kThreads>
__device__ __forceinline__ void DenseLoadTile(float (*tile)[KC], const float* __restrict__ src,
                                              int row0, int rows_total, int k0, int k) {
  constexpr int kRowsPerGroup = CeilDiv(kRows, kThreads);
  constexpr int kChunks = CeilDiv(KC, 4 * kThreads);
  // Unrolled only while small: long k tiles would otherwise cost ptxas minutes (see kKtUnroll).
  constexpr int kChunkUnroll = kChunks * kRowsPerGroup <= 64 ? kChunks : 1;
  const int tx = threadIdx.x;
  const int ty = threadIdx.y;
  // Four consecutive k per thread: one float4 when the slice is aligned and fully in range.
  const bool vector_ok = (KC % 4 == 0) && (k % 4 == 0) && (k0 + KC <= k);
#pragma unroll
  for (int r = 0; r < kRowsPerGroup; ++r) {
    const int row = ty * kRowsPerGroup + r;
    if (kRowsPerGroup * kThreads != kRows && row >= kRows) break;
    const int grow = row0 + row;
#pragma unroll kChunkUnroll
    for (int c = 0; c < kChunks; ++c) {
      const int kl = c * 4 * kThreads + tx * 4;
      if (kl >= KC) break;
      if (vector_ok && grow < rows_total) {
        const float4 v =
            __ldg(reinterpret_cast<const float4*>(src + static_cast<s64>(grow) * k + k0 + kl));
        tile[row][kl] = v.x;
        tile[row][kl + 1] = v.y;
        tile[row][kl + 2] = v.z;
        tile[row][kl + 3] = v.w;
        continue;
      }
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        if (kl + q < KC) {
          const int gk = k0 + kl + q;
          tile[row][kl + q] =
              (grow < rows_total && gk < k) ? __ldg(src + static_cast<s64>(grow) * k + gk) : 0.0f;
        }
      }
    }
  }
}

template <int VX, int TX, int XI, int VY, int TY, int YI, int KT, int KI, int kEpi>
__global__ void __launch_bounds__(TX* TY)
    dense_large_batch(const float* __restrict__ a, const float* __restrict__ w,
                      const float* __restrict__ bias, const float* __restrict__ scale, void* out,
                      int m, int n, int k) {
  static_assert(TX == TY, "dense_large_batch needs tile_x[2] == tile_y[2] (TVM VerifyGPUCode)");
  constexpr int BX = VX * TX * XI;
  constexpr int BY = VY * TY * YI;
  constexpr int KC = KT * KI;
  constexpr int kRowsX = VX * XI;
  constexpr int kColsY = VY * YI;
  __shared__ float aa[2][BX][KC];
  __shared__ float bb[2][BY][KC];
  const int tx = threadIdx.x;
  const int ty = threadIdx.y;
  const int row0 = blockIdx.x * BX;
  const int col0 = blockIdx.y * BY;

  float acc[kRowsX][kColsY];
#pragma unroll
  for (int x = 0; x < kRowsX; ++x) {
#pragma unroll
    for (int y = 0; y < kColsY; ++y) acc[x][y] = 0.0f;
  }

  const int k_steps = CeilDiv(k, KC);
  DenseLoadTile<BX, KC, TX>(aa[0], a, row0, m, 0, k);
  DenseLoadTile<BY, KC, TY>(bb[0], w, col0, n, 0, k);
  __syncthreads();
  for (int ko = 0; ko < k_steps; ++ko) {
    const int buf = ko & 1;
    // Double buffer: the next slice goes into the other half while this one is read. The barrier
    // at the end of the previous step guarantees nobody still reads that half.
    if (ko + 1 < k_steps) {
      DenseLoadTile<BX, KC, TX>(aa[buf ^ 1], a, row0, m, (ko + 1) * KC, k);
      DenseLoadTile<BY, KC, TY>(bb[buf ^ 1], w, col0, n, (ko + 1) * KC, k);
    }
    // TVM unrolls kt; we do so only while the unrolled body stays small, because a config with a
    // long k tile (KT in the thousands) otherwise takes ptxas minutes for no speed.
    constexpr int kKtUnroll = KT * KI * (kRowsX + kColsY + kRowsX * kColsY) <= 2048 ? KT : 1;
#pragma unroll kKtUnroll
    for (int kt = 0; kt < KT; ++kt) {
      float al[kRowsX][KI];
      float bl[kColsY][KI];
#pragma unroll
      for (int vx = 0; vx < VX; ++vx) {
#pragma unroll
        for (int xi = 0; xi < XI; ++xi) {
#pragma unroll
          for (int ki = 0; ki < KI; ++ki) {
            al[vx * XI + xi][ki] = aa[buf][vx * TX * XI + tx * XI + xi][kt * KI + ki];
          }
        }
      }
#pragma unroll
      for (int vy = 0; vy < VY; ++vy) {
#pragma unroll
        for (int yi = 0; yi < YI; ++yi) {
#pragma unroll
          for (int ki = 0; ki < KI; ++ki) {
            bl[vy * YI + yi][ki] = bb[buf][vy * TY * YI + ty * YI + yi][kt * KI + ki];
          }
        }
      }
#pragma unroll
      for (int ki = 0; ki < KI; ++ki) {
#pragma unroll
        for (int x = 0; x < kRowsX; ++x) {
#pragma unroll
          for (int y = 0; y < kColsY; ++y) acc[x][y] += al[x][ki] * bl[y][ki];
        }
      }
    }
    __syncthreads();
  }

#pragma unroll
  for (int vx = 0; vx < VX; ++vx) {
#pragma unroll
    for (int xi = 0; xi < XI; ++xi) {
      const int i = row0 + vx * TX * XI + tx * XI + xi;
      if (i >= m) continue;
#pragma unroll
      for (int vy = 0; vy < VY; ++vy) {
#pragma unroll
        for (int yi = 0; yi < YI; ++yi) {
          const int j = col0 + vy * TY * YI + ty * YI + yi;
          if (j < n) {
            EpilogueOp<kEpi, float>::Store(out, static_cast<s64>(i) * n + j,
                                           acc[vx * XI + xi][vy * YI + yi], j, bias, scale);
          }
        }
      }
    }
  }
}

}  // namespace tunejit

#ifdef TUNEJIT_NVCC_CHECK
template __global__ void tunejit::dense_small_batch<64, 0>(const float*, const float*, const float*,
                                                           const float*, void*, int, int, int);
template __global__ void tunejit::dense_small_batch<7, 11>(const float*, const float*, const float*,
                                                           const float*, void*, int, int, int);
template __global__ void tunejit::dense_large_batch<2, 4, 1, 2, 4, 1, 8, 2, 0>(
    const float*, const float*, const float*, const float*, void*, int, int, int);
template __global__ void tunejit::dense_large_batch<2, 16, 2, 2, 16, 2, 8, 1, 7>(
    const float*, const float*, const float*, const float*, void*, int, int, int);
template __global__ void tunejit::dense_large_batch<1, 2, 1, 1, 2, 1, 1024, 1, 0>(
    const float*, const float*, const float*, const float*, void*, int, int, int);
#endif  // TUNEJIT_NVCC_CHECK
