// The device step's verification (docs/design/GPU.md, "The device step"): the greedy and the
// shared-noise rules decided on the model's device for a DeviceTree, then ONE read of the step
// back to the host: the tree's nodes, the accepted path, the bonus token and each row's top-1
// probability, packed into one small fp64 tensor. Both rules accept exactly what their host walks
// accept (acceptance.h): node i is accepted iff every node on its path is the target's choice
// after its parent, and the deepest accepted node ends the path.
#pragma once
#include <ATen/ATen.h>

#include <vector>

#include "decode/device/device_tree.h"
#include "decode/sampling.h"
#include "decode/tree/draft_tree.h"
#include "decode/verify/acceptance.h"

namespace adtree::decode {

// The step as the host sees it after the read.
struct DeviceVerdict {
  DraftTree tree;             // the valid nodes, renumbered (child_dist left undefined)
  AcceptResult acc;           // in the host tree's numbering
  std::vector<int64_t> rows;  // host node id -> row of the verification block
  std::vector<int64_t> keep;  // block rows the cache keeps: the root's and the path's
  at::Tensor top1;            // [host nodes] fp32 on the CPU: the target's top-1 per row
};

// `target`: the processed verification rows [n, V] on the device (row i after node i); `greedy`
// decides by the argmax, else by the shared noise the tree carries. `max_depth`: the deepest
// depth still inside the image (no bonus after it).
DeviceVerdict verify_on_device(const DeviceTree& tree, const Processed& target, bool greedy,
                               int64_t max_depth);

// Every read of the device step back to the host goes through here (one per step), so a test can
// count them: the process-wide count of such reads so far.
int64_t device_step_reads();

}  // namespace adtree::decode
