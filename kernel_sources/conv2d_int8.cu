// File: kernel_sources/conv2d_int8.cu
// AutoTVM's conv2d_NCHWc_int8.cuda (TVM 0.7.dev1 topi/cuda/conv2d_int8.py; docs/tvm-templates.md
// section 6): int8 NCHW convolution on 4-channel-packed data with __dp4a, int32 accumulation.
// Three kernels:
//   nchwc_int8_pack_data    (kRun)     data NCHW -> [N][C/4][H][W] of 32-bit words (4 int8
//   channels) nchwc_int8_pack_weight  (kPrepare) OIHW -> OIHW4o4i: [CO/4][CI/4][KH][KW][4 ob] words
//   (4 ib) conv2d_nchwc_int8       the tuned conv; writes the NCHW output through the epilogue
//   directly
//                           (no separate unpack kernel).
//
// Conv launch (spec 6.4): grid (ceil(OH/BY) * ceil(OW/BX), ceil((CO/4)/BF), ceil(N/BN)),
//   kFuseYX = 1: block (TY*TX, TF, TN), threadIdx.x = ty*TX + tx;
//   kFuseYX = 0: block (TX, TY, TN*TF), threadIdx.z = tn*TF + tf;
// tile_n/f/y/x = [-1, V, T, I]: thread t owns coordinate (b*V + v)*T*I + t*I + i for all v, i
// (virtual threads strided by T*I), i.e. (VN*NI)*(VF*FI)*(VY*YI)*(VX*XI)*4 int32 accumulators.
// Reduction: outer loops (rco, ryo, rxo) and inner loops (rci, ryi, rxi), both permuted by
// reorder_inner = (P0, P1, P2). The shared tiles AA[BN][RC][ROWS][COLS] (words) and
// WW[BF][RC][RY][RX][4] (words) are loaded once per (rco, ryo, rxo) step with TVM's pattern-B
// cooperative load (element e = o*threads + linear thread id); kAaDb / kWwDb double-buffer them
// (the next step's tile is loaded into the other half while this one is read). Tails are
// zero-filled and guarded, so every shape is correct.
// kUnroll is auto_unroll_max_step (common.cuh UnrollIf); TVM fixes unroll_explicit = 0 here.
#include "common.cuh"

