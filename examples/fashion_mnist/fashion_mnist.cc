// fashion_mnist: tunejit's top-1 accuracy on the 10,000 Fashion-MNIST test images, at fp32, fp16
// and int8, with the weights examples/fashion_mnist/train.py trained in PyTorch, beside PyTorch's
// own accuracy (real weights, not random ones). An example of the library API: build a
// Graph, bind safetensors weights, build executors at each precision, run batches.
//
//   fashion_mnist --data DIR --weights fashion.safetensors [--net vgg|resnet]
//                 [--pytorch pytorch.json] [--log LOG] [--precision all|fp32|fp16|int8]
//                 [--batch 1000] [--json OUT]
//
// --net picks the network (fashion_net.h): the small VGG-style one (default) or the small ResNet
// (residual adds, stride-2 stages, 1x1 downsample convs); the weights must come from
// `train.py --net` of the same name. DIR holds the unpacked IDX files (gunzip Debian's
// dataset-fashion-mnist files). int8 is calibrated on the first --batch training images
// (ExecutorOptions::calibration_inputs). Without --log every layer runs its template's fallback
// config. The same bounds hold for both networks: fp16 within 0.1 points of PyTorch fp32, int8
// within 0.5 of PyTorch fp32 and of tunejit's own fp32. Exit status 1 when one is missed, 2 on
// bad usage.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "autotvm/dispatch.h"
#include "autotvm/log_file.h"
#include "cache/kernel_cache.h"
#include "cli/flags.h"
#include "common/status_macros.h"
#include "examples/fashion_mnist/fashion_net.h"
#include "examples/fashion_mnist/idx_file.h"
#include "executor/executor.h"
#include "graph/weights.h"
#include "jit/device.h"
#include "jit/kernel_compiler.h"
#include "nlohmann/json.hpp"

namespace tunejit {
namespace {

struct Flags {
  std::string data, weights, pytorch, log, json, precision = "all", cache_dir, net = "vgg";
  int64_t batch = 1000;
};

struct Dataset {
  std::vector<float> images;  // normalized, [count, 1, 28, 28]
  std::vector<uint8_t> labels;
  int64_t count = 0;
};

// The first `max_images` images of a split (all: INT64_MAX), normalized, with their labels.
absl::StatusOr<Dataset> LoadSplit(const std::string& dir, const std::string& prefix,
                                  int64_t max_images) {
  TUNEJIT_ASSIGN_OR_RETURN(IdxArray images, ReadIdxFile(dir + "/" + prefix + "-images-idx3-ubyte"));
  TUNEJIT_ASSIGN_OR_RETURN(IdxArray labels, ReadIdxFile(dir + "/" + prefix + "-labels-idx1-ubyte"));
  if (images.dims.size() != 3 || images.dims[1] != kFashionSide || images.dims[2] != kFashionSide ||
      labels.dims.size() != 1 || labels.dims[0] != images.dims[0]) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: expected N x 28 x 28 images and N labels", prefix));
  }
  Dataset d;
  d.count = std::min(images.dims[0], max_images);
  d.images = NormalizePixels(
      absl::MakeConstSpan(images.values).first(d.count * kFashionSide * kFashionSide));
  d.labels.assign(labels.values.begin(), labels.values.begin() + d.count);
  return d;
}

// Per image the arg-max class, over batches of the executor's batch (the last one padded).
absl::StatusOr<std::vector<int>> Predict(Executor& ex, const Dataset& test, int64_t batch) {
  constexpr int64_t kPixels = kFashionSide * kFashionSide;
  std::vector<int> predictions;
  for (int64_t first = 0; first < test.count; first += batch) {
    const int64_t n = std::min(batch, test.count - first);
    std::vector<float> input(batch * kPixels, 0.0f);
    std::copy_n(test.images.begin() + first * kPixels, n * kPixels, input.begin());
    TUNEJIT_RETURN_IF_ERROR(ex.SetInput("input", input));
    TUNEJIT_RETURN_IF_ERROR(ex.Run());
    TUNEJIT_ASSIGN_OR_RETURN(std::vector<float> logits, ex.Output("logits"));
    for (int64_t i = 0; i < n; ++i) {
      const float* row = logits.data() + i * kFashionClasses;
      predictions.push_back(static_cast<int>(std::max_element(row, row + kFashionClasses) - row));
    }
  }
  return predictions;
}

double Top1(const std::vector<int>& predictions, const std::vector<uint8_t>& labels) {
  int64_t right = 0;
  for (size_t i = 0; i < predictions.size(); ++i) right += predictions[i] == labels[i] ? 1 : 0;
  return 100.0 * static_cast<double>(right) / static_cast<double>(predictions.size());
}

double Agreement(const std::vector<int>& a, const std::vector<int>& b) {
  if (a.size() != b.size() || a.empty()) return 0;
  int64_t same = 0;
  for (size_t i = 0; i < a.size(); ++i) same += a[i] == b[i] ? 1 : 0;
  return 100.0 * static_cast<double>(same) / static_cast<double>(a.size());
}

struct PyTorchResult {
  double fp32_top1 = -1, fp16_top1 = -1;
  std::vector<int> fp32_predictions;
};

absl::StatusOr<PyTorchResult> ReadPyTorch(const std::string& path) {
  PyTorchResult r;
  if (path.empty()) return r;
  std::ifstream in(path);
  if (!in) return absl::NotFoundError("cannot open " + path);
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.contains("fp32_top1") || !j.contains("fp16_top1")) {
    return absl::InvalidArgumentError(path + ": not train.py's pytorch.json");
  }
  r.fp32_top1 = j["fp32_top1"].get<double>();
  r.fp16_top1 = j["fp16_top1"].get<double>();
  if (j.contains("fp32_predictions")) {
    r.fp32_predictions = j["fp32_predictions"].get<std::vector<int>>();
  }
  return r;
}

