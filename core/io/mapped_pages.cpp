#include "io/mapped_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <map>
#include <mutex>

namespace adtree::io {

namespace {
// Never destroyed: readers held by static objects unregister during exit, in any order.
std::mutex& mu() {
  static auto* m = new std::mutex;
  return *m;
}
std::map<uintptr_t, uintptr_t>& mappings() {  // begin -> end
  static auto* m = new std::map<uintptr_t, uintptr_t>;
  return *m;
}
}  // namespace

void register_mapping(const void* begin, size_t size) {
  std::lock_guard<std::mutex> lock(mu());
  const auto b = reinterpret_cast<uintptr_t>(begin);
  mappings()[b] = b + size;
}

void unregister_mapping(const void* begin) {
  std::lock_guard<std::mutex> lock(mu());
  mappings().erase(reinterpret_cast<uintptr_t>(begin));
}

bool release_mapped_pages(const at::Tensor& t) {
  if (!t.defined() || !t.device().is_cpu() || t.nbytes() == 0 || !t.is_contiguous()) return false;
  const auto begin = reinterpret_cast<uintptr_t>(t.data_ptr());
  const uintptr_t end = begin + t.nbytes();
  {
    std::lock_guard<std::mutex> lock(mu());
    auto it = mappings().upper_bound(begin);
    if (it == mappings().begin()) return false;
    --it;
    if (begin < it->first || end > it->second) return false;  // not inside one file mapping
  }
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
  if (last <= first) return false;  // no whole page inside the tensor
  return ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED) == 0;
}

}  // namespace adtree::io
