// File: tuner/worker_main.h
// The measuring worker behind `tunejit tune-worker` (hidden subcommand): opens one GPU, says hello,
// then measures candidates with GpuMeasurer as the parent asks (tuner/worker_protocol.h), one per
// line, until "quit" or end of input. The protocol goes over the original stdout; stdout itself is
// redirected to stderr first, so a stray print from any library cannot corrupt the protocol.
// When a measurement fails with RUNTIME_DEVICE and the context no longer synchronizes (an illegal
// address kills a CUDA context for good), the reply is marked fatal and the worker exits (status
// 3); the parent starts a fresh one. Planted test faults ("oob", "hang") launch the kernels of
// kernel_sources/test_faults.cu instead of the candidate.
//
//   return RunTuneWorker({.gpu = 0, .cache_dir = dir});   // from the CLI, with stdin/stdout wired
#ifndef TUNEJIT_TUNER_WORKER_MAIN_H_
#define TUNEJIT_TUNER_WORKER_MAIN_H_

#include <string>

#include "tuner/measure.h"

namespace tunejit {

struct WorkerMainOptions {
  int gpu = 0;
  std::string cache_dir;  // "" resolves as KernelCache does
  bool no_cache = false;
  MeasureOptions measure;
};

inline constexpr int kWorkerExitFatal = 3;  // the CUDA context died; restart me

// Returns the process exit code: 0 after quit / end of input, 1 when the GPU cannot be opened
// (after a hello carrying the error), kWorkerExitFatal after a fatal reply.
int RunTuneWorker(const WorkerMainOptions& options, int in_fd, int out_fd);

}  // namespace tunejit

#endif  // TUNEJIT_TUNER_WORKER_MAIN_H_
