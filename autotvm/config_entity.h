// File: autotvm/config_entity.h
// One configuration: the record's `entity` list of [knob_name, knob_type, value], in the order the
// record lists them. Knobs are looked up by name (as TVM applies them), never by position.
//
//   TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> tile_x, config.Split("tile_x"));  // [-1, 8, 4, 1]
//   TUNEJIT_ASSIGN_OR_RETURN(int64_t unroll, config.Other("auto_unroll_max_step"));
#ifndef TUNEJIT_AUTOTVM_CONFIG_ENTITY_H_
#define TUNEJIT_AUTOTVM_CONFIG_ENTITY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "autotvm/workload.h"

namespace tunejit::autotvm {

struct Knob {
  std::string name;  // "tile_x"
  std::string type;  // "sp" split, "ot" other, "re" reorder, "an" annotate
  Json value;        // [-1, 8, 4, 1] / 1500 / [0, 2, 1] / ["unroll", "none"]
};

struct ConfigEntity {
  std::vector<Knob> knobs;

  const Knob* Find(const std::string& name) const;
  // Typed accessors; NotFound if absent, InvalidArgument if the type or value shape is wrong.
  absl::StatusOr<std::vector<int64_t>> Split(const std::string& name) const;
  absl::StatusOr<int64_t> Other(const std::string& name) const;
  absl::StatusOr<std::vector<int64_t>> Reorder(const std::string& name) const;

  Json ToJson() const;  // the entity list as a record writes it
  std::string ToString() const;
};

}  // namespace tunejit::autotvm

#endif  // TUNEJIT_AUTOTVM_CONFIG_ENTITY_H_
