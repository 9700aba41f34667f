// cli/run_report.h: the `tunejit run` report from synthetic structs: peaks, roofline, baseline
// matching, the accuracy verdict, the table's columns and ratios, the JSON keys and the chart.
#include "cli/run_report.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

// Designated initializers below name only the fields a case is about; the rest keep their
// defaults on purpose, which GCC 12's -Wmissing-field-initializers would flag one by one.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace tunejit::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// An H200-like device: 132 SMs at 1980 MHz, 4.8 TB/s.
DevicePeaks H200() { return ComputePeaks("NVIDIA H200", 132, 1980000, 4.8e12); }

TEST(RunReportPeaks, Fp32IsFmaRateAndInt8IsTwice) {
  DevicePeaks p = H200();
  // 132 SMs x 128 lanes x 2 flops x 1.98e9 Hz, worked out by hand.
  EXPECT_DOUBLE_EQ(p.fp32_flops_per_s, 66908160e6);
  EXPECT_DOUBLE_EQ(p.int8_ops_per_s, 2 * 66908160e6);
  EXPECT_THAT(PeakAssumptions(p), HasSubstr("66.9 TFLOP/s"));
  EXPECT_THAT(PeakAssumptions(p), HasSubstr("133.8 TOP/s"));
  EXPECT_THAT(PeakAssumptions(p), HasSubstr("dp4a"));
}

TEST(RunReportPeaks, TensorCoreRatesAreFp16AndTwiceThatForInt8) {
  DevicePeaks p = H200();
  // 132 SMs x 4096 flops x 1.98e9 Hz, worked out by hand.
  EXPECT_DOUBLE_EQ(p.fp16_flops_per_s, 1070530560e6);
  EXPECT_DOUBLE_EQ(p.int8_tensor_ops_per_s, 2 * 1070530560e6);
  EXPECT_THAT(PeakAssumptions(p), HasSubstr("2141.1 TOP/s"));
}

TEST(RunReportPeaks, Int8LayerPeakDependsOnTheKernel) {
  DevicePeaks p = H200();
  ReportLayer dp4a{.kernel = "conv2d_NCHWc_int8.cuda", .dtype = "int8"};
  ReportLayer igmma{.kernel = "conv2d_nhwc_wgmma.cuda", .dtype = "int8"};
  ReportLayer pooled{.kernel = "conv2d_nhwc_wgmma_pool.cuda", .dtype = "int8"};
  ReportLayer hgmma{.kernel = "dense_wgmma.cuda", .dtype = "float16"};
  EXPECT_DOUBLE_EQ(LayerPeak(dp4a, p), p.int8_ops_per_s);
  EXPECT_DOUBLE_EQ(LayerPeak(igmma, p), p.int8_tensor_ops_per_s);
  EXPECT_DOUBLE_EQ(LayerPeak(pooled, p), p.int8_tensor_ops_per_s);
  EXPECT_DOUBLE_EQ(LayerPeak(hgmma, p), p.fp16_flops_per_s);
}

