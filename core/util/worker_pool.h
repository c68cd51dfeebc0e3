// A persistent pool of CPU threads for the lean inference path's loops (matrix panels, attention
// heads). Built for a 2-core machine that the GUI, a build or a training run may share:
// - work is split into chunks claimed from one shared counter, and the calling thread works too,
//   so a worker that the OS has descheduled only holds up the chunk it took: the caller takes the
//   rest instead of waiting for it (libtorch's intra-op pool collapsed 20-30x in that situation,
//   docs/PERFORMANCE.md);
// - idle workers spin for a short while after a job (the next matrix product of a forward follows
//   within microseconds), then park on a condition variable until the next job;
// - when the caller keeps waiting on a claimed chunk far longer than its own share took (the OS
//   gave the worker's core to another process), the pool runs jobs alone for a short spell, so a
//   busy machine costs no more than one thread would.
// One knob: $ADTREE_THREADS (or configure_threads) sets the pool's size, the caller included.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace adtree {

class WorkerPool {
 public:
  using Body = std::function<void(int64_t begin, int64_t end)>;

  // `threads` in all, the caller counted: threads - 1 workers are started.
  explicit WorkerPool(int threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // The process pool, sized by configure_threads (util/threads.h).
  static WorkerPool& shared();
  // Replaces the process pool with one of `threads` threads (not while a job runs).
  static void resize_shared(int threads);

  int threads() const { return int(workers_.size()) + 1; }

  // body(begin, end) over [0, n) in chunks of `chunk` items, spread over the pool; returns when
  // every chunk is done. Runs inline, as one call body(0, n), when the pool has one thread, when
  // n fits one chunk, when called from inside a job, or while another thread's job holds the pool.
  void run(int64_t n, int64_t chunk, const Body& body);

  // Jobs that ran on more than one thread, and chunks the workers (not the caller) ran: for tests
  // and the bench.
  int64_t jobs_shared() const { return jobs_shared_.load(); }
  int64_t chunks_by_workers() const { return chunks_by_workers_.load(); }
  // Spells of running alone because a worker was descheduled.
  int64_t solo_spells() const { return solo_spells_.load(); }

 private:
  void worker_loop();
  // Claims and runs chunks of the current job; returns how many it ran.
  int64_t work(uint64_t gen);
  // After a shared job: how long the caller worked and then waited for the workers.
  void note_wait(std::chrono::steady_clock::duration worked,
                 std::chrono::steady_clock::duration waited);

  // The job word: generation (24 bits) | chunk count (20 bits) | next chunk (20 bits). A chunk is
  // claimed by a compare-and-swap on the whole word, so a worker that wakes late can never claim
  // a chunk of a newer job with an older job's body.
  std::atomic<uint64_t> word_{0};
  const Body* body_ = nullptr;
  int64_t n_ = 0, chunk_ = 0;
  std::atomic<int64_t> done_{0};

  std::mutex busy_;  // one job at a time
  std::mutex park_mu_;
  std::condition_variable park_cv_;
  int parked_ = 0;
  bool stop_ = false;
  std::vector<std::thread> workers_;
  std::chrono::steady_clock::time_point solo_until_{};  // guarded by busy_
  int late_in_a_row_ = 0;                               // guarded by busy_
  std::atomic<int64_t> jobs_shared_{0}, chunks_by_workers_{0}, solo_spells_{0};
};

}  // namespace adtree
