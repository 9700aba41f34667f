// The `tunejit run` report: numbers from plain structs to text, JSON and SVG.
#include "cli/run_report.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace tunejit::cli {
namespace {

// Accuracy bounds, all in one place (see BoundsFor).
// fp32 runs the same math as cuDNN's FMA path, only summed in another order: float32 rounding
// (2^-24 per operation) over K ~ 4608-25088 term dot products and 16 layers stays well below 1e-4
// relative, so 1e-3 leaves a 10x margin and still catches a wrong tile, index or epilogue.
constexpr double kFp32MaxRelL2 = 1e-3;
// int8 (graph/quantize.h: per-channel weight scales, per-tensor activation scales from a
// calibration batch): rounding to 127 levels costs ~1% relative per quantized tensor; 12 int8
// convs, each quantizing weights and input, add in quadrature to ~5%. 0.1 gives a 2x margin; a
// wrong scale or a saturating requantize is off by far more.
constexpr double kInt8MaxRelL2 = 0.1;
// fp16 (the tensor-core path): weights and activations rounded to float16 (2^-11 relative, ~3e-4
// rms per rounding) before fp32-accumulated layers; ~30 roundings over 15 layers add in
// quadrature to ~2e-3. 1e-2 leaves a 5x margin; a wrong layout or tile is off by O(1).
constexpr double kFp16MaxRelL2 = 1e-2;
// Top-1 agreement on the decisive rows (AccuracyResult): a flip there needs an error over 4x the
// rms error, which a correct run makes in far fewer than 1% of rows (Gaussian: ~0.2%), so 90%
// is a loose floor that a wrong class column or a misplaced row still breaks. Over all rows the
// floor would depend on the weights: with random ones the top two of 1000 near-Gaussian logits
// differ by ~0.3 sigma, and int8's error alone flips ~10% of rows.
constexpr double kMinDecisiveTop1 = 0.90;
constexpr double kDecisiveSigmas = 4;

double Ms(double seconds) { return seconds * 1e3; }

std::string FormatMs(double seconds) {
  return seconds > 0 ? absl::StrFormat("%.3f", Ms(seconds)) : std::string("-");
}

std::string Ratio(std::optional<double> cudnn, double ours) {
  if (!cudnn || *cudnn <= 0 || ours <= 0) return "-";
  return absl::StrFormat("%.2fx", *cudnn / ours);
}

std::string Bytes(int64_t bytes) {
  return absl::StrFormat("%.2f GiB", static_cast<double>(bytes) / (int64_t{1} << 30));
}

bool IsInt8(const ReportLayer& layer) { return layer.dtype == "int8"; }
// The Hopper templates' task names (conv2d_nhwc_wgmma.cuda, dense_wgmma.cuda) say so.
// The wgmma templates: conv2d_nhwc_wgmma.cuda, conv2d_nhwc_wgmma_pool.cuda, dense_wgmma.cuda.
bool OnTensorCores(const ReportLayer& layer) { return absl::StrContains(layer.kernel, "_wgmma"); }

// Sum of our times and of the cuDNN times of the layers cuDNN has too (compared like for like).
struct Totals {
  double ours = 0, ours_matched = 0, cudnn = 0, flops = 0;
};
Totals SumLayers(const std::vector<ReportLayer>& layers) {
  Totals t;
  for (const ReportLayer& l : layers) {
    t.ours += l.seconds;
    t.flops += l.flops;
    if (l.cudnn_seconds) {
      t.ours_matched += l.seconds;
      t.cudnn += *l.cudnn_seconds;
    }
  }
  return t;
}

std::string Pad(const std::string& s, size_t width, bool right = false) {
  if (s.size() >= width) return s;
  std::string fill(width - s.size(), ' ');
  return right ? fill + s : s + fill;
}

}  // namespace

