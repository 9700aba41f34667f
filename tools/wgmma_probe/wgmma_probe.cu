// File: tools/wgmma_probe/wgmma_probe.cu
// Where does the wgmma core (kernel_sources/wgmma_core.cuh) lose time? Runs the real WgmmaBlock
// on a plain fp16 GEMM (bias + ReLU into fp16, the network's epilogue) in four modes:
//   full       TMA loads + wgmma + epilogue (gemm_wgmma.cu's kernel, as the product runs it)
//   no-loads   the producer pays each stage's bytes with mbarrier.complete_tx instead of TMA:
//              the pipeline and the wgmmas alone (operands are whatever is in shared memory)
//   no-store   every output row maps to -1: nothing is written
//   mma-only   neither
// and prints TFLOP/s per config (CUDA events, median of 20 after 3 warm-ups). A research tool, not
// part of the product: built with nvcc by tools/CMakeLists.txt, run on the GPU machine.
//
//   wgmma_probe [M N K]      (default 8192 8192 8192)
#include <cuda.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "../../kernel_sources/gemm_wgmma.cu"

namespace tunejit {

enum ProbeMode { kFull = 0, kNoLoads = 1, kNoStore = 2, kMmaOnly = 3 };

__device__ __forceinline__ void CompleteTx(hopper::u64* bar, unsigned bytes) {
  asm volatile("mbarrier.complete_tx.shared::cta.b64 [%0], %1;" ::"r"(hopper::SharedAddress(bar)),
               "r"(bytes)
               : "memory");
}

// kCluster 2: the two CTAs of a cluster take neighbouring column tiles of one row tile; each
// loads half of the A tile's rows (a_map's box is BM / 2 rows) for both.
template <int BM, int BN, int BK_BYTES, int kMode, int kCluster>
struct ProbeProducer {
  const hopper::TmaDescriptor* a_map;
  const hopper::TmaDescriptor* b_map;
  int m0, n0;
  __device__ __forceinline__ void operator()(unsigned char* a, unsigned char* b, hopper::u64* full,
                                             int kt) const {
    using Stage = WgmmaStage<BM, BN, BK_BYTES>;
    if constexpr (kMode & kNoLoads) {
      CompleteTx(full, Stage::kBytes);
    } else if constexpr (kCluster == 1) {
      GemmProducer<BM, BN, BK_BYTES / 2, 0>{a_map, b_map, m0, n0}(a, b, full, kt);
    } else {
      const int rank = hopper::ClusterRank();
      constexpr int kRows = BM / kCluster;
#pragma unroll
      for (int atom = 0; atom < Stage::kAtoms; ++atom) {
        const int k0 = kt * (BK_BYTES / 2) + atom * 64;
        hopper::TmaLoad2dMulticast(a + atom * Stage::kAAtomBytes + rank * kRows * 128, a_map, full,
                                   k0, m0 + rank * kRows, (1 << kCluster) - 1);
        hopper::TmaLoad2d(b + atom * Stage::kBAtomBytes, b_map, full, k0, n0);
      }
    }
  }
};

// No-store modes: `never` is 0 at run time, so the stores exist (and so do the wgmmas that feed
// them: the compiler may drop those whose results are unused) but never run.
template <int kMode>
struct ProbeRows {
  int m, n, never;
  __device__ __forceinline__ s64 operator()(int row) const {
    if constexpr (kMode & kNoStore) {
      if (!never) return -1;
    }
    return row < m ? static_cast<s64>(row) * n : -1;
  }
};

template <int BM, int BN, int BK_BYTES, int kMode, int kCluster>
struct ProbeTiles {
  const hopper::TmaDescriptor* a_map;
  const hopper::TmaDescriptor* b_map;
  int m, n, m_tiles, n_tiles, never;
  __device__ __forceinline__ int count() const { return m_tiles * n_tiles; }
  __device__ __forceinline__
      WgmmaTile<ProbeProducer<BM, BN, BK_BYTES, kMode, kCluster>, ProbeRows<kMode>>
      At(int t) const {
    const int m0 = t / n_tiles * BM, n0 = t % n_tiles * BN;
    return {{a_map, b_map, m0, n0}, {m, n, never}, m0, n0};
  }
};

template <int BM, int BN, int STAGES, int CONS_WG, int PP, int kMode, int kCluster>
__global__ void __cluster_dims__(kCluster, 1, 1) __launch_bounds__(128 * (1 + CONS_WG), 1)
    probe(const __grid_constant__ hopper::TmaDescriptor a_map,
          const __grid_constant__ hopper::TmaDescriptor b_map, const float* bias, void* out, int m,
          int n, int k, int never) {
  constexpr int kBkBytes = 128;  // 64 fp16 of K per stage
  WgmmaBlock<BM, BN, kBkBytes, STAGES, CONS_WG, 0, kEpiBias | kEpiRelu, 1, PP, kWgmmaAtomBytes,
             kCluster>(
      ProbeTiles<BM, BN, kBkBytes, kMode, kCluster>{&a_map, &b_map, m, n, CeilDiv(m, BM),
                                                    CeilDiv(n, BN), never},
      &a_map, &b_map, out, bias, nullptr, n, CeilDiv(k, 64));
}

}  // namespace tunejit

