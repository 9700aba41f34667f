// Warp-level tensor-core instructions of sm_80 and later (mma.sync), shared by the templates that
// use them: the stem conv (conv2d_stem.cu) and fused attention (attention.cu).
#ifndef TUNEJIT_KERNEL_SOURCES_MMA_SYNC_CUH_
#define TUNEJIT_KERNEL_SOURCES_MMA_SYNC_CUH_

namespace tunejit {

// D = A (16 x 16, row-major) * B (16 x 8, column-major) + D; float16 operands, float32 sums.
__device__ __forceinline__ void MmaF16M16N8K16(float (&d)[4], const unsigned (&a)[4], unsigned b0,
                                               unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

}  // namespace tunejit

#endif  // TUNEJIT_KERNEL_SOURCES_MMA_SYNC_CUH_
