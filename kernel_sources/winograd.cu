// File: kernel_sources/winograd.cu
// AutoTVM's conv2d_nchw_winograd.cuda (TVM 0.7.dev1 topi/cuda/conv2d_winograd.py;
// docs/tvm-templates.md section 5): F(m x m, 3 x 3), stride 1, four kernels in launch order:
//   1. winograd_weight_transform  U[eps][nu][ci][co] = (G g G^T)         one thread per (ci, co)
//   2. winograd_input_transform   V[eps][nu][ci][p]  = (B^T d B)         one thread per (ci, p)
//   3. winograd_bgemm             M[b][co][p] = sum_ci U[b][ci][co] V[b][ci][p]   (the tuned one)
//   4. winograd_inverse_transform out = epilogue(A^T M A)                one thread per output tile
// with P = N * nH * nW tiles, tile p = (n, th, tw) with tw fastest, alpha = m + 2.
//
// T = float: TVM's float32 algebra. T = s8 (int8 data and weights, int32 output): the exact
// integer algebra of winograd_matrices.cuh (modulo-2^32 arithmetic in `unsigned`, then
// multiplication by the odd inverse and a shift by 2), NOT TVM's truncated matrices, which compute
// wrong results (spec 5.8).
//
// bgemm launch (spec 5.5): grid (ceil(P/BX), ceil(CO/BY), alpha^2), block (TX, TY);
// tile_y = [-1, VY, TY, YI] over co, tile_x = [-1, VX, TX, XI] over p, tile_rc = [-1, RC].
// Thread (tx, ty) owns co = by*BY + (vy*TY + ty)*YI + yi and p = bx*BX + (vx*TX + tx)*XI + xi.
// Per reduction step the block stages AA[RC][BY] (U, co fastest) and BB[RC][BX] (V) in shared
// memory with TVM's pattern-B cooperative load (element e = o*threads + tid). Tails (splits that do
// not divide) are zero-filled and guarded, so every shape is correct. kUnroll is
// auto_unroll_max_step (common.cuh UnrollIf); unroll_explicit has no CUDA-C analogue.
#include "common.cuh"
#include "winograd_matrices.cuh"

