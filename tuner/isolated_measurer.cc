#include "tuner/isolated_measurer.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"

namespace tunejit {
namespace {

double Since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

std::string TestFaults::Next() {
  const int64_t k = measured.fetch_add(1);
  if (k == fault_trial) return "oob";
  if (k == hang_trial) return "hang";
  return "";
}

absl::StatusOr<WorkerHello> WorkerClient::Start() {
  if (child_.has_value() && hello_.has_value()) return *hello_;
  if (!health_.ok()) return health_;
  auto fail = [&](absl::Status status) -> absl::Status {
    child_.reset();  // kills and reaps
    if (++failed_starts_ >= options_.max_start_failures) health_ = status;
    return status;
  };
  absl::StatusOr<ChildProcess> child = ChildProcess::Spawn({options_.argv, options_.env});
  if (!child.ok()) return fail(child.status());
  child_.emplace(*std::move(child));
  workload_key_.clear();
  absl::StatusOr<std::string> line = child_->ReadLine(options_.hello_timeout_seconds);
  if (!line.ok()) {
    return fail(absl::UnavailableError(
        absl::StrCat("tuning worker did not start: ", line.status().message())));
  }
  absl::StatusOr<WorkerHello> hello = DecodeHello(*line);
  if (!hello.ok()) return fail(hello.status());
  if (!hello->error.empty()) {
    return fail(absl::FailedPreconditionError("tuning worker: " + hello->error));
  }
  failed_starts_ = 0;
  if (starts_++ > 0) ++restarts_;
  if (!hello_.has_value()) hello_ = *hello;
  return *hello;
}

void WorkerClient::Stop() {
  if (!child_.has_value()) return;
  WorkerRequest quit;
  quit.kind = RequestKind::kQuit;
  (void)child_->WriteLine(EncodeRequest(quit));
  child_->WaitOrKill(5.0);
  child_.reset();
}

Measurement WorkerClient::Abandon(int error_no, const std::string& why, double seconds) {
  const std::string how = child_.has_value() ? child_->Kill() : std::string("not running");
  child_.reset();
  // A worker that died on its own already says how in `why`.
  const bool said = why.find(how) != std::string::npos;
  return FailedMeasurement(error_no, said ? why : absl::StrCat(why, " (worker ", how, ")"),
                           seconds);
}

Measurement WorkerClient::Measure(const autotvm::Record& record, const std::string& fault,
                                  double stop_above) {
  Measurement m = MeasureOnce(record, fault, stop_above);
  // Tagged even when the worker died without answering: the record says which GPU it broke.
  if (hello_.has_value()) {
    m.gpu = hello_->gpu;
    m.device = hello_->device;
  }
  return m;
}

Measurement WorkerClient::MeasureOnce(const autotvm::Record& record, const std::string& fault,
                                      double stop_above) {
  const auto begin = std::chrono::steady_clock::now();
  absl::StatusOr<WorkerHello> hello = Start();
  if (!hello.ok()) {
    return FailedMeasurement(autotvm::kRuntimeDevice, std::string(hello.status().message()), 0);
  }
  const int64_t seq = ++seq_;
  const std::string key = record.workload.Key();
  double timeout = options_.measure_timeout_seconds;
  if (key != workload_key_) timeout += options_.setup_timeout_seconds;
  WorkerRequest request;
  request.seq = seq;
  request.record = record;
  request.fault = fault;
  request.stop_above = stop_above;
  if (absl::Status s = child_->WriteLine(EncodeRequest(request)); !s.ok()) {
    return Abandon(autotvm::kRuntimeDevice, "worker gone before measuring", Since(begin));
  }
  absl::StatusOr<std::string> line = child_->ReadLine(timeout);
  // "ready": the worker has set up the workload; the candidate's own deadline starts now.
  absl::StatusOr<WorkerReply> ready = line.ok() ? DecodeReply(*line) : line.status();
  if (ready.ok() && ready->ready && ready->seq == seq) {
    workload_key_ = key;
    line = child_->ReadLine(options_.measure_timeout_seconds);
  }
  if (absl::IsDeadlineExceeded(line.status())) {
    return Abandon(autotvm::kRunTimeout,
                   absl::StrCat("no result within ", timeout, " s; worker killed"), Since(begin));
  }
  if (!line.ok()) {
    return Abandon(autotvm::kRuntimeDevice,
                   absl::StrCat("worker died measuring this candidate: ", line.status().message()),
                   Since(begin));
  }
  absl::StatusOr<WorkerReply> reply = DecodeReply(*line);
  if (!reply.ok() || reply->seq != seq || reply->ready) {
    return Abandon(autotvm::kUnknownError,
                   reply.ok() ? absl::StrCat("answer to request ", reply->seq, ", expected ", seq)
                              : std::string(reply.status().message()),
                   Since(begin));
  }
  workload_key_ = key;
  Measurement m = std::move(reply->measurement);
  if (reply->fatal) {
    // The worker's CUDA context is dead and it exits: reap it now; the next call starts another.
    child_->WaitOrKill(5.0);
    child_.reset();
  }
  return m;
}

Measurement IsolatedMeasurer::Measure(const autotvm::ConfigEntity& config) {
  absl::StatusOr<int64_t> index = task_.space.IndexOf(config);
  if (!index.ok()) {
    return FailedMeasurement(autotvm::kInstantiationError, std::string(index.status().message()),
                             0);
  }
  autotvm::MeasureResult none;
  autotvm::Record record = autotvm::MakeRecord(task_.target, task_.workload, *index, config, none);
  const std::string fault = options_.faults != nullptr ? options_.faults->Next() : "";
  Measurement m = worker_.Measure(record, fault, stop_above_);
  if (!fault.empty()) m.message = absl::StrCat("[planted ", fault, " fault] ", m.message);
  return m;
}

std::function<void()> IsolatedMeasurer::CompileJob(const autotvm::ConfigEntity& config) {
  const OpTemplate* op = FindOpTemplate(task_.workload.task_name);
  if (options_.compiler == nullptr || op == nullptr) return {};
  // Failures are the worker's to report (it compiles again and gets the same NVRTC error).
  return MakeCompileJob(op, options_.compiler, task_.workload, options_.limits,
                        options_.limits.arch, config);
}

}  // namespace tunejit
