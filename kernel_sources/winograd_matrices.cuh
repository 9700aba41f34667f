// File: kernel_sources/winograd_matrices.cuh
// The Winograd F(m x m, 3 x 3) transform matrices of conv2d_nchw_winograd.cuda (m = 2 or 4), in one
// place for the GPU kernels (winograd.cu) and the host code/tests (ops/, tests/ops/): plain C++
// that also compiles on the host, so the CPU tests check the very numbers the kernels use.
//
// Orientation (docs/tvm-templates.md 5.3): rows are the alpha (interpolation point) index.
//   U = G g G^T (G: alpha x 3), V = B^T d B (B: alpha x alpha), Y = A^T (sum U.V) A (A: alpha x m).
//
// Float matrices: TVM's Cook-Toom matrices (points 0, -1, 1 [, 1/2, -2], inf), the exact rationals
// rounded to float32 (which is exactly what TVM's float32 kernels use).
//
// Integer matrices (int8 inputs, int32 output): TVM truncates the rationals to int32 and computes
// garbage (5.8). We instead scale every interpolation point i by an integer so that G', B', A'' are
// integer and sum_i of the scaled terms equals c * (the true term) with one c per dimension:
//   F(2,3): G' = 2G, B' = B, A'' = A, c = 2             -> Y' = 4 Y
//   F(4,3): G' = diag(1,3,3,-15/4,15,1) G, B' = 2B except column 3, A'' = diag(15,5,5,-1,1,15) A'
//           with A' = A with row 3 scaled by 8; c = 30  -> Y' = 900 Y
// All integer arithmetic is done modulo 2^32 (unsigned wrap-around: a ring, so intermediate
// "overflow" is harmless). Then Y' * inverse(c^2 / 4) mod 2^32 = 4 Y mod 2^32 (the odd part of c^2
// is invertible mod 2^32), and an arithmetic shift right by 2 recovers Y exactly whenever
// |Y| < 2^29. The true result is bounded by 128 * 128 * 9 * CI, so this holds for CI <= 3640;
// ops/winograd.cc rejects larger CI for int8.
//
//   float g = WinoFloatG(4, 3, 0);          // -16/15 as float32
//   int a = WinoIntA(4, 3, 0);              // -8 (= W[3] * 8 * A[3][0])
//   unsigned inv = WinoIntInverseOdd(4);    // 225^-1 mod 2^32
#ifndef TUNEJIT_KERNEL_SOURCES_WINOGRAD_MATRICES_CUH_
#define TUNEJIT_KERNEL_SOURCES_WINOGRAD_MATRICES_CUH_

#ifdef __CUDACC__
#define TUNEJIT_WINO_HD __host__ __device__ __forceinline__
#else
#define TUNEJIT_WINO_HD inline
#endif

namespace tunejit {

// The integer result is 4 * Y after multiplying by WinoIntInverseOdd (modulo 2^32).
constexpr int kWinoIntShift = 2;

TUNEJIT_WINO_HD constexpr float WinoFloatG(int m, int i, int j) {
  const float g2[4][3] = {
      {1.f, 0.f, 0.f}, {0.5f, -0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}, {0.f, 0.f, 1.f}};
  const float g4[6][3] = {{1.f, 0.f, 0.f},
                          {-1.f / 3.f, 1.f / 3.f, -1.f / 3.f},
                          {1.f / 3.f, 1.f / 3.f, 1.f / 3.f},
                          {-16.f / 15.f, -8.f / 15.f, -4.f / 15.f},
                          {1.f / 15.f, -2.f / 15.f, 4.f / 15.f},
                          {0.f, 0.f, 1.f}};
  return m == 2 ? g2[i][j] : g4[i][j];
}

TUNEJIT_WINO_HD constexpr float WinoFloatB(int m, int i, int j) {
  const float b2[4][4] = {
      {1.f, 0.f, 0.f, 0.f}, {0.f, -1.f, 1.f, -1.f}, {-1.f, 1.f, 1.f, 0.f}, {0.f, 0.f, 0.f, 1.f}};
  const float b4[6][6] = {
      {1.f, 0.f, 0.f, 0.f, 0.f, 0.f},         {-1.5f, 1.f, -1.f, -2.f, 0.5f, 1.f},
      {-2.f, -2.5f, 0.5f, -1.f, -1.f, -1.5f}, {1.5f, 0.5f, 2.5f, 2.f, -0.5f, -2.f},
      {1.f, 1.f, 1.f, 1.f, 1.f, 1.5f},        {0.f, 0.f, 0.f, 0.f, 0.f, 1.f}};
  return m == 2 ? b2[i][j] : b4[i][j];
}

TUNEJIT_WINO_HD constexpr float WinoFloatA(int m, int i, int j) {
  const float a2[4][2] = {{1.f, 0.f}, {1.f, -1.f}, {1.f, 1.f}, {0.f, 1.f}};
  const float a4[6][4] = {{1.f, 0.f, 0.f, 0.f},       {1.f, -1.f, 1.f, -1.f}, {1.f, 1.f, 1.f, 1.f},
                          {1.f, 0.5f, 0.25f, 0.125f}, {1.f, -2.f, 4.f, -8.f}, {0.f, 0.f, 0.f, 1.f}};
  return m == 2 ? a2[i][j] : a4[i][j];
}

TUNEJIT_WINO_HD constexpr int WinoIntG(int m, int i, int j) {
  const int g2[4][3] = {{2, 0, 0}, {1, -1, 1}, {1, 1, 1}, {0, 0, 2}};
  const int g4[6][3] = {{1, 0, 0}, {-1, 1, -1}, {1, 1, 1}, {4, 2, 1}, {1, -2, 4}, {0, 0, 1}};
  return m == 2 ? g2[i][j] : g4[i][j];
}

TUNEJIT_WINO_HD constexpr int WinoIntB(int m, int i, int j) {
  const int b2[4][4] = {{1, 0, 0, 0}, {0, -1, 1, -1}, {-1, 1, 1, 0}, {0, 0, 0, 1}};
  const int b4[6][6] = {{2, 0, 0, 0, 0, 0},   {-3, 2, -2, -2, 1, 2}, {-4, -5, 1, -1, -2, -3},
                        {3, 1, 5, 2, -1, -4}, {2, 2, 2, 1, 2, 3},    {0, 0, 0, 0, 0, 2}};
  return m == 2 ? b2[i][j] : b4[i][j];
}

TUNEJIT_WINO_HD constexpr int WinoIntA(int m, int i, int j) {
  const int a2[4][2] = {{1, 0}, {1, -1}, {1, 1}, {0, 1}};
  const int a4[6][4] = {{15, 0, 0, 0},    {5, -5, 5, -5}, {5, 5, 5, 5},
                        {-8, -4, -2, -1}, {1, -2, 4, -8}, {0, 0, 0, 15}};
  return m == 2 ? a2[i][j] : a4[i][j];
}

// (c^2 / 4)^-1 modulo 2^32: 1 for F(2,3) (c^2 = 4); 225^-1 for F(4,3) (c^2 = 900).
TUNEJIT_WINO_HD constexpr unsigned WinoIntInverseOdd(int m) { return m == 2 ? 1u : 2271560481u; }

}  // namespace tunejit

#endif  // TUNEJIT_KERNEL_SOURCES_WINOGRAD_MATRICES_CUH_
