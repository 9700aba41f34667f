// A stand-in for `tunejit tune-worker` in CPU tests: speaks the worker protocol without a GPU and
// misbehaves on purpose, chosen by the requested config index:
//   index % 10 == 3   crashes (SIGSEGV) without answering
//   index % 10 == 5   hangs (never answers)
//   index % 10 == 7   answers error 4 with fatal = true, then exits (a dead CUDA context)
//   otherwise         answers cost 1e-4 * (1 + index % 13) seconds
// A planted "oob" fault crashes, "hang" hangs. Environment:
//   FAKE_WORKER_JOURNAL=path   appends "<pid> <seq> <index> <stop_above>" per request received
//   FAKE_WORKER_GPUS=n         device_count in the hello (default 1)
//   FAKE_WORKER_FAIL_START=1   says hello with an error and exits 1
//   FAKE_WORKER_WELL_BEHAVED=1 never misbehaves (planted faults still apply)
//   FAKE_WORKER_DELAY_MS=n     sleeps n ms per candidate
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "tuner/worker_protocol.h"

namespace tunejit {
namespace {

void Journal(const WorkerRequest& r) {
  const char* path = std::getenv("FAKE_WORKER_JOURNAL");
  if (path == nullptr) return;
  if (std::FILE* f = std::fopen(path, "a")) {
    std::fprintf(f, "%d %lld %lld %.17g\n", static_cast<int>(getpid()),
                 static_cast<long long>(r.seq), static_cast<long long>(r.record.index),
                 r.stop_above);
    std::fclose(f);
  }
}

[[noreturn]] void Hang() {
  while (true) pause();
}

int Main(int argc, char** argv) {
  int gpu = 0;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--gpu") gpu = std::atoi(argv[i + 1]);
  }
  WorkerHello hello;
  hello.pid = static_cast<int>(getpid());
  if (std::getenv("FAKE_WORKER_FAIL_START") != nullptr) {
    hello.error = "no CUDA device (fake)";
    std::cout << EncodeHello(hello) << std::endl;
    return 1;
  }
  hello.gpu = gpu;
  hello.device = "Fake GPU";
  hello.arch = GpuArch{9, 0, false};
  const char* gpus = std::getenv("FAKE_WORKER_GPUS");
  hello.device_count = gpus != nullptr ? std::atoi(gpus) : 1;
  hello.limits = DeviceLimits::ForArch(hello.arch);
  std::cout << EncodeHello(hello) << std::endl;
  std::string line, setup_key;
  while (std::getline(std::cin, line)) {
    absl::StatusOr<WorkerRequest> r = DecodeRequest(line);
    if (!r.ok()) return 1;
    if (r->kind == RequestKind::kQuit) return 0;
    Journal(*r);
    if (const char* delay = std::getenv("FAKE_WORKER_DELAY_MS")) usleep(1000 * std::atoi(delay));
    if (r->record.workload.Key() != setup_key) {  // as the real worker: "ready" after setup
      setup_key = r->record.workload.Key();
      WorkerReply ready;
      ready.seq = r->seq;
      ready.ready = true;
      std::cout << EncodeReply(ready) << std::endl;
    }
    const int64_t index = r->record.index;
    const int64_t mode = std::getenv("FAKE_WORKER_WELL_BEHAVED") != nullptr ? 0 : index % 10;
    if (r->fault == "oob" || mode == 3) raise(SIGSEGV);
    if (r->fault == "hang" || mode == 5) Hang();
    WorkerReply reply;
    reply.seq = r->seq;
    if (mode == 7) {
      reply.measurement = FailedMeasurement(autotvm::kRuntimeDevice, "illegal address (fake)", 0.1);
      reply.fatal = true;
      std::cout << EncodeReply(reply) << std::endl;
      return 3;
    }
    reply.measurement.result.costs = {1e-4 * (1 + index % 13)};
    reply.measurement.result.all_cost = 0.01;
    reply.measurement.result.timestamp = 1.7e9;
    std::cout << EncodeReply(reply) << std::endl;
  }
  return 0;
}

}  // namespace
}  // namespace tunejit

int main(int argc, char** argv) { return tunejit::Main(argc, argv); }
