// The lean path's thread pool (util/worker_pool.h): every index exactly once whatever the split,
// jobs inside jobs and from two threads at once run (inline) instead of deadlocking, a worker
// held up by the OS leaves the rest of the job to the caller (and, held up again, makes the pool
// run alone for a spell), and parked workers wake and exit.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "util/threads.h"
#include "util/worker_pool.h"

using adtree::WorkerPool;

TEST(WorkerPool, EveryIndexExactlyOnce) {
  for (int threads : {1, 2, 4}) {
    WorkerPool pool(threads);
    EXPECT_EQ(pool.threads(), threads);
    for (int64_t n : {1, 2, 7, 64, 1000}) {
      for (int64_t chunk : {1, 3, 16, 5000}) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        for (int rep = 0; rep < 3; ++rep) {
          pool.run(n, chunk, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) hits[size_t(i)]++;
          });
        }
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_EQ(hits[size_t(i)].load(), 3)
              << threads << " threads, n " << n << " chunk " << chunk;
        }
      }
    }
  }
}

TEST(WorkerPool, JobsInsideJobsAndFromTwoThreadsRunInline) {
  WorkerPool pool(2);
  std::atomic<int64_t> sum{0};
  pool.run(8, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      pool.run(10, 2, [&](int64_t bb, int64_t ee) { sum += ee - bb; });
    }
  });
  EXPECT_EQ(sum.load(), 80);
  std::atomic<int64_t> a{0}, c{0};
  auto many = [&](std::atomic<int64_t>& into) {
    for (int j = 0; j < 2000; ++j) pool.run(16, 1, [&](int64_t b, int64_t e) { into += e - b; });
  };
  std::thread other([&] { many(a); });
  many(c);
  other.join();
  EXPECT_EQ(a.load(), 2000 * 16);
  EXPECT_EQ(c.load(), 2000 * 16);
}

TEST(WorkerPool, AHeldUpWorkerLeavesTheRestToTheCaller) {
  WorkerPool pool(2);
  const auto caller = std::this_thread::get_id();
  std::mutex mu;
  std::vector<std::thread::id> ran(20);
  // Wait until the worker is awake and spinning, so that it does claim a chunk.
  for (int i = 0; i < 50 && pool.chunks_by_workers() == 0; ++i) {
    pool.run(64, 1,
             [](int64_t, int64_t) { std::this_thread::sleep_for(std::chrono::microseconds(50)); });
  }
  ASSERT_GT(pool.chunks_by_workers(), 0) << "the worker never took part";
  pool.run(20, 1, [&](int64_t b, int64_t) {
    const auto me = std::this_thread::get_id();
    if (me != caller) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::lock_guard<std::mutex> lock(mu);
    ran[size_t(b)] = me;
  });
  int by_caller = 0;
  for (const auto& id : ran) by_caller += id == caller;
  EXPECT_GE(by_caller, 18) << "the caller waited for the held-up worker instead of working";
  // Held up again (twice in a row): the pool stops sharing for a spell, so the next jobs run on
  // the caller alone, without handing the worker anything.
  for (int i = 0; i < 50 && pool.solo_spells() == 0; ++i) {
    pool.run(20, 1, [&](int64_t, int64_t) {
      const bool worker = std::this_thread::get_id() != caller;
      std::this_thread::sleep_for(worker ? std::chrono::microseconds(20000)
                                         : std::chrono::microseconds(50));
    });
  }
  ASSERT_GE(pool.solo_spells(), 1) << "a late worker never made the pool run alone";
  const auto spell_began = std::chrono::steady_clock::now();
  const int64_t before = pool.chunks_by_workers();
  pool.run(64, 1, [](int64_t, int64_t) {});
  // The spell lasts 20 ms; a test thread that the OS held up longer may rightly see it over.
  if (std::chrono::steady_clock::now() - spell_began < std::chrono::milliseconds(15)) {
    EXPECT_EQ(pool.chunks_by_workers(), before) << "shared work during the spell alone";
  }
}

TEST(WorkerPool, ParkedWorkersWakeAndTheSharedPoolFollowsTheKnob) {
  {
    WorkerPool pool(3);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // past the spin: parked
    std::atomic<int64_t> n{0};
    pool.run(30, 1, [&](int64_t b, int64_t e) { n += e - b; });
    EXPECT_EQ(n.load(), 30);
  }  // joins parked workers
  adtree::configure_threads(3);
  EXPECT_EQ(WorkerPool::shared().threads(), 3);
  EXPECT_EQ(adtree::worker_threads(), 3);
  EXPECT_EQ(adtree::intra_op_threads(), 1) << "inference leaves libtorch's pool at one thread";
  adtree::configure_threads(2, adtree::ThreadUse::Training);
  EXPECT_EQ(WorkerPool::shared().threads(), 2);
  EXPECT_EQ(adtree::intra_op_threads(), 2);
  adtree::configure_threads(1);
  EXPECT_EQ(WorkerPool::shared().threads(), 1);
}
