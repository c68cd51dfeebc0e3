// CPU thread settings, chosen by measurement (docs/PERFORMANCE.md):
// - the lean inference path runs on the project's own WorkerPool (util/worker_pool.h), whose
//   size is the one knob: $ADTREE_THREADS, else the measured default;
// - OpenBLAS's own threads on top of libtorch's oversubscribe a 2-core machine at decoding sizes
//   (block forwards ~5x slower, SPEC_DECODING.md section 8), so inference runs it single-threaded;
//   training (one large BLAS call per product) gives it the same count as everything else, unless
//   OPENBLAS_NUM_THREADS is set by the user;
// - libtorch's intra-op pool collapsed 20-30x on a shared machine at decoding sizes, so inference
//   leaves it at one thread; training (large ops, a dedicated run) gives it the same count.
#pragma once

namespace adtree {

enum class ThreadUse { Inference, Training };

// Applies the policy with `threads` in all (0 = $ADTREE_THREADS, else the default). Call once,
// early, before the first BLAS call; a trainer calls it again with ThreadUse::Training.
void configure_threads(int threads = 0, ThreadUse use = ThreadUse::Inference);

// The default: two threads where the machine has two or more cores (measured, docs/PERFORMANCE.md).
int default_threads();

// What configure_threads chose (for logs and stats JSON): the pool's size and libtorch's.
int worker_threads();
int intra_op_threads();

}  // namespace adtree
