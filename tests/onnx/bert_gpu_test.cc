// A BERT encoder layer (tests/onnx/tensor_corpus.h BertLayerModel: int64 token ids, the embedding
// gather, attention, the erf GELU MLP, LayerNorms) imported and run by the executor at fp32 and
// fp16 against the CPU reference forward of the same graph, ids out of range included; and the
// int64 input's checks. Label gpu: skipped without one.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cache/kernel_cache.h"
#include "executor/executor.h"
#include "executor/reference_forward.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/import.h"
#include "ops/cpu_reference.h"
#include "tests/onnx/tensor_corpus.h"
#include "tests/testing/gpu_test.h"

namespace tunejit {
namespace {

using ::testing::HasSubstr;

class BertGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TUNEJIT_REQUIRE_GPU();
    absl::StatusOr<Device> d = Device::Open(0);
    ASSERT_TRUE(d.ok()) << d.status();
    device_ = std::make_unique<Device>(*std::move(d));
    CacheOptions options;
    options.dir = ::testing::TempDir() + "/tunejit_bert_gpu_cache";
    absl::StatusOr<KernelCache> cache = KernelCache::Open(options);
    ASSERT_TRUE(cache.ok()) << cache.status();
    cache_ = std::make_unique<KernelCache>(*std::move(cache));
    compiler_ = std::make_unique<KernelCompiler>(cache_.get());
    absl::StatusOr<OnnxModel> m = testing::BertLayerModel().Import({.batch = 2});
    ASSERT_TRUE(m.ok()) << m.status();
    model_ = std::make_unique<OnnxModel>(*std::move(m));
  }

  absl::StatusOr<Executor> Build(NumericMode mode) {
    ExecutorOptions options;
    options.mode = mode;
    options.progress = stderr;
    return Executor::Build(*device_, *compiler_, model_->graph, model_->weights, options);
  }

  std::vector<float> Reference(const std::vector<int64_t>& ids) {
    absl::StatusOr<std::vector<std::vector<float>>> v =
        ReferenceForward(model_->graph, model_->weights,
                         {{"input_ids", std::vector<float>(ids.begin(), ids.end())}});
    EXPECT_TRUE(v.ok()) << v.status();
    return v.ok() ? (*v)[*model_->graph.FindTensor("last_hidden_state")] : std::vector<float>{};
  }

  std::unique_ptr<Device> device_;
  std::unique_ptr<KernelCache> cache_;
  std::unique_ptr<KernelCompiler> compiler_;
  std::unique_ptr<OnnxModel> model_;
};

TEST_F(BertGpuTest, MatchesTheReferenceInFp32AndFp16) {
  // The second sequence has ids past the vocabulary of 10 both ways: clamped, as the reference.
  const std::vector<int64_t> ids = {3, 1, 4, 1, 9, -1, 12, -40};
  const std::vector<float> want = Reference(ids);
  ASSERT_EQ(want.size(), 2u * 4 * 8);
  for (NumericMode mode : {NumericMode::kFp32, NumericMode::kFp16TensorCores}) {
    absl::StatusOr<Executor> ex = Build(mode);
    ASSERT_TRUE(ex.ok()) << NumericModeName(mode) << ": " << ex.status();
    ASSERT_TRUE(ex->SetInput("input_ids", ids).ok());
    ASSERT_TRUE(ex->Run().ok());
    absl::StatusOr<std::vector<float>> got = ex->Output("last_hidden_state");
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_LT(cpuref::RelativeError(*got, want), mode == NumericMode::kFp32 ? 1e-4 : 1e-2)
        << NumericModeName(mode);
    ASSERT_TRUE(ex->Run().ok());  // the CUDA graph replay gives the same bits
    absl::StatusOr<std::vector<float>> again = ex->Output("last_hidden_state");
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, *got) << NumericModeName(mode);
  }
}

TEST_F(BertGpuTest, Int64InputChecksTypeAndCount) {
  absl::StatusOr<Executor> ex = Build(NumericMode::kFp32);
  ASSERT_TRUE(ex.ok()) << ex.status();
  absl::Status s = ex->SetInput("input_ids", std::vector<float>(8, 1.0f));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("input 'input_ids' is I64, got F32 values"));
  s = ex->SetInput("input_ids", std::vector<int64_t>(7, 1));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("8 elements, got 7"));
}

}  // namespace
}  // namespace tunejit
