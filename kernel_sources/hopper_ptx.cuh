// File: kernel_sources/hopper_ptx.cuh
// Our own PTX wrappers for the Hopper (sm_90a) asynchronous machinery: mbarriers, TMA tile loads,
// the async-proxy fence, warpgroup MMA (wgmma) and register reallocation (setmaxnreg). No CUTLASS:
// it is not packaged here and its Hopper headers cost seconds per NVRTC build
// (docs/tensorcore-design.md 1.5). Header-free on purpose: NVRTC needs nothing but
// this file.
//
// Compile for sm_90a (`--gpu-architecture=sm_90a`, nvcc `arch=compute_90a`): ptxas rejects wgmma
// and setmaxnreg on plain sm_90. mbarrier, TMA and the fences would also assemble for sm_90.
//
//   __shared__ alignas(8) unsigned long long bar;
//   if (threadIdx.x == 0) { hopper::MbarrierInit(&bar, 1); hopper::FenceBarrierInit(); }
//   __syncthreads();
//   hopper::MbarrierArriveExpectTx(&bar, bytes);
//   hopper::TmaLoad2d(smem_tile, &tensor_map, &bar, k0, row0);
//   hopper::MbarrierWait(&bar, /*parity=*/0);
//   hopper::WgmmaFence(); WgmmaF16F32<128>::Mma(acc, desc_a, desc_b, 1); hopper::WgmmaCommit();
//   hopper::WgmmaWait<0>();
//
// Addresses: every shared-memory operand is passed as a generic pointer and converted to a 32-bit
// shared-window address here (SharedAddress), so callers never mix the two address spaces.
#ifndef TUNEJIT_KERNEL_SOURCES_HOPPER_PTX_CUH_
#define TUNEJIT_KERNEL_SOURCES_HOPPER_PTX_CUH_

namespace tunejit {
namespace hopper {

typedef unsigned long long u64;
typedef unsigned int u32;

// A CUtensorMap (the driver's opaque 128-byte TMA descriptor) as kernels see it: the host encodes
// it with cuTensorMapEncodeTiled and passes it by value as a `const __grid_constant__` kernel
// parameter, so TMA reads it from parameter space with no copy (cuda.h is not available to NVRTC,
// hence our own type of the same size and alignment).
struct alignas(64) TmaDescriptor {
  u64 opaque[16];
};

// The 32-bit shared-memory address of a generic pointer into shared memory (cvta.to.shared).
__device__ __forceinline__ u32 SharedAddress(const void* ptr) {
  return static_cast<u32>(__cvta_generic_to_shared(ptr));
}

// ---- mbarrier (PTX ISA 9.7.13.15) -------------------------------------------------------------
// A 64-bit shared-memory barrier with a phase bit, an expected arrival count and a transaction
// (byte) count. A phase completes when all arrivals came and the transaction count is back to 0.

// mbarrier.init.shared::cta.b64 [bar], count: `count` arrivals complete a phase. One thread.
__device__ __forceinline__ void MbarrierInit(u64* bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(SharedAddress(bar)), "r"(count)
               : "memory");
}

// fence.mbarrier_init.release.cluster: makes mbarrier.init visible to the async proxy (TMA)
// and other threads; follow it with __syncthreads() before anyone uses the barrier.
__device__ __forceinline__ void FenceBarrierInit() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// mbarrier.arrive.shared::cta.b64: one arrival of the calling thread (release semantics, so this
// thread's earlier shared-memory reads are ordered before the phase completes).
__device__ __forceinline__ void MbarrierArrive(u64* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(SharedAddress(bar)) : "memory");
}

// mbarrier.arrive.expect_tx.shared::cta.b64 [bar], bytes: one arrival plus `bytes` more expected
// transaction bytes, which TMA loads signalling this barrier (complete_tx) pay off. Issue it before
// or together with the loads of the phase; the phase cannot complete until both happened.
__device__ __forceinline__ void MbarrierArriveExpectTx(u64* bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(SharedAddress(bar)),
               "r"(bytes)
               : "memory");
}

// mbarrier.try_wait.parity.shared::cta.b64: true once the phase with parity `parity` (0 or 1) has
// completed. try_wait may suspend the thread for a system-dependent time before returning false.
__device__ __forceinline__ bool MbarrierTryWait(u64* bar, u32 parity) {
  u32 done;
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(done)
      : "r"(SharedAddress(bar)), "r"(parity)
      : "memory");
  return done != 0;
}