DevicePeaks ComputePeaks(const std::string& name, int sm_count, int clock_khz, double bytes_per_s) {
  DevicePeaks p;
  p.name = name;
  p.sm_count = sm_count;
  p.clock_khz = clock_khz;
  const double clock_hz = clock_khz * 1e3;
  p.fp32_flops_per_s = sm_count * 128.0 * 2.0 * clock_hz;
  // Our int8 kernels use dp4a on the CUDA cores, not tensor cores. Since Volta, dp4a issues at
  // half the FP32 FMA rate (64 per SM per clock) and does 4 MACs: 2x the FP32 FMA MAC rate.
  p.int8_ops_per_s = 2.0 * p.fp32_flops_per_s;
  // Hopper's dense fp16 tensor-core rate: 4096 FLOP per SM per clock (H100 SXM: 989 TFLOP/s =
  // 132 SMs x 4096 x 1830 MHz). Only sm_90 runs the fp16 path, so no other rate is needed.
  p.fp16_flops_per_s = sm_count * 4096.0 * clock_hz;
  // IGMMA does twice the fp16 rate (H100 SXM: 1979 TOP/s dense).
  p.int8_tensor_ops_per_s = 2.0 * p.fp16_flops_per_s;
  p.bytes_per_s = bytes_per_s;
  return p;
}

std::string PeakAssumptions(const DevicePeaks& p) {
  return absl::StrFormat(
      "peaks: fp32 %.1f TFLOP/s (%d SMs x 128 FMA x 2 x %d MHz); int8 %.1f TOP/s (dp4a on CUDA "
      "cores: 2x the fp32 FMA rate); fp16 %.1f TFLOP/s (Hopper wgmma: 4096 FLOP per SM per "
      "clock); int8 on tensor cores %.1f TOP/s (wgmma: 2x fp16); DRAM %.0f GB/s",
      p.fp32_flops_per_s / 1e12, p.sm_count, p.clock_khz / 1000, p.int8_ops_per_s / 1e12,
      p.fp16_flops_per_s / 1e12, p.int8_tensor_ops_per_s / 1e12, p.bytes_per_s / 1e9);
}

std::vector<ReportLayer> LayersFromExecutor(const std::vector<LayerInfo>& layers,
                                            const std::vector<double>& seconds) {
  std::vector<ReportLayer> rows;
  for (size_t i = 0; i < layers.size(); ++i) {
    const LayerInfo& l = layers[i];
    ReportLayer r;
    r.name = l.name;
    r.op = l.op;
    r.kernel = l.task_name.empty() ? l.op : l.task_name;
    r.dtype = l.dtype;
    r.fused = l.fused;
    r.flops = l.flops;
    r.bytes_moved = l.bytes_moved;
    r.record = l.fallback ? "fallback" : l.record.empty() ? "-" : l.record;
    r.seconds = i < seconds.size() ? seconds[i] : 0;
    rows.push_back(std::move(r));
  }
  return rows;
}

void AttachBaseline(const std::vector<BaselineLayer>& baseline, std::vector<ReportLayer>* layers) {
  std::map<std::string, const BaselineLayer*> by_name;
  for (const BaselineLayer& b : baseline) by_name.emplace(b.name, &b);
  for (ReportLayer& l : *layers) {
    auto it = by_name.find(l.name);
    if (it == by_name.end()) continue;
    const BaselineLayer& b = *it->second;
    const bool fused = !l.fused.empty() && b.with_epilogue_seconds > 0;
    const bool pooled = absl::StrContains(l.fused, "max_pool") && b.with_pool_seconds > 0;
    l.cudnn_seconds = pooled ? b.with_pool_seconds : fused ? b.with_epilogue_seconds : b.seconds;
    l.cudnn_op_seconds = b.seconds;
    l.cudnn_algorithm = b.algorithm;
  }
}

