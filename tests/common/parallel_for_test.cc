// common/parallel_for.h: every index is visited exactly once, in chunks of the grain, whatever the
// thread count, and a loop of one chunk stays on the calling thread.
#include "common/parallel_for.h"

#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace tunejit {
namespace {

TEST(ParallelForTest, VisitsEveryIndexOnceInChunksOfTheGrain) {
  for (int threads : {1, 2, 3, 8}) {
    for (int64_t n : {1, 7, 64, 1001}) {
      for (int64_t grain : {1, 3, 64, 5000}) {
        std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
        std::atomic<bool> bad_chunk{false};
        ParallelFor(n, grain, threads, [&](int64_t begin, int64_t end) {
          // Each chunk starts on a multiple of the grain and holds grain items (the last fewer).
          if (begin % grain != 0 || end - begin > grain || end <= begin) bad_chunk = true;
          if (end - begin < grain && end != n) bad_chunk = true;
          for (int64_t i = begin; i < end; ++i) ++seen[static_cast<size_t>(i)];
        });
        EXPECT_FALSE(bad_chunk) << "n " << n << " grain " << grain << " threads " << threads;
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_EQ(seen[static_cast<size_t>(i)], 1)
              << "index " << i << " of " << n << ", grain " << grain << ", threads " << threads;
        }
      }
    }
  }
}

TEST(ParallelForTest, UsesUpToTheThreadCount) {
  std::mutex mu;
  std::set<std::thread::id> ids;
  // Chunks that wait for one another can only finish if 4 threads run them at once.
  std::atomic<int> arrived{0};
  ParallelFor(4, 1, 4, [&](int64_t, int64_t) {
    ++arrived;
    while (arrived < 4) std::this_thread::yield();
    std::lock_guard<std::mutex> lock(mu);
    ids.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(ids.size(), 4u);
}

TEST(ParallelForTest, OneChunkOrOneThreadRunsOnTheCaller) {
  const std::thread::id caller = std::this_thread::get_id();
  for (auto [n, grain, threads] : {std::tuple<int64_t, int64_t, int>{10, 10, 8}, {10, 1, 1}}) {
    std::set<std::thread::id> ids;
    ParallelFor(n, grain, threads,
                [&](int64_t, int64_t) { ids.insert(std::this_thread::get_id()); });
    EXPECT_EQ(ids, std::set<std::thread::id>{caller});
  }
}

TEST(ParallelForTest, NothingToDo) {
  bool called = false;
  ParallelFor(0, 4, 8, [&](int64_t, int64_t) { called = true; });
  ParallelFor(-3, 4, 8, [&](int64_t, int64_t) { called = true; });
  EXPECT_FALSE(called);
}

TEST(ParallelForTest, ResolveThreads) {
  EXPECT_EQ(ResolveThreads(3), 3);
  EXPECT_GE(ResolveThreads(0), 1);
  EXPECT_GE(ResolveThreads(-1), 1);
}

}  // namespace
}  // namespace tunejit