TEST(RunReportRoofline, ComputeOrMemoryBoundWhicheverIsSlower) {
  DevicePeaks p = ComputePeaks("d", 1, 1000, 1e9);  // 256e6 flop/s fp32, 512e6 op/s int8, 1 GB/s
  ReportLayer conv{.dtype = "float32", .flops = 256e6, .bytes_moved = 1000};
  EXPECT_DOUBLE_EQ(RooflineSeconds(conv, p), 1.0);  // compute: 1 s; memory 1 us
  conv.dtype = "int8";
  EXPECT_DOUBLE_EQ(RooflineSeconds(conv, p), 0.5);
  ReportLayer pool{.dtype = "float32", .flops = 0, .bytes_moved = 3'000'000'000};
  EXPECT_DOUBLE_EQ(RooflineSeconds(pool, p), 3.0);  // memory bound
}

std::vector<LayerInfo> Infos() {
  std::vector<LayerInfo> infos(3);
  infos[0] = {.name = "features.0",
              .op = "conv2d",
              .task_name = "conv2d_nchw_winograd.cuda",
              .dtype = "float32",
              .fused = "bias+relu",
              .record = "seed.log:12",
              .flops = 1e10,
              .bytes_moved = 1 << 20};
  infos[1] = {.name = "features.2",
              .op = "conv2d",
              .task_name = "conv2d_NCHWc_int8.cuda",
              .dtype = "int8",
              .fused = "bias+relu+requantize",
              .fallback = true,
              .flops = 4e10};
  infos[2] = {
      .name = "features.4", .op = "max_pool2d", .dtype = "float32", .bytes_moved = 4'800'000};
  return infos;
}

TEST(RunReportLayers, FromExecutorLabelsRecordsAndKernels) {
  std::vector<ReportLayer> rows = LayersFromExecutor(Infos(), {1e-3, 2e-3, 5e-4});
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].record, "seed.log:12");
  EXPECT_EQ(rows[1].record, "fallback");
  EXPECT_EQ(rows[2].record, "-");
  EXPECT_EQ(rows[0].kernel, "conv2d_nchw_winograd.cuda");
  EXPECT_EQ(rows[2].kernel, "max_pool2d");  // not tuned: the op
  EXPECT_DOUBLE_EQ(rows[1].seconds, 2e-3);
  EXPECT_EQ(LayersFromExecutor(Infos(), {})[0].seconds, 0);  // not timed
}

TEST(RunReportLayers, BaselineMatchedByNameWithEpilogueWhereFused) {
  std::vector<ReportLayer> rows = LayersFromExecutor(Infos(), {1e-3, 2e-3, 5e-4});
  rows.push_back({.name = "features.1.quantize", .op = "quantize"});
  AttachBaseline({{"features.4", "max_pool2d", "MAX", 4e-4, 0},
                  {"features.0", "conv2d", "WINOGRAD", 1.5e-3, 2e-3},
                  {"features.2", "conv2d", "IMPLICIT_GEMM", 3e-3, 3.5e-3}},
                 &rows);
  ASSERT_TRUE(rows[0].cudnn_seconds.has_value());
  EXPECT_DOUBLE_EQ(*rows[0].cudnn_seconds, 2e-3);  // fused: conv + bias + relu
  EXPECT_EQ(rows[0].cudnn_algorithm, "WINOGRAD");
  EXPECT_DOUBLE_EQ(*rows[1].cudnn_seconds, 3.5e-3);
  EXPECT_DOUBLE_EQ(*rows[2].cudnn_seconds, 4e-4);  // nothing fused: the op alone
  EXPECT_FALSE(rows[3].cudnn_seconds.has_value());
}

TEST(RunReportLayers, PooledLayerComparedWithCudnnsConvEpilogueAndPool) {
  std::vector<ReportLayer> rows = {
      {.name = "features.2", .op = "conv2d", .fused = "bias+relu+max_pool"},
      {.name = "features.5", .op = "conv2d", .fused = "bias+relu"},
      {.name = "features.7", .op = "conv2d", .fused = "bias+relu+max_pool"}};
  AttachBaseline({{"features.2", "conv2d", "ALGO_8", 1e-3, 1.2e-3, 1.5e-3},
                  {"features.5", "conv2d", "ALGO_8", 2e-3, 2.2e-3, 2.2e-3},
                  {"features.7", "conv2d", "ALGO_8", 3e-3, 3.3e-3}},  // no pool time: epilogue
                 &rows);
  EXPECT_DOUBLE_EQ(*rows[0].cudnn_seconds, 1.5e-3);
  EXPECT_DOUBLE_EQ(*rows[0].cudnn_op_seconds, 1e-3);  // the conv alone, for the JSON
  EXPECT_DOUBLE_EQ(*rows[1].cudnn_seconds, 2.2e-3);
  EXPECT_DOUBLE_EQ(*rows[2].cudnn_seconds, 3.3e-3);
}

