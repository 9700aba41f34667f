// File: kernel_sources/hopper_ptx_check.cu
// A one-tile kernel that uses every wrapper of hopper_ptx.cuh, so nvcc (build-time check, sm_90a
// cubin) and NVRTC (tests/ops/gemm_wgmma_test.cc) both assemble all of them. It is also meant as
// the first GPU smoke test of the wrappers:
//   C[128, kN] (f32, row-major) = A[128, 64] * B[kN, 64]^T, A and B fp16 K-major,
// read through two TMA descriptors (box {64, 128} and {64, kN}, 128-byte swizzle). 384 threads:
// warpgroup 0 loads, warpgroups 1 and 2 each multiply 64 rows. Dynamic shared memory:
// kSmokeSmemBytes(kN) = 1024 (alignment slack) + 128*128 + kN*128 bytes (over 48 KiB for kN = 256:
// the launch must raise MAX_DYNAMIC_SHARED_SIZE_BYTES).
//
//   KernelSpec{.source_file = "hopper_ptx_check.cu",
//              .name_expression = "tunejit::hopper_ptx_smoke<128>"}   // kN in {64, 128, 192, 256}
#include "hopper_ptx.cuh"

namespace tunejit {

template <int kN>
__global__ void __launch_bounds__(384, 1)
    hopper_ptx_smoke(const __grid_constant__ hopper::TmaDescriptor a_map,
                     const __grid_constant__ hopper::TmaDescriptor b_map, float* c) {
  using namespace hopper;
  constexpr int kA = 128 * 64 * 2;
  constexpr int kB = kN * 64 * 2;
  // 128-byte swizzled tiles need 1024-byte alignment; dynamic shared memory only promises 16.
  extern __shared__ unsigned char smem_raw[];
  unsigned char* tiles = smem_raw + ((1024 - SharedAddress(smem_raw) % 1024) % 1024);
  __shared__ alignas(8) u64 full;
  __shared__ alignas(8) u64 consumed;
  const int wg = threadIdx.x / 128;
  if (threadIdx.x == 0) {
    MbarrierInit(&full, 1);
    MbarrierInit(&consumed, 2);  // one arrival per consumer warpgroup
    FenceBarrierInit();
  }
  __syncthreads();
  if (wg == 0) {
    SetMaxNRegDec<40>();
    if (threadIdx.x == 0) {
      TmaPrefetchDescriptor(&a_map);
      TmaPrefetchDescriptor(&b_map);
      FenceProxyAsync();  // generic-proxy writes to smem (barrier init) before the async writes
      MbarrierArriveExpectTx(&full, kA + kB);
      TmaLoad2d(tiles, &a_map, &full, 0, 0);
      TmaLoad2d(tiles + kA, &b_map, &full, 0, 0);
      // The producer exits only after both consumers are done with the tile.
      while (!MbarrierTryWait(&consumed, 0)) {
      }
    }
    return;
  }
  SetMaxNRegInc<232>();
  float acc[kN / 2];
#pragma unroll
  for (int i = 0; i < kN / 2; ++i) acc[i] = 0.0f;
  MbarrierWait(&full, 0);
  const unsigned char* a_rows = tiles + (wg - 1) * 64 * 128;  // this warpgroup's 64 rows
#pragma unroll
  for (int i = 0; i < kN / 2; ++i) FenceOperand(acc[i]);
  WgmmaFence();
#pragma unroll
  for (int k = 0; k < 4; ++k) {  // 4 x k16 = the 64 fp16 (128 bytes) of one swizzled row
    WgmmaF16F32<kN>::Mma(acc, SmemDescriptorSw128(a_rows, 32 * k),
                         SmemDescriptorSw128(tiles + kA, 32 * k), 1);
  }
  WgmmaCommit();
  WgmmaWait<0>();
#pragma unroll
  for (int i = 0; i < kN / 2; ++i) FenceOperand(acc[i]);
  if (threadIdx.x % 128 == 0) MbarrierArrive(&consumed);
  const int t = threadIdx.x % 128;
#pragma unroll
  for (int i = 0; i < kN / 2; ++i) {
    const int row = (wg - 1) * 64 + 16 * (t / 32) + (t % 32) / 4 + 8 * ((i / 2) % 2);
    const int col = 8 * (i / 4) + 2 * (t % 4) + (i % 2);
    c[row * kN + col] = acc[i];
  }
}

}  // namespace tunejit

#ifdef TUNEJIT_NVCC_CHECK
#define TUNEJIT_HOPPER_SMOKE(N)                               \
  template __global__ void tunejit::hopper_ptx_smoke<N>(      \
      const __grid_constant__ tunejit::hopper::TmaDescriptor, \
      const __grid_constant__ tunejit::hopper::TmaDescriptor, float*)
TUNEJIT_HOPPER_SMOKE(64);
TUNEJIT_HOPPER_SMOKE(128);
TUNEJIT_HOPPER_SMOKE(192);
TUNEJIT_HOPPER_SMOKE(256);
#endif  // TUNEJIT_NVCC_CHECK
