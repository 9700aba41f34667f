// Uses the installed headers and libraries: loads a tuning log, builds VGG-16's graph, extracts
// its tuning tasks and counts the log's records that match them. Prints
// "records N tasks M matched K"; exit 1 on any error.
#include <cstdio>
#include <set>
#include <string>

#include "autotvm/log_file.h"
#include "executor/node_tasks.h"
#include "graph/vgg16.h"

int main(int argc, char** argv) {
  if (argc != 2) return 1;
  tunejit::autotvm::LogContents log;
  if (!tunejit::autotvm::LoadLogFile(argv[1], {}, &log).ok()) return 1;
  absl::StatusOr<tunejit::Graph> graph = tunejit::BuildVgg16({.batch = 128});
  if (!graph.ok()) return 1;
  auto tasks = tunejit::ExtractTasks(*graph, tunejit::NumericMode::kInt8Dp4a);
  if (!tasks.ok()) return 1;
  std::set<std::string> keys;
  for (const auto& w : tunejit::DistinctWorkloads(*tasks)) keys.insert(w.Key());
  int matched = 0;
  for (const auto& r : log.records) matched += keys.count(r.record.workload.Key()) ? 1 : 0;
  std::printf("records %zu tasks %zu matched %d\n", log.records.size(), keys.size(), matched);
  return 0;
}
