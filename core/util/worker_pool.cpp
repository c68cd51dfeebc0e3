#include "util/worker_pool.h"

#include <sys/resource.h>

#include <chrono>
#include <memory>

namespace adtree {

namespace {
constexpr int kGenBits = 24, kCountBits = 20;
constexpr uint64_t kCountMask = (uint64_t(1) << kCountBits) - 1;
constexpr uint64_t kGenMask = (uint64_t(1) << kGenBits) - 1;

uint64_t gen_of(uint64_t w) {
  return w >> (2 * kCountBits);
}
uint64_t count_of(uint64_t w) {
  return (w >> kCountBits) & kCountMask;
}
uint64_t next_of(uint64_t w) {
  return w & kCountMask;
}

// How long an idle worker keeps looking for the next job before it parks: a forward's matrix
// products follow each other within microseconds, steps within a millisecond or so.
constexpr auto kSpin = std::chrono::microseconds(200);
// A wait this much longer than the caller's own work means a worker was descheduled; the pool then
// runs alone for kSoloFor before it shares work again.
constexpr auto kLateSlack = std::chrono::microseconds(50);
constexpr auto kSoloFor = std::chrono::milliseconds(20);

thread_local bool t_in_job = false;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

std::mutex g_shared_mu;
std::unique_ptr<WorkerPool> g_shared;
int g_shared_threads = 1;
}  // namespace

WorkerPool::WorkerPool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(park_mu_);
    stop_ = true;
  }
  park_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

WorkerPool& WorkerPool::shared() {
  std::lock_guard<std::mutex> lock(g_shared_mu);
  if (!g_shared) g_shared = std::make_unique<WorkerPool>(g_shared_threads);
  return *g_shared;
}

void WorkerPool::resize_shared(int threads) {
  std::lock_guard<std::mutex> lock(g_shared_mu);
  g_shared_threads = std::max(1, threads);
  if (g_shared && g_shared->threads() != g_shared_threads) g_shared.reset();
}

int64_t WorkerPool::work(uint64_t gen) {
  int64_t ran = 0;
  uint64_t w = word_.load(std::memory_order_acquire);
  while (gen_of(w) == gen && next_of(w) < count_of(w)) {
    if (!word_.compare_exchange_weak(w, w + 1, std::memory_order_acq_rel)) continue;
    // The claim succeeded on this generation's word, so its job is not finished and body_, n_
    // and chunk_ are still its own.
    const int64_t c = int64_t(next_of(w));
    const int64_t b = c * chunk_, e = std::min(n_, b + chunk_);
    t_in_job = true;
    (*body_)(b, e);
    t_in_job = false;
    done_.fetch_add(1, std::memory_order_acq_rel);
    ++ran;
    w = word_.load(std::memory_order_acquire);
  }
  return ran;
}

void WorkerPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    // Spin a little for the next job, then park.
    auto deadline = std::chrono::steady_clock::now() + kSpin;
    uint64_t w = word_.load(std::memory_order_acquire);
    for (int i = 0; gen_of(w) == seen; ++i) {
      cpu_relax();
      if ((i & 63) == 63 && std::chrono::steady_clock::now() > deadline) break;
      w = word_.load(std::memory_order_acquire);
    }
    if (gen_of(w) == seen) {
      std::unique_lock<std::mutex> lock(park_mu_);
      ++parked_;
      park_cv_.wait(lock, [&] { return stop_ || gen_of(word_.load()) != seen; });
      --parked_;
      if (stop_) return;
      w = word_.load(std::memory_order_acquire);
    }
    seen = gen_of(w);
    chunks_by_workers_.fetch_add(work(seen), std::memory_order_relaxed);
  }
}

void WorkerPool::run(int64_t n, int64_t chunk, const Body& body) {
  if (n <= 0) return;
  chunk = std::max<int64_t>(1, chunk);
  const int64_t count = (n + chunk - 1) / chunk;
  std::unique_lock<std::mutex> lock(busy_, std::defer_lock);
  const auto now = std::chrono::steady_clock::now();
  if (workers_.empty() || count < 2 || t_in_job || uint64_t(count) > kCountMask ||
      !lock.try_lock() || now < solo_until_) {
    body(0, n);
    return;
  }
  body_ = &body;
  n_ = n;
  chunk_ = chunk;
  done_.store(0, std::memory_order_relaxed);
  const uint64_t gen = (gen_of(word_.load()) + 1) & kGenMask;
  word_.store((gen << (2 * kCountBits)) | (uint64_t(count) << kCountBits),
              std::memory_order_release);
  {
    std::lock_guard<std::mutex> park(park_mu_);
    if (parked_ > 0) park_cv_.notify_all();
  }
  work(gen);
  const auto worked = std::chrono::steady_clock::now();
  // Chunks other threads claimed: wait for them (never for unclaimed ones, the caller took those).
  for (int i = 0; done_.load(std::memory_order_acquire) < count; ++i) {
    if (i < 4096) {
      cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }
  jobs_shared_.fetch_add(1, std::memory_order_relaxed);
  note_wait(worked - now, std::chrono::steady_clock::now() - worked);
}

void WorkerPool::note_wait(std::chrono::steady_clock::duration worked,
                           std::chrono::steady_clock::duration waited) {
  // A worker that held its chunk far longer than the caller's own share took was not running:
  // another process has its core. Twice in a row, and the pool runs jobs alone for a while
  // instead of waiting on it (slower than one thread would be), then tries again.
  bool taken = false;
  if (waited > 2 * worked + kLateSlack) {
    taken = ++late_in_a_row_ >= 2;
  } else {
    late_in_a_row_ = 0;
  }
  // The caller's own core can be taken too: with a spinning worker, the caller and another
  // process there are three runnable threads on two cores, and the caller is the one preempted.
  // Its involuntary context switches say so (read every 32 jobs: a system call).
  thread_local int64_t jobs = 0, switches = -1;
  if ((++jobs & 31) == 0) {
    rusage u{};
    if (getrusage(RUSAGE_THREAD, &u) == 0) {
      if (switches >= 0 && u.ru_nivcsw - switches >= 2) taken = true;
      switches = u.ru_nivcsw;
    }
  }
  if (taken) {
    solo_until_ = std::chrono::steady_clock::now() + kSoloFor;
    late_in_a_row_ = 0;
    solo_spells_.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace adtree
