#include "model/cpu/cpu_kernel.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>

#include "model/cpu/packed_amx.h"
#include "util/worker_pool.h"

namespace adtree::model {

namespace {
std::atomic<int> g_forced{-2};  // a CpuKernel, -1: the best this CPU runs, -2: not read yet

CpuKernel detected_kernel() {
  static const CpuKernel k = [] {
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16")) {
      return amx_available() ? CpuKernel::Amx : CpuKernel::Avx512Bf16;
    }
    if (__builtin_cpu_supports("avx512f")) return CpuKernel::Avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return CpuKernel::Avx2;
    return CpuKernel::Portable;
  }();
  return k;
}
}  // namespace

CpuKernel packed_kernel() {
  int forced = g_forced.load(std::memory_order_relaxed);
  if (forced == -2) {
    const char* env = std::getenv("ADTREE_KERNEL");
    const std::string k = env ? env : "";
    forced = k == "portable"     ? 0
             : k == "avx2"       ? 1
             : k == "avx512"     ? 2
             : k == "avx512bf16" ? 3
             : k == "amx"        ? 4
                                 : -1;
    g_forced.store(forced, std::memory_order_relaxed);
  }
  if (forced >= 0 && forced <= int(detected_kernel())) return CpuKernel(forced);
  return detected_kernel();
}

void force_packed_kernel(int kernel) {
  g_forced.store(kernel, std::memory_order_relaxed);
}

const char* to_string(CpuKernel k) {
  switch (k) {
    case CpuKernel::Amx:
      return "amx";
    case CpuKernel::Avx512Bf16:
      return "avx512bf16";
    case CpuKernel::Avx512:
      return "avx512";
    case CpuKernel::Avx2:
      return "avx2";
    default:
      return "portable";
  }
}

void run_panels(int64_t n_panels, int64_t macs, const std::function<void(int64_t, int64_t)>& body) {
  // Below ~64k multiply-adds (a few microseconds) handing work to another thread costs more than
  // it saves; above, the panels are shared out, a few chunks per thread so that a late or busy
  // worker leaves its share to the others.
  auto& pool = WorkerPool::shared();
  if (pool.threads() == 1 || macs < (int64_t(1) << 16)) {
    body(0, n_panels);
    return;
  }
  // Even chunks: the AVX-512 tiles take panels in pairs.
  const int64_t chunk = std::max<int64_t>(2, n_panels / (4 * pool.threads())) / 2 * 2;
  pool.run(n_panels, chunk, body);
}

}  // namespace adtree::model
