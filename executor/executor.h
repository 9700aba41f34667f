// File: executor/executor.h
// The graph executor, in TVM's two phases.
//  Build: validate the graph, lower it at a numeric mode (executor/node_tasks.h), fuse bias_add /
//    relu / requantize into the conv and dense epilogues, choose a kernel per node (the best record
//    across the task names that implement it, autotvm/dispatch.h; else the template's fallback
//    config, with a warning), specialize and compile every kernel on all cores through the kernel
//    cache (progress on `progress`), plan activation memory with reuse (executor/memory_plan.h),
//    upload (and for int8, quantize) the weights, run the kPrepare kernels, pre-pack every launch.
//  Run: a flat list of launches with no allocation or lookup, captured into one CUDA graph.
// A saved build plan (executor/build_plan.h, ExecutorOptions::plan) lets a later build skip the
// kernel choice, the record verification and the int8 calibration.
//
// int8 (NumericMode::kInt8Dp4a or kInt8TensorCores; method in graph/quantize.h): weights get
// per-output-channel scales (max |w| / 127); activations entering an int8 conv a per-tensor scale
// from a calibration run of the float32 network (max |x| / 127 over a calibration batch, drawn with
// another seed than the inputs), or given (ExecutorOptions::activation_scales, e.g. a QDQ model's).
// Each int8 conv's epilogue requantizes straight to the next int8 conv's input scale (acc * s_in *
// s_w[c] / s_out + b[c] / s_out, relu, round, saturate); the last one before a float layer writes
// float32 instead.
//
// With `verify_records`, each chosen record's kernel is checked once against the naive reference
// kernels on the node's real shapes (ops/reference_kernels.h); a record whose kernel is wrong is
// skipped, with the reason, for the next-best implementation or the fallback.
//
//   TUNEJIT_ASSIGN_OR_RETURN(Executor ex, Executor::Build(device, compiler, graph, weights, opts));
//   TUNEJIT_RETURN_IF_ERROR(ex.SetInput("input", pixels));
//   TUNEJIT_RETURN_IF_ERROR(ex.Run());
//   TUNEJIT_ASSIGN_OR_RETURN(std::vector<float> logits, ex.Output("logits"));
//   TUNEJIT_ASSIGN_OR_RETURN(std::vector<double> per_layer, ex.TimeLayers(20));
#ifndef TUNEJIT_EXECUTOR_EXECUTOR_H_
#define TUNEJIT_EXECUTOR_EXECUTOR_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "autotvm/dispatch.h"
#include "autotvm/target.h"
#include "executor/build_plan.h"
#include "executor/node_tasks.h"
#include "graph/graph.h"
#include "graph/weights.h"
#include "jit/device.h"
#include "jit/kernel_compiler.h"

