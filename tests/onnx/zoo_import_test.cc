// Real torchvision (and BERT: int64 token ids) exports (scripts/export_onnx.py or scripts/zoo.py
// export, where torch is) imported and run through the CPU reference forward against PyTorch's own
// output. Skipped unless TUNEJIT_ONNX_ZOO names the export directory:
//   TUNEJIT_ONNX_ZOO=/tmp/zoo TUNEJIT_ONNX_ZOO_MODELS=resnet18,vit_b_16 [TUNEJIT_ONNX_ZOO_BATCH=2]
//       onnx_import_test --gtest_filter='OnnxZooTest.*'
// reads DIR/<m>.onnx, DIR/<m>-input.bin and DIR/<m>-torch.bin for each model (the batch: the
// file's, or TUNEJIT_ONNX_ZOO_BATCH for a dynamic-batch export), and prints the graph's op counts.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "executor/reference_forward.h"
#include "gtest/gtest.h"
#include "onnx/import.h"

namespace tunejit {
namespace {

template <typename T>
std::vector<T> ReadRaw(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  std::vector<T> v(bytes.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
  return v;
}

void CheckModel(const std::string& dir, const std::string& name, int64_t batch) {
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<OnnxModel> m = ImportOnnx(dir + "/" + name + ".onnx", {.batch = batch});
  ASSERT_TRUE(m.ok()) << name << ": " << m.status();
  std::map<std::string, int> ops;
  for (const Node& n : m->graph.nodes()) ++ops[std::string(OpKindName(n.op))];
  std::string counts;
  for (const auto& [op, count] : ops) counts += " " + op + "=" + std::to_string(count);
  const int input = m->graph.TensorsOfKind(TensorKind::kInput).at(0);
  const int output = m->graph.TensorsOfKind(TensorKind::kOutput).at(0);
  // An int64 input (BERT's token ids) goes to the reference forward as floats (exact ids).
  std::vector<float> x;
  if (m->graph.tensor(input).dtype == DType::kI64) {
    const std::vector<int64_t> ids = ReadRaw<int64_t>(dir + "/" + name + "-input.bin");
    x.assign(ids.begin(), ids.end());
  } else {
    x = ReadRaw<float>(dir + "/" + name + "-input.bin");
  }
  const std::vector<float> want = ReadRaw<float>(dir + "/" + name + "-torch.bin");
  ASSERT_EQ(static_cast<int64_t>(x.size()), m->graph.tensor(input).NumElements()) << name;
  absl::StatusOr<std::vector<std::vector<float>>> values =
      ReferenceForward(m->graph, m->weights, {{m->graph.tensor(input).name, x}});
  ASSERT_TRUE(values.ok()) << name << ": " << values.status();
  const std::vector<float>& got = (*values)[output];
  ASSERT_EQ(got.size(), want.size()) << name;
  double diff = 0, norm = 0, max_abs = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = static_cast<double>(got[i]) - want[i];
    diff += d * d;
    norm += static_cast<double>(want[i]) * want[i];
    max_abs = std::max(max_abs, std::abs(d));
  }
  const double rel = std::sqrt(diff / std::max(norm, 1e-30));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("zoo %s: %zu nodes,%s; rel L2 %.3g, max abs %.3g, %.1f s; warnings %zu\n",
              name.c_str(), m->graph.nodes().size(), counts.c_str(), rel, max_abs, seconds,
              m->warnings.size());
  EXPECT_LT(rel, 1e-4) << name;
}

TEST(OnnxZooTest, ImportsAndMatchesTorch) {
  const char* dir = std::getenv("TUNEJIT_ONNX_ZOO");
  if (dir == nullptr) GTEST_SKIP() << "TUNEJIT_ONNX_ZOO is not set";
  const char* models = std::getenv("TUNEJIT_ONNX_ZOO_MODELS");
  const char* batch = std::getenv("TUNEJIT_ONNX_ZOO_BATCH");
  for (absl::string_view name : absl::StrSplit(models ? models : "", ',', absl::SkipEmpty())) {
    CheckModel(dir, std::string(name), batch ? std::atoll(batch) : 0);
  }
}

}  // namespace
}  // namespace tunejit