// Spins on MbarrierTryWait. The loop is in C++ (not a PTX label) so the wrapper can be inlined
// many times into one kernel without duplicate labels. Acquire semantics: data the phase guarded
// (TMA writes, other threads' writes before their arrive) is visible afterwards.
__device__ __forceinline__ void MbarrierWait(u64* bar, u32 parity) {
  while (!MbarrierTryWait(bar, parity)) {
  }
}

// ---- clusters (PTX ISA 9.7.13.3, 9.7.9.17) ---------------------------------------------------
// A cluster's CTAs can reach each other's shared memory: a CTA's stage ring filled by its peer's
// multicast loads is handed back to that peer through the peer's mbarrier.

// %cluster_ctarank: this CTA's rank in its cluster (blockIdx.x % cluster size for 1-D clusters).
__device__ __forceinline__ u32 ClusterRank() {
  u32 rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  return rank;
}

// One arrival on the mbarrier at `bar`'s offset in the shared memory of cluster CTA `rank` (mapa,
// then the arrive; CTA-scope release as CUTLASS's ClusterBarrier: the stage's readers are
// wgmmas already waited for, and a cluster-scope release costs a fence per arrival).
__device__ __forceinline__ void MbarrierArriveCluster(u64* bar, u32 rank) {
  asm volatile(
      "{\n\t.reg .b32 remote;\n\t"
      "mapa.shared::cluster.u32 remote, %0, %1;\n\t"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n\t}" ::"r"(SharedAddress(bar)),
      "r"(rank)
      : "memory");
}

// bar.sync id, threads: waits until `threads` threads (whole warps) have reached named barrier
// `id` (1..15; 0 is __syncthreads'), which lets one warpgroup sync without the others.
__device__ __forceinline__ void NamedBarrierSync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// barrier.cluster.arrive.release + wait.acquire: every thread of every CTA of the cluster. After
// mbarrier init (no peer may signal a barrier before it exists) and before exit (no peer may
// signal a barrier of a CTA that has gone).
__device__ __forceinline__ void ClusterSync() {
  asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;" ::: "memory");
}

// ---- async proxy --------------------------------------------------------------------------------

// fence.proxy.async.shared::cta: orders this thread's generic-proxy shared-memory accesses with
// later async-proxy ones (TMA, wgmma operand reads), e.g. after writing smem with st.shared that a
// wgmma or TMA store will read.
__device__ __forceinline__ void FenceProxyAsync() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// ---- TMA (cp.async.bulk.tensor, PTX ISA 9.7.9.25) -----------------------------------------------

// cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes
//   [dst], [map, {c0, c1}], [bar]
// Copies the box of `map` whose first element has coordinates (c0 innermost, c1) from global to
// shared memory `dst` (aligned as the map's swizzle requires: 1024 B for 128-byte swizzle), then
// performs complete_tx on `bar` with the box's byte count. Out-of-bounds elements are written as
// zeros and still counted, so a partial box at a tensor edge costs the full byte count. Issued by
// one thread. `map` must point at a __grid_constant__ parameter (or global/const memory).
__device__ __forceinline__ void TmaLoad2d(void* dst, const TmaDescriptor* map, u64* bar, int c0,
                                          int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4}], [%2];" ::"r"(SharedAddress(dst)),
      "l"(reinterpret_cast<u64>(map)), "r"(SharedAddress(bar)), "r"(c0), "r"(c1)
      : "memory");
}

// The same for 3-D and 4-D maps (coordinates innermost first; negative or past-the-end ones read
// zeros: a convolution's padding comes free).
__device__ __forceinline__ void TmaLoad3d(void* dst, const TmaDescriptor* map, u64* bar, int c0,
                                          int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5}], [%2];" ::"r"(SharedAddress(dst)),
      "l"(reinterpret_cast<u64>(map)), "r"(SharedAddress(bar)), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