double LayerPeak(const ReportLayer& layer, const DevicePeaks& peaks) {
  // The stem and patchify templates multiply their float32 input in float16 on the tensor cores.
  if (layer.dtype == "float16" || absl::StrContains(layer.kernel, "_stem_mma.") ||
      absl::StrContains(layer.kernel, "_patchify_wgmma.")) {
    return peaks.fp16_flops_per_s;
  }
  if (!IsInt8(layer)) return peaks.fp32_flops_per_s;
  return OnTensorCores(layer) ? peaks.int8_tensor_ops_per_s : peaks.int8_ops_per_s;
}

double RooflineSeconds(const ReportLayer& layer, const DevicePeaks& peaks) {
  double peak = LayerPeak(layer, peaks);
  double compute = peak > 0 ? layer.flops / peak : 0;
  double memory = peaks.bytes_per_s > 0 ? layer.bytes_moved / peaks.bytes_per_s : 0;
  return std::max(compute, memory);
}

AccuracyBounds BoundsFor(NumericMode mode) {
  if (mode == NumericMode::kFp16TensorCores) {
    return {kFp16MaxRelL2, kMinDecisiveTop1,
            "fp16: float16 weights and activations, fp32 accumulation (rel < 1e-2; top-1 >= 90% "
            "where the winner is clear)"};
  }
  if (mode == NumericMode::kFp32) {
    return {kFp32MaxRelL2, kMinDecisiveTop1,
            "fp32: same math as cuDNN, summed in another order (rel < 1e-3; top-1 >= 90% where "
            "the winner is clear)"};
  }
  return {kInt8MaxRelL2, kMinDecisiveTop1,
          "int8: ~1% per quantized tensor over 12 int8 convs (rel < 0.1); near-tied rows may flip, "
          "so top-1 >= 90% where the winner leads by > 4x the rms error"};
}

absl::StatusOr<AccuracyResult> CompareLogits(absl::Span<const float> ours,
                                             absl::Span<const float> ref, int rows,
                                             const AccuracyBounds& bounds) {
  if (rows <= 0 || ours.size() != ref.size() || ref.empty() || ref.size() % rows != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("cannot compare logits: %d values against %d reference values in %d rows",
                        ours.size(), ref.size(), rows));
  }
  const size_t cols = ref.size() / rows;
  AccuracyResult r;
  r.checked = true;
  r.rows = rows;
  r.bounds = bounds;
  double diff2 = 0, ref2 = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double d = static_cast<double>(ours[i]) - ref[i];
    diff2 += d * d;
    ref2 += static_cast<double>(ref[i]) * ref[i];
  }
  const double rms_error = std::sqrt(diff2 / static_cast<double>(ref.size()));
  int agree = 0, decisive_agree = 0;
  for (int row = 0; row < rows; ++row) {
    const float* o = ours.data() + row * cols;
    const float* e = ref.data() + row * cols;
    const size_t best_ours = std::max_element(o, o + cols) - o;
    const size_t best_ref = std::max_element(e, e + cols) - e;
    double runner_up = -std::numeric_limits<double>::infinity();
    for (size_t c = 0; c < cols; ++c) {
      if (c != best_ref) runner_up = std::max(runner_up, static_cast<double>(e[c]));
    }
    agree += best_ours == best_ref;
    if (e[best_ref] - runner_up > kDecisiveSigmas * rms_error) {  // a single column is decisive
      ++r.decisive_rows;
      decisive_agree += best_ours == best_ref;
    }
  }
  const double inf = std::numeric_limits<double>::infinity();
  r.rel_l2 = !std::isfinite(diff2) ? inf : ref2 > 0 ? std::sqrt(diff2 / ref2) : diff2 > 0 ? inf : 0;
  r.top1 = static_cast<double>(agree) / rows;
  r.decisive_top1 = r.decisive_rows > 0 ? static_cast<double>(decisive_agree) / r.decisive_rows : 1;
  r.pass = r.rel_l2 < bounds.max_rel_l2 && r.decisive_top1 >= bounds.min_top1;
  return r;
}

