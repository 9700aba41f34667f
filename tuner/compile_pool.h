// File: tuner/compile_pool.h
// The tuner's NVRTC compiles, one job per candidate, on a fixed set of threads shared by every
// task and worker slot of a run. Per candidate rather than per batch: the compile times of one
// template's configs run from 0.3 s to over 20 s (the heavily unrolled ones), and a batch that
// waited for its slowest member kept the GPU idle for most of a 5-minute VGG-16 run. With jobs
// of their own, the tuning loop measures whichever candidates are compiled and leaves the slow
// ones for later (tuner/tune_task.h).
//
// A key names a job (TuneTask uses the workload and config index): submitting a key again returns
// the first job's future, so a batch compiled ahead by the scheduler is not compiled twice.
//
//   CompilePool pool(0);  // one thread per core
//   std::shared_future<void> done = pool.Submit("w#17", [&] { CompilePlan(...); });
//   done.wait_for(std::chrono::seconds(0)) == std::future_status::ready
#ifndef TUNEJIT_TUNER_COMPILE_POOL_H_
#define TUNEJIT_TUNER_COMPILE_POOL_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace tunejit {

class CompilePool {
 public:
  explicit CompilePool(int threads);  // <= 0: one per core
  // Jobs not started yet are dropped (their futures turn ready, holding a broken promise); the
  // running ones finish first, since NVRTC cannot be interrupted.
  ~CompilePool();
  CompilePool(const CompilePool&) = delete;
  CompilePool& operator=(const CompilePool&) = delete;

  // Queues `job` (first in, first out) unless `key` was submitted before; the future of the
  // key's job either way. A job must not throw and must own or outlive what it reads.
  std::shared_future<void> Submit(const std::string& key, std::function<void()> job);
  int threads() const { return static_cast<int>(threads_.size()); }

 private:
  struct Job {
    std::function<void()> run;
    std::promise<void> done;
  };
  void Loop();

  // std::mutex rather than absl::Mutex: the system's Abseil is not built for ThreadSanitizer,
  // which then cannot see absl::Mutex's hand-overs (scripts/sanitize.sh runs this pool's test
  // under TSan).
  std::mutex mu_;
  std::condition_variable wake_;  // a job was queued, or the pool is stopping
  std::deque<Job> queue_;         // guarded by mu_
  absl::flat_hash_map<std::string, std::shared_future<void>> submitted_;  // guarded by mu_
  bool stopping_ = false;                                                 // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace tunejit

#endif  // TUNEJIT_TUNER_COMPILE_POOL_H_
