// What each training step reads: seeded generators, the rows of each batch, and dataset rows as
// tensors.
//
// Reproducibility rule: everything random in step s (batch rows, dropout masks, noise, code
// restarts) is drawn from generators seeded by (seed, s), never from a stream carried across steps,
// so a run resumed from a checkpoint at step s takes exactly the steps an uninterrupted run takes.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

#include "io/dataset.h"

namespace adtree::train {

// A 64-bit seed from (seed, step, stream) through splitmix64, so streams never collide.
uint64_t mix_seed(uint64_t seed, uint64_t step, uint64_t stream);
// A fresh CPU generator for one purpose of one step.
at::Generator step_generator(uint64_t seed, int64_t step, uint64_t stream);

// Rows of each batch: epoch e visits the `rows` in a permutation seeded by (seed, e); step s takes
// the next `batch` rows of that endless sequence. Pure function of (seed, step).
class BatchOrder {
 public:
  BatchOrder(std::vector<int64_t> rows, int64_t batch, uint64_t seed);
  std::vector<int64_t> rows_for_step(int64_t step);
  double epoch_of(int64_t step) const;  // fractional epochs done before `step`

 private:
  const std::vector<int64_t>& perm(int64_t epoch);
  std::vector<int64_t> rows_;
  int64_t batch_;
  uint64_t seed_;
  int64_t cached_epoch_ = -1;
  std::vector<int64_t> cached_;
};

// Dataset rows of one split; an adtree::Error naming the data file when the split is empty.
std::vector<int64_t> split_rows(const io::Dataset& d, io::Split s, const std::string& where);
// uint8 [N, H, W, 3] rows -> float [B, 3, H, W] in [-1, 1] (the VQ's input range) on `device`.
at::Tensor images_to_float(const io::Dataset& d, const std::vector<int64_t>& rows,
                           at::Device device = at::kCPU);
// Row indices as an int64 tensor on `device`.
at::Tensor row_tensor(const std::vector<int64_t>& rows, at::Device device = at::kCPU);

}  // namespace adtree::train
