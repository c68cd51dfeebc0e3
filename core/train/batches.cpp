#include "train/batches.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Generator.h>

#include "util/error.h"
#include "util/rng.h"

namespace adtree::train {

uint64_t mix_seed(uint64_t seed, uint64_t step, uint64_t stream) {
  return splitmix64(splitmix64(splitmix64(seed) ^ step) ^ (stream * 0x632be59bd9b4e019ULL));
}

at::Generator step_generator(uint64_t seed, int64_t step, uint64_t stream) {
  return at::detail::createCPUGenerator(mix_seed(seed, uint64_t(step), stream));
}

BatchOrder::BatchOrder(std::vector<int64_t> rows, int64_t batch, uint64_t seed)
    : rows_(std::move(rows)), batch_(batch), seed_(seed) {
  if (rows_.empty()) throw Error("no training rows");
  if (batch_ <= 0) throw Error("batch size must be positive");
}

const std::vector<int64_t>& BatchOrder::perm(int64_t epoch) {
  if (epoch != cached_epoch_) {
    auto gen = step_generator(seed_, epoch, /*stream=*/0xba7c4);
    auto p = at::randperm(int64_t(rows_.size()), gen, at::TensorOptions().dtype(at::kLong));
    const int64_t* pp = p.data_ptr<int64_t>();
    cached_.resize(rows_.size());
    for (size_t i = 0; i < rows_.size(); ++i) cached_[i] = rows_[size_t(pp[i])];
    cached_epoch_ = epoch;
  }
  return cached_;
}

std::vector<int64_t> BatchOrder::rows_for_step(int64_t step) {
  std::vector<int64_t> out;
  const int64_t n = int64_t(rows_.size());
  for (int64_t k = step * batch_; k < (step + 1) * batch_; ++k)
    out.push_back(perm(k / n)[size_t(k % n)]);
  return out;
}

double BatchOrder::epoch_of(int64_t step) const {
  return double(step) * double(batch_) / double(rows_.size());
}

std::vector<int64_t> split_rows(const io::Dataset& d, io::Split s, const std::string& where) {
  auto rows = d.indices(s);
  if (rows.empty()) {
    throw Error(where + ": the dataset has no " + io::split_name(s) + " images");
  }
  return rows;
}

at::Tensor images_to_float(const io::Dataset& d, const std::vector<int64_t>& rows,
                           at::Device device) {
  // Bytes travel to the device (4x less than floats), then convert there.
  return d.images.index_select(0, row_tensor(rows))
      .to(device)
      .permute({0, 3, 1, 2})
      .to(at::kFloat)
      .div_(127.5)
      .sub_(1.0)
      .contiguous();
}

at::Tensor row_tensor(const std::vector<int64_t>& rows, at::Device device) {
  return at::tensor(rows, at::TensorOptions().dtype(at::kLong)).to(device);
}

}  // namespace adtree::train