// 8 rows of 1000 logits in [0, 0.5): row r's winner is column r at 1.5, a clear lead; row 7 is
// a near tie (0.495 against 0.49), under 4x the rms error of a 1% scaling (0.0115).
std::vector<float> Logits() {
  constexpr int kCols = 1000;
  std::vector<float> v(8 * kCols);
  for (int r = 0; r < 8; ++r) {
    for (int c = 0; c < kCols; ++c) {
      v[r * kCols + c] = static_cast<float>((c * 37 + r * 11) % 50) / 100;
    }
    v[r * kCols + r] = 1.5f;
  }
  for (int c = 0; c < kCols; ++c) v[7 * kCols + c] = std::min(v[7 * kCols + c], 0.48f);
  v[7 * kCols + 7] = 0.495f;
  v[7 * kCols + 8] = 0.49f;
  return v;
}

TEST(RunReportAccuracy, RelativeErrorAndTop1OnRowsWithAClearWinner) {
  const std::vector<float> ref = Logits();
  std::vector<float> ours(ref.size());
  for (size_t i = 0; i < ref.size(); ++i) ours[i] = 1.01f * ref[i];
  auto same = CompareLogits(ours, ref, 8, BoundsFor(NumericMode::kInt8Dp4a));
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_NEAR(same->rel_l2, 0.01, 1e-6);
  EXPECT_DOUBLE_EQ(same->top1, 1.0);
  EXPECT_EQ(same->decisive_rows, 7);  // the near tie is not
  EXPECT_DOUBLE_EQ(same->decisive_top1, 1.0);
  EXPECT_TRUE(same->pass);

  // The near tie flips: int8 noise may do that; still a pass.
  ours[7 * 1000 + 8] = 0.52f;
  auto tie = CompareLogits(ours, ref, 8, BoundsFor(NumericMode::kInt8Dp4a));
  ASSERT_TRUE(tie.ok());
  EXPECT_DOUBLE_EQ(tie->top1, 7.0 / 8);
  EXPECT_DOUBLE_EQ(tie->decisive_top1, 1.0);
  EXPECT_TRUE(tie->pass);

  // A clear winner loses (a wrong class column, say), with rel error still far under 0.1: fail.
  ours[3 * 1000 + 40] = 1.6f;
  auto flipped = CompareLogits(ours, ref, 8, BoundsFor(NumericMode::kInt8Dp4a));
  ASSERT_TRUE(flipped.ok());
  EXPECT_LT(flipped->rel_l2, 0.1);
  EXPECT_EQ(flipped->decisive_rows, 7);
  EXPECT_DOUBLE_EQ(flipped->decisive_top1, 6.0 / 7);
  EXPECT_FALSE(flipped->pass);

  // fp32: 1% is far beyond 1e-3.
  auto fp32 = CompareLogits(ours, ref, 8, BoundsFor(NumericMode::kFp32));
  EXPECT_EQ(fp32->bounds.max_rel_l2, 1e-3);
  EXPECT_FALSE(fp32->pass);
  std::vector<float> close(ref);
  close[0] += 1e-4f;
  EXPECT_TRUE(CompareLogits(close, ref, 8, BoundsFor(NumericMode::kFp32))->pass);
}

TEST(RunReportAccuracy, NonFiniteFailsAndBadSizesAreErrors) {
  std::vector<float> ref = {1, 2, 3, 4};
  std::vector<float> nan = {1, std::numeric_limits<float>::quiet_NaN(), 3, 4};
  auto r = CompareLogits(nan, ref, 2, BoundsFor(NumericMode::kInt8Dp4a));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->pass);
  EXPECT_FALSE(std::isfinite(r->rel_l2));
  EXPECT_FALSE(CompareLogits({1, 2, 3}, ref, 2, BoundsFor(NumericMode::kInt8Dp4a)).ok());
  EXPECT_FALSE(
      CompareLogits(ref, ref, 3, BoundsFor(NumericMode::kInt8Dp4a)).ok());  // 4 not divisible by 3
  EXPECT_FALSE(CompareLogits(ref, ref, 0, BoundsFor(NumericMode::kInt8Dp4a)).ok());
}

