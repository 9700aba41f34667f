#include "autotvm/config_space.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "autotvm/python_json.h"
#include "autotvm/split_space.h"
#include "common/status_macros.h"

namespace tunejit::autotvm {
namespace {

bool ToInt(const Json& j, int64_t* out) {
  if (j.is_number_integer()) {
    *out = j.get<int64_t>();
    return true;
  }
  if (j.is_boolean()) {
    *out = j.get<bool>() ? 1 : 0;
    return true;
  }
  return false;
}

}  // namespace

Json KnobSpace::ValueJson(int64_t position) const {
  const std::vector<int64_t>& c = candidates[position];
  if (type == "ot") return Json(c[0]);
  return Json(c);
}

int64_t KnobSpace::Find(const Json& value) const {
  std::vector<int64_t> v;
  if (type == "ot") {
    int64_t x;
    if (!ToInt(value, &x)) return -1;
    v.push_back(x);
  } else {
    if (!value.is_array()) return -1;
    for (const Json& e : value) {
      int64_t x;
      if (!e.is_number_integer() || !ToInt(e, &x)) return -1;
      v.push_back(x);
    }
  }
  for (size_t i = 0; i < candidates.size(); ++i) {
    const std::vector<int64_t>& c = candidates[i];
    if (c.size() != v.size()) continue;
    size_t first = type == "sp" ? 1 : 0;  // s0 is never read
    if (std::equal(c.begin() + first, c.end(), v.begin() + first)) return static_cast<int64_t>(i);
  }
  return -1;
}

absl::Status ConfigSpace::Push(KnobSpace knob) {
  if (knob.candidates.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("knob ", knob.name, " has no candidates"));
  }
  if (FindKnob(knob.name) != nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("knob ", knob.name, " defined twice"));
  }
  int64_t n = static_cast<int64_t>(knob.candidates.size());
  if (size_ > std::numeric_limits<int64_t>::max() / n) {
    return absl::InvalidArgumentError("config space larger than 2^63");
  }
  size_ *= n;
  knobs_.push_back(std::move(knob));
  return absl::OkStatus();
}

absl::Status ConfigSpace::AddSplit(const std::string& name, int64_t length, int num_outputs,
                                   const std::function<bool(const std::vector<int64_t>&)>& filter) {
  absl::StatusOr<std::vector<std::vector<int64_t>>> all =
      SplitFactorCandidates(length, num_outputs);
  if (!all.ok())
    return absl::InvalidArgumentError(absl::StrCat(name, ": ", all.status().message()));
  KnobSpace knob{name, "sp", {}, length};
  for (std::vector<int64_t>& c : *all) {
    if (!filter || filter(c)) knob.candidates.push_back(std::move(c));
  }
  return Push(std::move(knob));
}

absl::Status ConfigSpace::AddOther(const std::string& name, const std::vector<int64_t>& values) {
  KnobSpace knob{name, "ot", {}, 0};
  for (int64_t v : values) knob.candidates.push_back({v});
  return Push(std::move(knob));
}

absl::Status ConfigSpace::AddReorder(const std::string& name, int num_axes) {
  if (num_axes < 1 || num_axes > 6) return absl::InvalidArgumentError("bad reorder size");
  KnobSpace knob{name, "re", {}, 0};
  std::vector<int64_t> perm(num_axes);
  std::iota(perm.begin(), perm.end(), 0);
  do {  // itertools.permutations order: lexicographic
    knob.candidates.push_back(perm);
  } while (std::next_permutation(perm.begin(), perm.end()));
  return Push(std::move(knob));
}

