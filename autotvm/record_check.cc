#include "autotvm/record_check.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "autotvm/config_space.h"

namespace tunejit::autotvm {
namespace {

ConfigEntity SwapRxRy(const ConfigEntity& entity) {
  ConfigEntity out = entity;
  for (Knob& k : out.knobs) {
    if (k.name == "tile_rx") {
      k.name = "tile_ry";
    } else if (k.name == "tile_ry") {
      k.name = "tile_rx";
    }
  }
  return out;
}

// The entity with every knob of `space` it lacks set to that knob's first candidate, or nullopt
// when it lacks none (or the missing ones are not the space's last knobs).
std::optional<ConfigEntity> WithLaterKnobs(const ConfigEntity& entity, const ConfigSpace& space) {
  ConfigEntity out = entity;
  bool missing = false;
  for (const KnobSpace& k : space.knobs()) {
    if (entity.Find(k.name) != nullptr) {
      if (missing) return std::nullopt;  // a missing knob before a present one: not "later"
      continue;
    }
    missing = true;
    out.knobs.push_back(Knob{k.name, k.type, k.ValueJson(0)});
  }
  if (!missing) return std::nullopt;
  return out;
}

}  // namespace

const char* RecordCheckVerdictName(RecordCheck::Verdict verdict) {
  switch (verdict) {
    case RecordCheck::kConsistent:
      return "ok";
    case RecordCheck::kSwappedLabels:
      return "swapped tile_rx/tile_ry labels";
    case RecordCheck::kLacksLaterKnobs:
      return "lacks later knobs";
    case RecordCheck::kNoSpace:
      return "no space";
    case RecordCheck::kInconsistent:
      return "inconsistent";
  }
  return "?";
}

RecordCheck CheckRecord(const Record& record, const ConfigSpace* space) {
  RecordCheck c;
  if (space == nullptr) {
    c.verdict = RecordCheck::kNoSpace;
    c.message = absl::StrCat("no config space for task ", record.workload.task_name);
    return c;
  }
  c.space_size = space->size();
  absl::StatusOr<int64_t> by_name = space->IndexOf(record.config);
  if (by_name.ok()) c.entity_index = *by_name;
  if (record.index < 0) {
    c.verdict = by_name.ok() ? RecordCheck::kNoSpace : RecordCheck::kInconsistent;
    c.message = by_name.ok() ? "record has no index" : std::string(by_name.status().message());
    return c;
  }
  if (by_name.ok() && *by_name == record.index) {
    c.verdict = RecordCheck::kConsistent;
    return c;
  }
  if (std::optional<ConfigEntity> filled = WithLaterKnobs(record.config, *space)) {
    absl::StatusOr<int64_t> index = space->IndexOf(*filled);
    if (index.ok() && *index == record.index) {
      c.verdict = RecordCheck::kLacksLaterKnobs;
      c.entity_index = *index;
      c.message = "lacks knobs added later; read as their first values";
      return c;
    }
  }
  const Knob* rx = record.config.Find("tile_rx");
  const Knob* ry = record.config.Find("tile_ry");
  if (rx != nullptr && ry != nullptr && rx < ry) {  // rx listed first: the TopHub conversion
    absl::StatusOr<int64_t> swapped = space->IndexOf(SwapRxRy(record.config));
    if (swapped.ok() && *swapped == record.index) {
      c.verdict = RecordCheck::kSwappedLabels;
      c.message = "swapped tile_rx/tile_ry labels";
      return c;
    }
  }
  if (!by_name.ok()) {
    c.message = std::string(by_name.status().message());
  } else if (record.index >= space->size()) {
    c.message = absl::StrCat("index ", record.index, " outside the space of ", space->size());
  } else {
    c.message =
        absl::StrCat("index ", record.index, " decodes to ", space->Get(record.index)->ToString(),
                     " but the entity is index ", *by_name);
  }
  return c;
}

}  // namespace tunejit::autotvm