RunReport Report() {
  RunReport r{.version = "0.1.0 (abc1234)",
              .model = "vgg16",
              .precision = "int8",
              .numeric_mode = "int8",
              .batch = 128,
              .repeats = 50,
              .log_path = "data/seed.log",
              .weights_label = "random weights (seed 1)",
              .peaks = H200()};
  r.layers = LayersFromExecutor(Infos(), {1e-3, 2e-3, 5e-4});
  AttachBaseline({{"features.0", "conv2d", "WINOGRAD", 1.5e-3, 2e-3},
                  {"features.2", "conv2d", "GEMM", 3e-3, 3e-3}},
                 &r.layers);
  r.e2e_seconds = 4e-3;
  r.cudnn_e2e_seconds = 6e-3;
  r.cudnn = "cuDNN 9.14.0, cuBLAS 13.0.2";
  r.startup = {{"log", 0.01, "22 records"}, {"build", 2.5, "compiled 30, cache hits 4"}};
  r.stats.peak_device_bytes = int64_t{3} << 30;
  r.stats.weight_bytes = int64_t{1} << 29;
  r.stats.upload_seconds = 0.25;
  r.stats.weight_prepare_seconds = 0.125;
  r.stats.weight_copy_seconds = 0.0625;
  r.accuracy = *CompareLogits({1, 2}, {1, 2}, 1, BoundsFor(NumericMode::kInt8Dp4a));
  return r;
}

TEST(RunReportText, TableHasColumnsRatiosAndLabels) {
  std::string table = FormatLayerTable(Report());
  for (const char* column : {"layer", "kernel", "dtype", "fused", "record", "ours ms", "T(FL)OP/s",
                             "% peak", "roofline", "cuDNN ms", "cuDNN/ours"}) {
    EXPECT_THAT(table, HasSubstr(column));
  }
  EXPECT_THAT(table, HasSubstr("random weights (seed 1)"));
  EXPECT_THAT(table, HasSubstr("dp4a"));
  EXPECT_THAT(table, HasSubstr("2.00x"));  // features.0: cuDNN 2 ms (with epilogue) / ours 1 ms
  EXPECT_THAT(table, HasSubstr("1.50x"));  // features.2: 3 / 2
  // features.0: 1e10 flop in 1 ms = 10 TFLOP/s = 14.9% of 66.9.
  EXPECT_THAT(table, HasSubstr("10.00"));
  EXPECT_THAT(table, HasSubstr("14.9%"));
  // features.2 (int8): 4e10 in 2 ms = 20 TOP/s = 14.9% of 133.8.
  EXPECT_THAT(table, HasSubstr("20.00"));
  EXPECT_THAT(table, HasSubstr("fallback"));
  // Totals: 3.5 ms overall; the matched layers 3 ms ours against 5 ms cuDNN.
  EXPECT_THAT(table, HasSubstr("ours 3.500 ms over 3 layers"));
  EXPECT_THAT(table, HasSubstr("ours 3.000 ms, cuDNN 5.000 ms, cuDNN/ours 1.67x"));
}

TEST(RunReportText, SummaryStatesVerdictBoundsAndStartup) {
  RunReport r = Report();
  std::string text = FormatSummary(r);
  EXPECT_THAT(text, HasSubstr("tunejit 4.000 ms (32000 img/s)"));
  EXPECT_THAT(text, HasSubstr("cuDNN fp32 6.000 ms: cuDNN/tunejit 1.50x"));
  EXPECT_THAT(text, HasSubstr("bound < 0.1"));
  EXPECT_THAT(text, HasSubstr("100.0% on the 1 rows with a clear winner (bound >= 90%)"));
  EXPECT_THAT(text, HasSubstr("PASS"));
  EXPECT_THAT(text, HasSubstr("random weights (seed 1)"));
  EXPECT_THAT(text, HasSubstr("compiled 30, cache hits 4"));
  EXPECT_THAT(text, HasSubstr("2.510 s"));  // startup total
  EXPECT_THAT(text, HasSubstr("peak device 3.00 GiB"));
  r.accuracy = *CompareLogits({2, 1}, {1, 2}, 1, BoundsFor(NumericMode::kInt8Dp4a));
  EXPECT_THAT(FormatSummary(r), HasSubstr("FAIL"));
  r.accuracy = AccuracyResult{.skipped = "--no-cudnn"};
  EXPECT_THAT(FormatSummary(r), HasSubstr("not checked (--no-cudnn)"));
  EXPECT_THAT(FormatSummary(r), Not(HasSubstr("PASS")));
}

