// seed_layers: run every error-free record of an AutoTVM log, layer by layer, on the GPU with the
// record's own config, and print our time beside the time the log recorded (the seed log's V100).
// An example of tunejit's library API: load a log, specialize an op template from a record,
// compile through the kernel cache, bind device buffers, launch, time with CUDA events.
//
//   seed_layers data/seed-vgg16-v100.log [repeats]
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "autotvm/log_file.h"
#include "cache/kernel_cache.h"
#include "common/status_macros.h"
#include "jit/device.h"
#include "jit/kernel_compiler.h"
#include "ops/op_template.h"
#include "ops/plan_runner.h"

namespace tunejit {
namespace {

struct Tensors {
  size_t data_bytes = 0, weight_bytes = 0, out_bytes = 0;
  bool int8 = false;
  double flops = 0;
  std::string shape;
};

absl::StatusOr<Tensors> SizesOf(const autotvm::Workload& w) {
  Tensors t;
  if (absl::StatusOr<autotvm::Conv2dParams> c = autotvm::ParseConv2dWorkload(w); c.ok()) {
    t.int8 = c->data_dtype == "int8";
    size_t elem = t.int8 ? 1 : 4;
    t.data_bytes = c->n * c->ci * c->h * c->w * elem;
    t.weight_bytes = c->co * (c->ci / c->groups) * c->kh * c->kw * elem;
    t.out_bytes = c->n * c->co * c->OutH() * c->OutW() * 4;  // float32 or int32 accumulators
    t.flops = c->Flops();
    t.shape =
        absl::StrFormat("%dx%dx%dx%d %s -> %d", c->n, c->ci, c->h, c->w, c->data_dtype, c->co);
    return t;
  }
  TUNEJIT_ASSIGN_OR_RETURN(autotvm::DenseParams d, autotvm::ParseDenseWorkload(w));
  t.data_bytes = d.m * d.k * 4;
  t.weight_bytes = d.n * d.k * 4;
  t.out_bytes = d.m * d.n * 4;
  t.flops = d.Flops();
  t.shape = absl::StrFormat("%dx%d -> %d", d.m, d.k, d.n);
  return t;
}

// Random bytes that are valid values: small integers for int8, uniform [-1, 1) for float.
absl::StatusOr<DeviceBuffer> RandomBuffer(const Device& dev, size_t bytes, bool int8,
                                          uint32_t seed) {
  std::vector<uint8_t> host(bytes);
  std::mt19937 rng(seed);
  if (int8) {
    for (uint8_t& b : host) b = static_cast<uint8_t>(static_cast<int8_t>(rng() % 255 - 127));
  } else {
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    for (size_t i = 0; i + 4 <= bytes; i += 4) {
      float v = u(rng);
      std::memcpy(&host[i], &v, 4);
    }
  }
  TUNEJIT_ASSIGN_OR_RETURN(DeviceBuffer buf, DeviceBuffer::Allocate(dev, bytes));
  TUNEJIT_RETURN_IF_ERROR(buf.CopyFromHost(host.data(), bytes));
  return buf;
}

// Median milliseconds of `repeats` runs after 3 warm-up runs.
absl::StatusOr<float> TimeRuns(const Device& dev, PlanRunner& runner, Stream& stream, int repeats) {
  for (int i = 0; i < 3; ++i) TUNEJIT_RETURN_IF_ERROR(runner.Run(stream));
  TUNEJIT_ASSIGN_OR_RETURN(Event start, Event::Create(dev));
  TUNEJIT_ASSIGN_OR_RETURN(Event end, Event::Create(dev));
  std::vector<float> ms;
  for (int i = 0; i < repeats; ++i) {
    TUNEJIT_RETURN_IF_ERROR(stream.Record(start));
    TUNEJIT_RETURN_IF_ERROR(runner.Run(stream));
    TUNEJIT_RETURN_IF_ERROR(stream.Record(end));
    TUNEJIT_RETURN_IF_ERROR(end.Synchronize());
    TUNEJIT_ASSIGN_OR_RETURN(float t, Event::ElapsedMs(start, end));
    ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

absl::StatusOr<float> RunRecord(const Device& dev, const KernelCompiler& compiler,
                                const autotvm::Record& record, const Tensors& t, int repeats) {
  const OpTemplate* op = FindOpTemplate(record.workload.task_name);
  if (op == nullptr)
    return absl::UnimplementedError("no template for " + record.workload.task_name);
  DeviceLimits limits = DeviceLimits::FromProperties(dev.properties());
  TUNEJIT_ASSIGN_OR_RETURN(OpPlan plan, op->Specialize(record.workload, record.config, limits, {}));
  TUNEJIT_ASSIGN_OR_RETURN(PlanRunner runner,
                           PlanRunner::Create(dev, compiler, plan, dev.properties().arch));
  TUNEJIT_ASSIGN_OR_RETURN(DeviceBuffer data, RandomBuffer(dev, t.data_bytes, t.int8, 1));
  TUNEJIT_ASSIGN_OR_RETURN(DeviceBuffer weight, RandomBuffer(dev, t.weight_bytes, t.int8, 2));
  TUNEJIT_ASSIGN_OR_RETURN(DeviceBuffer out, DeviceBuffer::Allocate(dev, t.out_bytes));
  TUNEJIT_RETURN_IF_ERROR(runner.Bind({data.ptr(), weight.ptr()}, {out.ptr()}));
  TUNEJIT_ASSIGN_OR_RETURN(Stream stream, Stream::Create(dev));
  TUNEJIT_RETURN_IF_ERROR(runner.Prepare(stream));
  return TimeRuns(dev, runner, stream, repeats);
}

int Main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: seed_layers LOG [repeats]\n");
    return 2;
  }
  int repeats = argc > 2 ? std::max(1, std::atoi(argv[2])) : 20;
  autotvm::LogContents log;
  if (absl::Status s = autotvm::LoadLogFile(argv[1], {}, &log); !s.ok()) {
    std::fprintf(stderr, "seed_layers: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  absl::StatusOr<Device> dev = Device::Open(0);
  if (!dev.ok()) {
    std::fprintf(stderr, "seed_layers: %s\n", std::string(dev.status().message()).c_str());
    return 1;
  }
  absl::StatusOr<KernelCache> cache = KernelCache::Open({});
  KernelCompiler compiler(cache.ok() && cache->enabled() ? &*cache : nullptr);
  std::printf("device: %s, median of %d runs (CUDA events, 3 warm-up runs)\n\n",
              dev->properties().name.c_str(), repeats);
  std::printf("%-28s %-32s %10s %10s %9s %8s\n", "task", "workload", "ours ms", "log ms", "TFLOP/s",
              "speedup");
  for (const autotvm::LoadedRecord& loaded : log.records) {
    const autotvm::Record& r = loaded.record;
    if (!r.ok()) continue;
    absl::StatusOr<Tensors> t = SizesOf(r.workload);
    absl::StatusOr<float> ms = t.ok() ? RunRecord(*dev, compiler, r, *t, repeats) : t.status();
    double logged_ms = 0;
    for (double c : r.result.costs) logged_ms += c * 1e3 / r.result.costs.size();
    if (!ms.ok()) {
      std::printf("%-28s line %d: %s\n", r.workload.task_name.c_str(), loaded.line,
                  std::string(ms.status().message()).c_str());
      continue;
    }
    std::printf("%-28s %-32s %10.3f %10.3f %9.2f %7.2fx\n", r.workload.task_name.c_str(),
                t->shape.c_str(), *ms, logged_ms, t->flops / (*ms * 1e-3) / 1e12, logged_ms / *ms);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace tunejit

int main(int argc, char** argv) { return tunejit::Main(argc, argv); }
