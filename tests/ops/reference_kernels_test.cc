// The tuner's GPU reference kernels (ops/reference_kernels.h, kernel_sources/reference.cu): each
// data type and layout plans the matching instantiation, and NVRTC builds it (no GPU needed). Their
// values are checked on a GPU by tests/tuner/tuner_gpu_test.cc, where every candidate is compared
// with them and then re-run against the CPU reference.
#include "ops/reference_kernels.h"

#include <string>

#include "absl/strings/match.h"
#include "autotvm/dispatch.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/kernel_compiler.h"
#include "tests/testing/offers.h"

namespace tunejit {
namespace {

using ::testing::HasSubstr;

autotvm::Conv2dParams Conv(const std::string& dtype) {
  autotvm::Conv2dParams p;
  p.n = 2, p.ci = 16, p.h = 9, p.w = 7, p.co = 24, p.kh = 3, p.kw = 3;
  p.data_dtype = p.kernel_dtype = dtype;
  p.out_dtype = dtype == "int8" ? "int32" : "float32";
  return p;
}

void ExpectBuilds(const OpPlan& plan, const std::string& name_expression) {
  ASSERT_EQ(plan.kernels.size(), 1u);
  EXPECT_EQ(plan.kernels[0].spec.name_expression, name_expression);
  KernelCompiler compiler(nullptr);
  absl::StatusOr<CompiledKernel> kernel = compiler.Compile(plan.kernels[0].spec, GpuArch{9, 0});
  ASSERT_TRUE(kernel.ok()) << name_expression << ": " << kernel.status();
  EXPECT_FALSE(kernel->program.cubin.empty());
}

TEST(ReferenceKernels, NchwAndNhwcConvInEveryDataTypeBuild) {
  ExpectBuilds(*ReferenceConv2dPlan(Conv("float32"), Epilogue{}),
               "tunejit::conv2d_reference<float, 0, false, false>");
  ExpectBuilds(*ReferenceConv2dPlan(Conv("int8"), Epilogue{}),
               "tunejit::conv2d_reference<signed char, 0, false, false>");
  // The tensor-core template's workloads: NHWC / OHWI (layout "NHWC" once parsed).
  for (const std::string dtype : {"float16", "int8"}) {
    const NumericMode mode =
        dtype == "int8" ? NumericMode::kInt8TensorCores : NumericMode::kFp16TensorCores;
    const std::vector<autotvm::Implementation> impls =
        testing::OfferedConv(Conv(dtype), mode, /*half_output=*/false);
    ASSERT_EQ(impls.size(), 1u) << dtype;
    absl::StatusOr<autotvm::Conv2dParams> parsed = autotvm::ParseConv2dWorkload(impls[0].workload);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    absl::StatusOr<OpPlan> plan = ReferenceConv2dPlan(*parsed, Epilogue{});
    ASSERT_TRUE(plan.ok()) << plan.status();
    ExpectBuilds(*plan, dtype == "int8" ? "tunejit::conv2d_reference<signed char, 0, true, true>"
                                        : "tunejit::conv2d_reference<tunejit::f16, 0, true, true>");
  }
}

// The stem's workload reads NCHW float32 and writes NHWC: the reference writes NHWC too.
TEST(ReferenceKernels, StemConvWritesNhwcFromNchwData) {
  autotvm::Conv2dParams p = Conv("float32");
  p.ci = 3;
  p.co = 64;
  const std::vector<autotvm::Implementation> impls =
      testing::OfferedConv(p, NumericMode::kFp16TensorCores, /*half_output=*/false);
  ASSERT_EQ(impls.size(), 1u);
  absl::StatusOr<autotvm::Conv2dParams> parsed = autotvm::ParseConv2dWorkload(impls[0].workload);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(parsed->nhwc_out);
  EXPECT_EQ(parsed->layout, "NCHW");
  ExpectBuilds(*ReferenceConv2dPlan(*parsed, Epilogue{}),
               "tunejit::conv2d_reference<float, 0, false, true>");
}

TEST(ReferenceKernels, DenseInFloatAndHalfBuilds) {
  autotvm::DenseParams d{128, 200, 64};
  ExpectBuilds(*ReferenceDensePlan(d, Epilogue{}), "tunejit::dense_reference<float, 0>");
  d.data_dtype = "float16";
  ExpectBuilds(*ReferenceDensePlan(d, Epilogue{.bias = true, .relu = true}),
               "tunejit::dense_reference<tunejit::f16, 3>");
}

TEST(ReferenceKernels, UnknownDataTypeAndInt32BiasAreRejected) {
  absl::StatusOr<OpPlan> plan = ReferenceConv2dPlan(Conv("bfloat16"), Epilogue{});
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("bfloat16"));
  plan = ReferenceConv2dPlan(Conv("int8"), Epilogue{.bias = true});
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tunejit
