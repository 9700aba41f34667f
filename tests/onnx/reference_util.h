// File: tests/onnx/reference_util.h
// For the importer's tests: what an imported model's graph holds and computes, through the CPU
// reference forward (executor/reference_forward.h).
//
//   EXPECT_THAT(OpsOf(m->graph), ElementsAre(OpKind::kReshape));
//   std::vector<float> y = RunOutput(*m, {{"x", x}});
#ifndef TUNEJIT_TESTS_ONNX_REFERENCE_UTIL_H_
#define TUNEJIT_TESTS_ONNX_REFERENCE_UTIL_H_

#include <map>
#include <string>
#include <vector>

#include "executor/reference_forward.h"
#include "gtest/gtest.h"
#include "onnx/import.h"

namespace tunejit::testing {

// The graph's node ops, in order.
inline std::vector<OpKind> OpsOf(const Graph& g) {
  std::vector<OpKind> ops;
  for (const Node& n : g.nodes()) ops.push_back(n.op);
  return ops;
}

// The model's first graph output.
inline const TensorDesc& OutputOf(const OnnxModel& m) {
  return m.graph.tensor(m.graph.TensorsOfKind(TensorKind::kOutput).at(0));
}

// The first output's values on `inputs` (a test failure and {} when the forward fails).
inline std::vector<float> RunOutput(const OnnxModel& m,
                                    const std::map<std::string, std::vector<float>>& inputs) {
  absl::StatusOr<std::vector<std::vector<float>>> values =
      ReferenceForward(m.graph, m.weights, inputs);
  if (!values.ok()) {
    ADD_FAILURE() << values.status();
    return {};
  }
  return (*values)[m.graph.TensorsOfKind(TensorKind::kOutput).at(0)];
}

}  // namespace tunejit::testing

#endif  // TUNEJIT_TESTS_ONNX_REFERENCE_UTIL_H_
