// File: kernel_sources/conv2d_direct.cu
// AutoTVM's conv2d_nchw.cuda direct schedule (TVM 0.7.dev1 schedule_direct_cuda;
// docs/tvm-templates.md section 4):
//   out[n, f, y, x] = sum_{rc, ry, rx} pad(data)[n, rc, y*SH + ry*DH, x*SW + rx*DW] * W[f, rc, ry,
//   rx]
// then the fused epilogue (common.cuh) on channel f.
//
// Launch: grid (ceil(OW/BX), ceil(OH/BY), N * ceil(CO/BF)), block (TX, TY, TF), with
// BF = VF*TF*FI, BY = VY*TY*YI, BX = VX*TX*XI (tile_f, tile_y, tile_x = [-1, V, T, I]).
// Thread (tx, ty, tz) owns f = bf*BF + vf*TF*FI + tz*FI + fi (and likewise y, x): virtual threads
// are strided by T*I, exactly TVM's vthread ownership.
// Reduction: rco < ceil(CI/RC), ryo < ceil(KH/RY), rxo < ceil(KW/RX); per step the block stages the
// padded input tile AA[RC][ROWS][COLS] and the weight tile WW[BF][RC][RY][RX] in shared memory
// (no double buffering, as TVM), then accumulates from shared memory. Tails (splits that do not
// divide) are zero-filled in the tiles and guarded at the store, so every shape is correct.
// Deviation from TVM: the cooperative loads use a flat, coalesced thread stride instead of TVM's
// contiguous-chunk mapping; the staged tiles (and so the geometry and shared memory) are identical.
// kUnroll is auto_unroll_max_step (see UnrollIf); unroll_explicit has no CUDA-C analogue (both
// values end up as unrolled loops) and is not a template argument.
#include "common.cuh"

