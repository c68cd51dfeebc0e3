#include "decode/device/device_tree.h"

#include <algorithm>
#include <vector>

#include "util/error.h"

namespace adtree::decode {

namespace {

// The top-k children of draft rows q [F, V] by the rule's key, in rank order (a stable sort:
// ties go to the lower token id, as on the host), with what each adds to its parent's score.
struct Children {
  at::Tensor tokens, q, inc;  // [F, k]
};
Children top_children(const at::Tensor& q, const at::Tensor& noise_row, int64_t k) {
  const auto qd = q.to(at::kDouble);
  const auto key = noise_row.defined() ? qd * noise_row : qd;
  const auto sorted = at::sort(key, /*stable=*/true, -1, /*descending=*/true);
  const auto vals = std::get<0>(sorted).narrow(-1, 0, k);
  const auto ids = std::get<1>(sorted).narrow(-1, 0, k);
  // log q, or log(q w / sum q w): the draft's belief in its guess of the Gumbel-max token.
  const auto inc = noise_row.defined() ? (vals / key.sum(-1, true)).log() : vals.log();
  return {ids, q.gather(-1, ids), inc};
}

// The candidates recorded so far, level by level (root first), as the host builder's `cands`.
struct LevelCandidates {
  std::vector<at::Tensor> tokens, parents, depths, ranks, scores, q;
  int64_t count = 0;
  void add(const at::Tensor& tok, const at::Tensor& par, int64_t depth, const at::Tensor& rank,
           const at::Tensor& score, const at::Tensor& qq) {
    tokens.push_back(tok.reshape(-1));
    parents.push_back(par.reshape(-1));
    depths.push_back(at::full({tok.numel()}, depth, tok.options()));
    ranks.push_back(rank.reshape(-1));
    scores.push_back(score.reshape(-1));
    q.push_back(qq.reshape(-1).to(at::kFloat));
    count += tok.numel();
  }
};

// One level's children of the frontier (K nodes with ids `ids` and scores): recorded, and the
// next frontier is the K best of them by score (stable: ties to the earlier candidate).
struct Frontier {
  at::Tensor ids, tokens, scores, parent_rows;  // [K] on the device
};
Frontier record_level(LevelCandidates& c, const Frontier& f, const Children& kids, int64_t level,
                      const at::Tensor& rows_of_frontier) {
  const int64_t F = kids.tokens.size(0), k = kids.tokens.size(1);
  const auto lopts = kids.tokens.options();
  const int64_t first = c.count;
  const auto scores = (f.scores.unsqueeze(1) + kids.inc).reshape(-1);
  c.add(kids.tokens, f.ids.unsqueeze(1).expand({F, k}), level, at::arange(k, lopts).repeat({F}),
        scores, kids.q);
  const int64_t next = std::min<int64_t>(k, F * k);
  const auto order = std::get<1>(at::sort(scores, true, 0, true)).narrow(0, 0, next);
  return Frontier{order + first, kids.tokens.reshape(-1).index_select(0, order),
                  scores.index_select(0, order),
                  rows_of_frontier.unsqueeze(1).expand({F, k}).reshape(-1).index_select(0, order)};
}

// Rerank: the root and the N best candidates by score (ties to the earlier one), in recording
// order, with parents renumbered and the ancestor matrix.
DeviceTree rerank(const LevelCandidates& c, int64_t budget, int64_t levels) {
  const auto tokens = at::cat(c.tokens), parents = at::cat(c.parents), scores = at::cat(c.scores);
  const auto lopts = tokens.options();
  int64_t keep = c.count - 1;
  if (budget > 0) keep = std::min(keep, budget);
  const auto best = std::get<1>(at::sort(scores.narrow(0, 1, c.count - 1), true, 0, true));
  const auto chosen = std::get<0>(at::sort(best.narrow(0, 0, keep) + 1));
  const auto ids = at::cat({at::zeros({1}, lopts), chosen});
  const int64_t n = keep + 1;
  // Scores never rise from a parent to its child and ties go to the earlier candidate, so every
  // chosen node's parent is chosen too (the host builder checks this; here it holds by the same
  // argument, and the tests compare the two trees).
  const auto new_id = at::zeros({c.count}, lopts).index_copy_(0, ids, at::arange(n, lopts));
  DeviceTree t;
  t.tokens = tokens.index_select(0, ids);
  t.parents = new_id.index_select(0, parents.index_select(0, ids));
  t.depths = at::cat(c.depths).index_select(0, ids);
  t.ranks = at::cat(c.ranks).index_select(0, ids);
  t.scores = scores.index_select(0, ids);
  t.q = at::cat(c.q).index_select(0, ids);
  const auto self = at::eye(n, lopts.dtype(at::kBool));
  t.ancestors = self;
  for (int64_t l = 0; l < levels; ++l) {
    t.ancestors = self.logical_or(t.ancestors.index_select(0, t.parents));
  }
  t.size = n;
  t.levels = levels;
  return t;
}

}  // namespace

bool device_tree_supports(VerifyRule rule) {
  return rule == VerifyRule::Deterministic || rule == VerifyRule::Coupled;
}

DeviceTree build_dynamic_tree_on_device(DeviceDraftContext& ctx, int64_t levels, int64_t width,
                                        int64_t budget) {
  if (!device_tree_supports(ctx.rule)) {
    throw Error("the device step builds trees for the deterministic and coupled rules only");
  }
  levels = std::min(levels, ctx.max_levels);
  if (budget > 0) levels = std::min(levels, budget);  // N nodes hold at most N levels
  const auto device = ctx.root_logits.device();
  const int64_t k = std::min(width, ctx.root_logits.size(-1));
  if (levels < 1 || k < 1) throw Error("the device step needs at least one level of width >= 1");
  // exp(g) of the cells the tree's rows predict (root + 1 .. root + levels + 1): the draft keys
  // use the first `levels`, verification all of them.
  at::Tensor noise;
  if (ctx.rule == VerifyRule::Coupled)
    noise = ctx.noise->weights_on(ctx.root_index + 1, levels + 1, device);
  auto noise_row = [&](int64_t level) { return noise.defined() ? noise[level - 1] : at::Tensor(); };
  const auto lopts = at::TensorOptions().device(device).dtype(at::kLong);

  LevelCandidates c;
  c.add(at::full({1}, ctx.root_token, lopts), at::zeros({1}, lopts), 0, at::zeros({1}, lopts),
        at::zeros({1}, lopts.dtype(at::kDouble)), at::ones({1}, lopts.dtype(at::kFloat)));
  const auto q0 =
      ctx.draft_proc.process_rows(ctx.root_logits.unsqueeze(1), {ctx.root_index + 1}).probs;
  Frontier root{at::zeros({1}, lopts), {}, at::zeros({1}, lopts.dtype(at::kDouble)), {}};
  auto frontier =
      record_level(c, root, top_children(q0, noise_row(1), k), 1, at::full({1}, kRootRow, lopts));
  for (int64_t level = 2; level <= levels; ++level) {
    // Expand the frontier (its nodes sit at depth level - 1), then record their children.
    const int64_t first_row = (level - 2) * k, F = frontier.ids.numel();
    const auto logits = ctx.source.expand_on_device(frontier.tokens, frontier.parent_rows,
                                                    ctx.root_index + level - 1);
    const auto q =
        ctx.draft_proc.process_rows(logits, std::vector<int64_t>(size_t(F), ctx.root_index + level))
            .probs;
    frontier = record_level(c, frontier, top_children(q, noise_row(level), k), level,
                            at::arange(first_row, first_row + F, lopts));
  }
  auto tree = rerank(c, budget, levels);
  tree.noise = noise;
  tree.width = width;
  tree.root_index = ctx.root_index;
  return tree;
}

}  // namespace adtree::decode
