// CPU: every template that offers itself for a convolution of the torchvision zoo
// (tests/data/zoo_convs.txt) has a fallback config that plans on an H100, at batch 1, 32, 128 and
// 256 and in every numeric mode: a layer without a tuned record runs its template's fallback, so
// an offer whose fallback is rejected leaves the layer with nothing to run.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ops/templates.h"
#include "tests/ops/ops_test_util.h"
#include "tests/testing/offers.h"
#include "tests/testing/zoo_convs.h"

namespace tunejit {
namespace {

std::string Describe(const autotvm::Conv2dParams& p) {
  return absl::StrCat("N ", p.n, " C ", p.ci, " ", p.h, "x", p.w, " CO ", p.co, " ", p.kh, "x",
                      p.kw, " stride ", p.stride_h, " pad ", p.pad_top, " dilation ", p.dilation_h,
                      " groups ", p.groups);
}

TEST(ZooFallback, EveryOfferedTemplatesFallbackPlans) {
  const std::vector<autotvm::Conv2dParams> convs = testing::ZooConvs();
  ASSERT_GT(convs.size(), 200u);
  const DeviceLimits h100 = DeviceLimits::ForArch(GpuArch{9, 0, true});
  int checked = 0, failed = 0;
  for (const NumericMode mode : {NumericMode::kFp32, NumericMode::kFp16TensorCores,
                                 NumericMode::kInt8Dp4a, NumericMode::kInt8TensorCores}) {
    for (const int64_t batch : {1, 32, 128, 256}) {
      for (autotvm::Conv2dParams p : convs) {
        p.n = batch;
        for (const autotvm::Implementation& impl : testing::OfferedConv(p, mode, true)) {
          const OpTemplate* op = FindOpTemplate(impl.workload.task_name);
          ASSERT_NE(op, nullptr) << impl.workload.task_name;
          absl::StatusOr<autotvm::ConfigEntity> fallback = op->FallbackConfig(impl.workload);
          absl::Status planned = fallback.status();
          if (fallback.ok()) {
            planned = op->Specialize(impl.workload, *fallback, h100, Epilogue{}).status();
          }
          ++checked;
          if (!planned.ok() && ++failed <= 20) {
            ADD_FAILURE() << NumericModeName(mode) << " " << Describe(p) << ": "
                          << impl.workload.task_name << ": " << planned;
          }
        }
      }
    }
  }
  EXPECT_EQ(failed, 0) << "of " << checked << " offers";
  EXPECT_GT(checked, 3000);
}

}  // namespace
}  // namespace tunejit
