// host_weights_bench: host preparation of VGG-16's largest weight, classifier.0 (a 4096 x 25088
// dense weight whose columns go CHW -> HWC, 411 MB of float32), and the weights fingerprint of it,
// by thread count. The baseline is the whole-tensor path the executor used before preparing per
// row (copy to a float vector, reorder, convert on one thread). CPU only; best of a few runs.
//   host_weights_bench [--threads 1,2,16] [--repeats 3]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "common/half.h"
#include "common/parallel_for.h"
#include "executor/host_weights.h"
#include "graph/fingerprint.h"
#include "graph/quantize.h"
#include "graph/weights.h"

namespace tunejit {
namespace {

constexpr int64_t kRows = 4096, kChannels = 512, kPixels = 7 * 7;

double BestSeconds(int repeats, const std::function<void()>& fn) {
  double best = 1e30;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

// The whole-tensor path: a float copy of the file's bytes, the column reorder, the conversion.
std::vector<uint8_t> WholeTensor(absl::Span<const uint8_t> file, WeightElement element) {
  std::vector<float> w(file.size() / sizeof(float));
  std::memcpy(w.data(), file.data(), file.size());
  std::vector<float> hwc(w.size());
  const int64_t k = kChannels * kPixels;
  for (int64_t row = 0; row < kRows; ++row) {
    for (int64_t c = 0; c < kChannels; ++c) {
      for (int64_t p = 0; p < kPixels; ++p) {
        hwc[row * k + p * kChannels + c] = w[row * k + c * kPixels + p];
      }
    }
  }
  std::vector<uint8_t> out;
  if (element == WeightElement::kFloat16) {
    std::vector<uint16_t> h(hwc.size());
    for (size_t i = 0; i < hwc.size(); ++i) h[i] = FloatToHalf(hwc[i]);
    out.resize(h.size() * 2);
    std::memcpy(out.data(), h.data(), out.size());
  } else {
    QuantizedWeights q = QuantizeWeights(hwc, kRows);
    out.assign(q.values.begin(), q.values.end());
  }
  return out;
}

void Report(const char* what, double seconds, double bytes) {
  std::printf("  %-44s %8.1f ms  %6.2f GB/s of float32 read\n", what, seconds * 1e3,
              bytes / seconds / 1e9);
}

int Main(int argc, char** argv) {
  std::vector<int> thread_counts = {1, 2, ResolveThreads(0)};
  int repeats = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--repeats") (void)absl::SimpleAtoi(argv[i + 1], &repeats);
    if (flag != "--threads") continue;
    thread_counts.clear();
    for (absl::string_view t : absl::StrSplit(argv[i + 1], ',')) {
      int n = 0;
      if (absl::SimpleAtoi(t, &n)) thread_counts.push_back(n);
    }
  }
  Graph graph;
  graph.AddTensor(
      {"classifier.0.weight", {kRows, kChannels * kPixels}, DType::kF32, TensorKind::kWeight});
  const WeightSet weights = RandomWeights(graph, 1);
  const absl::Span<const uint8_t> file = weights.Get(0);
  const double bytes = static_cast<double>(file.size());
  std::printf("classifier.0: %lld x %lld float32 (%.0f MB), %d cores\n",
              static_cast<long long>(kRows), static_cast<long long>(kChannels * kPixels),
              bytes / 1e6, ResolveThreads(0));
  for (WeightElement element : {WeightElement::kFloat16, WeightElement::kInt8}) {
    const char* name = element == WeightElement::kFloat16 ? "fp16" : "int8";
    std::printf("%s, columns CHW -> HWC:\n", name);
    Report("whole tensor, 1 thread (before)",
           BestSeconds(repeats, [&] { WholeTensor(file, element); }), bytes);
    const WeightRows rows{
        .source = file, .rows = kRows, .a = kChannels, .b = kPixels, .element = element};
    for (int threads : thread_counts) {
      const double s = BestSeconds(repeats, [&] {
        (void)PrepareWeights(
            {rows}, {.threads = threads},
            [](int, size_t, absl::Span<const uint8_t>) { return absl::OkStatus(); });
      });
      Report(("per row, " + std::to_string(threads) + " threads").c_str(), s, bytes);
    }
  }
  std::printf("weights fingerprint:\n");
  for (int threads : thread_counts) {
    const double s = BestSeconds(repeats, [&] { WeightsFingerprint(graph, weights, threads); });
    Report((std::to_string(threads) + " threads").c_str(), s, bytes);
  }
  return 0;
}

}  // namespace
}  // namespace tunejit

int main(int argc, char** argv) { return tunejit::Main(argc, argv); }