namespace tunejit {

struct ExecutorOptions {
  NumericMode mode = NumericMode::kInt8Dp4a;  // ResolveNumericMode (ops/numeric_mode.h)
  // Records to choose from (may be null or empty: every node takes the fallback config).
  const autotvm::HistoryBest* history = nullptr;
  // Target the records are queried with (autotvm/dispatch.h: model first, then keys). Left
  // default (empty name), the executor queries as "cuda" (keys cuda, gpu).
  autotvm::Target target;
  int compile_threads = 0;        // 0: one per core
  bool verify_records = true;     // check each chosen record's kernel once (see above)
  std::FILE* progress = nullptr;  // compile progress and warnings (e.g. stderr); null: quiet
  uint64_t calibration_seed = 7;  // int8: the calibration batch's inputs
  // int8: the calibration batch itself, by graph input name (float32, the input's full element
  // count), for real data (e.g. training images): an input given here is not drawn from
  // `calibration_seed`. Real activations can be far from what N(0, 1) inputs produce.
  absl::flat_hash_map<std::string, std::vector<float>> calibration_inputs;
  // int8: activation scales known beforehand, by graph tensor name (e.g. a QDQ model's,
  // OnnxModel::activation_scales): each scale slot whose tensor has one uses it, the others are
  // calibrated; with every slot given, the calibration run is skipped. Weights are still
  // quantized per output channel as max |w| / 127: from a QDQ model's fake-quantized float weights
  // (q * s[c]) that gives back the file's int8 q and s[c] exactly when each channel's max |q| is
  // 127, which is what symmetric max calibration produces.
  absl::flat_hash_map<std::string, float> activation_scales;
  // A plan an earlier build saved (executor/build_plan.h; may be null). When it was made for this
  // graph, these weights and options, this GPU and this tunejit build, the build takes its
  // kernel choices and int8 scales: no calibration, no record verification, no kernel choice.
  // Otherwise the build runs in full and ExecutorStats::plan_refused says why.
  const BuildPlan* plan = nullptr;
};

// One launched step of the run phase, for reports: a fused conv/dense (+bias, relu, requantize),
// a pool, a softmax, a quantize/dequantize.
struct LayerInfo {
  std::string name;        // the graph node it implements, e.g. "features.0" (conv + fused ops)
  std::string op;          // "conv2d", "dense", "max_pool2d", "quantize", ...
  std::string task_name;   // "conv2d_nchw_winograd.cuda"; "" for non-tuned kernels
  std::string dtype;       // "float32" or "int8" (the op's inputs)
  std::string fused;       // e.g. "bias+relu+requantize"; "" when nothing is fused
  bool fallback = false;   // no usable record: the template's fallback config
  std::string record;      // "seed-vgg16-v100.log:12" (file:line of the record used) or ""
  std::string config;      // the config entity, as in the log (knob list), or "fallback"
  double record_cost = 0;  // seconds the record claims (0 for fallback / non-tuned)
  std::vector<std::string> reasons;  // the choice, incl. skipped records and why
  double flops = 0;                  // 2 x MACs (0 for non-conv/dense/attention)
  int64_t bytes_moved = 0;           // inputs + weights + outputs, for the roofline
  int kernels = 0;                   // launches in the run phase
};

struct ExecutorStats {
  double lower_seconds = 0;    // lowering, kernel choice, specialization
  double compile_seconds = 0;  // wall time of compiling / fetching every kernel
  int kernels_compiled = 0;    // NVRTC runs
  int kernel_cache_hits = 0;
  double calibrate_seconds = 0;  // int8 calibration run (0 for fp32, or every scale given)
  // int8: the activation scale of each scale slot by its source tensor's name, and how many came
  // from ExecutorOptions::activation_scales or the calibration run; given names that no int8
  // tensor carries (their layers run float32, e.g. the first conv's and the dense layers' inputs).
  absl::flat_hash_map<std::string, float> activation_scales;
  int scales_given = 0;
  int scales_calibrated = 0;
  std::vector<std::string> scales_unused;
  double upload_seconds = 0;  // weights to the device (and quantization), in all
  // Of upload_seconds: the host preparation of the conv / dense weights (conversions, reorders,
  // quantization, on all cores), wall time, and the copies of the prepared bytes to the device,
  // which run at the same time (the sum can pass upload_seconds).
  double weight_prepare_seconds = 0;
  double weight_copy_seconds = 0;
  double verify_seconds = 0;
  int64_t arena_bytes = 0;           // activation arena (with reuse)
  int64_t activation_sum_bytes = 0;  // what the activations would take without reuse
  int64_t workspace_bytes = 0;       // kernels' workspaces (winograd transforms, packed data)
  int64_t weight_bytes = 0;          // on the device
  int64_t peak_device_bytes = 0;  // device memory in use after build (all of the above + context)
  int fallback_layers = 0;
  std::vector<std::string> warnings;  // fallbacks, skipped records, unused weights ...
  double fingerprint_seconds = 0;     // the graph's and weights' fingerprints (BuildPlanIdentity)
  bool plan_used = false;             // built from ExecutorOptions::plan
  std::string plan_refused;           // why the given plan was not used ("" when used or none)
};

class Executor {
 public:
  // Everything fallible happens here. FailedPrecondition when the device cannot hold the network.
  // `device` and `compiler` must outlive the executor (it keeps a pointer to the device).
  static absl::StatusOr<Executor> Build(const Device& device, const KernelCompiler& compiler,
                                        const Graph& graph, const WeightSet& weights,
                                        const ExecutorOptions& options);
  Executor(Executor&&) noexcept;
  Executor& operator=(Executor&&) noexcept;
  ~Executor();

  // Copies a graph input (by tensor name) to the device: float32 values, or int64 ones for an
  // int64 input (token ids; out-of-range ids are clamped by the gather reading them,
  // graph/graph.h). InvalidArgument on a wrong name, element count or element type.
  absl::Status SetInput(const std::string& name, absl::Span<const float> values);
  absl::Status SetInput(const std::string& name, absl::Span<const int64_t> values);
  // Runs the network once (the CUDA graph after the first call) and waits for it.
  absl::Status Run();
  // A graph output (TensorKind::kOutput) as float32, by tensor name; InvalidArgument for any other
  // name (intermediate tensors share arena bytes and are not kept).
  absl::StatusOr<std::vector<float>> Output(const std::string& name) const;

  // Median seconds of the whole network over `repeats` graph launches (after warm-up), CUDA events.
  absl::StatusOr<double> TimeEndToEnd(int repeats);
  // Median seconds per layer (one entry per layers()), each layer's kernels launched alone
  // between events, over `repeats` runs.
  absl::StatusOr<std::vector<double>> TimeLayers(int repeats);

  const std::vector<LayerInfo>& layers() const;
  const ExecutorStats& stats() const;
  // What this build decided, to save (SaveBuildPlan) for the next start.
  const BuildPlan& build_plan() const;

  // Opaque outside the executor's own sources (executor/executor_internal.h defines it).
  struct State;

 private:
  explicit Executor(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace tunejit

#endif  // TUNEJIT_EXECUTOR_EXECUTOR_H_