const KnobSpace* ConfigSpace::FindKnob(const std::string& name) const {
  for (const KnobSpace& k : knobs_) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

std::vector<int64_t> ConfigSpace::DigitsOf(int64_t index) const {
  std::vector<int64_t> digits;
  digits.reserve(knobs_.size());
  for (const KnobSpace& k : knobs_) {
    int64_t n = static_cast<int64_t>(k.candidates.size());
    digits.push_back(index % n);
    index /= n;
  }
  return digits;
}

int64_t ConfigSpace::IndexOfDigits(const std::vector<int64_t>& digits) const {
  int64_t index = 0;
  for (size_t j = knobs_.size(); j-- > 0;) {
    index = index * static_cast<int64_t>(knobs_[j].candidates.size()) + digits[j];
  }
  return index;
}

ConfigEntity ConfigSpace::EntityOfDigits(const std::vector<int64_t>& digits) const {
  ConfigEntity c;
  for (size_t j = 0; j < knobs_.size(); ++j) {
    c.knobs.push_back({knobs_[j].name, knobs_[j].type, knobs_[j].ValueJson(digits[j])});
  }
  return c;
}

absl::StatusOr<ConfigEntity> ConfigSpace::Get(int64_t index) const {
  if (index < 0 || index >= size_) {
    return absl::OutOfRangeError(absl::StrCat("index ", index, " outside [0, ", size_, ")"));
  }
  return EntityOfDigits(DigitsOf(index));
}

absl::StatusOr<std::vector<int64_t>> ConfigSpace::DigitsOfEntity(const ConfigEntity& e) const {
  for (const Knob& k : e.knobs) {
    if (FindKnob(k.name) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("unexpected knob ", k.name));
    }
  }
  std::vector<int64_t> digits;
  for (const KnobSpace& ks : knobs_) {
    const Knob* k = e.Find(ks.name);
    if (k == nullptr) return absl::NotFoundError(absl::StrCat("missing knob ", ks.name));
    if (k->type != ks.type) {
      return absl::InvalidArgumentError(
          absl::StrCat("knob ", ks.name, " has type ", k->type, ", expected ", ks.type));
    }
    int64_t d = ks.Find(k->value);
    if (d < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("knob ", ks.name, " value ", DumpPythonJson(k->value), " is not one of its ",
                       ks.candidates.size(), " candidates"));
    }
    digits.push_back(d);
  }
  return digits;
}

absl::StatusOr<int64_t> ConfigSpace::IndexOf(const ConfigEntity& entity) const {
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> digits, DigitsOfEntity(entity));
  return IndexOfDigits(digits);
}

int64_t ConfigSpace::RandomIndex(std::mt19937_64& rng) const {
  return std::uniform_int_distribution<int64_t>(0, size_ - 1)(rng);
}

std::vector<int64_t> ConfigSpace::Neighbors(int64_t index) const {
  std::vector<int64_t> digits = DigitsOf(index);
  std::vector<int64_t> out;
  for (size_t j = 0; j < knobs_.size(); ++j) {
    int64_t original = digits[j];
    for (int64_t d = 0; d < static_cast<int64_t>(knobs_[j].candidates.size()); ++d) {
      if (d == original) continue;
      digits[j] = d;
      out.push_back(IndexOfDigits(digits));
    }
    digits[j] = original;
  }
  return out;
}

int64_t ConfigSpace::RandomNeighbor(int64_t index, std::mt19937_64& rng) const {
  std::vector<size_t> choosable;
  for (size_t j = 0; j < knobs_.size(); ++j) {
    if (knobs_[j].candidates.size() > 1) choosable.push_back(j);
  }
  if (choosable.empty()) return index;
  size_t j = choosable[std::uniform_int_distribution<size_t>(0, choosable.size() - 1)(rng)];
  std::vector<int64_t> digits = DigitsOf(index);
  int64_t n = static_cast<int64_t>(knobs_[j].candidates.size());
  // Uniform over the n - 1 other candidates.
  int64_t step = std::uniform_int_distribution<int64_t>(1, n - 1)(rng);
  digits[j] = (digits[j] + step) % n;
  return IndexOfDigits(digits);
}

std::string ConfigSpace::ToString() const {
  std::vector<std::string> parts;
  for (const KnobSpace& k : knobs_) {
    parts.push_back(absl::StrCat(k.name, " ", k.type, " ", k.candidates.size()));
  }
  return absl::StrCat(absl::StrJoin(parts, " x "), " = ", size_);
}

}  // namespace tunejit::autotvm
