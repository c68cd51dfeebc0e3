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
}  // namespace

int default_threads() {
  return std::clamp(int(std::thread::hardware_concurrency()), 1, 2);
}

void configure_threads(int threads, ThreadUse use) {
  if (!std::getenv("OPENBLAS_NUM_THREADS")) {
    setenv("OPENBLAS_NUM_THREADS", "1", 0);
    set_blas_threads(1);
  }
  if (threads <= 0) {
    if (const char* env = std::getenv("ADTREE_THREADS")) threads = std::atoi(env);
  }
  if (threads <= 0) threads = default_threads();
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