namespace tunejit {

template <int VF, int TF, int FI, int VY, int TY, int YI, int VX, int TX, int XI, int RC, int RY,
          int RX, int KH, int KW, int SH, int SW, int DH, int DW, int kUnroll, int kEpi>
__global__ void __launch_bounds__(TX* TY* TF)
    conv2d_nchw_direct(const float* __restrict__ data, const float* __restrict__ weight,
                       const float* __restrict__ bias, const float* __restrict__ scale, void* out,
                       int ci, int h, int w, int co, int oh, int ow, int pad_top, int pad_left) {
  constexpr int BF = VF * TF * FI;
  constexpr int BY = VY * TY * YI;
  constexpr int BX = VX * TX * XI;
  constexpr int ROWS = (BY - 1) * SH + (RY - 1) * DH + 1;
  constexpr int COLS = (BX - 1) * SW + (RX - 1) * DW + 1;
  constexpr int kThreads = TX * TY * TF;
  constexpr int kAaSize = RC * ROWS * COLS;
  constexpr int kWwSize = BF * RC * RY * RX;
  constexpr int NF = VF * FI;
  constexpr int NY = VY * YI;
  constexpr int NX = VX * XI;
  constexpr int kAcc = NF * NY * NX;
  __shared__ float aa[kAaSize];
  __shared__ float ww[kWwSize];

  const int tx = threadIdx.x;
  const int ty = threadIdx.y;
  const int tz = threadIdx.z;
  const int tid = (tz * TY + ty) * TX + tx;
  const int f_blocks = CeilDiv(co, BF);
  const int nn = blockIdx.z / f_blocks;
  const int f0 = (blockIdx.z % f_blocks) * BF;
  const int y0 = blockIdx.y * BY;
  const int x0 = blockIdx.x * BX;

  float acc[NF][NY][NX];
#pragma unroll
  for (int f = 0; f < NF; ++f)
#pragma unroll
    for (int y = 0; y < NY; ++y)
#pragma unroll
      for (int x = 0; x < NX; ++x) acc[f][y][x] = 0.0f;

  const float* data_n = data + static_cast<s64>(nn) * ci * h * w;
  const int rc_steps = CeilDiv(ci, RC);
  for (int rco = 0; rco < rc_steps; ++rco) {
    for (int ryo = 0; ryo < CeilDiv(KH, RY); ++ryo) {
      for (int rxo = 0; rxo < CeilDiv(KW, RX); ++rxo) {
        __syncthreads();
        const int row_base = y0 * SH + ryo * RY * DH - pad_top;
        const int col_base = x0 * SW + rxo * RX * DW - pad_left;
#pragma unroll(UnrollIf(kUnroll, CeilDiv(kAaSize, kThreads), 1))
        for (int e = tid; e < kAaSize; e += kThreads) {
          const int c = e / (ROWS * COLS);
          const int r = (e / COLS) % ROWS;
          const int col = e % COLS;
          const int gc = rco * RC + c;
          const int gy = row_base + r;
          const int gx = col_base + col;
          aa[e] = (gc < ci && gy >= 0 && gy < h && gx >= 0 && gx < w)
                      ? __ldg(data_n + (static_cast<s64>(gc) * h + gy) * w + gx)
                      : 0.0f;
        }
#pragma unroll(UnrollIf(kUnroll, CeilDiv(kWwSize, kThreads), 1))
        for (int e = tid; e < kWwSize; e += kThreads) {
          const int f = e / (RC * RY * RX);
          const int c = (e / (RY * RX)) % RC;
          const int ry = (e / RX) % RY;
          const int rx = e % RX;
          const int gf = f0 + f;
          const int gc = rco * RC + c;
          const int gry = ryo * RY + ry;
          const int grx = rxo * RX + rx;
          ww[e] = (gf < co && gc < ci && gry < KH && grx < KW)
                      ? __ldg(weight + ((static_cast<s64>(gf) * ci + gc) * KH + gry) * KW + grx)
                      : 0.0f;
        }
        __syncthreads();
#pragma unroll(UnrollIf(kUnroll, RC, RY* RX* kAcc))
        for (int rc = 0; rc < RC; ++rc) {
#pragma unroll(UnrollIf(kUnroll, RY, RX* kAcc))
          for (int ry = 0; ry < RY; ++ry) {
#pragma unroll(UnrollIf(kUnroll, RX, kAcc))
            for (int rx = 0; rx < RX; ++rx) {
              float wreg[NF];
#pragma unroll
              for (int vf = 0; vf < VF; ++vf)
#pragma unroll
                for (int fi = 0; fi < FI; ++fi)
                  wreg[vf * FI + fi] =
                      ww[(((vf * TF + tz) * FI + fi) * RC + rc) * RY * RX + ry * RX + rx];
#pragma unroll
              for (int vy = 0; vy < VY; ++vy)
#pragma unroll
                for (int yi = 0; yi < YI; ++yi)
#pragma unroll
                  for (int vx = 0; vx < VX; ++vx)
#pragma unroll
                    for (int xi = 0; xi < XI; ++xi) {
                      const int yl = (vy * TY + ty) * YI + yi;
                      const int xl = (vx * TX + tx) * XI + xi;
                      const float av =
                          aa[(rc * ROWS + yl * SH + ry * DH) * COLS + xl * SW + rx * DW];
#pragma unroll
                      for (int f = 0; f < NF; ++f)
                        acc[f][vy * YI + yi][vx * XI + xi] += wreg[f] * av;
                    }
            }
          }
        }
      }
    }
  }

  StoreTiledNchw<VF, TF, FI, VY, TY, YI, VX, TX, XI, kEpi>(acc, out, nn, co, oh, ow, f0, y0, x0,
                                                           bias, scale);
}

}  // namespace tunejit

#ifdef TUNEJIT_NVCC_CHECK
// The seed record [128,3,224,224]x[64,3,3,3] and a stride-2, dilated, tail-heavy variant.
template __global__ void tunejit::conv2d_nchw_direct<4, 4, 1, 2, 2, 2, 1, 32, 1, 3, 3, 3, 3, 3, 1,
                                                     1, 1, 1, 1500, 0>(const float*, const float*,
                                                                       const float*, const float*,
                                                                       void*, int, int, int, int,
                                                                       int, int, int, int);
template __global__ void tunejit::conv2d_nchw_direct<1, 4, 2, 1, 4, 1, 2, 8, 1, 5, 2, 1, 3, 3, 2, 2,
                                                     2, 1, 0, 11>(const float*, const float*,
                                                                  const float*, const float*, void*,
                                                                  int, int, int, int, int, int, int,
                                                                  int);
#endif  // TUNEJIT_NVCC_CHECK
