// The device step's draft tree (docs/design/GPU.md, "The device step"): EAGLE-2's dynamic tree
// built on the model's device, so that a step reads nothing back to the host until its verdict.
// The builder keeps the host builder's tree (tree_builder.h, build_dynamic_tree) for the rules
// whose children are a deterministic function of q: Deterministic (top-k of q) and Coupled (top-k
// of q * exp(g) with the shared noise). Its shape is fixed by (levels, width, budget), which the
// host knows: every frontier has K nodes, so a level's work has one size step after step.
//   - Children with no draft mass (filtered by top-k / top-p) are kept as nodes scored -inf:
//     "invalid", never accepted, dropped when the tree comes back to the host.
//   - The host builder skips frontier nodes that cannot reach the N best; here they are expanded
//     anyway (fixed shapes); they never change the N best, so the tree is the same.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>

#include "decode/sampling.h"
#include "decode/settings/method.h"
#include "decode/tree/draft_source.h"
#include "decode/verify/coupling.h"

namespace adtree::decode {

struct DeviceTree {
  // Per node, on the device; node 0 is the root, parents precede children.
  at::Tensor tokens;     // [n] long
  at::Tensor parents;    // [n] long; the root's is 0 (itself), which keeps gathers in range
  at::Tensor depths;     // [n] long
  at::Tensor ranks;      // [n] long: position among its parent's children
  at::Tensor scores;     // [n] fp64 cumulative score; -inf marks an invalid node
  at::Tensor q;          // [n] fp32 draft probability under its parent's distribution
  at::Tensor ancestors;  // [n, n] bool: node i sees j iff j is i or an ancestor of i
  at::Tensor noise;    // Coupled: [levels + 1, V] fp64 exp(g) of cells root + 1 ..; else undefined
  int64_t size = 0;    // n (host-known: it follows from the shape)
  int64_t levels = 0;  // levels drafted (the deepest valid node may be shallower)
  int64_t width = 0;
  int64_t root_index = 0;
};

// What the builder needs about the step (DraftContext's device twin).
struct DeviceDraftContext {
  DraftSource& source;
  const LogitsProcessor& draft_proc;
  VerifyRule rule = VerifyRule::Deterministic;  // Deterministic or Coupled
  CouplingNoise* noise = nullptr;               // Coupled
  at::Tensor root_logits;                       // [B, V] draft logits after the root
  int64_t root_token = 0;
  int64_t root_index = 0;
  int64_t max_levels = 0;
};

// The rules whose trees can be built on the device.
bool device_tree_supports(VerifyRule rule);

// d draft levels, width k, the N best nodes by score (budget <= 0: all), as build_dynamic_tree.
DeviceTree build_dynamic_tree_on_device(DeviceDraftContext& ctx, int64_t levels, int64_t width,
                                        int64_t budget);

}  // namespace adtree::decode
