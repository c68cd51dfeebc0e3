// What every `adtree train` stage shares: the run options (--out, --steps, --resume, ...), reading
// them into train::TrainOptions, the dataset, the heap setting and the closing summary.
#pragma once
#include <string>

#include "cli_args.h"
#include "io/dataset.h"
#include "train/config.h"

namespace adtree::cli {

// Training allocates the same large activation buffers every step; keep them on the heap.
void keep_allocations_on_heap();
void add_run_options(Args& a);
train::TrainOptions run_options(const Args& a, const std::string& stage, int argc, char** argv);
io::Dataset load_data(const Args& a);
void print_result(const std::string& stage, const train::TrainResult& r, const std::string& out);

}  // namespace adtree::cli
