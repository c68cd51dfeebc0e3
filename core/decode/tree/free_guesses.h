// Free candidates of cost-aware ADT-Tree (SPEC_DECODING.md 5.8): codes for the next cells that no
// draft model proposed, so they cost a verification row and no head call. For a cell, in order:
// the target's own guess (the coupled choice of an earlier step's row that predicted this cell, as
// SJD's guesses), else the committed code above it; then the code to its left (the node it hangs
// below) where that differs. Each has a learned chance of being the target's token given that the
// candidates before it missed. They hang below the root and below the nodes of the head's rank-0
// path (where the head's own children miss), and chain on below each other: a tree of the head's
// drafts and the picture's free guesses together, picked best first by the chance of being reached.
#pragma once
#include <ATen/ATen.h>

#include <array>
#include <cstdint>
#include <vector>

#include "decode/tree/draft_tree.h"
#include "decode/verify/acceptance.h"
#include "decode/verify/coupling.h"

namespace adtree::decode {

constexpr int64_t kMaxFree = 16;  // free candidates one step may add

// A node free candidates may hang below: the root, or a node of the head's rank-0 path.
struct FreeAnchor {
  int64_t node = 0;    // its index in the tree
  int64_t depth = 0;   // 0: the root
  int64_t token = -1;  // its code; -1: not drafted yet (a plan's estimate)
  double open = 1;     // chance the path reaches it and none of its drafted children is right
  std::vector<int64_t> taken;  // its drafted children's codes: a free copy of one is not added
};

// A picked free candidate: below `parent` (a tree index) or, when `after` >= 0, below the
// after-th node of the same pick.
struct FreeNode {
  int64_t parent = 0;
  int64_t after = -1;
  int64_t depth = 1;
  int64_t token = -1;         // -1 only in plans (a left code of a node not drafted yet)
  double reach = 0;           // chance that the accepted path takes it
  bool first_of_cell = true;  // the first candidate of its cell below its parent
};

class FreeGuesses {
 public:
  // `noise` (optional): the run's coupling noise, which turns the target's rows of rejected nodes
  // into guesses for the cells they predict. `left`: offer the codes to the left too.
  FreeGuesses(int64_t grid_h, int64_t grid_w, CouplingNoise* noise, bool left = true);
  void start();

  // Up to `count` free nodes below the anchors, best first, none deeper than `max_depth`.
  // `committed` ends with the tree's root; depth j fills cell committed.size() + j - 1. Best is
  // the chance of being reached, plus `leftover` x the chance of not being reached for the first
  // candidate of a cell: verified and rejected, its row leaves a guess for the next cell (the
  // planner's look-ahead, AdtSettings::leftover), which a second candidate of the cell does not.
  std::vector<FreeNode> pick(const std::vector<int64_t>& committed,
                             const std::vector<FreeAnchor>& anchors, int64_t count,
                             int64_t max_depth, double leftover = 0.0) const;
  // Learns the kinds' hit rates from the cells committed in [from, to).
  void learn(const std::vector<int64_t>& committed, int64_t from, int64_t to);
  // Keeps the target's guesses from a verified tree's rows `probs` [nodes, V] (CPU).
  void keep_guesses(const DraftTree& tree, const AcceptResult& acc, int64_t first_cell,
                    int64_t committed, const at::Tensor& probs);

  struct Candidate {
    int64_t token = -1;
    double p = 0;  // chance it is the target's token, given the candidates before it missed
  };
  // At most two a cell, kept on the stack: the planner asks for them many times a step.
  class Candidates {
   public:
    void push_back(const Candidate& c) { items_[n_++] = c; }
    size_t size() const { return n_; }
    bool empty() const { return n_ == 0; }
    const Candidate& operator[](size_t i) const { return items_[i]; }
    const Candidate& at(size_t i) const { return items_.at(i < n_ ? i : items_.size()); }
    const Candidate* begin() const { return items_.data(); }
    const Candidate* end() const { return items_.data() + n_; }

   private:
    std::array<Candidate, 2> items_{};
    size_t n_ = 0;
  };
  // The candidates for `cell`, whose left neighbour holds `left` (-1: unknown); `first` is the
  // first cell not committed.
  Candidates candidates(const std::vector<int64_t>& committed, int64_t first, int64_t cell,
                        int64_t left) const;
  bool has_guesses() const { return noise_ != nullptr; }

 private:
  int64_t above_kind(const std::vector<int64_t>& tok, int64_t first, int64_t cell,
                     int64_t left) const;
  double chance(int64_t kind) const;

  int64_t h_, w_;
  CouplingNoise* noise_;
  bool left_;
  // Kinds 0-3: the code above, by neighbourhood; 4: a target guess; the code to the left where
  // the first candidate missed (5) or where there is none (6).
  double hits_[7] = {}, trials_[7] = {};
  std::vector<int64_t> guess_;  // per cell: the target's latest guess, -1 none
};

// Adds the picked nodes to the tree as free candidates (DraftNode::grid), scored below every
// drafted node; returns how many it added.
int64_t add_free_nodes(DraftTree& tree, const std::vector<FreeNode>& picked);

}  // namespace adtree::decode
