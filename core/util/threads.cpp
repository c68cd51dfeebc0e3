#include "util/threads.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <thread>

#include "util/worker_pool.h"

namespace adtree {

namespace {
// OpenBLAS is reached through Debian's libblas.so.3 alternative, so its symbol is looked up at run
// time: with another BLAS installed the call is simply skipped.
void set_blas_threads(int n) {
  using SetFn = void (*)(int);
  if (auto fn = reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) fn(n);
}
int g_workers = 0, g_intra = 0;

// Whether the user chose OpenBLAS's threads (then they are left alone): read once, before this
// file sets the variable itself.
bool user_set_blas() {
  static const bool set = std::getenv("OPENBLAS_NUM_THREADS") != nullptr;
  return set;
}
}  // namespace

int default_threads() {
  return std::clamp(int(std::thread::hardware_concurrency()), 1, 2);
}

void configure_threads(int threads, ThreadUse use) {
  if (threads <= 0) {
    if (const char* env = std::getenv("ADTREE_THREADS")) threads = std::atoi(env);
  }
  if (threads <= 0) threads = default_threads();
  // Training's large products are one BLAS call each, so OpenBLAS may use the same threads there
  // (measured +10% tokens/s with 2, docs/TRAINING.md); inference keeps it at one.
  if (!user_set_blas()) {
    const int blas = use == ThreadUse::Training ? threads : 1;
    setenv("OPENBLAS_NUM_THREADS", std::to_string(blas).c_str(), 1);
    set_blas_threads(blas);
  }
  g_workers = threads;
  g_intra = use == ThreadUse::Training ? threads : 1;
  WorkerPool::resize_shared(g_workers);
  at::set_num_threads(g_intra);
}

int worker_threads() {
  return g_workers > 0 ? g_workers : WorkerPool::shared().threads();
}

int intra_op_threads() {
  return g_intra > 0 ? g_intra : at::get_num_threads();
}

}  // namespace adtree
