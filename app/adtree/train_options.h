// What every `adtree train` stage shares: the run options (--out, --steps, --resume, ...), reading
// them into train::TrainOptions, the dataset, the heap setting and the closing summary.
#pragma once
#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "cli_args.h"
#include "io/dataset.h"
#include "train/config.h"
#include "util/heap.h"  // keep_allocations_on_heap: training calls it

namespace adtree::cli {

void add_run_options(Args& a);
train::TrainOptions run_options(const Args& a, const std::string& stage, int argc, char** argv);
io::Dataset load_data(const Args& a);
// Fidelity's sheets in `out`: prompts.txt (each prompt at its row and column of the
// sheets) and, with imaging, <prefix>samples.png (each picture beside its nearest training
// picture, four pairs a row) and <prefix>captioned.png (the pictures with their prompts). Pictures:
// uint8 [P, H, W, 3].
void write_fidelity_sheets(const at::Tensor& images, const at::Tensor& nearest,
                           const std::vector<std::string>& prompts, const std::string& out,
                           const std::string& prefix);
void print_result(const std::string& stage, const train::TrainResult& r, const std::string& out);

}  // namespace adtree::cli