namespace tunejit {

// Accumulator type: float, or unsigned for the exact modulo-2^32 integer algebra.
template <typename T>
struct WinoAcc {
  typedef float type;
};
template <>
struct WinoAcc<s8> {
  typedef unsigned type;
};

template <int kM, typename T>
__device__ __forceinline__ typename WinoAcc<T>::type WinoG(int i, int j) {
  if constexpr (IsFloatAcc<typename WinoAcc<T>::type>::value) {
    return WinoFloatG(kM, i, j);
  } else {
    return static_cast<unsigned>(WinoIntG(kM, i, j));
  }
}
template <int kM, typename T>
__device__ __forceinline__ typename WinoAcc<T>::type WinoB(int i, int j) {
  if constexpr (IsFloatAcc<typename WinoAcc<T>::type>::value) {
    return WinoFloatB(kM, i, j);
  } else {
    return static_cast<unsigned>(WinoIntB(kM, i, j));
  }
}
template <int kM, typename T>
__device__ __forceinline__ typename WinoAcc<T>::type WinoA(int i, int j) {
  if constexpr (IsFloatAcc<typename WinoAcc<T>::type>::value) {
    return WinoFloatA(kM, i, j);
  } else {
    return static_cast<unsigned>(WinoIntA(kM, i, j));
  }
}

template <typename T>
__device__ __forceinline__ typename WinoAcc<T>::type WinoLoad(const T* p) {
  if constexpr (IsFloatAcc<typename WinoAcc<T>::type>::value) {
    return __ldg(p);
  } else {
    // Sign-extend the int8, then reinterpret modulo 2^32.
    return static_cast<unsigned>(static_cast<int>(__ldg(p)));
  }
}

// Kernel 1 (kPrepare): u[(eps*alpha + nu)*ci*co + c*co + k] = (G g G^T)[eps][nu], g = w[k][c]
// (3x3).
template <int kM, typename T>
__global__ void __launch_bounds__(128)
    winograd_weight_transform(const T* __restrict__ weight, typename WinoAcc<T>::type* u, int ci,
                              int co) {
  typedef typename WinoAcc<T>::type Acc;
  constexpr int kAlpha = kM + 2;
  const s64 idx = static_cast<s64>(blockIdx.x) * 128 + threadIdx.x;
  if (idx >= static_cast<s64>(ci) * co) return;
  const int c = static_cast<int>(idx / co);
  const int k = static_cast<int>(idx % co);
  const T* g = weight + (static_cast<s64>(k) * ci + c) * 9;
  Acc gv[3][3];
#pragma unroll
  for (int i = 0; i < 3; ++i)
#pragma unroll
    for (int j = 0; j < 3; ++j) gv[i][j] = WinoLoad(g + i * 3 + j);
  Acc tmp[kAlpha][3];  // G g
#pragma unroll
  for (int e = 0; e < kAlpha; ++e)
#pragma unroll
    for (int j = 0; j < 3; ++j) {
      Acc s = 0;
#pragma unroll
      for (int i = 0; i < 3; ++i) s += WinoG<kM, T>(e, i) * gv[i][j];
      tmp[e][j] = s;
    }
  const s64 plane = static_cast<s64>(ci) * co;
#pragma unroll
  for (int e = 0; e < kAlpha; ++e)
#pragma unroll
    for (int n = 0; n < kAlpha; ++n) {
      Acc s = 0;
#pragma unroll
      for (int j = 0; j < 3; ++j) s += tmp[e][j] * WinoG<kM, T>(n, j);
      u[(e * kAlpha + n) * plane + idx] = s;
    }
}

// Kernel 2: v[(eps*alpha + nu)*ci*P + c*P + p] = (B^T d B)[eps][nu] of the zero-padded input tile.
template <int kM, typename T>
__global__ void __launch_bounds__(128)
    winograd_input_transform(const T* __restrict__ data, typename WinoAcc<T>::type* v, int n,
                             int ci, int h, int w, int pad_top, int pad_left, int nh, int nw) {
  typedef typename WinoAcc<T>::type Acc;
  constexpr int kAlpha = kM + 2;
  const s64 tiles = static_cast<s64>(n) * nh * nw;
  const s64 idx = static_cast<s64>(blockIdx.x) * 128 + threadIdx.x;
  if (idx >= ci * tiles) return;
  const int c = static_cast<int>(idx / tiles);
  const s64 p = idx % tiles;
  const int nn = static_cast<int>(p / (nh * nw));
  const int th = static_cast<int>((p / nw) % nh);
  const int tw = static_cast<int>(p % nw);
  const T* plane = data + (static_cast<s64>(nn) * ci + c) * h * w;
  const int y0 = th * kM - pad_top;
  const int x0 = tw * kM - pad_left;
  Acc d[kAlpha][kAlpha];
#pragma unroll
  for (int a = 0; a < kAlpha; ++a)
#pragma unroll
    for (int b = 0; b < kAlpha; ++b) {
      const int y = y0 + a;
      const int x = x0 + b;
      d[a][b] = (y >= 0 && y < h && x >= 0 && x < w) ? WinoLoad(plane + y * w + x) : Acc(0);
    }
  Acc tmp[kAlpha][kAlpha];  // B^T d
#pragma unroll
  for (int e = 0; e < kAlpha; ++e)
#pragma unroll
    for (int b = 0; b < kAlpha; ++b) {
      Acc s = 0;
#pragma unroll
      for (int a = 0; a < kAlpha; ++a) s += WinoB<kM, T>(a, e) * d[a][b];
      tmp[e][b] = s;
    }
  const s64 stride = ci * tiles;
#pragma unroll
  for (int e = 0; e < kAlpha; ++e)
#pragma unroll
    for (int nu = 0; nu < kAlpha; ++nu) {
      Acc s = 0;
#pragma unroll
      for (int b = 0; b < kAlpha; ++b) s += tmp[e][b] * WinoB<kM, T>(b, nu);
      v[(e * kAlpha + nu) * stride + idx] = s;
    }
}

// Kernel 3: the tuned batched GEMM (see the file comment). Acc is float or unsigned.
template <typename Acc, int VY, int TY, int YI, int VX, int TX, int XI, int RC, int kUnroll>
__global__ void __launch_bounds__(TX* TY)
    winograd_bgemm(const Acc* __restrict__ u, const Acc* __restrict__ v, Acc* __restrict__ m,
                   int ci, int co, int p) {
  constexpr int BY = VY * TY * YI;
  constexpr int BX = VX * TX * XI;
  constexpr int NY = VY * YI;
  constexpr int NX = VX * XI;
  constexpr int kThreads = TX * TY;
  __shared__ Acc aa[RC * BY];
  __shared__ Acc bb[RC * BX];
  const int tx = threadIdx.x;
  const int ty = threadIdx.y;
  const int tid = ty * TX + tx;
  const int co0 = blockIdx.y * BY;
  const s64 p0 = static_cast<s64>(blockIdx.x) * BX;
  const Acc* ub = u + static_cast<s64>(blockIdx.z) * ci * co;
  const Acc* vb = v + static_cast<s64>(blockIdx.z) * ci * p;

  Acc acc[NY][NX];
#pragma unroll
  for (int y = 0; y < NY; ++y)
#pragma unroll
    for (int x = 0; x < NX; ++x) acc[y][x] = Acc(0);

  const int steps = CeilDiv(ci, RC);
  for (int rco = 0; rco < steps; ++rco) {
    __syncthreads();
#pragma unroll(UnrollIf(kUnroll, CeilDiv(RC* BY, kThreads), 1))
    for (int e = tid; e < RC * BY; e += kThreads) {
      const int c = rco * RC + e / BY;
      const int k = co0 + e % BY;
      aa[e] = (c < ci && k < co) ? __ldg(ub + static_cast<s64>(c) * co + k) : Acc(0);
    }
#pragma unroll(UnrollIf(kUnroll, CeilDiv(RC* BX, kThreads), 1))
    for (int e = tid; e < RC * BX; e += kThreads) {
      const int c = rco * RC + e / BX;
      const s64 q = p0 + e % BX;
      bb[e] = (c < ci && q < p) ? __ldg(vb + static_cast<s64>(c) * p + q) : Acc(0);
    }
    __syncthreads();
#pragma unroll(UnrollIf(kUnroll, RC, NY* NX))
    for (int rc = 0; rc < RC; ++rc) {
      Acc a[NY];
      Acc b[NX];
#pragma unroll
      for (int vy = 0; vy < VY; ++vy)
#pragma unroll
        for (int yi = 0; yi < YI; ++yi) a[vy * YI + yi] = aa[rc * BY + (vy * TY + ty) * YI + yi];
#pragma unroll
      for (int vx = 0; vx < VX; ++vx)
#pragma unroll
        for (int xi = 0; xi < XI; ++xi) b[vx * XI + xi] = bb[rc * BX + (vx * TX + tx) * XI + xi];
#pragma unroll
      for (int y = 0; y < NY; ++y)
#pragma unroll
        for (int x = 0; x < NX; ++x) acc[y][x] += a[y] * b[x];
    }
  }

  Acc* mb = m + static_cast<s64>(blockIdx.z) * co * p;
#pragma unroll
  for (int vy = 0; vy < VY; ++vy)
#pragma unroll
    for (int yi = 0; yi < YI; ++yi) {
      const int k = co0 + (vy * TY + ty) * YI + yi;
      if (k >= co) continue;
#pragma unroll
      for (int vx = 0; vx < VX; ++vx)
#pragma unroll
        for (int xi = 0; xi < XI; ++xi) {
          const s64 q = p0 + (vx * TX + tx) * XI + xi;
          if (q < p) mb[static_cast<s64>(k) * p + q] = acc[vy * YI + yi][vx * XI + xi];
        }
    }
}

// Kernel 4: out[n][k][th*m + i][tw*m + j] = epilogue((A^T M A)[i][j]), one thread per
// (n, k, th, tw), tw fastest. Integer path: Y = int(Y' * inverse_odd) >> 2 (exact, see
// winograd_matrices.cuh).
template <int kM, typename T, int kEpi>
__global__ void __launch_bounds__(128)
    winograd_inverse_transform(const typename WinoAcc<T>::type* __restrict__ m, void* out,
                               const float* __restrict__ bias, const float* __restrict__ scale,
                               int n, int co, int oh, int ow, int nh, int nw) {
  typedef typename WinoAcc<T>::type Acc;
  constexpr bool kFloat = IsFloatAcc<Acc>::value;
  typedef typename Conditional<kFloat, float, s32>::type Out;
  constexpr int kAlpha = kM + 2;
  const s64 tiles = static_cast<s64>(n) * nh * nw;
  const s64 idx = static_cast<s64>(blockIdx.x) * 128 + threadIdx.x;
  if (idx >= tiles * co) return;
  const int tw = static_cast<int>(idx % nw);
  const int th = static_cast<int>((idx / nw) % nh);
  const int k = static_cast<int>((idx / (static_cast<s64>(nw) * nh)) % co);
  const int nn = static_cast<int>(idx / (static_cast<s64>(nw) * nh * co));
  const s64 p = (static_cast<s64>(nn) * nh + th) * nw + tw;
  const s64 stride = static_cast<s64>(co) * tiles;
  Acc mv[kAlpha][kAlpha];
#pragma unroll
  for (int a = 0; a < kAlpha; ++a)
#pragma unroll
    for (int b = 0; b < kAlpha; ++b)
      mv[a][b] = __ldg(m + (a * kAlpha + b) * stride + static_cast<s64>(k) * tiles + p);
  Acc tmp[kM][kAlpha];  // A^T M
#pragma unroll
  for (int i = 0; i < kM; ++i)
#pragma unroll
    for (int b = 0; b < kAlpha; ++b) {
      Acc s = 0;
#pragma unroll
      for (int a = 0; a < kAlpha; ++a) s += WinoA<kM, T>(a, i) * mv[a][b];
      tmp[i][b] = s;
    }
#pragma unroll
  for (int i = 0; i < kM; ++i) {
    const int y = th * kM + i;
    if (y >= oh) continue;
#pragma unroll
    for (int j = 0; j < kM; ++j) {
      const int x = tw * kM + j;
      if (x >= ow) continue;
      Acc s = 0;
#pragma unroll
      for (int b = 0; b < kAlpha; ++b) s += tmp[i][b] * WinoA<kM, T>(b, j);
      Out value;
      if constexpr (kFloat) {
        value = s;
      } else {
        value = static_cast<s32>(s * WinoIntInverseOdd(kM)) >> kWinoIntShift;
      }
      const s64 index = ((static_cast<s64>(nn) * co + k) * oh + y) * ow + x;
      EpilogueOp<kEpi, Out>::Store(out, index, value, k, bias, scale);
    }
  }
}

}  // namespace tunejit