__device__ __forceinline__ void TmaLoad4d(void* dst, const TmaDescriptor* map, u64* bar, int c0,
                                          int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5, %6}], [%2];" ::"r"(SharedAddress(dst)),
      "l"(reinterpret_cast<u64>(map)), "r"(SharedAddress(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}

// Im2col mode (a map from cuTensorMapEncodeIm2col): the map's pixels-per-load consecutive pixels
// from {c0, w, h, n} on (W fastest, then H, then N, within the map's bounding box), each shifted by
// the 16-bit offsets {off_w, off_h}: a convolution tap's rows of the implicit GEMM.
__device__ __forceinline__ void TmaLoadIm2col4d(void* dst, const TmaDescriptor* map, u64* bar,
                                                int c0, int w, int h, int n, unsigned short off_w,
                                                unsigned short off_h) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5, %6}], [%2], {%7, %8};" ::"r"(SharedAddress(dst)),
      "l"(reinterpret_cast<u64>(map)), "r"(SharedAddress(bar)), "r"(c0), "r"(w), "r"(h), "r"(n),
      "h"(off_w), "h"(off_h)
      : "memory");
}

// Multicast (clusters): the same box lands at `dst`'s offset in the shared memory of every CTA of
// the cluster whose bit is set in `cta_mask`, and complete_tx goes to the mbarrier at `bar`'s
// offset in each of them. Each CTA's barrier must expect those bytes like its own loads'.
__device__ __forceinline__ void TmaLoad2dMulticast(void* dst, const TmaDescriptor* map, u64* bar,
                                                   int c0, int c1, unsigned short cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%3, %4}], [%2], %5;" ::"r"(SharedAddress(dst)),
      "l"(reinterpret_cast<u64>(map)), "r"(SharedAddress(bar)), "r"(c0), "r"(c1), "h"(cta_mask)
      : "memory");
}

__device__ __forceinline__ void TmaLoad4dMulticast(void* dst, const TmaDescriptor* map, u64* bar,
                                                   int c0, int c1, int c2, int c3,
                                                   unsigned short cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%3, %4, %5, %6}], [%2], %7;" ::"r"(SharedAddress(dst)),
      "l"(reinterpret_cast<u64>(map)), "r"(SharedAddress(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3),
      "h"(cta_mask)
      : "memory");
}

__device__ __forceinline__ void TmaLoadIm2col4dMulticast(void* dst, const TmaDescriptor* map,
                                                         u64* bar, int c0, int w, int h, int n,
                                                         unsigned short off_w, unsigned short off_h,
                                                         unsigned short cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%3, %4, %5, %6}], [%2], {%7, %8}, %9;" ::"r"(
          SharedAddress(dst)),
      "l"(reinterpret_cast<u64>(map)), "r"(SharedAddress(bar)), "r"(c0), "r"(w), "r"(h), "r"(n),
      "h"(off_w), "h"(off_h), "h"(cta_mask)
      : "memory");
}

// prefetch.tensormap: pulls the descriptor into the TMA unit's cache ahead of the first load.
__device__ __forceinline__ void TmaPrefetchDescriptor(const TmaDescriptor* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<u64>(map)) : "memory");
}

// ---- register reallocation (setmaxnreg, PTX ISA 9.7.17.1) ---------------------------------------
// Executed by every thread of a warpgroup (.sync.aligned). kRegs in [24, 256], a multiple of 8.
// The kernel needs __launch_bounds__(threads, 1); .dec hands registers back to the pool, .inc
// blocks until the pool can give them. The producer warpgroup decreases, consumers increase.

template <int kRegs>
__device__ __forceinline__ void SetMaxNRegInc() {
  static_assert(kRegs >= 24 && kRegs <= 256 && kRegs % 8 == 0, "setmaxnreg range");
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(kRegs));
}

template <int kRegs>
__device__ __forceinline__ void SetMaxNRegDec() {
  static_assert(kRegs >= 24 && kRegs <= 256 && kRegs % 8 == 0, "setmaxnreg range");
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(kRegs));
}

// ---- wgmma (PTX ISA 9.7.15)
// ---------------------------------------------------------------------- A warpgroup (4 consecutive
// warps, the first a multiple of 4) issues wgmma.mma_async together:
//   wgmma.fence  -> make register/smem writes before it visible to the MMA (before the first
//                   wgmma, and whenever the accumulators were touched by other code);
//   mma_async... -> queued asynchronously;
//   commit_group -> closes a group of the queued MMAs;
//   wait_group N -> waits until at most N groups are pending; only then may the accumulators be
//                   read and the operand shared memory be overwritten.

