// CPU thread settings, chosen by measurement (docs/PERFORMANCE.md): OpenBLAS's own threads on top
// of libtorch's intra-op threads oversubscribe a 2-core machine and make block forwards ~5x slower
// (SPEC_DECODING.md section 8), so OpenBLAS runs single-threaded and libtorch owns the cores.
#pragma once

namespace adtree {

// Applies the thread policy: OpenBLAS to 1 thread (unless OPENBLAS_NUM_THREADS is set by the user),
// libtorch intra-op threads to `intra_op` (0 = ADTREE_THREADS env, else the measured default).
// Call once, early, before the first BLAS call.
void configure_threads(int intra_op = 0);

// What configure_threads chose (for logs and stats JSON).
int intra_op_threads();

}  // namespace adtree
