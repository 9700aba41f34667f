// `tunejit log show|check|merge`: inspect, validate and combine AutoTVM tuning logs.
#include <algorithm>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "autotvm/dispatch.h"
#include "autotvm/log_file.h"
#include "autotvm/python_json.h"
#include "autotvm/record_check.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "ops/op_template.h"

namespace tunejit::cli {
namespace {

using autotvm::LoadedRecord;
using autotvm::LogContents;

// Loads every file; bad lines go to stderr. Returns false (after printing) if a file could not
// be read or, with `strict`, a line was bad.
bool LoadAll(const std::vector<std::string>& files, bool strict, LogContents* log) {
  for (const std::string& file : files) {
    absl::Status s = autotvm::LoadLogFile(file, {.strict = strict}, log);
    if (!s.ok()) {
      std::cerr << "tunejit log: " << s.message() << "\n";
      return false;
    }
  }
  for (const autotvm::LogLineError& e : log->errors) std::cerr << e.ToString() << "\n";
  std::cerr << log->Summary() << "\n";
  return true;
}

std::string Shapes(const autotvm::Json& args) {
  std::vector<std::string> parts;
  for (const autotvm::Json& a : args) {
    if (!a.is_array() || a.size() < 3 || a[0] != "TENSOR") continue;
    std::vector<std::string> dims;
    for (const autotvm::Json& d : a[1]) dims.push_back(d.dump());
    parts.push_back(absl::StrCat(absl::StrJoin(dims, "x"), " ", a[2].get<std::string>()));
  }
  return absl::StrJoin(parts, ", ");
}

double Flops(const autotvm::Workload& w) {
  if (auto conv = autotvm::ParseConv2dWorkload(w); conv.ok()) return conv->Flops();
  if (auto dense = autotvm::ParseDenseWorkload(w); dense.ok()) return dense->Flops();
  if (auto bmm = autotvm::ParseBatchMatmulWorkload(w); bmm.ok()) return bmm->Flops();
  return 0;
}

std::string CompactConfig(const autotvm::ConfigEntity& c) {
  std::vector<std::string> parts;
  for (const autotvm::Knob& k : c.knobs) {
    std::string v = autotvm::DumpPythonJson(k.value);
    v.erase(std::remove(v.begin(), v.end(), ' '), v.end());
    parts.push_back(absl::StrCat(k.name, "=", v));
  }
  return absl::StrJoin(parts, " ");
}

void ShowWorkload(const autotvm::HistoryBest& best, const std::vector<const LoadedRecord*>& group,
                  const std::string& target_override) {
  const autotvm::Record& first = group.front()->record;
  int errors = 0;
  for (const LoadedRecord* r : group) errors += r->record.ok() ? 0 : 1;
  std::string target_text = target_override.empty() ? first.target.text : target_override;
  absl::StatusOr<autotvm::Target> target = autotvm::ParseTarget(target_text);
  autotvm::Decision d;
  if (target.ok()) d = best.Query(*target, first.workload);
  std::string time = "-", gflops = "-", config = "(no valid record)";
  if (d.best != nullptr) {
    double cost = d.cost();
    time = absl::StrFormat("%.4f ms", cost * 1e3);
    double flops = Flops(first.workload);
    if (flops > 0 && cost > 0) gflops = absl::StrFormat("%.1f", flops / cost / 1e9);
    config = CompactConfig(d.best->record.config);
  }
  std::cout << absl::StrFormat("%-28s %-44s %-22s %5d %5d %12s %9s  %s\n",
                               first.TaskNameAsWritten(), Shapes(first.workload.args), target_text,
                               group.size(), errors, time, gflops, config);
}

// Which TVM releases wrote the log, from the records' tvm_version (format 0.2 lines carry it), e.g.
// "written by TVM 0.8.0 (3 records), 0.7.dev1 (19 records)", with a note when later task names
// (dense_small_batch.gpu) were read as TVM 0.7's templates; "" when no record tells.
std::string WrittenBy(const LogContents& log) {
  std::map<std::string, int> versions;
  std::set<std::string> renamed;
  for (const LoadedRecord& r : log.records) {
    if (!r.record.tvm_version.empty()) ++versions[r.record.tvm_version];
    if (!r.record.written_task_name.empty()) {
      renamed.insert(absl::StrCat(r.record.written_task_name, " as ", r.record.workload.task_name));
    }
  }
  if (versions.empty()) return "";
  std::vector<std::string> parts;
  for (const auto& [version, count] : versions) {
    parts.push_back(absl::StrCat(version, " (", count, count == 1 ? " record)" : " records)"));
  }
  std::string line = absl::StrCat("written by TVM ", absl::StrJoin(parts, ", "));
  if (!renamed.empty()) {
    absl::StrAppend(
        &line, "; later TVM task names read as the same templates: ", absl::StrJoin(renamed, ", "));
  }
  return line;
}

int Show(const std::vector<std::string>& args) {
  FlagParser flags("tunejit log show",
                   "One row per workload: task, shapes and dtypes, target, record count, errors, "
                   "best time, GFLOP/s and the chosen config (TVM's ApplyHistoryBest choice).");
  std::string target;
  bool strict = false;
  flags.String("target", &target, "TARGET", "choose records for this target (default: the log's)");
  flags.Bool("strict", &strict, "fail on the first bad line");
  flags.Positional("FILE...", "AutoTVM log files", 1);
  std::vector<std::string> files;
  if (int code = flags.Parse(args, &files); code >= 0) return code;
  if (!target.empty() && !autotvm::ParseTarget(target).ok()) {
    std::cerr << "tunejit log show: bad --target '" << target << "'\n";
    return kExitUsage;
  }
  LogContents log;
  if (!LoadAll(files, strict, &log)) return kExitFailure;
  autotvm::HistoryBest best;
  best.AddAll(log);
  std::vector<std::string> order;
  std::map<std::string, std::vector<const LoadedRecord*>> groups;
  for (const LoadedRecord& r : log.records) {
    std::string key = r.record.workload.Key();
    if (groups[key].empty()) order.push_back(key);
    groups[key].push_back(&r);
  }
  if (std::string by = WrittenBy(log); !by.empty()) std::cout << by << "\n";
  std::cout << absl::StrFormat("%-28s %-44s %-22s %5s %5s %12s %9s  %s\n", "TASK", "SHAPES",
                               "TARGET", "RECS", "ERRS", "BEST", "GFLOP/S", "CONFIG");
  for (const std::string& key : order) ShowWorkload(best, groups[key], target);
  return kExitOk;
}

int Check(const std::vector<std::string>& args) {
  FlagParser flags("tunejit log check",
                   "Check every record's config index against its entity in our config space "
                   "(TVM 0.7.dev1 knob definitions). Records that predate a knob added later are "
                   "valid (a note counts them). Exit 1 on any real inconsistency.");
  bool verbose = false, strict = false;
  flags.Bool("verbose", &verbose, "print a line for every record");
  flags.Bool("strict", &strict, "fail on the first bad line");
  flags.Positional("FILE...", "AutoTVM log files", 1);
  std::vector<std::string> files;
  if (int code = flags.Parse(args, &files); code >= 0) return code;
  LogContents log;
  if (!LoadAll(files, strict, &log)) return kExitFailure;
  std::map<std::string, int> counts;
  int inconsistent = 0;
  for (const LoadedRecord& r : log.records) {
    autotvm::RecordCheck c = CheckRecord(r.record);
    ++counts[autotvm::RecordCheckVerdictName(c.verdict)];
    bool report = verbose || c.verdict == autotvm::RecordCheck::kInconsistent ||
                  c.verdict == autotvm::RecordCheck::kSwappedLabels;
    if (c.verdict == autotvm::RecordCheck::kInconsistent) ++inconsistent;
    if (report) {
      std::cout << r.file << ":" << r.line << ": " << r.record.workload.task_name << ": "
                << autotvm::RecordCheckVerdictName(c.verdict)
                << (c.message.empty() || c.verdict == autotvm::RecordCheck::kSwappedLabels
                        ? ""
                        : ": " + c.message)
                << "\n";
    }
  }
  std::vector<std::string> parts;
  for (const auto& [verdict, n] : counts) parts.push_back(absl::StrCat(n, " ", verdict));
  std::cout << log.records.size() << " records checked: " << absl::StrJoin(parts, ", ") << "\n";
  if (int older = counts[autotvm::RecordCheckVerdictName(autotvm::RecordCheck::kLacksLaterKnobs)];
      older > 0) {
    std::cout << "note: " << older
              << " records predate knobs added later; they are valid, and the templates read "
                 "each missing knob as its first value (the behaviour from before it existed)\n";
  }
  return inconsistent > 0 || !log.errors.empty() ? kExitFailure : kExitOk;
}

// With --best N: the indices of the records to keep, the N measured ones of least mean cost of
// each (target, measuring GPU, workload), the earlier first among equal costs (so that
// ApplyHistoryBest's choice, the cheapest and first, is among them, with or without its
// PreferDevice: a GPU's records are not crowded out by a faster GPU's). Duplicates of a kept line
// do not count. `lines[i]`: record i as written.
std::set<size_t> FastestPerWorkload(const LogContents& log, const std::vector<std::string>& lines,
                                    int64_t best) {
  std::map<std::string, std::vector<std::pair<double, size_t>>> by_workload;
  std::set<std::string_view> distinct;
  for (size_t i = 0; i < log.records.size(); ++i) {
    const autotvm::Record& r = log.records[i].record;
    if (!r.ok() || !distinct.insert(lines[i]).second) continue;
    by_workload[absl::StrCat(r.target.text, "|", r.device, "|", r.workload.Key())].push_back(
        {r.result.MeanCost(), i});
  }
  std::set<size_t> kept;
  for (auto& [key, records] : by_workload) {
    std::sort(records.begin(), records.end());
    for (size_t k = 0; k < records.size() && k < static_cast<size_t>(best); ++k) {
      kept.insert(records[k].second);
    }
  }
  return kept;
}

int Merge(const std::vector<std::string>& args) {
  FlagParser flags("tunejit log merge",
                   "Append every valid record of the inputs to OUT in order, skipping lines "
                   "identical to one already in OUT or seen earlier.");
  bool drop_errors = false;
  int64_t best = 0;
  flags.Bool("drop-errors", &drop_errors, "also skip records with error_no != 0");
  flags.Int("best", &best, "N",
            "append only the N fastest measured records of each workload of the inputs, per "
            "measuring GPU (a smaller log that chooses the same records)");
  flags.Positional("OUT IN...", "output log, then input logs", 2);
  std::vector<std::string> paths;
  if (int code = flags.Parse(args, &paths); code >= 0) return code;
  if (best < 0) {
    std::cerr << "tunejit log merge: --best " << best << " (want N >= 1)\n";
    return kExitUsage;
  }
  std::set<std::string> seen;
  LogContents existing;
  if (absl::Status s = autotvm::LoadLogFile(paths[0], {}, &existing);
      !s.ok() && s.code() != absl::StatusCode::kNotFound) {
    std::cerr << "tunejit log merge: " << s.message() << "\n";
    return kExitFailure;
  }
  for (const LoadedRecord& r : existing.records) seen.insert(autotvm::SerializeRecord(r.record));
  LogContents in;
  if (!LoadAll({paths.begin() + 1, paths.end()}, false, &in)) return kExitFailure;
  std::vector<std::string> lines;
  lines.reserve(in.records.size());
  for (const LoadedRecord& r : in.records) lines.push_back(autotvm::SerializeRecord(r.record));
  const std::set<size_t> fastest =
      best > 0 ? FastestPerWorkload(in, lines, best) : std::set<size_t>{};
  int written = 0, duplicates = 0;
  for (size_t i = 0; i < in.records.size(); ++i) {
    if (drop_errors && !in.records[i].record.ok()) continue;
    if (best > 0 && !fastest.contains(i)) continue;
    const std::string& line = lines[i];
    if (!seen.insert(line).second) {
      ++duplicates;
      continue;
    }
    if (absl::Status s = autotvm::AppendLineToLog(paths[0], line); !s.ok()) {
      std::cerr << "tunejit log merge: " << s.message() << "\n";
      return kExitFailure;
    }
    ++written;
  }
  std::cout << "appended " << written << " records to " << paths[0] << " (" << duplicates
            << " duplicates skipped)\n";
  return kExitOk;
}

constexpr char kLogUsage[] =
    "usage: tunejit log <show|check|merge> [flags] FILE...\n\n"
    "  show   FILE...       one row per workload with the chosen record\n"
    "  check  FILE...       index/entity consistency against our config spaces\n"
    "  merge  OUT IN...     append valid records of IN to OUT, without duplicates (--best N:\n"
    "                       only each workload's N fastest)\n\n"
    "Run 'tunejit log <subcommand> --help' for its flags.\n";

}  // namespace

int RunLogCommand(const std::vector<std::string>& args) {
  if (args.empty()) {
    std::cerr << kLogUsage;
    return kExitUsage;
  }
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kLogUsage;
    return kExitOk;
  }
  if (args[0] == "show") return Show(rest);
  if (args[0] == "check") return Check(rest);
  if (args[0] == "merge") return Merge(rest);
  std::cerr << "tunejit log: unknown subcommand '" << args[0] << "'\n" << kLogUsage;
  return kExitUsage;
}

}  // namespace tunejit::cli