// wgmma.fence.sync.aligned
__device__ __forceinline__ void WgmmaFence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}

// wgmma.commit_group.sync.aligned
__device__ __forceinline__ void WgmmaCommit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

// wgmma.wait_group.sync.aligned N
template <int kPending>
__device__ __forceinline__ void WgmmaWait() {
  static_assert(kPending >= 0 && kPending <= 7, "wgmma.wait_group takes 0..7");
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(kPending) : "memory");
}

// Keeps the compiler from moving reads or writes of an accumulator register across the wgmma
// fence/wait points (the asm statements above do not name the registers).
__device__ __forceinline__ void FenceOperand(float& reg) { asm volatile("" : "+f"(reg)::"memory"); }
__device__ __forceinline__ void FenceOperand(int& reg) { asm volatile("" : "+r"(reg)::"memory"); }

// Shared-memory matrix descriptor (64 bits) for a K-major operand stored as TMA writes it with
// 128-byte swizzle: rows of 128 bytes (64 fp16 of K), 8-row swizzle atoms of 1024 bytes stacked
// along M (or N). Fields: bits 0-13 start address >> 4; 16-29 leading-dimension byte offset >> 4
// (unused for swizzled K-major; 1 by convention); 32-45 stride byte offset >> 4 (1024 B between
// 8-row atoms); 49-51 base offset (0: atoms are 1024-byte aligned); 62-63 layout (1 = 128B
// swizzle). `tile` must lie in a 1024-byte aligned buffer; to step along K inside the 128-byte row
// add k_bytes (a multiple of 32 for k16 fp16) to the address, as the swizzle is applied by the
// hardware on the absolute address bits.
__device__ __forceinline__ u64 SwizzledSmemDescriptor(const void* tile, u32 k_bytes, u64 atom_bytes,
                                                      u64 layout) {
  const u64 start = ((SharedAddress(tile) + k_bytes) >> 4) & 0x3FFFu;
  const u64 leading = 1;
  const u64 stride = atom_bytes >> 4;
  return start | (leading << 16) | (stride << 32) | (layout << 62);
}
__device__ __forceinline__ u64 SmemDescriptorSw128(const void* tile, u32 k_bytes = 0) {
  return SwizzledSmemDescriptor(tile, k_bytes, 1024, /*layout=128B swizzle*/ 1);
}

// The same for rows of 64 bytes written with 64-byte swizzle (layout 2): 8-row atoms of 512
// bytes, so the stride byte offset is 512; `tile` 512-byte aligned.
__device__ __forceinline__ u64 SmemDescriptorSw64(const void* tile, u32 k_bytes = 0) {
  return SwizzledSmemDescriptor(tile, k_bytes, 512, /*layout=64B swizzle*/ 2);
}

// wgmma.mma_async.sync.aligned.m64nNk16.f32.f16.f16 {d}, desc_a, desc_b, p, 1, 1, 0, 0:
// D[64 x N] (f32, in registers) = A[64 x 16] * B[16 x N] (+ D when scale_d != 0), A and B fp16 in
// shared memory described by SmemDescriptorSw128, both K-major (transpose flags 0), scales +1.
// Accumulator layout per thread t of the warpgroup (warp w = t / 32, lane l = t % 32), register i:
//   row = 16 w + l / 4 + 8 ((i / 2) % 2),  col = 8 (i / 4) + 2 (l % 4) + (i % 2)
// (the mma.sync m16n8 C fragment, repeated over N / 8 column blocks). kRegs = N / 2.
template <int kN>
struct WgmmaF16F32;  // specialized below for N = 64, 128, 192, 256
// The int8 form: s8 x s8 -> s32, m64nNk32 (32 bytes of K per step, as fp16's k16), the same
// accumulator layout in int registers.
template <int kN>
struct WgmmaS8S32;