namespace {

#define CHECK_CUDA(x)                                                                        \
  do {                                                                                       \
    cudaError_t e = (x);                                                                     \
    if (e != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)

typedef CUresult (*EncodeTiledFn)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                  const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                  const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                  CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

EncodeTiledFn Encoder() {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q;
  CHECK_CUDA(cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &fn, cudaEnableDefault, &q));
  return reinterpret_cast<EncodeTiledFn>(fn);
}

// {K, rows} fp16, box {64, box_rows}, 128-byte swizzle.
tunejit::hopper::TmaDescriptor Map(void* base, int k, int rows, int box_rows) {
  CUtensorMap map;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(k), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(k) * 2};
  const cuuint32_t box[2] = {64, static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t elem[2] = {1, 1};
  CUresult r = Encoder()(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, base, dims, strides, box, elem,
                         CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                         CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "cuTensorMapEncodeTiled failed: %d\n", static_cast<int>(r));
    std::exit(1);
  }
  tunejit::hopper::TmaDescriptor d;
  static_assert(sizeof(d) == sizeof(map), "descriptor size");
  std::memcpy(&d, &map, sizeof(d));
  return d;
}

struct Problem {
  int m, n, k;
  __half *a, *b, *c;
  float* bias;
  std::vector<__half> ha, hb;
  std::vector<float> hbias;
};

