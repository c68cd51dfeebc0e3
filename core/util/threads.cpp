#include "util/threads.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>

#include <cstdlib>
#include <string>

namespace adtree {

namespace {
// OpenBLAS is reached through Debian's libblas.so.3 alternative, so its symbol is looked up at run
// time: with another BLAS installed the call is simply skipped.
void set_blas_threads(int n) {
  using SetFn = void (*)(int);
  if (auto fn = reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) fn(n);
}
int g_intra = 0;
}  // namespace

void configure_threads(int intra_op) {
  if (!std::getenv("OPENBLAS_NUM_THREADS")) {
    setenv("OPENBLAS_NUM_THREADS", "1", 0);
    set_blas_threads(1);
  }
  if (intra_op <= 0) {
    if (const char* env = std::getenv("ADTREE_THREADS")) intra_op = std::atoi(env);
  }
  if (intra_op <= 0) intra_op = 1;  // measured default, see docs/PERFORMANCE.md
  at::set_num_threads(intra_op);
  g_intra = intra_op;
}

int intra_op_threads() {
  return g_intra > 0 ? g_intra : at::get_num_threads();
}

}  // namespace adtree