// How far below the reference top-1 a precision may score, in points: float16 rounding barely
// moves a logit, int8 rounds every quantized conv's inputs and weights and may flip near ties.
double Bound(const std::string& precision) { return precision == "int8" ? 0.5 : 0.1; }

struct Row {
  std::string precision;
  double top1 = 0, agree_fp32 = 0, agree_pytorch = 0, ms_per_batch = 0;
  int fallback_layers = 0;
};

// Prints how `r` scored against `reference_top1` and whether that is within Bound.
bool CheckBound(const Row& r, double reference_top1, const char* reference) {
  const double bound = Bound(r.precision);
  const double delta = r.top1 - reference_top1;
  const bool ok = delta >= -bound;
  std::printf("  %s: %+.2f points against %s (bound -%.1f): %s\n", r.precision.c_str(), delta,
              reference, bound, ok ? "PASS" : "FAIL");
  return ok;
}

absl::Status Run(const Flags& f) {
  TUNEJIT_ASSIGN_OR_RETURN(Dataset test,
                           LoadSplit(f.data, "t10k", std::numeric_limits<int64_t>::max()));
  // int8 calibrates on one batch of training images: only those are kept.
  TUNEJIT_ASSIGN_OR_RETURN(Dataset train, LoadSplit(f.data, "train", f.batch));
  TUNEJIT_ASSIGN_OR_RETURN(PyTorchResult torch, ReadPyTorch(f.pytorch));
  TUNEJIT_ASSIGN_OR_RETURN(Graph graph, BuildFashionGraph(f.net, f.batch));
  absl::StatusOr<WeightSet> loaded = LoadWeights(graph, f.weights);
  if (!loaded.ok()) {
    return absl::Status(loaded.status().code(),
                        absl::StrFormat("%s (are they train.py --net %s's weights?)",
                                        loaded.status().message(), f.net));
  }
  const WeightSet& weights = *loaded;
  autotvm::HistoryBest history;
  if (!f.log.empty()) {
    autotvm::LogContents log;
    TUNEJIT_RETURN_IF_ERROR(autotvm::LoadLogFile(f.log, {}, &log));
    history.AddAll(log);
  }
  TUNEJIT_ASSIGN_OR_RETURN(Device device, Device::Open(0));
  CacheOptions cache_options;
  cache_options.dir = f.cache_dir;
  TUNEJIT_ASSIGN_OR_RETURN(KernelCache cache, KernelCache::Open(cache_options));
  KernelCompiler compiler(cache.enabled() ? &cache : nullptr);

  std::vector<std::string> precisions = {"fp32", "fp16", "int8"};
  if (f.precision != "all") precisions = {f.precision};
  std::vector<Row> rows;
  std::vector<int> fp32_predictions;
  for (const std::string& name : precisions) {
    TUNEJIT_ASSIGN_OR_RETURN(NumericMode mode, ResolveNumericMode(name, /*tensor_cores=*/false));
    ExecutorOptions options;
    options.mode = mode;
    options.history = f.log.empty() ? nullptr : &history;
    if (IsInt8(mode) && f.batch <= train.count) {
      options.calibration_inputs = {{"input", train.images}};
    }
    TUNEJIT_ASSIGN_OR_RETURN(Executor ex,
                             Executor::Build(device, compiler, graph, weights, options));
    TUNEJIT_ASSIGN_OR_RETURN(std::vector<int> predictions, Predict(ex, test, f.batch));
    TUNEJIT_ASSIGN_OR_RETURN(double seconds, ex.TimeEndToEnd(20));
    if (mode == NumericMode::kFp32) fp32_predictions = predictions;
    rows.push_back({name, Top1(predictions, test.labels), Agreement(predictions, fp32_predictions),
                    Agreement(predictions, torch.fp32_predictions), seconds * 1e3,
                    ex.stats().fallback_layers});
  }

  std::printf("Fashion-MNIST test set (%lld images), %s net, batch %lld, %s, %s\n",
              static_cast<long long>(test.count), f.net.c_str(), static_cast<long long>(f.batch),
              weights.Label().c_str(), device.properties().name.c_str());
  std::printf("%-10s %8s %14s %17s %12s %9s\n", "precision", "top-1 %", "same as fp32 %",
              "same as PyTorch %", "ms / batch", "fallback");
  for (const Row& r : rows) {
    std::printf("%-10s %8.2f %14.2f %17.2f %12.3f %9d\n", r.precision.c_str(), r.top1, r.agree_fp32,
                r.agree_pytorch, r.ms_per_batch, r.fallback_layers);
  }
  bool pass = true;
  if (torch.fp32_top1 >= 0) {
    std::printf("PyTorch: fp32 %.2f%%, fp16 (autocast) %.2f%%\n", torch.fp32_top1, torch.fp16_top1);
    for (const Row& r : rows) pass = CheckBound(r, torch.fp32_top1, "PyTorch fp32") && pass;
  }
  // int8 against tunejit's own fp32 too: the quantization's cost alone, with or without PyTorch.
  const auto fp32 =
      std::find_if(rows.begin(), rows.end(), [](const Row& r) { return r.precision == "fp32"; });
  if (fp32 != rows.end()) {
    for (const Row& r : rows) {
      if (r.precision == "int8") pass = CheckBound(r, fp32->top1, "tunejit fp32") && pass;
    }
  }
  if (!f.json.empty()) {
    nlohmann::json j;
    j["device"] = device.properties().name;
    j["net"] = f.net;
    j["batch"] = f.batch;
    j["pytorch"] = {{"fp32_top1", torch.fp32_top1}, {"fp16_top1", torch.fp16_top1}};
    for (const Row& r : rows) {
      j["tunejit"][r.precision] = {{"top1", r.top1},
                                   {"same_as_fp32", r.agree_fp32},
                                   {"same_as_pytorch_fp32", r.agree_pytorch},
                                   {"ms_per_batch", r.ms_per_batch},
                                   {"fallback_layers", r.fallback_layers}};
    }
    j["pass"] = pass;
    std::ofstream(f.json) << j.dump(2) << "\n";
  }
  return pass ? absl::OkStatus() : absl::FailedPreconditionError("an accuracy bound was missed");
}

}  // namespace
}  // namespace tunejit

