// File: kernel_sources/batch_matmul.cu
// AutoTVM's batch_matmul.cuda schedule (TVM 0.7 topi/cuda/batch_matmul.py, added by PR #5752;
// ops/batch_matmul.cc holds its space, rules and fallback):
//   out[b, i, j] = sum_k x[b, i, k] * y[b, j, k]    x [XB, M, K], y [YB, N, K], out [B, M, N]
// then the fused epilogue (common.cuh) on channel j. A batch dim of 1 broadcasts (its batch
// stride is 0). With Y_KN = 1, y is read as [YB, K, N] instead: the graph's matmul operand, which
// Relay transposes before batch_matmul; the tiles are the same, staged from the other layout.
//
//   batch_matmul<BatchMatmulTile<TY, YI, TX, XI, KF, UNROLL>, BatchMatmulIo<Y_KN, kEpi>>
//   tile_y = [-1, TY, YI] (rows i), tile_x = [-1, TX, XI] (columns j), tile_k = [-1, KF],
//   UNROLL = auto_unroll_max_step.
//   grid (ceil(N / BX), ceil(M / BY), B), block (TX, TY), BY = TY * YI, BX = TX * XI.
//
// Thread (tx, ty) owns rows i = by * BY + ty * YI + yi and columns j = bx * BX + tx * XI + xi
// (TVM's 3-way splits have no virtual threads). The reduction runs ceil(K / KF) steps: each stages
// AA[BY][KF] (x's rows) and BB[BX][KF] (y's rows) in shared memory, in one buffer (TVM does not
// double-buffer this schedule), then for each ki < KF copies the thread's YI values of AA and XI
// of BB into registers (TVM's AL, BL) and accumulates their outer product. Tails are zero-filled
// in the tiles and guarded at the store, so any M, N, K is correct.
//
// Deviation from TVM: the cooperative loads use a flat, coalesced thread stride instead of TVM's
// mapping (a tile's rows split in TY parts on threadIdx.y, its k in TX contiguous chunks on
// threadIdx.x); the staged tiles, and so the geometry and shared memory, are identical.
// UNROLL approximates auto_unroll_max_step (common.cuh UnrollIf): the ki loop is unrolled when
// KF * (YI + XI + YI * XI) statements fit in it; loops over registers always are. unroll_explicit
// has no CUDA-C analogue and is not a template argument.
#include "common.cuh"

