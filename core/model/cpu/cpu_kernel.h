// Which of the lean path's kernels this CPU runs, chosen at run time as ggml-cpu does (AVX-512 with
// or without the BF16 dot product, AVX2+FMA, portable), and how a product's output panels are
// shared over the worker pool. The fp32 (packed_gemm.h) and bf16 (packed_bf16.h) products both ask
// here, so neither includes the other for it.
#pragma once
#include <cstdint>
#include <functional>

namespace adtree::model {

// The kernel the packed products run: the widest this CPU has, unless forced narrower (tests and
// A/B benches; $ADTREE_KERNEL=amx|avx512bf16|avx512|avx2|portable at start-up, force_packed_kernel
// in code, -1 = best). Avx512Bf16 differs from Avx512 only for bf16 panels (the BF16 dot product),
// Amx from Avx512Bf16 only for bf16 panels too (the AMX tiles, packed_amx.h).
enum class CpuKernel { Portable = 0, Avx2 = 1, Avx512 = 2, Avx512Bf16 = 3, Amx = 4 };
CpuKernel packed_kernel();
void force_packed_kernel(int kernel);
const char* to_string(CpuKernel k);

// body(begin, end) over output panels [0, n_panels): on the calling thread for a small product
// (`macs` multiply-adds), else shared out by the worker pool in even chunks.
void run_panels(int64_t n_panels, int64_t macs, const std::function<void(int64_t, int64_t)>& body);

}  // namespace adtree::model
