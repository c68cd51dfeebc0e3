// Training-free Jacobi drafting (SPEC_DECODING.md 6): SJD, PathSpec's PathExplore / PathRelax and
// SJD-PAC.
// No draft model: the drafts are guesses for the next image cells that the target's own
// verification forward refines. JacobiState is the draft source, tree builder and acceptance rule
// of these methods inside the one decoding loop (spec_decoder.cpp); the loop still does the target
// forward with the ancestor mask, the KV compaction and the statistics.
//
// Per path it keeps a window of drafts for the cells after the root, each with the distribution q
// it was drawn from. A step:
//   build_tree  SJD: one chain of L drafts under the root; PathExplore: K chains sharing the root.
//               Missing slots are filled first: a random code, or (spatial init) the code of the
//               cell to the left, both as point masses.
//   accept      per chain, min(1, p/q) left to right with the residual norm(max(0, p - q)) at the
//               first rejection (verify_tree's WithoutReplacement rule on a chain); PathExplore
//               keeps the chain that accepted most, PathRelax raises p(x) by lambda x the mean p of
//               the other chains' tokens at the same depth (lossy).
//   recycle     cells after the new root that the forward predicted take a new sample from the
//               target row that predicted them, with q := that row (SJD's "recycling").
// SJD-PAC (Kang et al., proactive drafting + adaptive continuation) is SJD with a small tree at the
// front of the window: the first `pac_levels` cells after the root get `pac_width` candidates
// each, the window's draft and K - 1 more drawn without replacement from its q (distinct
// independent guesses where the draft is a point mass; the next Gumbel-top-k choices when
// coupled); every candidate of a level sits under every node of the level above, the rest of the
// window is one chain under candidate 0. Verification is the tree's recursive rejection with
// q minus the candidates already rejected (verify_tree's WithoutReplacement rule), or the coupled
// rule; a level whose candidates all fail samples the residual. Adaptive continuation, keeping
// later drafts by a coupling with the stale rows instead of redrawing them, is the maximal rule
// below (and the coupled rule keeps drafts by construction).
// Speculative Coupled Decoding (So et al., SCD / MC-SJD) changes how the new samples are drawn:
//   sampled     independently (plain SJD);
//   coupled     Gumbel-max with the cell's shared noise, argmax q * exp(g): a draft changes only
//               where the row changed enough, and verification is "equal to the target's
//               Gumbel-max choice" (verify_coupled), token-identical to coupled AR; the longest
//               chain of PathExplore is then lossless too, since every chain commits AR's tokens;
//   maximal     a maximal coupling with the cell's previous draft (keep it with probability
//               min(1, q_new / q_old), else draw the residual), min(1, p/q) verification:
//               lossless in distribution.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

#include "decode/settings/method.h"
#include "decode/tree/draft_tree.h"
#include "decode/verify/acceptance.h"
#include "decode/verify/coupling.h"
#include "decode/verify/lantern.h"
#include "util/rng.h"

namespace adtree::decode {

class JacobiState {
 public:
  // `method` is Method::Sjd, PathSpec or SjdPac; the grid gives spatial init its neighbours;
  // `n_img` is the number of image tokens this generation produces (the stop margin counts back
  // from it). `rule`: Sampled, Coupled or Maximal; `noise` is the run's shared noise (Coupled reads
  // it).
  JacobiState(Method method, const JacobiSettings& settings, int64_t grid_h, int64_t grid_w,
              int64_t vocab, int64_t n_img, VerifyRule rule = VerifyRule::Sampled,
              CouplingNoise* noise = nullptr);

  int64_t paths() const { return paths_; }
  int64_t length() const { return length_; }  // L (SJD window) or path length (PathExplore)
  int64_t max_nodes() const;  // drafted nodes of the largest tree these settings build
  std::string label() const;  // method name for the statistics

  // The draft tree for the step whose root is the last of `committed` (image index n): node 0 the
  // root, then path k's drafts at depths 1..d as nodes 1 + k*d .. (k+1)*d, rank = k. d is
  // min(length, max_levels), or 0 inside a start/stop margin (a plain AR step in the same loop).
  DraftTree build_tree(const std::vector<int64_t>& committed, int64_t max_levels, Rng& rng);

  // Verification of the tree built last, given the target rows p [nodes, V] (any device): the
  // accepted node ids of the winning chain and the bonus / residual token. `max_depth` as in
  // verify_tree.
  AcceptResult accept(const DraftTree& tree, const at::Tensor& p, const LanternRule* lantern,
                      int64_t max_depth, Rng& rng);

  // After accept(): the cells beyond the new root that rows of this forward predicted get new
  // samples with q := their row; untouched later slots are kept.
  void recycle(const AcceptResult& acc, Rng& rng);

 private:
  struct Draft {
    int64_t token = 0;
    at::Tensor q;  // [V] CPU fp32 the token was drawn from; undefined = point mass on `token`
  };
  int64_t levels_for(int64_t root_index, int64_t max_levels) const;
  int64_t init_token(int64_t path, int64_t index, const std::vector<int64_t>& committed,
                     Rng& rng) const;
  // The next draft for `cell` from the row q (CPU fp32 [V]), `prev` the cell's draft so far.
  int64_t redraw(const at::Tensor& q, int64_t cell, const Draft* prev, Rng& rng) const;
  int64_t node_id(int64_t path, int64_t depth) const;  // depth >= 1, in the tree built last
  // The node whose row predicted the cell after depth `depth` of path `path` (recycle's row).
  int64_t row_of(int64_t path, int64_t depth) const;
  // SJD-PAC (jacobi_pac.cpp): the tree of the step, and the candidates of a tree level.
  DraftTree build_pac_tree(int64_t d, Rng& rng);
  std::vector<int64_t> pac_candidates(const Draft& draft, int64_t cell, Rng& rng) const;

  Method method_;
  JacobiSettings s_;
  VerifyRule rule_;
  CouplingNoise* noise_;
  int64_t paths_, length_, grid_h_, grid_w_, vocab_, n_img_;
  std::vector<std::vector<Draft>> window_;  // [path][i] = draft for image index base_ + i
  int64_t base_ = -1;
  // The last tree's layout and verification rows (CPU), for recycle().
  int64_t root_index_ = 0, levels_ = 0;
  // SJD-PAC's last tree: the node id of candidate 0 at each depth (index 0 = the root), i.e. the
  // main path the chain continues; the tree's node count.
  std::vector<int64_t> pac_main_;
  int64_t pac_nodes_ = 0;
  at::Tensor p_cpu_;
};

}  // namespace adtree::decode
