#include "autotvm/dispatch.h"

#include <algorithm>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tunejit::autotvm {
namespace {

constexpr size_t kNone = std::numeric_limits<size_t>::max();

std::string Ms(double seconds) { return absl::StrFormat("%.4g ms", seconds * 1e3); }

std::string Where(const LoadedRecord& r) {
  if (r.file.empty()) return "record";
  return absl::StrCat(r.file, ":", r.line);
}

bool HasKey(const Target& t, const std::string& key) {
  return std::find(t.keys.begin(), t.keys.end(), key) != t.keys.end();
}

}  // namespace

void HistoryBest::Offer(std::unordered_map<std::string, size_t>* map, const std::string& key,
                        size_t i) {
  auto [it, inserted] = map->emplace(key, i);
  // Strictly faster replaces; a tie keeps the earlier record (np.mean(other) > np.mean(new)).
  if (!inserted &&
      records_[it->second]->record.result.MeanCost() > records_[i]->record.result.MeanCost()) {
    it->second = i;
  }
}

void HistoryBest::Add(LoadedRecord record) {
  size_t i = records_.size();
  records_.push_back(std::make_unique<LoadedRecord>(std::move(record)));
  const Record& r = records_[i]->record;
  std::string wl = r.workload.Key();
  by_workload_[wl].push_back(i);
  if (!r.ok()) return;
  if (r.target.model != "unknown") Offer(&by_model_, absl::StrCat(r.target.model, "\n", wl), i);
  for (const std::string& k : r.target.keys) {
    Offer(&by_key_, absl::StrCat(k, "\n", wl), i);
    if (!r.device.empty()) Offer(&by_device_, absl::StrCat(r.device, "\n", k, "\n", wl), i);
  }
}

void HistoryBest::AddAll(const LogContents& log) {
  for (const LoadedRecord& r : log.records) Add(r);
}

std::string HistoryBest::Explain(size_t i, size_t chosen, const std::string& matched_by,
                                 const Target& target) const {
  const Record& r = records_[i]->record;
  std::string where = Where(*records_[i]);
  if (!r.ok()) {
    return absl::StrCat(where, ": skipped: error_no ", r.result.error_no, " (",
                        MeasureErrorName(r.result.error_no), ")");
  }
  double cost = r.result.MeanCost();
  if (i == chosen) return absl::StrCat(where, ": chosen (", matched_by, "): mean cost ", Ms(cost));
  if (chosen == kNone) {
    return absl::StrCat(where, ": skipped: target '", r.target.text, "' has no model or key of '",
                        target.text, "'");
  }
  if (matched_by.rfind("device ", 0) == 0 && r.device != preferred_device_) {
    return absl::StrCat(where, ": skipped: measured on ",
                        r.device.empty() ? "an unnamed GPU" : r.device, " (", preferred_device_,
                        "'s own records come first)");
  }
  bool by_model = matched_by.rfind("model ", 0) == 0;
  std::string what = matched_by.substr(matched_by.rfind(' ') + 1);
  bool competes = by_model ? r.target.model == what : HasKey(r.target, what);
  if (!competes) {
    return by_model
               ? absl::StrCat(where, ": skipped: model ", r.target.model, " (a record for model ",
                              what, " exists)")
               : absl::StrCat(where, ": skipped: target '", r.target.text, "' lacks key ", what);
  }
  double best = records_[chosen]->record.result.MeanCost();
  if (cost == best) {
    return absl::StrCat(where, ": skipped: ties the chosen record at ", Ms(cost),
                        " (the first one wins)");
  }
  return absl::StrCat(where, ": skipped: slower (", Ms(cost), " > ", Ms(best), ")");
}

// The record a query takes, and why ("device ..., key cuda", "model v100", "key cuda"): the
// preferred device's records first (PreferDevice), then the target's model, then its keys.
size_t HistoryBest::Choose(const Target& target, const std::string& wl,
                           std::string* matched_by) const {
  if (!preferred_device_.empty()) {
    for (const std::string& k : target.keys) {
      auto it = by_device_.find(absl::StrCat(preferred_device_, "\n", k, "\n", wl));
      if (it == by_device_.end()) continue;
      *matched_by = absl::StrCat("device ", preferred_device_, ", key ", k);
      return it->second;
    }
  }
  if (auto it = by_model_.find(absl::StrCat(target.model, "\n", wl)); it != by_model_.end()) {
    *matched_by = absl::StrCat("model ", target.model);
    return it->second;
  }
  for (const std::string& k : target.keys) {
    if (auto it = by_key_.find(absl::StrCat(k, "\n", wl)); it != by_key_.end()) {
      *matched_by = absl::StrCat("key ", k);
      return it->second;
    }
  }
  return kNone;
}

Decision HistoryBest::Query(const Target& target, const Workload& workload) const {
  Decision d;
  std::string wl = workload.Key();
  size_t chosen = Choose(target, wl, &d.matched_by);
  if (chosen != kNone) d.best = records_[chosen].get();
  if (auto it = by_workload_.find(wl); it != by_workload_.end()) {
    for (size_t i : it->second) d.reasons.push_back(Explain(i, chosen, d.matched_by, target));
  }
  if (d.reasons.empty()) d.reasons.push_back("no record for this workload");
  return d;
}

OpChoice ChooseImplementation(const HistoryBest& best, const Target& target,
                              const std::vector<Implementation>& impls) {
  OpChoice c;
  for (const Implementation& impl : impls)
    c.per_implementation.push_back(best.Query(target, impl.workload));
  for (size_t i = 0; i < impls.size(); ++i) {  // lowest cost among those with a record
    const Decision& d = c.per_implementation[i];
    if (d.best == nullptr) continue;
    if (c.chosen < 0 || d.cost() < c.per_implementation[c.chosen].cost())
      c.chosen = static_cast<int>(i);
  }
  if (c.chosen < 0 && !impls.empty()) {  // no record anywhere: highest plevel, fallback config
    c.fallback = true;
    c.chosen = 0;
    for (size_t i = 1; i < impls.size(); ++i) {
      if (impls[i].priority > impls[c.chosen].priority) c.chosen = static_cast<int>(i);
    }
  }
  for (size_t i = 0; i < impls.size(); ++i) {
    const std::string& task = impls[i].workload.task_name;
    const Decision& d = c.per_implementation[i];
    std::string why;
    if (c.fallback) {
      why = static_cast<int>(i) == c.chosen
                ? absl::StrCat("chosen: no record for any implementation; highest priority ",
                               impls[i].priority, " (fallback config)")
                : absl::StrCat("skipped: priority ", impls[i].priority, " and no record");
    } else if (d.best == nullptr) {
      why = "skipped: no record";
    } else if (static_cast<int>(i) == c.chosen) {
      why = absl::StrCat("chosen: fastest record, ", Ms(d.cost()));
    } else {
      double win = c.per_implementation[c.chosen].cost();
      why = d.cost() == win ? absl::StrCat("skipped: ties at ", Ms(d.cost()), ", listed later")
                            : absl::StrCat("skipped: slower (", Ms(d.cost()), " > ", Ms(win), ")");
    }
    c.reasons.push_back(absl::StrCat(task, ": ", why));
  }
  return c;
}

}  // namespace tunejit::autotvm
