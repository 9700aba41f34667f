// File: executor/build_plan.h
// A saved build plan: what a full Executor::Build decided that is costly to decide again: the
// chosen implementation, record and kernels of every step (record verification ran against the
// reference kernels to get there), the int8 activation scales (a calibration run), the memory
// plan's size. Executor::Build given a plan (ExecutorOptions::plan) that matches takes every
// kernel from the cache and runs: no calibration, no verification, no kernel choice. A plan
// matches when its identity (the graph's and weights' fingerprints, the precision, the options
// that change decisions, the GPU architecture, the driver and NVRTC versions, the tunejit build)
// equals the build's and the lowered steps and their kernels' cache keys are the ones it lists;
// anything else is refused with the reason and the build runs in full. A plan can make a build
// faster, never different: the outputs with and without it are bit-identical.
//
// The file is text, to be read by people too:
//   tunejit build plan 2              (format version)
//   { ...JSON: identity, steps, activation_scales, arena_bytes... }
//   sha256 <64 hex digits of every byte before this line>
// written atomically (common/file_io.h). ParseBuildPlan never crashes on any bytes (fuzzed).
//
//   TUNEJIT_ASSIGN_OR_RETURN(BuildPlan plan, LoadBuildPlan("vgg16-fp16.plan"));
//   options.plan = &plan;  ... Executor::Build(...) ...
//   if (!ex.stats().plan_used) LOG(ex.stats().plan_refused);
//   TUNEJIT_RETURN_IF_ERROR(SaveBuildPlan("vgg16-fp16.plan", ex.build_plan()));
#ifndef TUNEJIT_EXECUTOR_BUILD_PLAN_H_
#define TUNEJIT_EXECUTOR_BUILD_PLAN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tunejit {

// Bumped when the file's layout or the meaning of an identity field changes (2: the weights'
// fingerprint hashes chunks, graph/fingerprint.h), so an older plan is refused by its version
// rather than as one made "for other weights".
inline constexpr int kBuildPlanFormatVersion = 2;
// Plans are a few hundred bytes per step; anything past this is not one of ours.
inline constexpr uint64_t kMaxBuildPlanBytes = uint64_t{64} << 20;

// What a plan is valid for. Every field must be equal for a plan to be used.
struct BuildPlanIdentity {
  std::string tunejit;  // TunejitVersion(): "0.1.0 (107ffd0)"
  std::string graph;    // GraphFingerprint
  std::string weights;  // WeightsFingerprint
  std::string mode;     // NumericModeName
  // SHA-256 of what else steers the build's decisions: the log's records, the target, whether
  // records are verified, the int8 calibration inputs, seed and given scales.
  std::string options;
  std::string arch;  // "sm_90a"
  int driver_version = 0;
  int nvrtc_version = 0;
  friend bool operator==(const BuildPlanIdentity&, const BuildPlanIdentity&) = default;
};

// One step of the lowered program, in order.
struct PlannedStep {
  std::string name;  // Step::name
  std::string kind;  // StepKindName
  // conv / dense: the chosen implementation's task, its workload (JSON, as a record writes it)
  // and config: a record (its log line) or the template's fallback.
  std::string task_name;
  std::string workload;
  bool fallback = false;
  std::string record;        // TVM log line; "" for the fallback and untuned steps
  std::string record_label;  // "seed.log:12"
  double record_cost = 0;    // seconds, as the record claims
  bool verified = false;     // its kernel was checked against the reference kernels
  // The kernel cache digest (CacheKey::digest) of each of the step's kernels, in plan order.
  std::vector<std::string> kernels;
  friend bool operator==(const PlannedStep&, const PlannedStep&) = default;
};

struct BuildPlan {
  BuildPlanIdentity identity;
  std::vector<PlannedStep> steps;
  std::vector<float> activation_scales;  // int8: per scale slot
  int64_t arena_bytes = 0;               // activation arena, with reuse
  friend bool operator==(const BuildPlan&, const BuildPlan&) = default;
};

std::string EncodeBuildPlan(const BuildPlan& plan);
// DataLoss with the reason: "truncated (no checksum line)", "corrupt (checksum mismatch)",
// "format version 1; this tunejit reads 2", "bad field steps[3].kernels: ...".
absl::StatusOr<BuildPlan> ParseBuildPlan(absl::string_view bytes);

// Atomic write; Unavailable naming the file when it cannot be written.
absl::Status SaveBuildPlan(const std::string& path, const BuildPlan& plan);
// NotFound for a missing file; DataLoss "build plan <path> is <reason>" for a damaged one.
absl::StatusOr<BuildPlan> LoadBuildPlan(const std::string& path);

// The first difference of `saved` from `now`, worded for the user ("it was made for other
// weights", "it was made for sm_80, this GPU is sm_90a"); nullopt when they are equal.
std::optional<std::string> IdentityMismatch(const BuildPlanIdentity& saved,
                                            const BuildPlanIdentity& now);

}  // namespace tunejit

#endif  // TUNEJIT_EXECUTOR_BUILD_PLAN_H_
