// Static inputs of the tree verification forward (docs/design/GPU.md): per tree-size bucket one
// preallocated set of token ids [B, b], positions [b] and mask [b, b] on the model's device,
// refilled in place every step. With padding on, a tree goes into the smallest bucket that holds
// it (1, 8, 16, 32, 64, then multiples of 64 nodes); its padding nodes see only themselves, no real
// node sees them, and their rows are dropped. The same storage step after step is what capturing
// the verification as a CUDA graph needs. On the CPU padding only costs arithmetic, so the loop
// pads when asked (SpecOptions::pad_to_buckets); unpadded, each tree size keeps its own buffers.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <map>

#include "decode/device/device_tree.h"
#include "decode/tree/draft_tree.h"

namespace adtree::decode {

class StepBuffers {
 public:
  StepBuffers(at::Device device, int64_t batch, bool pad)
      : device_(device), batch_(batch), pad_(pad) {}

  static int64_t bucket(int64_t nodes);  // the padded size of a tree of `nodes` nodes
  int64_t rows_for(int64_t nodes) const { return pad_ ? bucket(nodes) : nodes; }

  struct Inputs {
    at::Tensor tokens;     // [B, rows] long, on the device
    at::Tensor positions;  // [rows] long
    at::Tensor mask;       // [rows, rows] bool: the ancestor mask, padding nodes see themselves
    int64_t real = 0;      // the tree's own nodes: rows 0 .. real - 1
  };
  // The tree's inputs with node i at position first_position + depth(i); padding nodes stand at
  // first_position.
  Inputs fill(const DraftTree& tree, int64_t first_position);
  // The same from a tree built on the device, without reading it back.
  Inputs fill(const DeviceTree& tree, int64_t first_position);

 private:
  struct Buffers {
    at::Tensor tokens, positions, mask;
  };
  Buffers& buffers_for(int64_t rows);
  at::Device device_;
  int64_t batch_;
  bool pad_;
  std::map<int64_t, Buffers> by_rows_;
};

}  // namespace adtree::decode
