// File: kernel_sources/selftest.cu
// A tiny template that exercises the whole JIT path (embed -> NVRTC with a name expression ->
// cache -> load -> launch) in jit/ tests, jit_bench and the GPU smoke test:
//   y[i] = a * x[i] + y[i] + TUNEJIT_SELFTEST_BIAS   for i < n
// kBlock must equal blockDim.x (it is the grid-stride step within a block); T is float or double.
//
//   KernelSpec{.source_file = "selftest.cu",
//              .name_expression = "tunejit::selftest_saxpy<256, float>"}
// TUNEJIT_SELFTEST_BIAS exists so tests can check that -D options reach the compiler (and the
// cache key): a spec with defines {"-DTUNEJIT_SELFTEST_BIAS=1"} must give a different kernel.
#ifndef TUNEJIT_SELFTEST_BIAS
#define TUNEJIT_SELFTEST_BIAS 0
#endif

namespace tunejit {

template <int kBlock, typename T>
__global__ void __launch_bounds__(kBlock) selftest_saxpy(int n, T a, const T* x, T* y) {
  // Each thread walks the array with a stride of the whole grid, so any grid size is correct.
  const long long stride = static_cast<long long>(gridDim.x) * kBlock;
  for (long long i = static_cast<long long>(blockIdx.x) * kBlock + threadIdx.x; i < n;
       i += stride) {
    y[i] = a * x[i] + y[i] + static_cast<T>(TUNEJIT_SELFTEST_BIAS);
  }
}

}  // namespace tunejit

#ifdef TUNEJIT_NVCC_CHECK
template __global__ void tunejit::selftest_saxpy<256, float>(int, float, const float*, float*);
template __global__ void tunejit::selftest_saxpy<128, double>(int, double, const double*, double*);
#endif  // TUNEJIT_NVCC_CHECK
