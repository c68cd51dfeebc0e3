// adtree bench --dtype-kl: how far a reduced-precision model (--dtype bf16) is from the fp32 one,
// as next-token distributions rather than speed (bench_dtype.cpp).
#pragma once
#include "cli_args.h"

namespace adtree::cli {

// Registers --dtype-kl on the bench's options.
void add_dtype_kl_option(Args& a);
// With --dtype-kl given: generates the prompts' pictures with the fp32 model (AR, the bench's
// sampling and seeds), runs the same tokens through the --dtype model and the fp32 model, and
// prints KL(p_fp32 || p_dtype) of the CFG-mixed distributions over every image position (mean,
// max) and how often the two agree on the most likely token; --json writes the same. Returns the
// exit code.
int bench_dtype_kl(const Args& a);

}  // namespace adtree::cli