#ifdef TUNEJIT_NVCC_CHECK
// The fp32 seed ([128,3,224,224], m=4) and the int8 seed ([128,512,14,14], m=2) bgemm configs.
template __global__ void tunejit::winograd_weight_transform<4, float>(const float*, float*, int,
                                                                      int);
template __global__ void tunejit::winograd_weight_transform<2, tunejit::s8>(const tunejit::s8*,
                                                                            unsigned*, int, int);
template __global__ void tunejit::winograd_input_transform<4, float>(const float*, float*, int, int,
                                                                     int, int, int, int, int, int);
template __global__ void tunejit::winograd_input_transform<4, tunejit::s8>(const tunejit::s8*,
                                                                           unsigned*, int, int, int,
                                                                           int, int, int, int, int);
template __global__ void tunejit::winograd_bgemm<float, 1, 8, 8, 16, 32, 1, 1, 128>(const float*,
                                                                                    const float*,
                                                                                    float*, int,
                                                                                    int, int);
template __global__ void tunejit::winograd_bgemm<unsigned, 1, 8, 8, 2, 16, 2, 16, 128>(
    const unsigned*, const unsigned*, unsigned*, int, int, int);
template __global__ void tunejit::winograd_inverse_transform<4, float, 3>(const float*, void*,
                                                                          const float*,
                                                                          const float*, int, int,
                                                                          int, int, int, int);
template __global__ void tunejit::winograd_inverse_transform<2, tunejit::s8, 0>(
    const unsigned*, void*, const float*, const float*, int, int, int, int, int, int);
template __global__ void tunejit::winograd_inverse_transform<4, tunejit::s8, 10>(
    const unsigned*, void*, const float*, const float*, int, int, int, int, int, int);
#endif  // TUNEJIT_NVCC_CHECK