std::string FormatLayerTable(const RunReport& report) {
  static const std::vector<std::pair<std::string, int>> kColumns = {
      {"layer", 14},   {"kernel", 28},  {"dtype", 7},      {"fused", 20},
      {"record", 28},  {"ours ms", 9},  {"T(FL)OP/s", 10}, {"% peak", 7},
      {"roofline", 9}, {"cuDNN ms", 9}, {"cuDNN/ours", 10}};
  std::string out = absl::StrCat(report.model, " batch ", report.batch, ", ", report.precision,
                                 ", ", report.weights_label, ", ", report.peaks.name, "\n",
                                 PeakAssumptions(report.peaks), "\n", "times: median of ",
                                 report.repeats, " runs; cuDNN ", report.baseline_precision,
                                 " with its bias+ReLU (and pool) where ours fuses them\n");
  std::vector<std::string> header;
  for (size_t c = 0; c < kColumns.size(); ++c)
    header.push_back(Pad(kColumns[c].first, kColumns[c].second, c >= 5));
  absl::StrAppend(&out, absl::StrJoin(header, " "), "\n");
  for (const ReportLayer& l : report.layers) {
    const double peak = LayerPeak(l, report.peaks);
    const double rate = l.seconds > 0 ? l.flops / l.seconds : 0;
    std::vector<std::string> cells = {
        l.name,
        l.kernel,
        l.dtype,
        l.fused.empty() ? "-" : l.fused,
        l.record,
        FormatMs(l.seconds),
        rate > 0 ? absl::StrFormat("%.2f", rate / 1e12) : "-",
        rate > 0 && peak > 0 ? absl::StrFormat("%.1f%%", 100 * rate / peak) : "-",
        FormatMs(RooflineSeconds(l, report.peaks)),
        l.cudnn_seconds ? FormatMs(*l.cudnn_seconds) : "-",
        Ratio(l.cudnn_seconds, l.seconds)};
    for (size_t c = 0; c < cells.size(); ++c) cells[c] = Pad(cells[c], kColumns[c].second, c >= 5);
    absl::StrAppend(&out, absl::StrJoin(cells, " "), "\n");
  }
  Totals t = SumLayers(report.layers);
  absl::StrAppend(
      &out,
      absl::StrFormat(
          "total: ours %.3f ms over %d layers (%.2f T(FL)OP/s); on the layers "
          "cuDNN has too: ours %.3f ms, cuDNN %.3f ms, cuDNN/ours %s\n",
          Ms(t.ours), report.layers.size(), t.ours > 0 ? t.flops / t.ours / 1e12 : 0,
          Ms(t.ours_matched), Ms(t.cudnn),
          Ratio(t.cudnn > 0 ? std::optional<double>(t.cudnn) : std::nullopt, t.ours_matched)));
  return out;
}

