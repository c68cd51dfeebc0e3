#include "decode/device/step_buffers.h"

namespace adtree::decode {

int64_t StepBuffers::bucket(int64_t nodes) {
  for (int64_t b : {1, 8, 16, 32, 64}) {
    if (nodes <= b) return b;
  }
  return (nodes + 63) / 64 * 64;
}

StepBuffers::Buffers& StepBuffers::buffers_for(int64_t rows) {
  auto it = by_rows_.find(rows);
  if (it == by_rows_.end()) {
    const auto opts = at::TensorOptions().device(device_);
    it = by_rows_
             .emplace(rows, Buffers{at::empty({batch_, rows}, opts.dtype(at::kLong)),
                                    at::empty({rows}, opts.dtype(at::kLong)),
                                    at::empty({rows, rows}, opts.dtype(at::kBool))})
             .first;
  }
  return it->second;
}

StepBuffers::Inputs StepBuffers::fill(const DraftTree& tree, int64_t first_position) {
  const int64_t n = tree.size(), rows = rows_for(n);
  auto& b = buffers_for(rows);
  // Built on the host, then copied into the device buffers: their storage never changes.
  auto tok = at::zeros({rows}, at::kLong), pos = at::full({rows}, first_position, at::kLong);
  // The tree's ancestor mask in the top-left block; padding nodes see only themselves.
  auto mask = at::zeros({rows, rows}, at::kBool);
  mask.narrow(0, 0, n).narrow(1, 0, n).copy_(tree.ancestor_mask());
  if (rows > n) mask.narrow(0, n, rows - n).narrow(1, n, rows - n).fill_diagonal_(true);
  auto t = tok.accessor<int64_t, 1>(), p = pos.accessor<int64_t, 1>();
  for (int64_t i = 0; i < n; ++i) {
    t[i] = tree.nodes[size_t(i)].token;
    p[i] = first_position + tree.nodes[size_t(i)].depth;
  }
  b.tokens.copy_(tok.unsqueeze(0).expand({batch_, rows}));
  b.positions.copy_(pos);
  b.mask.copy_(mask);
  return Inputs{b.tokens, b.positions, b.mask, n};
}

StepBuffers::Inputs StepBuffers::fill(const DeviceTree& tree, int64_t first_position) {
  const int64_t n = tree.size, rows = rows_for(n);
  auto& b = buffers_for(rows);
  // Device to device, in place: padding tokens are 0 at first_position and see only themselves.
  b.tokens.zero_();
  b.tokens.narrow(1, 0, n).copy_(tree.tokens.unsqueeze(0).expand({batch_, n}));
  b.positions.fill_(first_position);
  b.positions.narrow(0, 0, n).add_(tree.depths);
  b.mask.zero_();
  b.mask.narrow(0, 0, n).narrow(1, 0, n).copy_(tree.ancestors);
  if (rows > n) b.mask.narrow(0, n, rows - n).narrow(1, n, rows - n).fill_diagonal_(true);
  return Inputs{b.tokens, b.positions, b.mask, n};
}

}  // namespace adtree::decode
