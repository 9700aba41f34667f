// File: tests/ops/ops_test_util.h
// Helpers of the ops tests: reading records straight from a log file (nlohmann; independent of the
// autotvm record parser), building workloads and configs, random non-zero inputs, and a GPU harness
// that compiles many plans in parallel through a scratch kernel cache and runs one plan with
// poisoned (0xFF = NaN) outputs.
#ifndef TUNEJIT_TESTS_OPS_OPS_TEST_UTIL_H_
#define TUNEJIT_TESTS_OPS_OPS_TEST_UTIL_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "autotvm/config_entity.h"
#include "autotvm/config_space.h"
#include "autotvm/target.h"
#include "autotvm/workload.h"
#include "common/half.h"
#include "gtest/gtest.h"
#include "jit/device.h"
#include "jit/kernel_compiler.h"
#include "ops/op_template.h"
#include "ops/plan_runner.h"
#include "ops/split.h"

namespace tunejit::testing {

struct LogRecord {
  autotvm::Workload workload;
  autotvm::ConfigEntity config;
  int line = 0;
};

// Every record of `path` whose task name is in `tasks` (all when empty). Lines starting with '#'
// and blank lines are skipped; a malformed line fails the test.
inline std::vector<LogRecord> ReadLogRecords(const std::string& path,
                                             const std::vector<std::string>& tasks = {}) {
  std::vector<LogRecord> out;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    autotvm::Json j;
    try {
      j = autotvm::Json::parse(line);
    } catch (const std::exception& e) {
      ADD_FAILURE() << path << ":" << number << ": " << e.what();
      continue;
    }
    if (!j.contains("input")) continue;  // pre-0.2 records ("i"/"r") use other task names
    LogRecord r;
    r.line = number;
    r.workload.task_name = j["input"][1].get<std::string>();
    if (!tasks.empty() &&
        std::find(tasks.begin(), tasks.end(), r.workload.task_name) == tasks.end()) {
      continue;
    }
    r.workload.args = j["input"][2];
    for (const autotvm::Json& knob : j["config"]["entity"]) {
      r.config.knobs.push_back(
          autotvm::Knob{knob[0].get<std::string>(), knob[1].get<std::string>(), knob[2]});
    }
    out.push_back(std::move(r));
  }
  return out;
}

inline autotvm::Json Tensor(const std::vector<int64_t>& shape, const std::string& dtype) {
  return autotvm::Json::array({"TENSOR", shape, dtype});
}

// The argument list Relay writes for conv2d_nchw / depthwise: [data, kernel, [sh, sw],
// [pt, pl, pb, pr], [dh, dw], out_dtype]; `kernel` as given (OIHW or [C, mult, KH, KW]).
inline autotvm::Workload ConvWorkload(const std::string& task, const std::vector<int64_t>& data,
                                      const std::vector<int64_t>& kernel, std::vector<int> stride,
                                      std::vector<int> pad, std::vector<int> dilation,
                                      const std::string& dtype = "float32") {
  return autotvm::Workload{task, autotvm::Json::array({Tensor(data, dtype), Tensor(kernel, dtype),
                                                       stride, pad, dilation, dtype})};
}

inline autotvm::Workload DenseWorkload(const std::string& task, int64_t m, int64_t n, int64_t k) {
  return autotvm::Workload{
      task, autotvm::Json::array(
                {Tensor({m, k}, "float32"), Tensor({n, k}, "float32"), nullptr, "float32"})};
}

inline autotvm::ConfigEntity Config(std::vector<autotvm::Knob> knobs) {
  return autotvm::ConfigEntity{std::move(knobs)};
}

// Uniform in +-[0.25, 1]: never zero, so a dropped term always shows.
inline std::vector<float> RandomFloats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mag(0.25f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = (rng() & 1) ? mag(rng) : -mag(rng);
  return v;
}

// Non-zero integers in [-range, range] stored as float: products and sums are exact in float, so
// results compare bit-exactly with the CPU reference.
inline std::vector<float> RandomIntFloats(size_t n, int range, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(1, range);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>((rng() & 1) ? dist(rng) : -dist(rng));
  return v;
}

// Multiples of 1/4 in +-[1/4, 2] (never zero): exact in fp16, and sums of up to 2^18 of their
// products are exact in fp32, so tensor-core results compare bit for bit with a CPU sum.
inline std::vector<float> RandomQuarters(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> q(1, 8);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>((rng() & 1) ? q(rng) : -q(rng)) / 4.0f;
  return v;
}

// A random element of the `factors` candidates of a `parts`-way split of `length`.
inline std::vector<int64_t> RandomSplit(int64_t length, int parts, std::mt19937& rng) {
  std::vector<std::vector<int64_t>> candidates = FactorSplitCandidates(length, parts);
  return candidates[rng() % candidates.size()];
}

// Host-side fp16 (common/half.h) for the tensor-core tests.
using ::tunejit::FloatToHalf;
using ::tunejit::HalfToFloat;

inline std::vector<uint16_t> ToHalves(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  std::transform(v.begin(), v.end(), out.begin(), FloatToHalf);
  return out;
}