namespace tunejit {

// A block's tile and a thread's share of it (the knobs).
template <int TY, int YI, int TX, int XI, int KF, int UNROLL>
struct BatchMatmulTile {
  static constexpr int kTy = TY, kYi = YI, kTx = TX, kXi = XI, kKf = KF, kUnroll = UNROLL;
  static constexpr int kBy = TY * YI, kBx = TX * XI, kThreads = TX * TY;
};

// How y is laid out ([B, N, K], TVM's, or [B, K, N]) and the epilogue code (common.cuh).
template <int Y_KN, int EPI>
struct BatchMatmulIo {
  static constexpr int kYKn = Y_KN, kEpi = EPI;
};

// Stages rows [row0, row0 + kRows) x k [k0, k0 + KF) of a row-major [rows, k] matrix into
// tile[kRows][KF]; zeros outside it.
template <typename Tile, int kRows>
__device__ __forceinline__ void StageRowsByK(float (*tile)[Tile::kKf],
                                             const float* __restrict__ src, int row0, int rows,
                                             int k0, int k, int tid) {
  constexpr int KF = Tile::kKf;
  constexpr int kSize = kRows * KF;
#pragma unroll(UnrollIf(Tile::kUnroll, CeilDiv(kSize, Tile::kThreads), 1))
  for (int e = tid; e < kSize; e += Tile::kThreads) {
    const int r = e / KF;
    const int kk = e % KF;
    const int gr = row0 + r;
    const int gk = k0 + kk;
    tile[r][kk] = (gr < rows && gk < k) ? __ldg(src + static_cast<s64>(gr) * k + gk) : 0.0f;
  }
}

// The same tile from a row-major [k, cols] matrix (y as [K, N]): coalesced along the columns.
template <typename Tile, int kCols>
__device__ __forceinline__ void StageColsByK(float (*tile)[Tile::kKf],
                                             const float* __restrict__ src, int col0, int cols,
                                             int k0, int k, int tid) {
  constexpr int kSize = kCols * Tile::kKf;
#pragma unroll(UnrollIf(Tile::kUnroll, CeilDiv(kSize, Tile::kThreads), 1))
  for (int e = tid; e < kSize; e += Tile::kThreads) {
    const int kk = e / kCols;
    const int c = e % kCols;
    const int gc = col0 + c;
    const int gk = k0 + kk;
    tile[c][kk] = (gc < cols && gk < k) ? __ldg(src + static_cast<s64>(gk) * cols + gc) : 0.0f;
  }
}

template <typename Tile, typename Io>
__global__ void __launch_bounds__(Tile::kThreads)
    batch_matmul(const float* __restrict__ x, const float* __restrict__ y,
                 const float* __restrict__ bias, const float* __restrict__ scale, void* out, int m,
                 int n, int k, s64 x_batch_stride, s64 y_batch_stride) {
  constexpr int YI = Tile::kYi, XI = Tile::kXi, KF = Tile::kKf;
  __shared__ float aa[Tile::kBy][KF];
  __shared__ float bb[Tile::kBx][KF];
  const int tx = threadIdx.x;
  const int ty = threadIdx.y;
  const int tid = ty * Tile::kTx + tx;
  const int b = blockIdx.z;
  const int i0 = blockIdx.y * Tile::kBy;
  const int j0 = blockIdx.x * Tile::kBx;
  const float* xb = x + b * x_batch_stride;
  const float* yb = y + b * y_batch_stride;

  float acc[YI][XI];
#pragma unroll
  for (int yi = 0; yi < YI; ++yi) {
#pragma unroll
    for (int xi = 0; xi < XI; ++xi) acc[yi][xi] = 0.0f;
  }

  const int k_steps = CeilDiv(k, KF);
  for (int ko = 0; ko < k_steps; ++ko) {
    __syncthreads();  // the previous step's readers are done with the tiles
    StageRowsByK<Tile, Tile::kBy>(aa, xb, i0, m, ko * KF, k, tid);
    if constexpr (Io::kYKn != 0) {
      StageColsByK<Tile, Tile::kBx>(bb, yb, j0, n, ko * KF, k, tid);
    } else {
      StageRowsByK<Tile, Tile::kBx>(bb, yb, j0, n, ko * KF, k, tid);
    }
    __syncthreads();
#pragma unroll(UnrollIf(Tile::kUnroll, KF, YI + XI + YI * XI))
    for (int ki = 0; ki < KF; ++ki) {
      float al[YI];
      float bl[XI];
#pragma unroll
      for (int yi = 0; yi < YI; ++yi) al[yi] = aa[ty * YI + yi][ki];
#pragma unroll
      for (int xi = 0; xi < XI; ++xi) bl[xi] = bb[tx * XI + xi][ki];
#pragma unroll
      for (int yi = 0; yi < YI; ++yi) {
#pragma unroll
        for (int xi = 0; xi < XI; ++xi) acc[yi][xi] += al[yi] * bl[xi];
      }
    }
  }

#pragma unroll
  for (int yi = 0; yi < YI; ++yi) {
    const int i = i0 + ty * YI + yi;
    if (i >= m) break;
#pragma unroll
    for (int xi = 0; xi < XI; ++xi) {
      const int j = j0 + tx * XI + xi;
      if (j < n) {
        EpilogueOp<Io::kEpi, float>::Store(out, (static_cast<s64>(b) * m + i) * n + j, acc[yi][xi],
                                           j, bias, scale);
      }
    }
  }
}

}  // namespace tunejit

#ifdef TUNEJIT_NVCC_CHECK
#define TUNEJIT_BATCH_MATMUL(TY, YI, TX, XI, KF, UNROLL, Y_KN, EPI)                             \
  template __global__ void tunejit::batch_matmul<                                               \
      tunejit::BatchMatmulTile<TY, YI, TX, XI, KF, UNROLL>, tunejit::BatchMatmulIo<Y_KN, EPI>>( \
      const float*, const float*, const float*, const float*, void*, int, int, int, long long,  \
      long long)
TUNEJIT_BATCH_MATMUL(8, 8, 8, 8, 8, 16, 0, 0);  // TVM's fallback for M, N multiples of 64
TUNEJIT_BATCH_MATMUL(16, 3, 19, 7, 19, 64, 0, 0);
TUNEJIT_BATCH_MATMUL(1, 1, 1, 1, 1, 8, 1, 7);
TUNEJIT_BATCH_MATMUL(4, 2, 32, 1, 5, 32, 1, 11);
#endif  // TUNEJIT_NVCC_CHECK
