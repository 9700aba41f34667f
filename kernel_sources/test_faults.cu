// File: kernel_sources/test_faults.cu
// Deliberately broken kernels, for testing the tuner's fault isolation (tuner/worker_main.h): the
// tuning worker launches one of them instead of a candidate when a test asks for a planted fault
// (`tunejit tune --test-fault-trial K / --test-hang-trial K`). Never used for real work.
//   test_fault_oob   writes far outside any allocation: the launch ends in an illegal address and
//                    the CUDA context is dead afterwards (as a buggy candidate's would be).
//   test_fault_hang  spins until a flag it is never given becomes non-zero: a candidate that never
//                    finishes, which only the parent's deadline (SIGKILL) can stop.
//
//   KernelSpec{.source_file = "test_faults.cu", .name_expression = "tunejit::test_fault_oob<1>"}
namespace tunejit {

// `kStride` only makes it a template (name expressions are how every kernel is instantiated).
template <int kStride>
__global__ void test_fault_oob(int* base) {
  // The worker passes null: address 0x10 is never mapped. (A non-null base writes 2^40 ints past.)
  int* target =
      base == nullptr ? reinterpret_cast<int*>(0x10) : base + (1ll << 40) + kStride * threadIdx.x;
  *reinterpret_cast<volatile int*>(target) = 1;
}

template <int kSpin>
__global__ void test_fault_hang(const int* flag) {
  // A volatile read each iteration: the compiler cannot prove the loop endless and drop it.
  long long spins = 0;
  while (*reinterpret_cast<const volatile int*>(flag) == 0) {
    spins += kSpin;
  }
  if (spins < 0) *const_cast<int*>(flag) = 2;  // keeps `spins` alive
}

}  // namespace tunejit

#ifdef TUNEJIT_NVCC_CHECK
template __global__ void tunejit::test_fault_oob<1>(int*);
template __global__ void tunejit::test_fault_hang<1>(const int*);
#endif  // TUNEJIT_NVCC_CHECK
