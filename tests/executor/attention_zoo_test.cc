// Real transformer exports lowered at fp16 as the executor does (after SinkRowTransposes): every
// softmax of torchvision's vit_b_16 (or another exported transformer) is one fused attention step,
// with no head transposes, scales, softmax or matmul steps left of its chains; the step counts by
// kind are printed. CPU only; skipped unless TUNEJIT_ONNX_ZOO names the export directory
// (tests/onnx/zoo_import_test.cc); TUNEJIT_DUMP_STEPS lists every step:
//   TUNEJIT_ONNX_ZOO=/tmp/z32 TUNEJIT_ONNX_ZOO_MODELS=vit_b_16 executor_attention_zoo_test
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "absl/strings/str_split.h"
#include "executor/row_transposes.h"
#include "executor/step_program.h"
#include "gtest/gtest.h"
#include "onnx/import.h"

namespace tunejit {
namespace {

void CheckModel(const std::string& dir, const std::string& name) {
  absl::StatusOr<OnnxModel> m = ImportOnnx(dir + "/" + name + ".onnx", {});
  ASSERT_TRUE(m.ok()) << name << ": " << m.status();
  int softmaxes = 0;
  for (const Node& n : m->graph.nodes()) softmaxes += n.op == OpKind::kSoftmax ? 1 : 0;
  const Graph graph = SinkRowTransposes(m->graph, m->weights);
  absl::StatusOr<StepProgram> p = LowerToSteps(graph, NumericMode::kFp16TensorCores, &m->weights);
  ASSERT_TRUE(p.ok()) << name << ": " << p.status();
  std::map<std::string, int> kinds;
  for (const Step& s : p->steps) ++kinds[std::string(StepKindName(s.kind))];
  std::string counts;
  for (const auto& [kind, count] : kinds) counts += " " + kind + "=" + std::to_string(count);
  std::printf("%s at fp16: %zu steps:%s\n", name.c_str(), p->steps.size(), counts.c_str());
  for (const Step& s : p->steps) {
    if (s.kind != StepKind::kAttention) continue;
    const AttentionLayout& l = s.attention_layout;
    std::printf("  %s: q (%ld, %ld, %ld, +%ld) o (%ld, %ld, %ld) scale %g\n", s.name.c_str(),
                static_cast<long>(l.q.batch), static_cast<long>(l.q.head),
                static_cast<long>(l.q.seq), static_cast<long>(l.q.offset),
                static_cast<long>(l.o.batch), static_cast<long>(l.o.head),
                static_cast<long>(l.o.seq), l.scale);
    break;
  }
  if (std::getenv("TUNEJIT_DUMP_STEPS") != nullptr) {
    for (const Step& s : p->steps) {
      std::printf("    %-12s %s -> %s\n", std::string(StepKindName(s.kind)).c_str(), s.name.c_str(),
                  p->tensors[s.output].name.c_str());
    }
  }
  EXPECT_GT(softmaxes, 0) << name;
  EXPECT_EQ(kinds["attention"], softmaxes) << name;
  EXPECT_EQ(kinds["softmax"], 0) << name;
  EXPECT_EQ(kinds["matmul"], 0) << name;
}

TEST(AttentionZooTest, EverySoftmaxIsFusedAttention) {
  const char* dir = std::getenv("TUNEJIT_ONNX_ZOO");
  if (dir == nullptr) GTEST_SKIP() << "TUNEJIT_ONNX_ZOO is not set";
  const char* models = std::getenv("TUNEJIT_ONNX_ZOO_MODELS");
  for (absl::string_view name : absl::StrSplit(models ? models : "", ',', absl::SkipEmpty())) {
    CheckModel(dir, std::string(name));
  }
}

}  // namespace
}  // namespace tunejit
