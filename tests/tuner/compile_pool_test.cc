// CompilePool: every job runs once per key, in parallel, and the pool's end never leaves a waiter
// hanging.
#include "tuner/compile_pool.h"

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace tunejit {
namespace {

bool IsReady(const std::shared_future<void>& f) {
  return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

TEST(CompilePool, RunsEachKeyOnce) {
  std::atomic<int> runs{0};
  std::vector<std::shared_future<void>> done;
  {
    CompilePool pool(3);
    EXPECT_EQ(pool.threads(), 3);
    for (int i = 0; i < 20; ++i) {
      done.push_back(pool.Submit("k" + std::to_string(i % 5), [&runs] { ++runs; }));
    }
    for (const auto& f : done) f.wait();
  }
  EXPECT_EQ(runs.load(), 5);
}

TEST(CompilePool, RunsJobsInParallel) {
  CompilePool pool(4);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::shared_future<void>> done;
  for (int i = 0; i < 4; ++i) {
    done.push_back(pool.Submit(std::to_string(i), [] { absl::SleepFor(absl::Milliseconds(300)); }));
  }
  for (const auto& f : done) f.wait();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 1.0);  // one after the other would take 1.2 s
}

// Jobs still queued when the pool ends are dropped: their futures turn ready (a broken promise),
// so nothing waits forever; the running job finishes first.
TEST(CompilePool, EndDropsQueuedJobs) {
  std::atomic<int> runs{0};
  std::shared_future<void> running, queued;
  {
    CompilePool pool(1);
    running = pool.Submit("a", [&runs] {
      absl::SleepFor(absl::Milliseconds(200));
      ++runs;
    });
    queued = pool.Submit("b", [&runs] { ++runs; });
    absl::SleepFor(absl::Milliseconds(50));  // "a" has started
    EXPECT_FALSE(IsReady(queued));
  }
  EXPECT_TRUE(IsReady(running));
  EXPECT_TRUE(IsReady(queued));
  EXPECT_EQ(runs.load(), 1);
}

TEST(CompilePool, DefaultIsOneThreadPerCore) {
  CompilePool pool(0);
  EXPECT_GE(pool.threads(), 1);
}

}  // namespace
}  // namespace tunejit
