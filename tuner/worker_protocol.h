// File: tuner/worker_protocol.h
// The messages between `tunejit tune` (the parent, which never touches CUDA) and its measuring
// workers (`tunejit tune-worker`, one process per GPU slot), as line-delimited JSON over the
// worker's stdin/stdout. A worker that faults or hangs takes only its own CUDA context down; the
// parent records the candidate as an error and starts a fresh worker (tuner/isolated_measurer.h).
//
//   worker -> parent, once at start:
//     {"op": "hello", "pid": 123, "gpu": 0, "device": "NVIDIA H200", "arch": "sm_90",
//      "device_count": 8, "limits": {...}}          or {"op": "hello", "error": "no CUDA device"}
//   parent -> worker, per candidate:
//     {"op": "measure", "seq": 7, "record": "<a 0.2 record line: target, workload, index, config>",
//      "fault": "",                        ("oob" / "hang": launch a planted test kernel instead)
//      "stop_above": 0.0124}               (optional: Measurer::SetStopAbove seconds; 0: none)
//   worker -> parent, after setting up a workload it had not seen (inputs, reference output), so
//   the parent's deadline for the candidate itself starts only now:
//     {"op": "ready", "seq": 7}
//   worker -> parent:
//     {"op": "result", "seq": 7, "result": [costs, error_no, all_cost, timestamp],
//      "message": "...", "fatal": false}   (fatal: the CUDA context is dead; the worker exits)
//   parent -> worker: {"op": "quit"}
//
//   std::string line = EncodeRequest(request);          // no newline; the caller adds it
//   TUNEJIT_ASSIGN_OR_RETURN(WorkerReply reply, DecodeReply(line_from_worker));
#ifndef TUNEJIT_TUNER_WORKER_PROTOCOL_H_
#define TUNEJIT_TUNER_WORKER_PROTOCOL_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "autotvm/record.h"
#include "jit/arch.h"
#include "ops/op_template.h"
#include "tuner/measure.h"

namespace tunejit {

// What a worker says when it starts: its GPU, so the parent can compile for the right
// architecture and limits (and tag records) without initializing CUDA itself.
struct WorkerHello {
  int pid = 0;
  int gpu = 0;
  std::string device;  // e.g. "NVIDIA H200"
  GpuArch arch;
  int device_count = 0;
  DeviceLimits limits;
  std::string error;  // non-empty: the worker could not start (then it exits)
};

enum class RequestKind { kMeasure, kQuit };

struct WorkerRequest {
  RequestKind kind = RequestKind::kMeasure;
  int64_t seq = 0;
  autotvm::Record record;  // target, workload, index, config (the result is ignored)
  std::string fault;       // "" / "oob" / "hang" (tests only)
  double stop_above = 0;   // seconds (Measurer::SetStopAbove); 0: time the candidate fully
};

struct WorkerReply {
  int64_t seq = 0;
  bool ready = false;  // an "op": "ready" message: setup done, no measurement yet
  Measurement measurement;
  bool fatal = false;
};

std::string EncodeHello(const WorkerHello& hello);
std::string EncodeRequest(const WorkerRequest& request);
std::string EncodeReply(const WorkerReply& reply);  // "ready" when reply.ready

// InvalidArgument naming the field for anything malformed (bad JSON, wrong op, missing or
// mistyped fields, a fault name other than "", "oob", "hang"). Never throws.
absl::StatusOr<WorkerHello> DecodeHello(std::string_view line);
absl::StatusOr<WorkerRequest> DecodeRequest(std::string_view line);
absl::StatusOr<WorkerReply> DecodeReply(std::string_view line);  // "result" or "ready"

}  // namespace tunejit

#endif  // TUNEJIT_TUNER_WORKER_PROTOCOL_H_
