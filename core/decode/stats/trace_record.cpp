#include "decode/stats/trace_record.h"

#include <algorithm>

namespace adtree::decode {

CellTrace trace_cell(const at::Tensor& dist, int64_t cell, int64_t token, bool drafted,
                     const DraftTree* tree, int64_t parent, const TraceOptions& o) {
  auto d = dist.to(at::kCPU, at::kFloat).contiguous();
  const float* p = d.data_ptr<float>();
  const int64_t v = d.numel();
  CellTrace c;
  c.cell = cell;
  c.token = token;
  c.drafted = drafted;
  const int64_t n = std::min<int64_t>(std::max<int64_t>(o.top_n, 1), v);
  auto top = d.topk(n);
  auto tv = std::get<0>(top).contiguous(), ti = std::get<1>(top).contiguous();
  for (int64_t i = 0; i < n; ++i) {
    c.top_probs.push_back(tv.data_ptr<float>()[i]);
    c.top_tokens.push_back(ti.data_ptr<int64_t>()[i]);
  }
  c.top1 = c.top_probs.front();
  // Rank: tokens strictly more likely than the committed one (ties share the better rank).
  const float mine = token >= 0 && token < v ? p[token] : 0.f;
  int32_t rank = 0;
  for (int64_t i = 0; i < v; ++i) rank += p[i] > mine ? 1 : 0;
  c.target_rank = rank;
  if (tree && parent >= 0) {
    for (auto ch : tree->children(parent)) {
      const auto& nd = tree->nodes[size_t(ch)];
      c.cand_tokens.push_back(nd.token);
      c.cand_q.push_back(nd.q);
      c.cand_p.push_back(nd.token >= 0 && nd.token < v ? p[nd.token] : 0.f);
    }
  }
  return c;
}

StepTrace trace_tree_step(int64_t step, const DraftTree& tree, const at::Tensor& view,
                          const AcceptResult& acc, int64_t first_cell, const TraceOptions& o) {
  StepTrace t;
  t.step = step;
  auto vw = view.to(at::kCPU, at::kFloat).contiguous();
  const int64_t v = vw.size(1);
  const float* pv = vw.data_ptr<float>();
  std::vector<uint8_t> on_path(size_t(tree.size()), 0);
  on_path[0] = 1;
  for (auto id : acc.path) on_path[size_t(id)] = 1;
  // Nodes are stored parents first (tree builders append children after their parent), so a
  // prefix of the node list is itself a tree; the accepted path is always kept.
  const int64_t keep = std::min<int64_t>(tree.size(), std::max<int64_t>(o.max_nodes, 1));
  for (int64_t i = 0; i < tree.size(); ++i) {
    if (i >= keep && !on_path[size_t(i)]) {
      ++t.nodes_dropped;
      continue;
    }
    const auto& nd = tree.nodes[size_t(i)];
    TraceNode tn;
    tn.token = nd.token;
    tn.parent = nd.parent;
    tn.depth = int32_t(nd.depth);
    tn.rank = nd.rank;
    tn.score = float(nd.score);
    tn.q = nd.q;
    tn.p = i > 0 && nd.token >= 0 && nd.token < v ? pv[nd.parent * v + nd.token] : 1.f;
    tn.accepted = on_path[size_t(i)] != 0;
    tn.guess = nd.grid;
    t.nodes.push_back(tn);
  }
  if (t.nodes_dropped > 0) {
    // Renumber parents and the path for the kept subset.
    std::vector<int64_t> new_id(size_t(tree.size()), -1);
    int64_t next = 0;
    for (int64_t i = 0; i < tree.size(); ++i) {
      if (i < keep || on_path[size_t(i)]) new_id[size_t(i)] = next++;
    }
    for (auto& tn : t.nodes) tn.parent = tn.parent >= 0 ? new_id[size_t(tn.parent)] : -1;
    for (auto id : acc.path) t.path.push_back(new_id[size_t(id)]);
  } else {
    t.path = acc.path;
  }
  t.has_bonus = acc.has_bonus;
  t.bonus = acc.bonus;
  // Committed cells: the path's tokens (predicted by their parents), then the bonus.
  int64_t parent = 0, cell = first_cell;
  for (auto id : acc.path) {
    const auto& nd = tree.nodes[size_t(id)];
    t.cells.push_back(trace_cell(vw[parent], cell++, nd.token, true, &tree, parent, o));
    parent = id;
  }
  if (acc.has_bonus)
    t.cells.push_back(trace_cell(vw[parent], cell, acc.bonus, false, &tree, parent, o));
  return t;
}

}  // namespace adtree::decode