// BEGIN GENERATED by scripts/gen_wgmma_wrappers.py (do not edit by hand)
// clang-format off
template <>
struct WgmmaF16F32<64> {
  static constexpr int kRegs = 32;
  __device__ __forceinline__ static void Mma(float (&d)[32], unsigned long long desc_a,
                                             unsigned long long desc_b, int scale_d) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, "
        "%8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, "
        "%24, %25, %26, %27, %28, %29, %30, %31}, "
        "%32, %33, p, 1, 1, 0, 0;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
          "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
          "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
          "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
          "+f"(d[30]), "+f"(d[31])
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
  }
};

template <>
struct WgmmaF16F32<128> {
  static constexpr int kRegs = 64;
  __device__ __forceinline__ static void Mma(float (&d)[64], unsigned long long desc_a,
                                             unsigned long long desc_b, int scale_d) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, "
        "%8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, "
        "%24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, "
        "%40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, "
        "%56, %57, %58, %59, %60, %61, %62, %63}, "
        "%64, %65, p, 1, 1, 0, 0;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
          "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
          "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
          "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
          "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),
          "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
          "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]),
          "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]),
          "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
  }
};

template <>
struct WgmmaF16F32<192> {
  static constexpr int kRegs = 96;
  __device__ __forceinline__ static void Mma(float (&d)[96], unsigned long long desc_a,
                                             unsigned long long desc_b, int scale_d) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %98, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n192k16.f32.f16.f16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, "
        "%8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, "
        "%24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, "
        "%40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, "
        "%56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, "
        "%72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, "
        "%88, %89, %90, %91, %92, %93, %94, %95}, "
        "%96, %97, p, 1, 1, 0, 0;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
          "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
          "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
          "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
          "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),
          "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
          "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]),
          "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]),
          "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]),
          "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]),
          "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]),
          "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]),
          "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
  }
};

template <>
struct WgmmaF16F32<256> {
  static constexpr int kRegs = 128;
  __device__ __forceinline__ static void Mma(float (&d)[128], unsigned long long desc_a,
                                             unsigned long long desc_b, int scale_d) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, "
        "%8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, "
        "%24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, "
        "%40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, "
        "%56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, "
        "%72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, "
        "%88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, "
        "%104, %105, %106, %107, %108, %109, %110, %111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, "
        "%120, %121, %122, %123, %124, %125, %126, %127}, "
        "%128, %129, p, 1, 1, 0, 0;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
          "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
          "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
          "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
          "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),
          "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
          "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]),
          "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]),
          "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]),
          "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]),
          "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]),
          "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]),
          "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]),
          "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]),
          "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]),
          "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]),
          "+f"(d[126]), "+f"(d[127])
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
  }
};

template <>
struct WgmmaS8S32<64> {
  static constexpr int kRegs = 32;
  __device__ __forceinline__ static void Mma(int (&d)[32], unsigned long long desc_a,
                                             unsigned long long desc_b, int scale_d) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, "
        "%8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, "
        "%24, %25, %26, %27, %28, %29, %30, %31}, "
        "%32, %33, p;\n"
        "}\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]),
          "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]),
          "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]),
          "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]),
          "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]),
          "+r"(d[30]), "+r"(d[31])
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
  }
};

template <>
struct WgmmaS8S32<128> {
  static constexpr int kRegs = 64;
  __device__ __forceinline__ static void Mma(int (&d)[64], unsigned long long desc_a,
                                             unsigned long long desc_b, int scale_d) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, "
        "%8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, "
        "%24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, "
        "%40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, "
        "%56, %57, %58, %59, %60, %61, %62, %63}, "
        "%64, %65, p;\n"
        "}\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]),
          "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]),
          "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]),
          "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]),
          "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]),
          "+r"(d[30]), "+r"(d[31]), "+r"(d[32]), "+r"(d[33]), "+r"(d[34]), "+r"(d[35]),
          "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]), "+r"(d[40]), "+r"(d[41]),
          "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]),
          "+r"(d[48]), "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]),
          "+r"(d[54]), "+r"(d[55]), "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]),
          "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63])
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
  }
};

