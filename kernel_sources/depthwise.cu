// File: kernel_sources/depthwise.cu
// AutoTVM's depthwise_conv2d_nchw.cuda schedule (TVM 0.7.dev1 schedule_depthwise_conv2d_nchw;
// docs/tvm-templates.md section 9): output channel f reads input channel f / MULT,
//   out[n, f, y, x] = sum_{ry, rx} pad(data)[n, f/MULT, y*SH + ry*DH, x*SW + rx*DW] * W[f, ry, rx]
// (W is [C, MULT, KH, KW], i.e. W[f] with f = c*MULT + m), then the fused epilogue on channel f.
//
// Launch: grid (ceil(OW/BX), ceil(OH/BY), N * ceil(C*MULT/BF)), block (TX, TY, TF); ownership as
// conv2d_nchw (tile_f, tile_y, tile_x = [-1, V, T, I]; vthreads strided by T*I). There is no
// reduction split: the block stages its whole input window AA[CSPAN][ROWS][COLS] (CSPAN input
// channels) and weights WW[BF][KH][KW] in shared memory once (TVM: cache_read at bx, cooperative
// fetch with the factor chain), then each thread accumulates from shared memory.
// kUnroll is auto_unroll_max_step (UnrollIf on the ry/rx loops); unroll_explicit has no CUDA-C
// analogue.
#include "common.cuh"

namespace tunejit {

template <int VF, int TF, int FI, int VY, int TY, int YI, int VX, int TX, int XI, int KH, int KW,
          int SH, int SW, int DH, int DW, int MULT, int CSPAN, int kUnroll, int kEpi>
__global__ void __launch_bounds__(TX* TY* TF)
    depthwise_conv2d_nchw(const float* __restrict__ data, const float* __restrict__ weight,
                          const float* __restrict__ bias, const float* __restrict__ scale,
                          void* out, int c, int h, int w, int oh, int ow, int pad_top,
                          int pad_left) {
  constexpr int BF = VF * TF * FI;
  constexpr int BY = VY * TY * YI;
  constexpr int BX = VX * TX * XI;
  constexpr int ROWS = (BY - 1) * SH + (KH - 1) * DH + 1;
  constexpr int COLS = (BX - 1) * SW + (KW - 1) * DW + 1;
  constexpr int kThreads = TX * TY * TF;
  constexpr int kAaSize = CSPAN * ROWS * COLS;
  constexpr int kWwSize = BF * KH * KW;
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
  const int co = c * MULT;
  const int f_blocks = CeilDiv(co, BF);
  const int nn = blockIdx.z / f_blocks;
  const int f0 = (blockIdx.z % f_blocks) * BF;
  const int c0 = f0 / MULT;
  const int y0 = blockIdx.y * BY;
  const int x0 = blockIdx.x * BX;
  const int row_base = y0 * SH - pad_top;
  const int col_base = x0 * SW - pad_left;
  const float* data_n = data + static_cast<s64>(nn) * c * h * w;

#pragma unroll(UnrollIf(kUnroll, CeilDiv(kAaSize, kThreads), 1))
  for (int e = tid; e < kAaSize; e += kThreads) {
    const int cl = e / (ROWS * COLS);
    const int r = (e / COLS) % ROWS;
    const int col = e % COLS;
    const int gc = c0 + cl;
    const int gy = row_base + r;
    const int gx = col_base + col;
    aa[e] = (gc < c && gy >= 0 && gy < h && gx >= 0 && gx < w)
                ? __ldg(data_n + (static_cast<s64>(gc) * h + gy) * w + gx)
                : 0.0f;
  }
#pragma unroll(UnrollIf(kUnroll, CeilDiv(kWwSize, kThreads), 1))
  for (int e = tid; e < kWwSize; e += kThreads) {
    const int gf = f0 + e / (KH * KW);
    ww[e] = gf < co ? __ldg(weight + static_cast<s64>(f0) * KH * KW + e) : 0.0f;
  }
  __syncthreads();

  float acc[NF][NY][NX];
#pragma unroll
  for (int f = 0; f < NF; ++f)
#pragma unroll
    for (int y = 0; y < NY; ++y)
#pragma unroll
      for (int x = 0; x < NX; ++x) acc[f][y][x] = 0.0f;

#pragma unroll(UnrollIf(kUnroll, KH, KW* kAcc))
  for (int ry = 0; ry < KH; ++ry) {
#pragma unroll(UnrollIf(kUnroll, KW, kAcc))
    for (int rx = 0; rx < KW; ++rx) {
#pragma unroll
      for (int vf = 0; vf < VF; ++vf)
#pragma unroll
        for (int fi = 0; fi < FI; ++fi) {
          const int fl = (vf * TF + tz) * FI + fi;
          // Channel of this output filter inside the staged window (0 when f is past the end:
          // that output is never stored).
          const int cl = MinInt((f0 + fl) / MULT - c0, CSPAN - 1);
          const float wv = ww[(fl * KH + ry) * KW + rx];
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
                  acc[vf * FI + fi][vy * YI + yi][vx * XI + xi] +=
                      aa[(cl * ROWS + yl * SH + ry * DH) * COLS + xl * SW + rx * DW] * wv;
                }
        }
    }
  }

  StoreTiledNchw<VF, TF, FI, VY, TY, YI, VX, TX, XI, kEpi>(acc, out, nn, co, oh, ow, f0, y0, x0,
                                                           bias, scale);
}

}  // namespace tunejit

#ifdef TUNEJIT_NVCC_CHECK
template __global__ void tunejit::depthwise_conv2d_nchw<1, 4, 1, 1, 7, 1, 1, 7, 1, 3, 3, 1, 1, 1, 1,
                                                        1, 4, 1500, 0>(const float*, const float*,
                                                                       const float*, const float*,
                                                                       void*, int, int, int, int,
                                                                       int, int, int);
template __global__ void tunejit::depthwise_conv2d_nchw<2, 2, 1, 1, 4, 2, 2, 8, 1, 5, 3, 2, 2, 1, 2,
                                                        3, 3, 0, 7>(const float*, const float*,
                                                                    const float*, const float*,
                                                                    void*, int, int, int, int, int,
                                                                    int, int);
#endif  // TUNEJIT_NVCC_CHECK