std::string FormatSummary(const RunReport& report) {
  std::string out;
  const double images = static_cast<double>(report.batch);
  absl::StrAppend(&out, absl::StrFormat("end-to-end (median of %d): tunejit %.3f ms (%.0f img/s)",
                                        report.repeats, Ms(report.e2e_seconds),
                                        report.e2e_seconds > 0 ? images / report.e2e_seconds : 0));
  if (report.cudnn_e2e_seconds) {
    absl::StrAppend(&out, absl::StrFormat(", cuDNN %s %.3f ms: cuDNN/tunejit %s",
                                          report.baseline_precision, Ms(*report.cudnn_e2e_seconds),
                                          Ratio(report.cudnn_e2e_seconds, report.e2e_seconds)));
  }
  absl::StrAppend(&out, "\nbaseline: ", report.cudnn, "\nstartup:");
  double total = 0;
  for (const StartupPhase& p : report.startup) {
    total += p.seconds;
    absl::StrAppend(&out, absl::StrFormat("\n  %-10s %8.3f s  %s", p.name, p.seconds, p.detail));
  }
  absl::StrAppend(&out, absl::StrFormat("\n  %-10s %8.3f s\n", "total", total));
  const ExecutorStats& s = report.stats;
  absl::StrAppend(&out, "memory: peak device ", Bytes(s.peak_device_bytes), " (after build, incl. ",
                  "context) vs tensors ",
                  Bytes(s.weight_bytes + s.activation_sum_bytes + s.workspace_bytes), " (weights ",
                  Bytes(s.weight_bytes), " + activations ", Bytes(s.activation_sum_bytes),
                  " + workspace ", Bytes(s.workspace_bytes), "); activation arena with reuse ",
                  Bytes(s.arena_bytes), "\n");
  const AccuracyResult& a = report.accuracy;
  if (!a.checked) {
    absl::StrAppend(&out, "accuracy: not checked (", a.skipped, ")\n");
  } else {
    absl::StrAppend(
        &out, absl::StrFormat("accuracy vs cuDNN fp32 (%d rows): rel L2 error %.3g (bound < %g), "
                              "top-1 agreement %.1f%%, %.1f%% on the %d rows with a clear winner "
                              "(bound >= %.0f%%): %s\n  %s\n",
                              a.rows, a.rel_l2, a.bounds.max_rel_l2, 100 * a.top1,
                              100 * a.decisive_top1, a.decisive_rows, 100 * a.bounds.min_top1,
                              a.pass ? "PASS" : "FAIL", a.bounds.why));
  }
  absl::StrAppend(&out, "weights: ", report.weights_label, "\n");
  return out;
}