template <>
struct WgmmaS8S32<192> {
  static constexpr int kRegs = 96;
  __device__ __forceinline__ static void Mma(int (&d)[96], unsigned long long desc_a,
                                             unsigned long long desc_b, int scale_d) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %98, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n192k32.s32.s8.s8 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, "
        "%8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, "
        "%24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, "
        "%40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, "
        "%56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, "
        "%72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, "
        "%88, %89, %90, %91, %92, %93, %94, %95}, "
        "%96, %97, p;\n"
        "}\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]),
          "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]),
          "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]),
          "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]),
          "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]),
          "+r"(d[30]), "+r"(d[31]), "+r"(d[32]), "+r"(d[33]), "+r"(d[34]), "+r"(d[35]),
          "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]), "+r"(d[40]), "+r"(d[41]),
          "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]),
          "+r"(d[48]), "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]),
          "+r"(d[54]), "+r"(d[55]), "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]),
          "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63]), "+r"(d[64]), "+r"(d[65]),
          "+r"(d[66]), "+r"(d[67]), "+r"(d[68]), "+r"(d[69]), "+r"(d[70]), "+r"(d[71]),
          "+r"(d[72]), "+r"(d[73]), "+r"(d[74]), "+r"(d[75]), "+r"(d[76]), "+r"(d[77]),
          "+r"(d[78]), "+r"(d[79]), "+r"(d[80]), "+r"(d[81]), "+r"(d[82]), "+r"(d[83]),
          "+r"(d[84]), "+r"(d[85]), "+r"(d[86]), "+r"(d[87]), "+r"(d[88]), "+r"(d[89]),
          "+r"(d[90]), "+r"(d[91]), "+r"(d[92]), "+r"(d[93]), "+r"(d[94]), "+r"(d[95])
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
  }
};

template <>
struct WgmmaS8S32<256> {
  static constexpr int kRegs = 128;
  __device__ __forceinline__ static void Mma(int (&d)[128], unsigned long long desc_a,
                                             unsigned long long desc_b, int scale_d) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, "
        "%8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, "
        "%24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, "
        "%40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, "
        "%56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, "
        "%72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, "
        "%88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, "
        "%104, %105, %106, %107, %108, %109, %110, %111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, "
        "%120, %121, %122, %123, %124, %125, %126, %127}, "
        "%128, %129, p;\n"
        "}\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]),
          "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]),
          "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]),
          "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]),
          "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]),
          "+r"(d[30]), "+r"(d[31]), "+r"(d[32]), "+r"(d[33]), "+r"(d[34]), "+r"(d[35]),
          "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]), "+r"(d[40]), "+r"(d[41]),
          "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]),
          "+r"(d[48]), "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]),
          "+r"(d[54]), "+r"(d[55]), "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]),
          "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63]), "+r"(d[64]), "+r"(d[65]),
          "+r"(d[66]), "+r"(d[67]), "+r"(d[68]), "+r"(d[69]), "+r"(d[70]), "+r"(d[71]),
          "+r"(d[72]), "+r"(d[73]), "+r"(d[74]), "+r"(d[75]), "+r"(d[76]), "+r"(d[77]),
          "+r"(d[78]), "+r"(d[79]), "+r"(d[80]), "+r"(d[81]), "+r"(d[82]), "+r"(d[83]),
          "+r"(d[84]), "+r"(d[85]), "+r"(d[86]), "+r"(d[87]), "+r"(d[88]), "+r"(d[89]),
          "+r"(d[90]), "+r"(d[91]), "+r"(d[92]), "+r"(d[93]), "+r"(d[94]), "+r"(d[95]),
          "+r"(d[96]), "+r"(d[97]), "+r"(d[98]), "+r"(d[99]), "+r"(d[100]), "+r"(d[101]),
          "+r"(d[102]), "+r"(d[103]), "+r"(d[104]), "+r"(d[105]), "+r"(d[106]), "+r"(d[107]),
          "+r"(d[108]), "+r"(d[109]), "+r"(d[110]), "+r"(d[111]), "+r"(d[112]), "+r"(d[113]),
          "+r"(d[114]), "+r"(d[115]), "+r"(d[116]), "+r"(d[117]), "+r"(d[118]), "+r"(d[119]),
          "+r"(d[120]), "+r"(d[121]), "+r"(d[122]), "+r"(d[123]), "+r"(d[124]), "+r"(d[125]),
          "+r"(d[126]), "+r"(d[127])
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
  }
};

// clang-format on
// END GENERATED

}  // namespace hopper
}  // namespace tunejit

#endif  // TUNEJIT_KERNEL_SOURCES_HOPPER_PTX_CUH_
