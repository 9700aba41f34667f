// File: cli/run_report.h
// What `tunejit run` reports, as plain structs, and its three renderings: the per-layer text
// table + summary, the --json document and the --plot SVG. Built from the executor's LayerInfo /
// ExecutorStats and the cuDNN baseline's BaselineLayer (plain structs only: nothing here touches a
// GPU), so every number and verdict is testable on a machine without one.
//
//   RunReport report = ...;  // header fields, peaks, startup, memory
//   report.layers = LayersFromExecutor(executor.layers(), per_layer_seconds);
//   AttachBaseline(cudnn_layers, &report);
//   TUNEJIT_ASSIGN_OR_RETURN(report.accuracy, CompareLogits(ours, ref, batch, bounds));
//   std::cout << FormatLayerTable(report) << FormatSummary(report);
//   WriteFile(json_path, ReportJson(report).dump(2));  WriteFile(svg,
//   RenderBarChart(ReportChart(report)));
#ifndef TUNEJIT_CLI_RUN_REPORT_H_
#define TUNEJIT_CLI_RUN_REPORT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "baseline/cudnn_network.h"
#include "cli/svg_chart.h"
#include "executor/executor.h"
#include "executor/node_tasks.h"
#include "nlohmann/json.hpp"

namespace tunejit::cli {

// Device peaks the table's "% of peak" and roofline columns are measured against.
struct DevicePeaks {
  std::string name;
  int sm_count = 0;
  int clock_khz = 0;
  double fp32_flops_per_s = 0;  // sm_count x 128 FP32 lanes x 2 (FMA) x clock
  double int8_ops_per_s = 0;    // dp4a on CUDA cores; see ComputePeaks
  double fp16_flops_per_s = 0;  // Hopper wgmma, dense fp16 with fp32 accumulation; see ComputePeaks
  double int8_tensor_ops_per_s = 0;  // Hopper wgmma, dense int8 with int32 accumulation
  double bytes_per_s = 0;            // DRAM (DeviceProperties::PeakMemoryBytesPerSecond)
};
DevicePeaks ComputePeaks(const std::string& name, int sm_count, int clock_khz, double bytes_per_s);
// The line the table header and the JSON carry, stating both assumptions.
std::string PeakAssumptions(const DevicePeaks& peaks);

struct ReportLayer {
  std::string name;    // graph node, e.g. "features.0"
  std::string op;      // "conv2d", "max_pool2d", "quantize", ...
  std::string kernel;  // the task name, or the op for non-tuned kernels
  std::string dtype;   // "float32", "int8"
  std::string fused;   // "bias+relu+requantize", "" when nothing is fused
  std::string record;  // "seed-vgg16-v100.log:12", "fallback", or "-" (not a tuned op)
  double flops = 0;
  int64_t bytes_moved = 0;
  double seconds = 0;                   // ours, median of the repeats
  std::optional<double> cudnn_seconds;  // same node in the cuDNN baseline (RunReport's precision)
  std::optional<double> cudnn_op_seconds;  // cuDNN's conv / dense alone, without what ours fuses
  std::string cudnn_algorithm;
};

// One row per executor layer; `seconds` is Executor::TimeLayers (same order), or empty when the
// layers were not timed (then every time is 0).
std::vector<ReportLayer> LayersFromExecutor(const std::vector<LayerInfo>& layers,
                                            const std::vector<double>& seconds);
// Matches baseline layers to ours by node name; for a layer with fused ops the baseline's
// with_epilogue time (its op + bias + ReLU calls) is used, with its pool too (with_pool) where
// ours fuses a max_pool, so like is compared with like.
void AttachBaseline(const std::vector<BaselineLayer>& baseline, std::vector<ReportLayer>* layers);

// ops/s for its dtype and its kernel (int8 on the tensor cores or on dp4a).
double LayerPeak(const ReportLayer& layer, const DevicePeaks& peaks);
// max(flops / peak, bytes_moved / bandwidth): the fastest the layer could possibly run.
double RooflineSeconds(const ReportLayer& layer, const DevicePeaks& peaks);

struct AccuracyBounds {
  double max_rel_l2 = 0;  // pass needs rel_l2 < this
  double min_top1 = 0;    // and decisive_top1 >= this
  std::string why;        // one line: where the bounds come from
};
AccuracyBounds BoundsFor(NumericMode mode);

struct AccuracyResult {
  bool checked = false;
  std::string skipped;  // why not checked (no cuDNN, --no-cudnn, ...)
  double rel_l2 = 0;    // ||ours - ref|| / ||ref||
  double top1 = 0;      // fraction of all rows whose argmax agrees
  int rows = 0;
  // Rows whose reference winner leads its runner-up by more than 4x the rms error of all our
  // outputs: there a flipped argmax is an error, elsewhere it may be a near tie (untrained
  // weights give near-tied logits, and int8's ~2% error flips some of them). The top-1 bound
  // applies to these rows; with none, it holds trivially (decisive_top1 = 1).
  int decisive_rows = 0;
  double decisive_top1 = 1;
  AccuracyBounds bounds;
  bool pass = false;
};
// Compares ours with the reference logits, `rows` rows of equal length. InvalidArgument when the
// sizes disagree. Non-finite outputs give rel_l2 = inf and fail.
absl::StatusOr<AccuracyResult> CompareLogits(absl::Span<const float> ours,
                                             absl::Span<const float> ref, int rows,
                                             const AccuracyBounds& bounds);

struct StartupPhase {
  std::string name;  // "log", "weights", "build", "first run"
  double seconds = 0;
  std::string detail;  // "22 records", "random weights (seed 1)", "compiled 30, cache hits 4"
};

struct RunReport {
  std::string version;       // "0.1.0 (abc1234)"
  std::string model;         // "vgg16"
  std::string precision;     // "fp32", "int8" or "fp16"
  std::string numeric_mode;  // ops/numeric_mode.h NumericModeName: "int8-tensor-cores", ...
  int64_t batch = 0;
  int64_t repeats = 0;
  std::string log_path;
  std::string weights_label;  // WeightSet::Label(): on every output
  DevicePeaks peaks;
  std::vector<ReportLayer> layers;
  double e2e_seconds = 0;
  std::optional<double> cudnn_e2e_seconds;
  std::string cudnn;  // "cuDNN 9.14.0, cuBLAS 13.0.2", or why there is no baseline
  std::string baseline_precision = "fp32";  // of the cuDNN times: "fp32" or "fp16"
  std::vector<StartupPhase> startup;
  ExecutorStats stats;
  AccuracyResult accuracy;
};

std::string FormatLayerTable(const RunReport& report);
// Totals, end-to-end latency, startup split, memory and the accuracy verdict.
std::string FormatSummary(const RunReport& report);
nlohmann::ordered_json ReportJson(const RunReport& report);
// Per layer: tunejit and cuDNN milliseconds, roofline tick, log y-axis.
BarChart ReportChart(const RunReport& report);

}  // namespace tunejit::cli

#endif  // TUNEJIT_CLI_RUN_REPORT_H_
