// File: autotvm/dispatch.h
// Choosing records as TVM 0.7.dev1 does (docs/tvm-templates.md section 7).
//  * HistoryBest = ApplyHistoryBest: records with error_no != 0 are skipped; per (model, workload)
//    (only when model != "unknown") and per (target key, workload) the record with the lowest
//    mean cost wins, compared strictly so the first of equal records stays. A query tries the
//    target's model first, then its keys in order ("cuda", then "gpu").
//    tunejit's one addition, PreferDevice: records measured on the GPU we run on (their
//    {"tunejit": {"device": ...}}) are tried before the model and the keys, since a time measured
//    on another GPU does not rank configs on this one (a log merged from an H200's and an H100's
//    tuning keeps each GPU's own choice).
//  * ChooseImplementation = Relay's select_implementation: among the op's implementations
//    (conv2d_nchw vs winograd vs NCHWc_int8; dense small vs large batch) the one whose record has
//    the lowest mean cost; with no record at all, the highest priority level (fallback config).
// Every answer carries a Decision explaining why each candidate record was chosen or skipped.
//
//   HistoryBest best;  best.AddAll(log);
//   Decision d = best.Query(target, workload);
//   if (d.best) Use(d.best->record.config);  for (auto& r : d.reasons) LOG(r);
//   OpChoice c = ChooseImplementation(best, target, node_task.implementations);
#ifndef TUNEJIT_AUTOTVM_DISPATCH_H_
#define TUNEJIT_AUTOTVM_DISPATCH_H_

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "autotvm/log_file.h"
#include "autotvm/record.h"
#include "autotvm/target.h"
#include "autotvm/workload.h"

namespace tunejit::autotvm {

struct Decision {
  const LoadedRecord* best = nullptr;  // owned by the HistoryBest; null when nothing matched
  // "model v100", "key cuda" or "device NVIDIA H200, key cuda"; "" when nothing matched
  std::string matched_by;
  // One line per record of the same workload, in file order, e.g.
  // "seed.log:3: chosen (key cuda): mean cost 0.854 ms"
  // "seed.log:9: skipped: error_no 1 (INSTANTIATION_ERROR)"
  // "seed.log:12: skipped: slower (1.07 ms > 0.854 ms)"
  std::vector<std::string> reasons;
  double cost() const { return best ? best->record.result.MeanCost() : 0; }
};

class HistoryBest {
 public:
  HistoryBest() = default;
  HistoryBest(const HistoryBest&) = delete;  // Decisions point into records_
  HistoryBest& operator=(const HistoryBest&) = delete;

  void Add(LoadedRecord record);
  void Add(Record record) { Add(LoadedRecord{std::move(record), "", 0, ""}); }
  void AddAll(const LogContents& log);

  // Queries first look among the records measured on `device` (Record::device, e.g. "NVIDIA
  // H100 80GB HBM3"), under the target's keys; "" (the default) turns the preference off.
  void PreferDevice(std::string device) { preferred_device_ = std::move(device); }

  Decision Query(const Target& target, const Workload& workload) const;
  size_t size() const { return records_.size(); }
  // Record i, in the order added (what a saved build plan fingerprints).
  const LoadedRecord& record(size_t i) const { return *records_[i]; }
  const std::string& preferred_device() const { return preferred_device_; }

 private:
  void Offer(std::unordered_map<std::string, size_t>* map, const std::string& key, size_t i);
  size_t Choose(const Target& target, const std::string& workload_key,
                std::string* matched_by) const;
  std::string Explain(size_t i, size_t chosen, const std::string& matched_by,
                      const Target& target) const;

  std::vector<std::unique_ptr<LoadedRecord>> records_;
  std::unordered_map<std::string, size_t> by_model_;  // model + '\n' + workload key
  std::unordered_map<std::string, size_t> by_key_;    // target key + '\n' + workload key
  // device + '\n' + target key + '\n' + workload key, for records that name their device
  std::unordered_map<std::string, size_t> by_device_;
  std::string preferred_device_;
  std::unordered_map<std::string, std::vector<size_t>> by_workload_;  // for the reasons
};

// One task name that can implement a graph node, with its workload: the op templates offer them
// (ops/op_template.h OpTemplate::Implement, which follows Relay's CUDA strategy for TVM's task
// names).
struct Implementation {
  Workload workload;
  int priority = 10;  // Relay plevel: with no record for any implementation, the highest wins
};

struct OpChoice {
  int chosen = -1;        // index into the implementations; -1 only if none were given
  bool fallback = false;  // no implementation had a record: highest priority, no config
  std::vector<Decision> per_implementation;
  std::vector<std::string> reasons;  // "conv2d_nchw_winograd.cuda: chosen: 4.75 ms < 5.1 ms"
};

OpChoice ChooseImplementation(const HistoryBest& best, const Target& target,
                              const std::vector<Implementation>& implementations);

}  // namespace tunejit::autotvm

#endif  // TUNEJIT_AUTOTVM_DISPATCH_H_
