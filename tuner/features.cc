// Knob features of a config (tuner/cost_model.h). Layout, for a space with knobs K_1..K_m:
//   per knob, in definition order:
//     sp with n outputs: log2(f_0), ..., log2(f_(n-1)); f_0 = axis_length / (f_1 * ... * f_(n-1))
//                        (the -1 the space stores, or TopHub's real outer extent, is recomputed)
//     ot:                the value; log2(1 + v) for *unroll_max_step knobs (0 / 512 / 1500)
//     re:                the permutation's indices
//   then 6 derived features, always present (0 when the task has no such knob):
//     log2 threads per block   sum of log2(f_2) over 4-output tile_* splits ([-1, vt, threads, in])
//     log2 virtual threads     sum of log2(f_1) over the same splits
//     log2 inner work          sum of log2(f_3) over the same splits
//     log2 work per thread     virtual threads + inner work
//     log2 blocks              sum of log2(f_0) over the same splits
//     log2 reduction chunk     sum of log2(last factor) over tile_r* and tile_k splits
// Trees split on one feature at a time, so products the kernels depend on (threads per block is
// f_2 of tile_f times f_2 of tile_y times ...) are given explicitly rather than left to be learned.
#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "tuner/cost_model.h"

namespace tunejit {
namespace {

struct Derived {
  double threads = 0, vthreads = 0, inner = 0, blocks = 0, reduction = 0;
};

double Log2(double v) { return v > 0 ? std::log2(v) : 0.0; }

bool IsReductionSplit(std::string_view name) {
  return name.substr(0, 6) == "tile_r" || name == "tile_k";
}

// `value` is the knob's value (nullptr: the config lacks the knob, its slots stay 0).
void AppendKnob(const autotvm::KnobSpace& knob, const std::vector<int64_t>* value,
                FeatureVector& out, Derived& derived) {
  size_t width = knob.type == "ot" ? 1 : knob.candidates.front().size();
  size_t start = out.size();
  out.resize(start + width, 0.0f);
  if (value == nullptr || value->size() != width) return;
  if (knob.type == "sp") {
    double inner_product = 1;
    for (size_t i = 1; i < width; ++i) inner_product *= static_cast<double>((*value)[i]);
    double outer = knob.axis_length > 0 ? knob.axis_length / inner_product
                                        : static_cast<double>(std::max<int64_t>((*value)[0], 1));
    std::vector<double> logs(width);
    logs[0] = Log2(outer);
    for (size_t i = 1; i < width; ++i) logs[i] = Log2(static_cast<double>((*value)[i]));
    for (size_t i = 0; i < width; ++i) out[start + i] = static_cast<float>(logs[i]);
    if (width == 4 && knob.name.substr(0, 5) == "tile_" && !IsReductionSplit(knob.name)) {
      derived.blocks += logs[0];
      derived.vthreads += logs[1];
      derived.threads += logs[2];
      derived.inner += logs[3];
    }
    if (IsReductionSplit(knob.name) && width >= 2) derived.reduction += logs[width - 1];
  } else if (knob.type == "ot") {
    double v = static_cast<double>((*value)[0]);
    bool unroll = knob.name.find("unroll_max_step") != std::string::npos;
    out[start] = static_cast<float>(unroll ? Log2(1 + std::max(v, 0.0)) : v);
  } else {
    for (size_t i = 0; i < width; ++i) out[start + i] = static_cast<float>((*value)[i]);
  }
}

void AppendDerived(const Derived& d, FeatureVector& out) {
  for (double v : {d.threads, d.vthreads, d.inner, d.vthreads + d.inner, d.blocks, d.reduction}) {
    out.push_back(static_cast<float>(v));
  }
}

// A knob value as integers: a list (sp, re) or a single integer (ot); empty when neither.
std::vector<int64_t> IntsOf(const autotvm::Json& value) {
  std::vector<int64_t> ints;
  if (value.is_number_integer()) return {value.get<int64_t>()};
  if (!value.is_array()) return ints;
  for (const autotvm::Json& v : value) {
    if (!v.is_number_integer()) return {};
    ints.push_back(v.get<int64_t>());
  }
  return ints;
}

}  // namespace

FeatureVector ConfigFeatures(const autotvm::ConfigSpace& space,
                             const autotvm::ConfigEntity& config) {
  FeatureVector out;
  Derived derived;
  for (const autotvm::KnobSpace& knob : space.knobs()) {
    const autotvm::Knob* k = config.Find(knob.name);
    std::vector<int64_t> value;
    if (k != nullptr && k->type == knob.type) value = IntsOf(k->value);
    AppendKnob(knob, k != nullptr && k->type == knob.type ? &value : nullptr, out, derived);
  }
  AppendDerived(derived, out);
  return out;
}

FeatureVector ConfigFeaturesOfIndex(const autotvm::ConfigSpace& space, int64_t index) {
  FeatureVector out;
  Derived derived;
  std::vector<int64_t> digits = space.DigitsOf(index);
  for (size_t j = 0; j < space.knobs().size(); ++j) {
    const autotvm::KnobSpace& knob = space.knobs()[j];
    AppendKnob(knob, &knob.candidates[digits[j]], out, derived);
  }
  AppendDerived(derived, out);
  return out;
}

}  // namespace tunejit
