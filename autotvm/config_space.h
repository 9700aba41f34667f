// File: autotvm/config_space.h
// An AutoTVM ConfigSpace without materializing it: each knob keeps its own (small) candidate list,
// and the space is a mixed-radix number over the knobs in definition order, the FIRST knob being
// the least significant digit (docs/tvm-templates.md section 1.7):
//   index = d_1 + |K_1| * (d_2 + |K_2| * (d_3 + ...))
// so a 16,986,931,200-point space costs a few kilobytes. Entities map back to indices by knob name;
// for split knobs only s1..s(n-1) are compared (TVM never reads s0, and TopHub stores real outer
// extents there instead of -1).
//
// Each op template defines its task's space (OpTemplate::ConfigSpace, ops/op_template.h).
//
//   TUNEJIT_ASSIGN_OR_RETURN(ConfigSpace space, BuildConfigSpace(workload, target));  // ops/
//   TUNEJIT_ASSIGN_OR_RETURN(ConfigEntity c, space.Get(199135959));
//   TUNEJIT_ASSIGN_OR_RETURN(int64_t i, space.IndexOf(c));    // 199135959
//   int64_t next = space.RandomNeighbor(i, rng);              // one knob changed
#ifndef TUNEJIT_AUTOTVM_CONFIG_SPACE_H_
#define TUNEJIT_AUTOTVM_CONFIG_SPACE_H_

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "autotvm/config_entity.h"
#include "autotvm/target.h"
#include "autotvm/workload.h"

namespace tunejit::autotvm {

struct KnobSpace {
  std::string name;
  std::string type;  // "sp", "ot" or "re"
  // sp: [-1, s1, ..., s(n-1)]; re: a permutation; ot: one value.
  std::vector<std::vector<int64_t>> candidates;
  int64_t axis_length = 0;  // sp only: L
  Json ValueJson(int64_t position) const;
  // Position of `value` in `candidates`, or -1. Split outer sizes are ignored.
  int64_t Find(const Json& value) const;
};

class ConfigSpace {
 public:
  // Definition order matters: it is the digit order. Each returns InvalidArgument on a bad axis
  // (length < 1), an empty candidate list (TVM raises IndexError) or a space beyond int64.
  absl::Status AddSplit(const std::string& name, int64_t length, int num_outputs,
                        const std::function<bool(const std::vector<int64_t>&)>& filter = nullptr);
  absl::Status AddOther(const std::string& name, const std::vector<int64_t>& values);
  absl::Status AddReorder(const std::string& name, int num_axes);  // policy "all"

  const std::vector<KnobSpace>& knobs() const { return knobs_; }
  const KnobSpace* FindKnob(const std::string& name) const;
  int64_t size() const { return size_; }

  // Digits (candidate positions, definition order) <-> index <-> entity.
  std::vector<int64_t> DigitsOf(int64_t index) const;
  int64_t IndexOfDigits(const std::vector<int64_t>& digits) const;
  ConfigEntity EntityOfDigits(const std::vector<int64_t>& digits) const;
  absl::StatusOr<ConfigEntity> Get(int64_t index) const;  // OutOfRange outside [0, size)
  // By knob name; NotFound for a knob the entity lacks, InvalidArgument for a value that is not a
  // candidate (the message names the knob). Extra knobs in the entity are an error too.
  absl::StatusOr<std::vector<int64_t>> DigitsOfEntity(const ConfigEntity& entity) const;
  absl::StatusOr<int64_t> IndexOf(const ConfigEntity& entity) const;

  // Tuner helpers.
  int64_t RandomIndex(std::mt19937_64& rng) const;
  // Every index that differs from `index` in exactly one knob (sum of (|K_j| - 1) entries).
  std::vector<int64_t> Neighbors(int64_t index) const;
  // One uniformly chosen knob (with > 1 candidate) moved to another uniformly chosen candidate;
  // `index` itself when no knob has a choice.
  int64_t RandomNeighbor(int64_t index, std::mt19937_64& rng) const;

  std::string ToString() const;  // "tile_f sp 84 x tile_y sp 224 x ... = 16986931200"

 private:
  absl::Status Push(KnobSpace knob);
  std::vector<KnobSpace> knobs_;
  int64_t size_ = 1;
};

}  // namespace tunejit::autotvm

#endif  // TUNEJIT_AUTOTVM_CONFIG_SPACE_H_
