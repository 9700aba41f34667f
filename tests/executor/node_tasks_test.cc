// ExtractTasks: each conv / dense node's mode down its ladder (executor/node_tasks.h), its
// implementations in Relay's order, its operand forms and the pool a tensor-core conv absorbs.
#include "executor/node_tasks.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/executor/executor_test_util.h"

namespace tunejit {
namespace {

std::vector<std::string> TaskNames(const NodeTask& t) {
  std::vector<std::string> names;
  for (const autotvm::Implementation& impl : t.implementations) {
    names.push_back(impl.workload.task_name);
  }
  return names;
}

std::vector<NodeTask> Extract(const Graph& g, NumericMode mode) {
  absl::StatusOr<std::vector<NodeTask>> tasks = ExtractTasks(g, mode);
  EXPECT_TRUE(tasks.ok()) << tasks.status();
  return tasks.ok() ? *tasks : std::vector<NodeTask>{};
}

// SmallNet(ci 4): conv0 4 -> 8 channels (then a 2x2 pool), conv1 8 -> 8, fc 512 -> 10.
TEST(NodeTasksTest, Fp32RunsTvmsTemplates) {
  const std::vector<NodeTask> t = Extract(testing::SmallNet(), NumericMode::kFp32);
  ASSERT_EQ(t.size(), 3u);
  for (const NodeTask& task : t) {
    EXPECT_EQ(task.mode, NumericMode::kFp32) << task.name;
    EXPECT_FALSE(task.forms.nhwc || task.half_output || task.int8()) << task.name;
    EXPECT_EQ(task.pool, -1);
  }
  EXPECT_EQ(TaskNames(t[0]),
            (std::vector<std::string>{"conv2d_nchw.cuda", "conv2d_nchw_winograd.cuda"}));
  EXPECT_EQ(TaskNames(t[2]), (std::vector<std::string>{"dense_small_batch.cuda"}));
}

TEST(NodeTasksTest, Int8TensorCoresFallBackToDp4aAndFp16Dense) {
  // 4 and 8 input channels: whole 4-channel groups (int8) but not 16 bytes (wgmma): dp4a.
  std::vector<NodeTask> t = Extract(testing::SmallNet(), NumericMode::kInt8TensorCores);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].mode, NumericMode::kInt8Dp4a);
  EXPECT_EQ(TaskNames(t[0]).front(), "conv2d_NCHWc_int8.cuda");
  EXPECT_EQ(t[1].mode, NumericMode::kInt8Dp4a);
  EXPECT_EQ(t[2].mode, NumericMode::kFp16TensorCores);  // the dense layer: float16 on wgmma
  EXPECT_EQ(TaskNames(t[2]), (std::vector<std::string>{"dense_wgmma.cuda"}));
  EXPECT_FALSE(t[2].half_output);  // the logits leave in float32
  // 16 input channels: int8 on wgmma, NHWC, with the pool after it in the kernel.
  t = Extract(testing::SmallNet(2, 16), NumericMode::kInt8TensorCores);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].mode, NumericMode::kInt8TensorCores);
  EXPECT_TRUE(t[0].forms.nhwc);
  EXPECT_GE(t[0].pool, 0);
  EXPECT_EQ(TaskNames(t[0]), (std::vector<std::string>{autotvm::kConv2dNhwcWgmmaPool}));
  EXPECT_EQ(t[1].mode, NumericMode::kInt8Dp4a);
}

TEST(NodeTasksTest, Fp16FallsBackToFp32WhereNoTensorCoreTemplateFits) {
  // conv0: 4 channels are not 16 bytes of halves, and 8 output channels are too few for the
  // stem's 16-channel tiles: float32. conv1 (8 -> 8) and fc on the tensor cores, float16 out
  // where a later conv or dense reads it.
  const std::vector<NodeTask> t = Extract(testing::SmallNet(), NumericMode::kFp16TensorCores);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].mode, NumericMode::kFp32);
  EXPECT_FALSE(t[0].half_output);
  EXPECT_EQ(t[1].mode, NumericMode::kFp16TensorCores);
  EXPECT_TRUE(t[1].forms.nhwc);
  EXPECT_TRUE(t[1].half_output);
  EXPECT_EQ(t[1].implementations[0].workload.args.back(), "float16");
  EXPECT_EQ(t[2].mode, NumericMode::kFp16TensorCores);
  EXPECT_FALSE(t[2].half_output);
}

TEST(NodeTasksTest, Int8Dp4aKeepsTheDenseAndNarrowConvsFloat) {
  // 3 input channels: not whole 4-channel groups, so float32, as relay.quantize keeps VGG's stem.
  const std::vector<NodeTask> t = Extract(testing::SmallNet(2, 3), NumericMode::kInt8Dp4a);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].mode, NumericMode::kFp32);
  EXPECT_EQ(t[1].mode, NumericMode::kInt8Dp4a);
  EXPECT_EQ(TaskNames(t[1]),
            (std::vector<std::string>{"conv2d_NCHWc_int8.cuda", "conv2d_nchw_winograd.cuda"}));
  EXPECT_EQ(t[2].mode, NumericMode::kFp32);
}

TEST(NodeTasksTest, ResolvesTheUsersOptionsOnce) {
  EXPECT_EQ(*ResolveNumericMode("fp32", false), NumericMode::kFp32);
  EXPECT_EQ(*ResolveNumericMode("int8", false), NumericMode::kInt8Dp4a);
  EXPECT_EQ(*ResolveNumericMode("int8", true), NumericMode::kInt8TensorCores);
  EXPECT_EQ(*ResolveNumericMode("fp16", false), NumericMode::kFp16TensorCores);
  EXPECT_EQ(*ResolveNumericMode("fp16", true), NumericMode::kFp16TensorCores);
  absl::StatusOr<NumericMode> bad = ResolveNumericMode("fp32", true);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--tensor-cores needs --precision int8"),
            std::string::npos);
  bad = ResolveNumericMode("bf16", false);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("unknown precision 'bf16' (expected fp32, int8 or fp16)"),
            std::string::npos);
  EXPECT_EQ(NumericModeName(NumericMode::kInt8TensorCores), "int8-tensor-cores");
  EXPECT_EQ(PrecisionName(NumericMode::kInt8TensorCores), "int8");
  EXPECT_TRUE(UsesTensorCores(NumericMode::kFp16TensorCores));
  EXPECT_FALSE(UsesTensorCores(NumericMode::kInt8Dp4a));
}

}  // namespace
}  // namespace tunejit