template <typename T>
std::vector<uint8_t> Bytes(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

template <typename T>
std::vector<T> FromBytes(const std::vector<uint8_t>& b) {
  std::vector<T> v(b.size() / sizeof(T));
  std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
  return v;
}

// kernel_sources/common.cuh's epilogue in the same float operations, before any rounding.
inline float EpilogueValue(float acc, float bias, float scale, const Epilogue& e) {
  float v = acc;
  if (e.output != Epilogue::Output::kAccumulator) v = v * scale;
  if (e.bias) v = v + bias;
  if (e.relu && v < 0) v = 0;
  return v;
}

// How a kernel stored its outputs: float32, float16, or int8 requantized.
enum class StoredAs { kFloat32, kFloat16, kInt8 };

// Whether output `i` of `bytes` is `want` exactly as stored (float16 and int8 correctly rounded,
// int8 saturated); `got` receives the stored value.
inline bool StoredExactly(const std::vector<uint8_t>& bytes, size_t i, StoredAs as, float want,
                          float* got) {
  switch (as) {
    case StoredAs::kInt8:
      *got = static_cast<int8_t>(bytes[i]);
      return *got == std::clamp(std::nearbyint(want), -128.0f, 127.0f);
    case StoredAs::kFloat16: {
      uint16_t h;
      std::memcpy(&h, bytes.data() + i * 2, 2);
      *got = HalfToFloat(h);
      return h == FloatToHalf(want);
    }
    case StoredAs::kFloat32:
      break;
  }
  std::memcpy(got, bytes.data() + i * 4, 4);
  return *got == want;
}

// One device, one stream, one compiler over a scratch cache: compile plans in bulk (parallel),
// then run each with fresh buffers.
class GpuHarness {
 public:
  static absl::StatusOr<std::unique_ptr<GpuHarness>> Create() {
    auto h = std::unique_ptr<GpuHarness>(new GpuHarness());
    absl::StatusOr<Device> device = Device::Open(0);
    if (!device.ok()) return device.status();
    h->device_ = std::make_unique<Device>(*std::move(device));
    absl::StatusOr<Stream> stream = Stream::Create(*h->device_);
    if (!stream.ok()) return stream.status();
    h->stream_ = std::make_unique<Stream>(*std::move(stream));
    CacheOptions options;
    options.dir = ::testing::TempDir() + "/tunejit_ops_gpu_cache";
    absl::StatusOr<KernelCache> cache = KernelCache::Open(options);
    if (!cache.ok()) return cache.status();
    h->cache_ = std::make_unique<KernelCache>(*std::move(cache));
    h->compiler_ = std::make_unique<KernelCompiler>(h->cache_.get());
    h->arch_ = h->device_->properties().arch;
    return h;
  }

  DeviceLimits limits() const { return DeviceLimits::FromProperties(device_->properties()); }

  // Compiles every kernel of every plan on all cores (fills the cache for Run).
  absl::Status Precompile(const std::vector<OpPlan>& plans) {
    OpPlan all;
    for (const OpPlan& p : plans) {
      for (const PlannedKernel& k : p.kernels) all.kernels.push_back(k);
    }
    const int threads = std::max(2u, std::thread::hardware_concurrency());
    return CompilePlan(*compiler_, all, arch_, threads).status();
  }

  // Runs `plan` on copies of `inputs` (byte images; an empty one binds a null pointer) and returns
  // the outputs, each `output_bytes[i]` long and filled with `fill` (default 0xFF, a poison)
  // before the run.
  absl::StatusOr<std::vector<std::vector<uint8_t>>> Run(
      const OpPlan& plan, const std::vector<std::vector<uint8_t>>& inputs,
      const std::vector<size_t>& output_bytes, uint8_t fill = 0xFF) {
    absl::StatusOr<Bound> bound = Setup(plan, inputs, output_bytes, fill);
    if (!bound.ok()) return bound.status();
    absl::Status s = bound->runner.Run(*stream_);
    if (s.ok()) s = stream_->Synchronize();
    if (!s.ok()) return s;
    std::vector<std::vector<uint8_t>> out;
    for (size_t i = 0; i < bound->outputs.size(); ++i) {
      std::vector<uint8_t> host(output_bytes[i]);
      absl::Status s = bound->outputs[i].CopyToHost(host.data(), host.size());
      if (!s.ok()) return s;
      out.push_back(std::move(host));
    }
    return out;
  }

  // Median milliseconds of `runs` runs of `plan` (CUDA events around each) after `warmup` runs.
  absl::StatusOr<double> MedianMs(const OpPlan& plan,
                                  const std::vector<std::vector<uint8_t>>& inputs,
                                  const std::vector<size_t>& output_bytes, int warmup = 3,
                                  int runs = 20) {
    absl::StatusOr<Bound> bound = Setup(plan, inputs, output_bytes, 0);
    if (!bound.ok()) return bound.status();
    absl::StatusOr<Event> start = Event::Create(*device_);
    absl::StatusOr<Event> end = Event::Create(*device_);
    if (!start.ok()) return start.status();
    if (!end.ok()) return end.status();
    for (int i = 0; i < warmup; ++i) {
      absl::Status s = bound->runner.Run(*stream_);
      if (!s.ok()) return s;
    }
    std::vector<double> ms;
    for (int i = 0; i < runs; ++i) {
      absl::Status s = stream_->Record(*start);
      if (s.ok()) s = bound->runner.Run(*stream_);
      if (s.ok()) s = stream_->Record(*end);
      if (s.ok()) s = end->Synchronize();
      if (!s.ok()) return s;
      absl::StatusOr<float> t = Event::ElapsedMs(*start, *end);
      if (!t.ok()) return t.status();
      ms.push_back(*t);
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  }

 private:
  GpuHarness() = default;

  // A runner with its tensors uploaded, bound and prepared (kPrepare kernels run).
  struct Bound {
    PlanRunner runner;
    std::vector<DeviceBuffer> inputs, outputs;
  };
  absl::StatusOr<Bound> Setup(const OpPlan& plan, const std::vector<std::vector<uint8_t>>& inputs,
                              const std::vector<size_t>& output_bytes, uint8_t fill) {
    absl::StatusOr<PlanRunner> runner = PlanRunner::Create(*device_, *compiler_, plan, arch_);
    if (!runner.ok()) return runner.status();
    Bound b{*std::move(runner), {}, {}};
    std::vector<DevicePtr> in_ptrs, out_ptrs;
    for (const std::vector<uint8_t>& bytes : inputs) {
      if (bytes.empty()) {
        in_ptrs.push_back(0);
        continue;
      }
      absl::StatusOr<DeviceBuffer> buffer = DeviceBuffer::Allocate(*device_, bytes.size());
      if (!buffer.ok()) return buffer.status();
      absl::Status s = buffer->CopyFromHost(bytes.data(), bytes.size());
      if (!s.ok()) return s;
      in_ptrs.push_back(buffer->ptr());
      b.inputs.push_back(*std::move(buffer));
    }
    for (size_t bytes : output_bytes) {
      absl::StatusOr<DeviceBuffer> buffer = DeviceBuffer::Allocate(*device_, bytes);
      if (!buffer.ok()) return buffer.status();
      absl::Status s = buffer->Fill(fill);
      if (!s.ok()) return s;
      out_ptrs.push_back(buffer->ptr());
      b.outputs.push_back(*std::move(buffer));
    }
    absl::Status s = b.runner.Bind(in_ptrs, out_ptrs);
    if (s.ok()) s = b.runner.Prepare(*stream_);
    if (!s.ok()) return s;
    return b;
  }

  std::unique_ptr<Device> device_;
  std::unique_ptr<Stream> stream_;
  std::unique_ptr<KernelCache> cache_;
  std::unique_ptr<KernelCompiler> compiler_;
  GpuArch arch_;
};

// Up to `count` distinct configs of `w`'s knob space (target "cuda") that `op` accepts on `limits`,
// drawn with a fixed seed: the same sample on every run.
inline std::vector<autotvm::ConfigEntity> SampledValidConfigs(const OpTemplate& op,
                                                              const autotvm::Workload& w,
                                                              const DeviceLimits& limits,
                                                              int count) {
  absl::StatusOr<autotvm::Target> target = autotvm::ParseTarget("cuda");
  EXPECT_TRUE(target.ok()) << target.status();
  if (!target.ok()) return {};
  absl::StatusOr<autotvm::ConfigSpace> space = BuildConfigSpace(w, *target);
  EXPECT_TRUE(space.ok()) << space.status();
  if (!space.ok()) return {};
  std::mt19937_64 rng(20261201);
  std::vector<int64_t> seen;
  std::vector<autotvm::ConfigEntity> out;
  for (int tries = 0; static_cast<int>(out.size()) < count && tries < 5000; ++tries) {
    const int64_t index = space->RandomIndex(rng);
    if (std::find(seen.begin(), seen.end(), index) != seen.end()) continue;
    seen.push_back(index);
    autotvm::ConfigEntity c = *space->Get(index);
    if (op.Specialize(w, c, limits, {}).ok()) out.push_back(c);
  }
  return out;
}

// A harness, or nullptr after a test failure saying why (call after TUNEJIT_REQUIRE_GPU()).
inline std::unique_ptr<GpuHarness> MakeHarness() {
  absl::StatusOr<std::unique_ptr<GpuHarness>> h = GpuHarness::Create();
  EXPECT_TRUE(h.ok()) << h.status();
  return h.ok() ? *std::move(h) : nullptr;
}

// For tests of the Hopper-only templates, after TUNEJIT_REQUIRE_GPU():
//   TUNEJIT_REQUIRE_HOPPER(harness);
#define TUNEJIT_REQUIRE_HOPPER(harness)                                           \
  do {                                                                            \
    if ((harness)->limits().arch.sm() != 90) GTEST_SKIP() << "wgmma needs sm_90"; \
  } while (0)

}  // namespace tunejit::testing

#endif  // TUNEJIT_TESTS_OPS_OPS_TEST_UTIL_H_
