// File: tests/ops/conv_test_util.h
// GPU checking of conv-like templates (conv2d_nchw, depthwise; usable by winograd / int8 float
// paths too): random configs drawn from the template's `factors` space, compiled in bulk, each run
// with poisoned outputs against the CPU reference (computed once per workload).
#ifndef TUNEJIT_TESTS_OPS_CONV_TEST_UTIL_H_
#define TUNEJIT_TESTS_OPS_CONV_TEST_UTIL_H_

#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ops/cpu_reference.h"
#include "ops/op_template.h"
#include "tests/ops/ops_test_util.h"

namespace tunejit::testing {

struct ConvCase {
  autotvm::Workload workload;
  autotvm::ConfigEntity config;
  Epilogue epilogue;
  // Small integers as inputs, power-of-two scales, half-integer biases: every float operation is
  // exact, so the result must match the CPU reference bit for bit (needed for int8 outputs).
  bool exact = false;
};

// Typed view of a workload for the CPU reference (depthwise: co and groups set from the kernel).
using ParamsOf = std::function<autotvm::Conv2dParams(const autotvm::Workload&)>;

struct ConvInputs {
  std::vector<float> data, weight, bias, scale;
  std::vector<double> acc;  // CPU reference accumulators
};

inline ConvInputs MakeConvInputs(const autotvm::Conv2dParams& p, bool exact, uint32_t seed) {
  ConvInputs in;
  const size_t data_n = p.n * p.ci * p.h * p.w;
  const size_t weight_n = p.co * (p.ci / p.groups) * p.kh * p.kw;
  if (exact) {
    in.data = RandomIntFloats(data_n, 3, seed);
    in.weight = RandomIntFloats(weight_n, 3, seed + 1);
    for (int64_t c = 0; c < p.co; ++c) {
      in.bias.push_back(static_cast<float>(c % 7) - 3.5f);  // half-integers: rounding ties
      in.scale.push_back(c % 2 ? 0.125f : 0.0625f);
    }
  } else {
    in.data = RandomFloats(data_n, seed);
    in.weight = RandomFloats(weight_n, seed + 1);
    in.bias = RandomFloats(p.co, seed + 2);
    in.scale = RandomFloats(p.co, seed + 3);
  }
  in.acc = cpuref::Conv2dFloat(p, in.data, in.weight);
  return in;
}

// Runs every case (configs must already specialize) and checks it; returns how many ran.
inline int CheckConvCases(GpuHarness& harness, const OpTemplate& op,
                          const std::vector<ConvCase>& cases, const ParamsOf& params_of) {
  std::vector<OpPlan> plans;
  for (const ConvCase& c : cases) {
    absl::StatusOr<OpPlan> plan = op.Specialize(c.workload, c.config, harness.limits(), c.epilogue);
    EXPECT_TRUE(plan.ok()) << c.workload.args.dump() << " " << c.config.ToString() << ": "
                           << plan.status();
    plans.push_back(plan.ok() ? *plan : OpPlan{});
  }
  absl::Status compiled = harness.Precompile(plans);
  EXPECT_TRUE(compiled.ok()) << compiled;
  if (!compiled.ok()) return 0;
  std::map<std::string, ConvInputs> inputs;  // per workload and input kind
  int ran = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const ConvCase& c = cases[i];
    if (plans[i].kernels.empty()) continue;
    const autotvm::Conv2dParams p = params_of(c.workload);
    const std::string key = c.workload.Key() + (c.exact ? "#exact" : "#random");
    if (!inputs.count(key)) inputs[key] = MakeConvInputs(p, c.exact, 17 + inputs.size());
    const ConvInputs& in = inputs[key];
    const int64_t inner = p.OutH() * p.OutW();
    const bool int8_out = c.epilogue.output == Epilogue::Output::kInt8Requantize;
    const size_t out_bytes = in.acc.size() * (int8_out ? 1 : 4);
    absl::StatusOr<std::vector<std::vector<uint8_t>>> out = harness.Run(
        plans[i], {Bytes(in.data), Bytes(in.weight), Bytes(in.bias), Bytes(in.scale)}, {out_bytes});
    SCOPED_TRACE(c.workload.args.dump() + " " + c.config.ToString() + " epilogue " +
                 std::to_string(EpilogueCode(c.epilogue)));
    EXPECT_TRUE(out.ok()) << out.status();
    if (!out.ok()) continue;
    ++ran;
    if (int8_out) {
      std::vector<int8_t> want =
          cpuref::EpilogueInt8(in.acc, p.co, inner, c.epilogue, in.bias, in.scale);
      std::vector<int8_t> got = FromBytes<int8_t>((*out)[0]);
      EXPECT_EQ(got.size(), want.size());
      if (got.size() != want.size()) continue;
      int mismatches = 0;
      for (size_t e = 0; e < got.size(); ++e) mismatches += got[e] != want[e];
      EXPECT_EQ(mismatches, 0) << "int8 outputs differ";
      continue;
    }
    std::vector<float> want =
        cpuref::EpilogueFloat(in.acc, p.co, inner, c.epilogue, in.bias, in.scale);
    std::vector<float> got = FromBytes<float>((*out)[0]);
    if (c.exact) {
      EXPECT_EQ(got, want) << "exact inputs must give bit-identical outputs";
    } else {
      EXPECT_LT(cpuref::RelativeError(got, want), 1e-5) << "(inf: an output was never written)";
    }
  }
  return ran;
}

// Up to `count` configs drawn uniformly from the `factors` candidates of each knob that specialize
// for `workload` (configs TVM would also have rejected are skipped).
inline std::vector<autotvm::ConfigEntity> RandomValidConfigs(
    const OpTemplate& op, const autotvm::Workload& workload, const DeviceLimits& limits,
    const std::function<autotvm::ConfigEntity(std::mt19937&)>& draw, int count, std::mt19937& rng) {
  std::vector<autotvm::ConfigEntity> out;
  for (int attempt = 0; attempt < 2000 && static_cast<int>(out.size()) < count; ++attempt) {
    autotvm::ConfigEntity c = draw(rng);
    if (op.Specialize(workload, c, limits, Epilogue{}).ok()) out.push_back(std::move(c));
  }
  EXPECT_EQ(static_cast<int>(out.size()), count)
      << "too few valid configs for " << workload.args.dump();
  return out;
}

}  // namespace tunejit::testing

#endif  // TUNEJIT_TESTS_OPS_CONV_TEST_UTIL_H_