namespace tunejit {

// One 32-bit word per (n, c/4, y, x): the 4 channels c..c+3 (c multiple of 4), little-endian.
__global__ void __launch_bounds__(128)
    nchwc_int8_pack_data(const s8* __restrict__ data, int* __restrict__ packed, int n, int c, int h,
                         int w) {
  const s64 hw = static_cast<s64>(h) * w;
  const s64 words = static_cast<s64>(n) * (c / 4) * hw;
  const s64 idx = static_cast<s64>(blockIdx.x) * 128 + threadIdx.x;
  if (idx >= words) return;
  const s64 pos = idx % hw;
  const s64 nc4 = idx / hw;  // n * (c/4) + c4
  const s8* src = data + nc4 * 4 * hw + pos;
  unsigned word = 0;
#pragma unroll
  for (int v = 0; v < 4; ++v) {
    word |= (static_cast<unsigned>(static_cast<unsigned char>(__ldg(src + v * hw)))) << (8 * v);
  }
  packed[idx] = static_cast<int>(word);
}

// One word per (oc4, icc, kh, kw, ob): the 4 input channels icc*4..+3 of output channel oc4*4 + ob.
__global__ void __launch_bounds__(128)
    nchwc_int8_pack_weight(const s8* __restrict__ weight, int* __restrict__ packed, int co, int ci,
                           int kh, int kw) {
  const s64 words = static_cast<s64>(co) * (ci / 4) * kh * kw;
  const s64 idx = static_cast<s64>(blockIdx.x) * 128 + threadIdx.x;
  if (idx >= words) return;
  const int ob = static_cast<int>(idx % 4);
  const int x = static_cast<int>((idx / 4) % kw);
  const int y = static_cast<int>((idx / (4 * kw)) % kh);
  const int icc = static_cast<int>((idx / (4 * kw * kh)) % (ci / 4));
  const int oc4 = static_cast<int>(idx / (static_cast<s64>(4) * kw * kh * (ci / 4)));
  const s64 khw = static_cast<s64>(kh) * kw;
  const s8* src = weight + (static_cast<s64>(oc4 * 4 + ob) * ci + icc * 4) * khw + y * kw + x;
  unsigned word = 0;
#pragma unroll
  for (int v = 0; v < 4; ++v) {
    word |= (static_cast<unsigned>(static_cast<unsigned char>(__ldg(src + v * khw)))) << (8 * v);
  }
  packed[idx] = static_cast<int>(word);
}

// Reduction-step geometry shared by the loaders of conv2d_nchwc_int8.
struct NchwcStep {
  int rco, ryo, rxo;
};

template <int kBn, int kRc, int kRows, int kCols, int kThreads, int kUnroll, int SH, int SW, int DH,
          int DW, int RY, int RX>
__device__ __forceinline__ void NchwcLoadData(int* tile, const int* __restrict__ data, NchwcStep s,
                                              int tid, int n0, int n, int c4, int h, int w,
                                              int row0, int col0) {
  constexpr int kSize = kBn * kRc * kRows * kCols;
  const int row_base = row0 + s.ryo * RY * DH;
  const int col_base = col0 + s.rxo * RX * DW;
#pragma unroll(UnrollIf(kUnroll, CeilDiv(kSize, kThreads), 1))
  for (int e = tid; e < kSize; e += kThreads) {
    const int col = e % kCols;
    const int row = (e / kCols) % kRows;
    const int cc = (e / (kCols * kRows)) % kRc;
    const int nn = n0 + e / (kCols * kRows * kRc);
    const int gc = s.rco * kRc + cc;
    const int gy = row_base + row;
    const int gx = col_base + col;
    tile[e] = (nn < n && gc < c4 && gy >= 0 && gy < h && gx >= 0 && gx < w)
                  ? __ldg(data + ((static_cast<s64>(nn) * c4 + gc) * h + gy) * w + gx)
                  : 0;
  }
}

template <int kBf, int kRc, int RY, int RX, int kThreads, int kUnroll, int KH, int KW>
__device__ __forceinline__ void NchwcLoadWeight(int* tile, const int* __restrict__ weight,
                                                NchwcStep s, int tid, int f0, int co4, int c4) {
  constexpr int kSize = kBf * kRc * RY * RX * 4;
#pragma unroll(UnrollIf(kUnroll, CeilDiv(kSize, kThreads), 1))
  for (int e = tid; e < kSize; e += kThreads) {
    const int ob = e % 4;
    const int rx = (e / 4) % RX;
    const int ry = (e / (4 * RX)) % RY;
    const int cc = (e / (4 * RX * RY)) % kRc;
    const int f = f0 + e / (4 * RX * RY * kRc);
    const int gc = s.rco * kRc + cc;
    const int gy = s.ryo * RY + ry;
    const int gx = s.rxo * RX + rx;
    tile[e] = (f < co4 && gc < c4 && gy < KH && gx < KW)
                  ? __ldg(weight + (((static_cast<s64>(f) * c4 + gc) * KH + gy) * KW + gx) * 4 + ob)
                  : 0;
  }
}

template <int VN, int TN, int NI, int VF, int TF, int FI, int VY, int TY, int YI, int VX, int TX,
          int XI, int kFuseYX, int RC, int RY, int RX, int P0, int P1, int P2, int kAaDb, int kWwDb,
          int kUnroll, int KH, int KW, int SH, int SW, int DH, int DW, int kEpi>
__global__ void __launch_bounds__(TN* TF* TY* TX)
    conv2d_nchwc_int8(const int* __restrict__ data, const int* __restrict__ weight,
                      const float* __restrict__ bias, const float* __restrict__ scale, void* out,
                      int n, int c4, int h, int w, int co4, int oh, int ow, int pad_top,
                      int pad_left) {
  constexpr int BN = VN * TN * NI, BF = VF * TF * FI, BY = VY * TY * YI, BX = VX * TX * XI;
  constexpr int NN = VN * NI, NF = VF * FI, NY = VY * YI, NX = VX * XI;
  constexpr int ROWS = (BY - 1) * SH + (RY - 1) * DH + 1;
  constexpr int COLS = (BX - 1) * SW + (RX - 1) * DW + 1;
  constexpr int kThreads = TN * TF * TY * TX;
  constexpr int kAaSize = BN * RC * ROWS * COLS;
  constexpr int kWwSize = BF * RC * RY * RX * 4;
  constexpr int kAcc = NN * NF * NY * NX * 4;
  __shared__ int aa[kAaDb ? 2 : 1][kAaSize];
  __shared__ int ww[kWwDb ? 2 : 1][kWwSize];

  int tn, tf, ty, tx;
  if constexpr (kFuseYX) {
    tn = threadIdx.z;
    tf = threadIdx.y;
    ty = threadIdx.x / TX;
    tx = threadIdx.x % TX;
  } else {
    tn = threadIdx.z / TF;
    tf = threadIdx.z % TF;
    ty = threadIdx.y;
    tx = threadIdx.x;
  }
  const int tid = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  const int x_blocks = CeilDiv(ow, BX);
  const int n0 = blockIdx.z * BN;
  const int f0 = blockIdx.y * BF;
  const int y0 = (blockIdx.x / x_blocks) * BY;
  const int x0 = (blockIdx.x % x_blocks) * BX;
  const int row0 = y0 * SH - pad_top;
  const int col0 = x0 * SW - pad_left;

  int acc[NN][NF][NY][NX][4];
#pragma unroll
  for (int i = 0; i < kAcc; ++i) (&acc[0][0][0][0][0])[i] = 0;

  const int ext[3] = {CeilDiv(c4, RC), CeilDiv(KH, RY), CeilDiv(KW, RX)};
  const int e1 = ext[P1], e2 = ext[P2];
  const int steps = ext[0] * ext[1] * ext[2];
  // Step s of the permuted nest (outer[P0], outer[P1], outer[P2]) -> (rco, ryo, rxo).
  auto decode = [&](int step) {
    int l[3];
    l[P2] = step % e2;
    l[P1] = (step / e2) % e1;
    l[P0] = step / (e2 * e1);
    return NchwcStep{l[0], l[1], l[2]};
  };
  auto load_aa = [&](int buf, NchwcStep st) {
    NchwcLoadData<BN, RC, ROWS, COLS, kThreads, kUnroll, SH, SW, DH, DW, RY, RX>(
        aa[buf], data, st, tid, n0, n, c4, h, w, row0, col0);
  };
  auto load_ww = [&](int buf, NchwcStep st) {
    NchwcLoadWeight<BF, RC, RY, RX, kThreads, kUnroll, KH, KW>(ww[buf], weight, st, tid, f0, co4,
                                                               c4);
  };

  if constexpr (kAaDb) load_aa(0, decode(0));
  if constexpr (kWwDb) load_ww(0, decode(0));
  for (int step = 0; step < steps; ++step) {
    const NchwcStep st = decode(step);
    if constexpr (!kAaDb) load_aa(0, st);
    if constexpr (!kWwDb) load_ww(0, st);
    __syncthreads();  // this step's tiles are visible; last step's readers are done
    const bool more = step + 1 < steps;
    if constexpr (kAaDb) {
      if (more) load_aa((step + 1) & 1, decode(step + 1));
    }
    if constexpr (kWwDb) {
      if (more) load_ww((step + 1) & 1, decode(step + 1));
    }
    const int* at = aa[kAaDb ? (step & 1) : 0];
    const int* wt = ww[kWwDb ? (step & 1) : 0];
    constexpr int kInner[3] = {RC, RY, RX};
#pragma unroll(UnrollIf(kUnroll, kInner[P0], kInner[P1] * kInner[P2] * kAcc))
    for (int l0 = 0; l0 < kInner[P0]; ++l0) {
#pragma unroll(UnrollIf(kUnroll, kInner[P1], kInner[P2] * kAcc))
      for (int l1 = 0; l1 < kInner[P1]; ++l1) {
#pragma unroll(UnrollIf(kUnroll, kInner[P2], kAcc))
        for (int l2 = 0; l2 < kInner[P2]; ++l2) {
          int r[3];
          r[P0] = l0;
          r[P1] = l1;
          r[P2] = l2;
          const int rc = r[0], ry = r[1], rx = r[2];
          int wv[NF][4];
#pragma unroll
          for (int vf = 0; vf < VF; ++vf)
#pragma unroll
            for (int fi = 0; fi < FI; ++fi)
#pragma unroll
              for (int ob = 0; ob < 4; ++ob)
                wv[vf * FI + fi][ob] =
                    wt[((((vf * TF + tf) * FI + fi) * RC + rc) * RY + ry) * RX * 4 + rx * 4 + ob];
#pragma unroll
          for (int in = 0; in < NN; ++in) {
            const int nl = ((in / NI) * TN + tn) * NI + in % NI;
#pragma unroll
            for (int iy = 0; iy < NY; ++iy) {
              const int yl = ((iy / YI) * TY + ty) * YI + iy % YI;
#pragma unroll
              for (int ix = 0; ix < NX; ++ix) {
                const int xl = ((ix / XI) * TX + tx) * XI + ix % XI;
                const int av =
                    at[((nl * RC + rc) * ROWS + yl * SH + ry * DH) * COLS + xl * SW + rx * DW];
#pragma unroll
                for (int f = 0; f < NF; ++f)
#pragma unroll
                  for (int ob = 0; ob < 4; ++ob)
                    acc[in][f][iy][ix][ob] = __dp4a(av, wv[f][ob], acc[in][f][iy][ix][ob]);
              }
            }
          }
        }
      }
    }
    if constexpr (!(kAaDb && kWwDb)) __syncthreads();  // single-buffered tiles are reloaded next
  }

  const int co = co4 * 4;
#pragma unroll
  for (int in = 0; in < NN; ++in) {
    const int nn = n0 + ((in / NI) * TN + tn) * NI + in % NI;
    if (nn >= n) continue;
#pragma unroll
    for (int f = 0; f < NF; ++f) {
      const int fc = f0 + ((f / FI) * TF + tf) * FI + f % FI;
      if (fc >= co4) continue;
#pragma unroll
      for (int iy = 0; iy < NY; ++iy) {
        const int y = y0 + ((iy / YI) * TY + ty) * YI + iy % YI;
        if (y >= oh) continue;
#pragma unroll
        for (int ix = 0; ix < NX; ++ix) {
          const int x = x0 + ((ix / XI) * TX + tx) * XI + ix % XI;
          if (x >= ow) continue;
#pragma unroll
          for (int ob = 0; ob < 4; ++ob) {
            const int k = fc * 4 + ob;
            const s64 index = ((static_cast<s64>(nn) * co + k) * oh + y) * ow + x;
            EpilogueOp<kEpi, s32>::Store(out, index, acc[in][f][iy][ix][ob], k, bias, scale);
          }
        }
      }
    }
  }
}

}  // namespace tunejit

#ifdef TUNEJIT_NVCC_CHECK
// The seed record [128,512,14,14]x[512,512,3,3] (index 13276589889) and a stride-2 variant with
// the other fuse_yx / buffering / permutation choices and an int8 requantize epilogue.
template __global__ void tunejit::conv2d_nchwc_int8<2, 2, 1, 1, 4, 2, 2, 1, 1, 1, 14, 1, 1, 1, 3, 1,
                                                    1, 0, 2, 1, 0, 1500, 3, 3, 1, 1, 1, 1, 0>(
    const int*, const int*, const float*, const float*, void*, int, int, int, int, int, int, int,
    int, int);
template __global__ void tunejit::conv2d_nchwc_int8<1, 2, 2, 2, 4, 1, 1, 2, 2, 2, 4, 1, 0, 2, 1, 3,
                                                    2, 1, 0, 0, 1, 512, 3, 3, 2, 2, 1, 1, 11>(
    const int*, const int*, const float*, const float*, void*, int, int, int, int, int, int, int,
    int, int);
#endif  // TUNEJIT_NVCC_CHECK