namespace {

nlohmann::ordered_json Seconds(std::optional<double> s) {
  return s ? nlohmann::ordered_json(*s) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json LayerJson(const ReportLayer& l, const DevicePeaks& peaks) {
  const double rate = l.seconds > 0 ? l.flops / l.seconds : 0;
  const double peak = LayerPeak(l, peaks);
  nlohmann::ordered_json j = {{"name", l.name},
                              {"op", l.op},
                              {"kernel", l.kernel},
                              {"dtype", l.dtype},
                              {"fused", l.fused},
                              {"record", l.record},
                              {"flops", l.flops},
                              {"bytes_moved", l.bytes_moved},
                              {"seconds", l.seconds},
                              {"ops_per_s", rate},
                              {"fraction_of_peak", peak > 0 ? rate / peak : 0.0},
                              {"roofline_seconds", RooflineSeconds(l, peaks)},
                              {"cudnn_seconds", Seconds(l.cudnn_seconds)},
                              {"cudnn_op_seconds", Seconds(l.cudnn_op_seconds)},
                              {"cudnn_algorithm", l.cudnn_algorithm}};
  j["cudnn_over_ours"] = l.cudnn_seconds && l.seconds > 0
                             ? nlohmann::ordered_json(*l.cudnn_seconds / l.seconds)
                             : nlohmann::ordered_json(nullptr);
  return j;
}

}  // namespace

nlohmann::ordered_json ReportJson(const RunReport& r) {
  using J = nlohmann::ordered_json;
  const DevicePeaks& p = r.peaks;
  J j = {{"tunejit_version", r.version},
         {"model", r.model},
         {"batch", r.batch},
         {"precision", r.precision},
         {"numeric_mode", r.numeric_mode},
         {"weights", r.weights_label},
         {"log", r.log_path},
         {"repeats", r.repeats}};
  j["device"] = {{"name", p.name},
                 {"sm_count", p.sm_count},
                 {"clock_khz", p.clock_khz},
                 {"peak_fp32_flops_per_s", p.fp32_flops_per_s},
                 {"peak_int8_ops_per_s", p.int8_ops_per_s},
                 {"peak_fp16_flops_per_s", p.fp16_flops_per_s},
                 {"peak_int8_tensor_ops_per_s", p.int8_tensor_ops_per_s},
                 {"peak_bytes_per_s", p.bytes_per_s},
                 {"peak_assumptions", PeakAssumptions(p)}};
  j["layers"] = J::array();
  for (const ReportLayer& l : r.layers) j["layers"].push_back(LayerJson(l, p));
  Totals t = SumLayers(r.layers);
  j["totals"] = {{"ours_seconds", t.ours},
                 {"ours_seconds_matched", t.ours_matched},
                 {"cudnn_seconds_matched", t.cudnn},
                 {"flops", t.flops}};
  j["end_to_end"] = {{"ours_seconds", r.e2e_seconds},
                     {"cudnn_seconds", Seconds(r.cudnn_e2e_seconds)},
                     {"baseline", r.cudnn},
                     {"baseline_precision", r.baseline_precision}};
  j["startup"] = J::array();
  for (const StartupPhase& s : r.startup)
    j["startup"].push_back({{"phase", s.name}, {"seconds", s.seconds}, {"detail", s.detail}});
  const ExecutorStats& s = r.stats;
  j["build"] = {{"lower_seconds", s.lower_seconds},
                {"compile_seconds", s.compile_seconds},
                {"kernels_compiled", s.kernels_compiled},
                {"kernel_cache_hits", s.kernel_cache_hits},
                {"calibrate_seconds", s.calibrate_seconds},
                {"upload_seconds", s.upload_seconds},
                {"weight_prepare_seconds", s.weight_prepare_seconds},
                {"weight_copy_seconds", s.weight_copy_seconds},
                {"verify_seconds", s.verify_seconds},
                {"fingerprint_seconds", s.fingerprint_seconds},
                {"plan_used", s.plan_used},
                {"plan_refused", s.plan_refused},
                {"fallback_layers", s.fallback_layers},
                {"warnings", s.warnings}};
  j["memory"] = {{"peak_device_bytes", s.peak_device_bytes},
                 {"weight_bytes", s.weight_bytes},
                 {"activation_sum_bytes", s.activation_sum_bytes},
                 {"arena_bytes", s.arena_bytes},
                 {"workspace_bytes", s.workspace_bytes}};
  const AccuracyResult& a = r.accuracy;
  j["accuracy"] = {{"checked", a.checked}};
  if (a.checked) {
    j["accuracy"].update(J{{"reference", "cuDNN fp32"},
                           {"rows", a.rows},
                           {"rel_l2", std::isfinite(a.rel_l2) ? J(a.rel_l2) : J("inf")},
                           {"top1_agreement", a.top1},
                           {"decisive_rows", a.decisive_rows},
                           {"decisive_top1_agreement", a.decisive_top1},
                           {"max_rel_l2", a.bounds.max_rel_l2},
                           {"min_top1", a.bounds.min_top1},
                           {"bounds", a.bounds.why},
                           {"pass", a.pass}});
  } else {
    j["accuracy"]["skipped"] = a.skipped;
  }
  return j;
}

BarChart ReportChart(const RunReport& r) {
  BarChart chart;
  chart.title = absl::StrFormat("%s batch %d, %s: per-layer time (%s)", r.model, r.batch,
                                r.precision, r.weights_label);
  chart.y_label = "ms (log scale)";
  chart.series_names = {"tunejit " + r.precision, "cuDNN " + r.baseline_precision};
  chart.bound_name = "roofline";
  chart.log_y = true;
  for (const ReportLayer& l : r.layers) {
    BarGroup g;
    g.label = l.name;
    g.values = {Ms(l.seconds)};
    // NaN leaves an empty slot: the layer has no cuDNN counterpart (e.g. a quantize).
    g.values.push_back(l.cudnn_seconds ? Ms(*l.cudnn_seconds)
                                       : std::numeric_limits<double>::quiet_NaN());
    double roof = RooflineSeconds(l, r.peaks);
    if (roof > 0) g.bound = Ms(roof);
    chart.groups.push_back(std::move(g));
  }
  return chart;
}

}  // namespace tunejit::cli