template <int BM, int BN, int STAGES, int CONS_WG, int PP, int kMode, int kCluster>
float Time(const Problem& p, int sms) {
  auto kernel = tunejit::probe<BM, BN, STAGES, CONS_WG, PP, kMode, kCluster>;
  const int smem = tunejit::WgmmaSmemBytes(BM, BN, 128, STAGES);
  CHECK_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const auto a_map = Map(p.a, p.k, p.m, BM / kCluster), b_map = Map(p.b, p.k, p.n, BN);
  const int tiles = ((p.m + BM - 1) / BM) * ((p.n + BN - 1) / BN);
  const int grid = std::min(tiles, sms) / kCluster * kCluster;
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  std::vector<float> ms;
  for (int i = 0; i < 23; ++i) {
    CHECK_CUDA(cudaEventRecord(start));
    kernel<<<grid, 128 * (1 + CONS_WG), smem>>>(a_map, b_map, p.bias, p.c, p.m, p.n, p.k, 0);
    CHECK_CUDA(cudaEventRecord(stop));
    CHECK_CUDA(cudaEventSynchronize(stop));
    CHECK_CUDA(cudaGetLastError());
    float t = 0;
    CHECK_CUDA(cudaEventElapsedTime(&t, start, stop));
    if (i >= 3) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// Samples C against a double-precision reference (full mode only).
double MaxRelError(const Problem& p) {
  std::vector<__half> c(static_cast<size_t>(p.m) * p.n);
  CHECK_CUDA(cudaMemcpy(c.data(), p.c, c.size() * 2, cudaMemcpyDeviceToHost));
  std::mt19937 rng(7);
  double worst = 0;
  for (int s = 0; s < 64; ++s) {
    const int i = rng() % p.m, j = rng() % p.n;
    double ref = p.hbias[j];
    for (int kk = 0; kk < p.k; ++kk) {
      ref += static_cast<double>(__half2float(p.ha[static_cast<size_t>(i) * p.k + kk])) *
             __half2float(p.hb[static_cast<size_t>(j) * p.k + kk]);
    }
    ref = std::max(ref, 0.0);
    const double got = __half2float(c[static_cast<size_t>(i) * p.n + j]);
    worst = std::max(worst, std::abs(got - ref) / std::max(1.0, std::abs(ref)));
  }
  return worst;
}

template <int BM, int BN, int STAGES, int CONS_WG, int PP, int kCluster = 1>
void Row(Problem& p, int sms, const char* name) {
  const double flop = 2.0 * p.m * p.n * p.k;
  float t[4];
  CHECK_CUDA(cudaMemset(p.c, 0, static_cast<size_t>(p.m) * p.n * 2));
  t[0] = Time<BM, BN, STAGES, CONS_WG, PP, tunejit::kFull, kCluster>(p, sms);
  const double err = MaxRelError(p);
  t[1] = Time<BM, BN, STAGES, CONS_WG, PP, tunejit::kNoLoads, kCluster>(p, sms);
  t[2] = Time<BM, BN, STAGES, CONS_WG, PP, tunejit::kNoStore, kCluster>(p, sms);
  t[3] = Time<BM, BN, STAGES, CONS_WG, PP, tunejit::kMmaOnly, kCluster>(p, sms);
  std::printf("%-28s", name);
  for (float ms : t) std::printf(" | %7.3f ms %6.1f", ms, flop / ms / 1e9);
  std::printf(" | err %.1e\n", err);
}

}  // namespace

int main(int argc, char** argv) {
  Problem p;
  p.m = argc > 3 ? std::atoi(argv[1]) : 8192;
  p.n = argc > 3 ? std::atoi(argv[2]) : 8192;
  p.k = argc > 3 ? std::atoi(argv[3]) : 8192;
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, %d SMs; GEMM %d x %d x %d fp16 -> fp16 (bias + ReLU)\n", prop.name,
              prop.multiProcessorCount, p.m, p.n, p.k);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  p.ha.resize(static_cast<size_t>(p.m) * p.k);
  p.hb.resize(static_cast<size_t>(p.n) * p.k);
  p.hbias.resize(p.n);
  for (auto& v : p.ha) v = __float2half(u(rng));
  for (auto& v : p.hb) v = __float2half(u(rng));
  for (auto& v : p.hbias) v = u(rng);
  CHECK_CUDA(cudaMalloc(&p.a, p.ha.size() * 2));
  CHECK_CUDA(cudaMalloc(&p.b, p.hb.size() * 2));
  CHECK_CUDA(cudaMalloc(&p.c, static_cast<size_t>(p.m) * p.n * 2));
  CHECK_CUDA(cudaMalloc(&p.bias, p.n * 4));
  CHECK_CUDA(cudaMemcpy(p.a, p.ha.data(), p.ha.size() * 2, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(p.b, p.hb.data(), p.hb.size() * 2, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(p.bias, p.hbias.data(), p.n * 4, cudaMemcpyHostToDevice));
  std::printf("%-28s | %-17s | %-17s | %-17s | %-17s |\n", "config (BMxBN, stages, mode)", "full",
              "no-loads", "no-store", "mma-only");
  const int sms = prop.multiProcessorCount;
  Row<256, 128, 4, 2, 0, 2>(p, sms, "256x128 s4 coop cluster 2");
  Row<256, 128, 4, 2, 0>(p, sms, "256x128 s4 coop");
  Row<256, 128, 3, 2, 0>(p, sms, "256x128 s3 coop");
  Row<128, 256, 4, 2, 0, 2>(p, sms, "128x256 s4 coop cluster 2");
  Row<128, 256, 4, 2, 0>(p, sms, "128x256 s4 coop");
  Row<128, 256, 3, 2, 0>(p, sms, "128x256 s3 coop");
  Row<128, 128, 6, 2, 0>(p, sms, "128x128 s6 coop");
  Row<128, 128, 6, 2, 1, 2>(p, sms, "128x128 s6 pingpong cluster 2");
  Row<128, 128, 6, 2, 1>(p, sms, "128x128 s6 pingpong");
  Row<64, 256, 5, 2, 1>(p, sms, "64x256 s5 pingpong");
  Row<128, 192, 5, 2, 0>(p, sms, "128x192 s5 coop");
  Row<256, 192, 3, 2, 0>(p, sms, "256x192 s3 coop");
  // 64 columns (conv1_2's 64 channels): does mma-only still reach the instruction ceiling, or
  // do the shared-memory operand reads (4 KiB per m64n64k16) cap it?
  Row<256, 64, 4, 2, 0>(p, sms, "256x64 s4 coop");
  Row<256, 64, 5, 2, 1>(p, sms, "256x64 s5 pingpong");  // 6 stages exceed 227 KiB
  Row<128, 64, 6, 2, 0>(p, sms, "128x64 s6 coop");
  return 0;
}
