// File: tests/testing/gpu_test.h
// For tests labelled "gpu": skip cleanly (not fail) where no driver or device is present, as on CI.
//
//   TEST(DenseGpu, MatchesReference) {
//     TUNEJIT_REQUIRE_GPU();
//     ...
//   }
#ifndef TUNEJIT_TESTS_TESTING_GPU_TEST_H_
#define TUNEJIT_TESTS_TESTING_GPU_TEST_H_

#include "gtest/gtest.h"
#include "jit/device.h"

#define TUNEJIT_REQUIRE_GPU()                                                  \
  do {                                                                         \
    ::absl::Status tunejit_gpu_ = ::tunejit::GpuAvailable();                   \
    if (!tunejit_gpu_.ok()) GTEST_SKIP() << "no GPU: " << tunejit_gpu_.message(); \
  } while (0)

#endif  // TUNEJIT_TESTS_TESTING_GPU_TEST_H_