int main(int argc, char** argv) {
  tunejit::Flags f;
  tunejit::cli::FlagParser p(
      "fashion_mnist",
      "tunejit's Fashion-MNIST top-1 at fp32, fp16 and int8 with PyTorch-trained weights");
  p.String("data", &f.data, "DIR", "folder of the unpacked Fashion-MNIST IDX files (required)");
  p.String("weights", &f.weights, "FILE", "safetensors from train.py (required)");
  p.String("net", &f.net, "NET", "vgg or resnet: the network train.py --net trained (default vgg)");
  p.String("pytorch", &f.pytorch, "FILE", "train.py's pytorch.json: PyTorch's accuracy");
  p.String("log", &f.log, "FILE", "tuning log (default: every layer's fallback config)");
  p.String("precision", &f.precision, "P", "all, fp32, fp16 or int8 (default all)");
  p.Int("batch", &f.batch, "N", "images per run (default 1000)");
  p.String("json", &f.json, "FILE", "also write the results as JSON");
  p.String("cache-dir", &f.cache_dir, "DIR", "kernel cache directory");
  std::vector<std::string> positional;
  if (int code = p.Parse({argv + 1, argv + argc}, &positional); code >= 0) return code;
  if (f.data.empty() || f.weights.empty() || !positional.empty() || f.batch < 1 ||
      (f.net != "vgg" && f.net != "resnet")) {
    std::fprintf(stderr,
                 "fashion_mnist: --data and --weights are required, --net is vgg or resnet\n%s",
                 p.Help().c_str());
    return tunejit::cli::kExitUsage;
  }
  absl::Status s = tunejit::Run(f);
  if (!s.ok()) {
    std::fprintf(stderr, "fashion_mnist: %s\n", std::string(s.message()).c_str());
    return tunejit::cli::kExitFailure;
  }
  return tunejit::cli::kExitOk;
}
