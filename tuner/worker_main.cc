#include "tuner/worker_main.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cache/kernel_cache.h"
#include "common/status_macros.h"
#include "jit/device.h"
#include "jit/kernel_compiler.h"
#include "tuner/worker_protocol.h"

namespace tunejit {
namespace {

// Line I/O on raw descriptors (stdin may be a socket; iostreams would add nothing but buffering).
class LineChannel {
 public:
  LineChannel(int in_fd, int out_fd) : in_(in_fd), out_(out_fd) {}
  // False at end of input.
  bool Read(std::string* line) {
    while (true) {
      if (size_t nl = buffer_.find('\n'); nl != std::string::npos) {
        *line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return true;
      }
      char chunk[4096];
      ssize_t n = ::read(in_, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      buffer_.append(chunk, static_cast<size_t>(n));
    }
  }
  void Write(const std::string& line) {
    std::string data = line + "\n";
    size_t done = 0;
    while (done < data.size()) {
      ssize_t n = ::write(out_, data.data() + done, data.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // the parent is gone; the next Read ends the loop
      done += static_cast<size_t>(n);
    }
  }

 private:
  int in_, out_;
  std::string buffer_;
};

// Launches a planted test kernel (kernel_sources/test_faults.cu) and waits for it: "oob" ends in
// an illegal address, "hang" never returns (the parent kills this process).
absl::Status RunPlantedFault(const Device& device, const KernelCompiler& compiler,
                             const std::string& fault) {
  const bool oob = fault == "oob";
  KernelSpec spec{
      .source_file = "test_faults.cu",
      .name_expression = oob ? "tunejit::test_fault_oob<1>" : "tunejit::test_fault_hang<1>"};
  TUNEJIT_ASSIGN_OR_RETURN(CompiledKernel compiled,
                           compiler.Compile(spec, device.properties().arch));
  TUNEJIT_ASSIGN_OR_RETURN(Module module, Module::Load(device, compiled.program.cubin));
  TUNEJIT_ASSIGN_OR_RETURN(Kernel kernel, module.GetKernel(compiled.lowered_name));
  TUNEJIT_ASSIGN_OR_RETURN(DeviceBuffer flag, DeviceBuffer::Allocate(device, 64));
  TUNEJIT_RETURN_IF_ERROR(flag.Fill(0));
  TUNEJIT_ASSIGN_OR_RETURN(Stream stream, Stream::Create(device));
  KernelArgs args;
  args.Add(oob ? DevicePtr{0} : flag.ptr());  // oob writes to address 0x10: never mapped
  LaunchShape shape;
  shape.block[0] = 32;
  TUNEJIT_RETURN_IF_ERROR(stream.Launch(kernel, shape, args));
  return stream.Synchronize();
}

struct WorkerState {
  const WorkerMainOptions* options = nullptr;
  std::optional<Device> device;
  std::optional<KernelCache> cache;
  std::optional<KernelCompiler> compiler;
  // Set-up measurers of the workloads measured last, the current one first. The rest of a time
  // budget returns to every task the survey set up, and a setup (inputs, reference output) takes
  // about a second: 24 VGG-16 tasks would spend ~6% of a 5-minute budget on setting up again.
  std::list<std::pair<std::string, std::unique_ptr<GpuMeasurer>>> measurers;
  static constexpr size_t kKeptMeasurers = 32;
  // Kept measurers may hold at most this share of the device memory: the rest is for the
  // candidates' own buffers (a smaller GPU than the H200 fills up with VGG-16's 24 tasks).
  static constexpr double kKeptMemoryShare = 0.6;
  GpuMeasurer& measurer() { return *measurers.front().second; }
  // Frees the least recently used measurers, never the current one, until they fit.
  void EvictToFit() {
    const double limit = kKeptMemoryShare * static_cast<double>(device->properties().total_memory);
    while (measurers.size() > kKeptMeasurers ||
           (measurers.size() > 1 && device->MemoryInUse().value_or(0) > limit)) {
      measurers.pop_back();
    }
  }

  absl::Status SetUp(const WorkerRequest& request, LineChannel& channel);
  WorkerReply Handle(const WorkerRequest& request, LineChannel& channel);
};

// Makes the request's workload the current one: a kept measurer, else a new one (inputs,
// reference output), and says "ready" so the parent's per-candidate deadline starts. An error
// status when setup fails.
absl::Status WorkerState::SetUp(const WorkerRequest& request, LineChannel& channel) {
  const std::string key = request.record.workload.Key();
  if (!measurers.empty() && measurers.front().first == key) return absl::OkStatus();
  auto kept = std::find_if(measurers.begin(), measurers.end(),
                           [&](const auto& m) { return m.first == key; });
  if (kept != measurers.end()) {
    measurers.splice(measurers.begin(), measurers, kept);
  } else {
    TUNEJIT_ASSIGN_OR_RETURN(Task task, MakeTask(request.record.workload, request.record.target));
    absl::StatusOr<std::unique_ptr<GpuMeasurer>> made =
        GpuMeasurer::Create(*device, *compiler, task, options->measure);
    if (!made.ok() && !measurers.empty()) {
      // Most likely out of device memory: free the kept ones and try once more.
      measurers.clear();
      made = GpuMeasurer::Create(*device, *compiler, task, options->measure);
    }
    if (!made.ok()) return made.status();
    measurers.emplace_front(key, *std::move(made));
    EvictToFit();
  }
  WorkerReply ready;
  ready.seq = request.seq;
  ready.ready = true;
  channel.Write(EncodeReply(ready));
  return absl::OkStatus();
}

WorkerReply WorkerState::Handle(const WorkerRequest& request, LineChannel& channel) {
  WorkerReply reply;
  reply.seq = request.seq;
  const auto begin = std::chrono::steady_clock::now();
  auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  };
  if (absl::Status s = SetUp(request, channel); !s.ok()) {
    reply.measurement = FailedMeasurement(
        autotvm::kRuntimeDevice, absl::StrCat("cannot set up the task: ", s.message()), seconds());
  } else if (!request.fault.empty()) {
    // A planted fault stands in for the candidate, after the same setup a real one gets.
    absl::Status fault = RunPlantedFault(*device, *compiler, request.fault);
    reply.measurement = FailedMeasurement(
        autotvm::kRuntimeDevice,
        fault.ok() ? "planted fault did not fault" : std::string(fault.message()), seconds());
  } else {
    measurer().SetStopAbove(request.stop_above);
    reply.measurement = measurer().Measure(request.record.config);
  }
  // An illegal address leaves the context unusable: every later call would fail. Say so and go.
  if (reply.measurement.result.error_no == autotvm::kRuntimeDevice) {
    reply.fatal = !device->Synchronize().ok();
  }
  return reply;
}

WorkerHello MakeHello(const Device& device) {
  WorkerHello hello;
  hello.pid = static_cast<int>(::getpid());
  hello.gpu = device.ordinal();
  hello.device = device.properties().name;
  hello.arch = device.properties().arch;
  absl::StatusOr<int> count = DeviceCount();
  hello.device_count = count.ok() ? *count : 1;
  hello.limits = DeviceLimits::FromProperties(device.properties());
  return hello;
}

}  // namespace

int RunTuneWorker(const WorkerMainOptions& options, int in_fd, int out_fd) {
  // If the tuner dies (even by SIGKILL), take this worker with it: a worker stuck in an endless
  // kernel would otherwise hold the GPU forever.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  LineChannel channel(in_fd, out_fd);
  WorkerState state;
  state.options = &options;
  absl::StatusOr<Device> device = Device::Open(options.gpu);
  absl::StatusOr<KernelCache> cache =
      KernelCache::Open({.dir = options.cache_dir, .disabled = options.no_cache});
  if (!device.ok() || !cache.ok()) {
    WorkerHello hello;
    hello.pid = static_cast<int>(::getpid());
    hello.error = std::string(!device.ok() ? device.status().message() : cache.status().message());
    channel.Write(EncodeHello(hello));
    return 1;
  }
  state.device.emplace(*std::move(device));
  state.cache.emplace(*std::move(cache));
  state.compiler.emplace(state.cache->enabled() ? &*state.cache : nullptr);
  channel.Write(EncodeHello(MakeHello(*state.device)));
  std::string line;
  while (channel.Read(&line)) {
    absl::StatusOr<WorkerRequest> request = DecodeRequest(line);
    if (!request.ok()) {
      // No seq to answer to: the parent sees the missing answer as a protocol failure.
      std::fprintf(stderr, "tune-worker: %s\n", std::string(request.status().message()).c_str());
      return 1;
    }
    if (request->kind == RequestKind::kQuit) return 0;
    WorkerReply reply = state.Handle(*request, channel);
    channel.Write(EncodeReply(reply));
    if (reply.fatal) return kWorkerExitFatal;
  }
  return 0;
}

}  // namespace tunejit
