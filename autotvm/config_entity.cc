#include "autotvm/config_entity.h"

#include "absl/strings/str_cat.h"
#include "autotvm/python_json.h"

namespace tunejit::autotvm {
namespace {

absl::StatusOr<std::vector<int64_t>> IntList(const Knob& knob) {
  if (!knob.value.is_array()) {
    return absl::InvalidArgumentError(absl::StrCat("knob ", knob.name, " is not a list"));
  }
  std::vector<int64_t> out;
  for (const Json& v : knob.value) {
    if (!v.is_number_integer()) {
      return absl::InvalidArgumentError(absl::StrCat("knob ", knob.name, " holds a non-integer"));
    }
    out.push_back(v.get<int64_t>());
  }
  return out;
}

absl::StatusOr<const Knob*> FindTyped(const ConfigEntity& c, const std::string& name,
                                      const char* type) {
  const Knob* k = c.Find(name);
  if (k == nullptr) return absl::NotFoundError(absl::StrCat("config has no knob ", name));
  if (k->type != type) {
    return absl::InvalidArgumentError(
        absl::StrCat("knob ", name, " has type ", k->type, ", expected ", type));
  }
  return k;
}

}  // namespace

const Knob* ConfigEntity::Find(const std::string& name) const {
  // The last knob with the name wins, as a Python dict built from the list would.
  for (auto it = knobs.rbegin(); it != knobs.rend(); ++it) {
    if (it->name == name) return &*it;
  }
  return nullptr;
}

absl::StatusOr<std::vector<int64_t>> ConfigEntity::Split(const std::string& name) const {
  absl::StatusOr<const Knob*> k = FindTyped(*this, name, "sp");
  if (!k.ok()) return k.status();
  absl::StatusOr<std::vector<int64_t>> v = IntList(**k);
  if (!v.ok()) return v;
  if (v->empty()) return absl::InvalidArgumentError(absl::StrCat("split ", name, " is empty"));
  for (size_t i = 1; i < v->size(); ++i) {
    if ((*v)[i] <= 0) {
      return absl::InvalidArgumentError(absl::StrCat("split ", name, " has a size <= 0"));
    }
  }
  if ((*v)[0] == 0 || (*v)[0] < -1) {
    return absl::InvalidArgumentError(absl::StrCat("split ", name, " has a bad outer size"));
  }
  return v;
}

absl::StatusOr<int64_t> ConfigEntity::Other(const std::string& name) const {
  absl::StatusOr<const Knob*> k = FindTyped(*this, name, "ot");
  if (!k.ok()) return k.status();
  const Json& v = (*k)->value;
  if (v.is_boolean()) return v.get<bool>() ? 1 : 0;
  if (!v.is_number_integer()) {
    return absl::InvalidArgumentError(absl::StrCat("knob ", name, " is not an integer"));
  }
  return v.get<int64_t>();
}

absl::StatusOr<std::vector<int64_t>> ConfigEntity::Reorder(const std::string& name) const {
  absl::StatusOr<const Knob*> k = FindTyped(*this, name, "re");
  if (!k.ok()) return k.status();
  absl::StatusOr<std::vector<int64_t>> v = IntList(**k);
  if (!v.ok()) return v;
  std::vector<bool> seen(v->size(), false);
  for (int64_t x : *v) {
    if (x < 0 || x >= static_cast<int64_t>(v->size()) || seen[x]) {
      return absl::InvalidArgumentError(absl::StrCat("reorder ", name, " is not a permutation"));
    }
    seen[x] = true;
  }
  return v;
}

Json ConfigEntity::ToJson() const {
  Json out = Json::array();
  for (const Knob& k : knobs) out.push_back(Json::array({k.name, k.type, k.value}));
  return out;
}

std::string ConfigEntity::ToString() const { return DumpPythonJson(ToJson()); }

}  // namespace tunejit::autotvm
