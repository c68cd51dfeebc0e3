// Where draft tokens come from, behind one small lifecycle (STYLE.md, llama.cpp's speculative API):
// start -> (begin_step -> expand* -> end_step)*. Tree builders know a draft source only through
// this interface: the EAGLE head, or any GPT used as a draft model (the target itself gives an
// "oracle" that tests use to drive acceptance near 100%).
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "model/llamagen/drafter.h"
#include "model/llamagen/gpt.h"

namespace adtree::decode {

constexpr int64_t kRootRow = -1;

struct DraftInput {
  int64_t token;       // the node's token
  int64_t parent_row;  // kRootRow or a row returned by an earlier expand() of this step
  int64_t index;       // image index of the token (its cell)
};

class DraftSource {
 public:
  virtual ~DraftSource() = default;
  // A new generation after the target's prefill: `root_feature` [B, 1, D] is the target hidden at
  // the last condition position (what predicted image token 0).
  virtual void start(const model::Condition& cond, const at::Tensor& root_feature) = 0;
  // Committed tokens the source has not seen yet (image indices first_index ..), each with the
  // target hidden of its predecessor (feats [B, m, D]); the last one is the tree's root. Returns
  // the draft logits [B, V] for the token after the root.
  virtual at::Tensor begin_step(const std::vector<int64_t>& tokens, const at::Tensor& feats,
                                int64_t first_index) = 0;
  // Feeds tree nodes (one batched forward); returns their draft logits [B, m, V] and appends their
  // draft rows to `rows` (to be used as parent_row of their children).
  virtual at::Tensor expand(const std::vector<DraftInput>& nodes, std::vector<int64_t>& rows) = 0;
  // The same for the device step (device_tree.h), reading nothing back to the host: `tokens` [m]
  // and `parent_rows` [m] (kRootRow or rows of earlier expand_on_device calls of this step) are
  // long tensors on the model's device, and every node sits at image index `index` (one tree
  // level). The new rows are the step's next m scratch rows, in order. A step uses one of the two
  // expansions, not both.
  virtual at::Tensor expand_on_device(const at::Tensor& tokens, const at::Tensor& parent_rows,
                                      int64_t index) = 0;
  // expand_on_device on fixed shapes (model/gpu/static_forward.h): one block per level width,
  // captured as a CUDA graph on first use where graphs are built. The decoding loop turns it on for
  // runs on fixed shapes; the drafts are the same either way.
  virtual void use_fixed_shapes(bool on) { fixed_ = on; }
  // Drops this step's tree rows.
  virtual void end_step() = 0;
  // The deepest level below the root the source drafts (a parallel head's depths); builders draft
  // no deeper.
  virtual int64_t max_depth() const { return std::numeric_limits<int64_t>::max(); }
  // Tree rows one step can feed through expand() (the scratch area of its cache).
  virtual int64_t scratch_rows() const = 0;
  // Milliseconds spent in draft-model forwards since the last call (then reset): the decoding loop
  // separates model time from tree bookkeeping in its statistics.
  double take_forward_ms() {
    const double t = forward_ms_;
    forward_ms_ = 0;
    return t;
  }

  // Graphs captured for expansions so far.
  virtual int64_t graphs() const { return 0; }

 protected:
  double forward_ms_ = 0;
  bool fixed_ = false;
};

constexpr int64_t kDefaultScratchRows = 192;

// EAGLE-1 head: its own KV cache for the accepted prefix; tree rows are temporary scratch
// (`scratch` rows: the largest tree's expansions, tree_builder.h max_draft_rows). `mixed`: the head
// predicts the CFG-mixed distribution from the conditional stream alone (model.json's
// drafter.output "mixed"), so it runs one stream and hands both CFG rows its logits.
std::unique_ptr<DraftSource> make_eagle_source(const model::Drafter& head, const model::Gpt& target,
                                               int64_t batch, int64_t scratch = kDefaultScratchRows,
                                               bool mixed = false);
// A GPT as the draft model (tokens only, features ignored).
std::unique_ptr<DraftSource> make_model_source(const model::Gpt& draft_model, int64_t batch,
                                               int64_t scratch = kDefaultScratchRows);

}  // namespace adtree::decode