TEST(RunReportText, Fp16BaselineIsNamedWhereItsTimesAre) {
  RunReport r = Report();
  EXPECT_THAT(FormatLayerTable(r), HasSubstr("cuDNN fp32 with its bias+ReLU"));
  r.baseline_precision = "fp16";
  EXPECT_THAT(FormatLayerTable(r), HasSubstr("cuDNN fp16 with its bias+ReLU (and pool)"));
  EXPECT_THAT(FormatSummary(r), HasSubstr("cuDNN fp16 6.000 ms: cuDNN/tunejit 1.50x"));
  EXPECT_EQ(ReportJson(r)["end_to_end"]["baseline_precision"], "fp16");
  EXPECT_EQ(ReportChart(r).series_names.back(), "cuDNN fp16");
}

TEST(RunReportJson, KeysAndValues) {
  nlohmann::ordered_json j = ReportJson(Report());
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  EXPECT_THAT(keys, ElementsAre("tunejit_version", "model", "batch", "precision", "numeric_mode",
                                "weights", "log", "repeats", "device", "layers", "totals",
                                "end_to_end", "startup", "build", "memory", "accuracy"));
  EXPECT_EQ(j["numeric_mode"], "int8");
  EXPECT_EQ(j["weights"], "random weights (seed 1)");
  EXPECT_EQ(j["device"]["name"], "NVIDIA H200");
  ASSERT_EQ(j["layers"].size(), 3u);
  EXPECT_EQ(j["layers"][0]["record"], "seed.log:12");
  EXPECT_DOUBLE_EQ(j["layers"][0]["cudnn_over_ours"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(j["layers"][0]["ops_per_s"].get<double>(), 1e13);
  EXPECT_TRUE(j["layers"][2]["cudnn_seconds"].is_null());
  EXPECT_DOUBLE_EQ(j["layers"][0]["cudnn_op_seconds"].get<double>(), 1.5e-3);  // conv alone
  EXPECT_TRUE(j["layers"][2]["cudnn_over_ours"].is_null());
  EXPECT_DOUBLE_EQ(j["end_to_end"]["cudnn_seconds"].get<double>(), 6e-3);
  EXPECT_EQ(j["accuracy"]["pass"], true);
  EXPECT_DOUBLE_EQ(j["accuracy"]["min_top1"].get<double>(), 0.9);
  EXPECT_EQ(j["accuracy"]["decisive_rows"], 1);
  EXPECT_EQ(j["memory"]["peak_device_bytes"], int64_t{3} << 30);
  // The weight upload in all, and its host preparation and device copies, which overlap.
  EXPECT_DOUBLE_EQ(j["build"]["upload_seconds"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(j["build"]["weight_prepare_seconds"].get<double>(), 0.125);
  EXPECT_DOUBLE_EQ(j["build"]["weight_copy_seconds"].get<double>(), 0.0625);
  // Round-trips through text (no NaN, which JSON cannot hold).
  EXPECT_EQ(nlohmann::ordered_json::parse(j.dump()), j);
}

TEST(RunReportChart, OneGroupPerLayerInMillisecondsWithRoofline) {
  BarChart chart = ReportChart(Report());
  EXPECT_TRUE(chart.log_y);
  EXPECT_THAT(chart.series_names, ElementsAre("tunejit int8", "cuDNN fp32"));
  ASSERT_EQ(chart.groups.size(), 3u);
  EXPECT_EQ(chart.groups[0].label, "features.0");
  EXPECT_DOUBLE_EQ(chart.groups[0].values[0], 1.0);
  EXPECT_DOUBLE_EQ(chart.groups[0].values[1], 2.0);
  EXPECT_TRUE(std::isnan(chart.groups[2].values[1]));  // no cuDNN pool in this baseline
  ASSERT_TRUE(chart.groups[2].bound.has_value());
  EXPECT_DOUBLE_EQ(*chart.groups[2].bound, 4.8e6 / 4.8e12 * 1e3);  // memory bound, ms
  EXPECT_THAT(chart.title, HasSubstr("random weights (seed 1)"));
}

}  // namespace
}  // namespace tunejit::cli
