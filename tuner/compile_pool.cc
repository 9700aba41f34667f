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
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    dropped.swap(queue_);
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
  // `dropped` goes out of scope here: its promises break, so no waiter blocks forever.
}

std::shared_future<void> CompilePool::Submit(const std::string& key, std::function<void()> job) {
  std::shared_future<void> done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = submitted_.find(key); it != submitted_.end()) return it->second;
    Job& queued = queue_.emplace_back();
    queued.run = std::move(job);
    done = queued.done.get_future().share();
    submitted_.emplace(key, done);
  }
  wake_.notify_one();
  return done;
}

void CompilePool::Loop() {
  while (true) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    if (job.run) job.run();
    job.done.set_value();
  }
}

}  // namespace tunejit
