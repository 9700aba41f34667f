// File: tests/executor/executor_gpu_util.h
// For the executor's GPU tests: one device, kernel cache and compiler for the whole test binary
// (kernels repeat across its tests), the cache in a folder of the test's temporary directory.
//
//   Gpu& gpu = SharedGpu("tunejit_executor_gpu_cache");
//   if (gpu.device == nullptr) GTEST_FAIL();
#ifndef TUNEJIT_TESTS_EXECUTOR_EXECUTOR_GPU_UTIL_H_
#define TUNEJIT_TESTS_EXECUTOR_EXECUTOR_GPU_UTIL_H_

#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "cache/kernel_cache.h"
#include "gtest/gtest.h"
#include "jit/device.h"
#include "jit/kernel_compiler.h"

namespace tunejit {

struct Gpu {
  std::unique_ptr<Device> device;  // null when device 0 did not open (the test failed)
  std::unique_ptr<KernelCache> cache;
  std::unique_ptr<KernelCompiler> compiler;
};

// Made on the first call (`cache_folder` names the cache's folder then); never destroyed, so
// static destruction order cannot release the context under a live buffer.
inline Gpu& SharedGpu(const std::string& cache_folder) {
  static Gpu* gpu = [&cache_folder] {
    auto* g = new Gpu;
    absl::StatusOr<Device> d = Device::Open(0);
    EXPECT_TRUE(d.ok()) << d.status();
    if (!d.ok()) return g;
    g->device = std::make_unique<Device>(*std::move(d));
    CacheOptions options;
    options.dir = ::testing::TempDir() + "/" + cache_folder;
    absl::StatusOr<KernelCache> cache = KernelCache::Open(options);
    EXPECT_TRUE(cache.ok()) << cache.status();
    if (cache.ok()) g->cache = std::make_unique<KernelCache>(*std::move(cache));
    g->compiler = std::make_unique<KernelCompiler>(g->cache.get());
    return g;
  }();
  return *gpu;
}

}  // namespace tunejit

#endif  // TUNEJIT_TESTS_EXECUTOR_EXECUTOR_GPU_UTIL_H_
