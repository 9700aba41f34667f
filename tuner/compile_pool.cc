#include "tuner/compile_pool.h"

#include <algorithm>
#include <utility>

namespace tunejit {

CompilePool::CompilePool(int threads) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads_.reserve(threads);
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
}

CompilePool::~CompilePool() {
  std::deque<Job> dropped;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    dropped.swap(queue_);
  }
  for (std::thread& t : threads_) t.join();
  // `dropped` goes out of scope here: its promises break, so no waiter blocks forever.
}

std::shared_future<void> CompilePool::Submit(const std::string& key, std::function<void()> job) {
  absl::MutexLock lock(&mu_);
  if (auto it = submitted_.find(key); it != submitted_.end()) return it->second;
  Job& queued = queue_.emplace_back();
  queued.run = std::move(job);
  std::shared_future<void> done = queued.done.get_future().share();
  submitted_.emplace(key, done);
  return done;
}

void CompilePool::Loop() {
  while (true) {
    Job job;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](CompilePool* p)
               ABSL_EXCLUSIVE_LOCKS_REQUIRED(p->mu_) { return p->stopping_ || !p->queue_.empty(); },
          this));
      if (stopping_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    if (job.run) job.run();
    job.done.set_value();
  }
}

}  // namespace tunejit
