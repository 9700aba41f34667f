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

// Programmatic dependent launch (LaunchShape::overlaps_previous), for jit_gpu_test: a slow writer
// that lets the next kernel launch at once, and a reader launched with overlaps_previous that notes
// when it started and copies after griddepcontrol.wait. Times are %globaltimer nanoseconds.
__device__ __forceinline__ unsigned long long SelftestNowNs() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void selftest_slow_fill(unsigned* data, int n, unsigned value, long long spin_ns,
                                   unsigned long long* finished_ns) {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
  const unsigned long long start = SelftestNowNs();
  while (SelftestNowNs() - start < static_cast<unsigned long long>(spin_ns)) {
  }
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    data[i] = value;
  }
  __syncthreads();
  if (threadIdx.x == 0) atomicMax(finished_ns, SelftestNowNs());
}

__global__ void selftest_copy_after_wait(const unsigned* src, unsigned* dst, int n,
                                         unsigned long long* started_ns) {
  if (threadIdx.x == 0) atomicMin(started_ns, SelftestNowNs());
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    dst[i] = src[i];
  }
}

}  // namespace tunejit

#ifdef TUNEJIT_NVCC_CHECK
template __global__ void tunejit::selftest_saxpy<256, float>(int, float, const float*, float*);
template __global__ void tunejit::selftest_saxpy<128, double>(int, double, const double*, double*);
#endif  // TUNEJIT_NVCC_CHECK
