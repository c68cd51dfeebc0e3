#include "util/heap.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace adtree {

void keep_allocations_on_heap() {
#ifdef __GLIBC__
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

}  // namespace adtree
