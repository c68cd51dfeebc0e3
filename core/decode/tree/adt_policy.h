// ADT-Tree's shape policy (SPEC_DECODING.md 5): each tree starts from the (d, k) stored at an
// adjacent, already committed cell, and after verification moves by bisection (or fixed steps)
// towards deeper-and-narrower when the tree's height was used (alpha = a / d >= beta), else towards
// shallower-and-wider. Every committed cell stores the post-update state of the step that made it;
// the prefill's cell 0 stores (d0, k0). A tree is named by the first cell it drafts, f = root + 1:
// its left neighbour (r, c - 1) is the root itself, committed by the step just before (so a step
// that committed only its bonus token hands its "shallower, wider" shape straight on).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "decode/settings/method.h"

namespace adtree::decode {

struct TreeShape {
  int64_t d = 0;  // draft levels
  int64_t k = 0;  // width
};

class AdtPolicy {
 public:
  // `seed` makes the random-shape baseline reproducible (Adjacency::Random).
  AdtPolicy(const AdtSettings& s, int64_t grid_h, int64_t grid_w, uint64_t seed = 0);

  // The prefill committed cell 0: it holds the initial shape (d0, k0).
  void start();
  // The shape of the tree whose first drafted cell is `first_cell` (the root's cell + 1); `origin`
  // (optional) says where it came from ("left neighbour (r, c)", ...), for step traces.
  // `confidence`: the draft head's top-1 probability at the root (Adjacency::Confidence only).
  TreeShape shape_for(int64_t first_cell, std::string* origin = nullptr,
                      double confidence = 0) const;
  // After verifying a tree built for shape `requested` with outcome alpha = a / (levels actually
  // built): the post-update shape, stored into every cell in `cells` (this step's commits).
  TreeShape update(TreeShape requested, double alpha, const std::vector<int64_t>& cells);
  // A step that tested no shape (cost-aware ADT drafted nothing from the head): its cells store
  // the shape they were given, unchanged.
  TreeShape keep(TreeShape shape, const std::vector<int64_t>& cells);

  // The bisection / step rule alone, for a given alpha.
  static TreeShape adapt(const AdtSettings& s, TreeShape t, double alpha);
  // The rule adapt() applied, in words ("alpha >= beta: deeper and narrower, halfway to ...").
  static std::string describe(const AdtSettings& s, double alpha);

 private:
  AdtSettings s_;
  int64_t h_, w_;
  uint64_t seed_;
  std::vector<TreeShape> cell_;  // d == 0: not committed yet
  TreeShape last_;               // "none": the last post-update shape, carried globally
};

}  // namespace adtree::decode
