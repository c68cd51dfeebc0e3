#include "decode/stats/step_recorder.h"

#include <algorithm>

#include "decode/stats/trace_record.h"

namespace adtree::decode {

void StepRecorder::emit(const std::vector<int64_t>& tokens, const std::vector<CellStats>& cells,
                        const StepTrace* trace) {
  if (!on_step_) return;
  on_step_(StepEvent{stats_.steps.back(), tokens, cells, trace});
}

void StepRecorder::cells_step(StepRecord rec, const std::vector<int64_t>& cells,
                              const std::vector<int64_t>& tokens,
                              const std::vector<CellStats>& stats) {
  for (size_t i = 0; i < cells.size(); ++i) {
    stats_.grids.set(cells[i], stats[i]);
    if (stats[i].origin == TokenOrigin::Guess) ++rec.accepted_guess;
    if (stats[i].origin == TokenOrigin::Head) ++rec.accepted_head;
  }
  rec.method = stats_.method;
  rec.committed = int64_t(tokens.size());
  rec.first_cell = cells.empty() ? 0 : cells.front();
  rec.cells = cells;
  stats_.add_step(rec);
  emit(tokens, stats, nullptr);
}

void StepRecorder::prefill(const Processed& p0, int64_t token, double verify_ms, double sample_ms) {
  StepRecord rec;
  rec.method = stats_.method;
  rec.committed = 1;
  rec.cum_tokens = 1;
  rec.target_forwards = 1;
  rec.t_verify_ms = verify_ms;
  rec.t_sample_ms = sample_ms;
  CellStats cs;
  cs.top1 = p0.top1[0].item<float>();
  cs.accept_len = 1;
  stats_.grids.set(0, cs);
  stats_.add_step(rec);
  if (trace_.enabled) {
    StepTrace st;  // the prefill: no tree, the target samples the first token
    st.has_bonus = true;
    st.bonus = token;
    st.cells.push_back(trace_cell(p0.view[0], 0, token, false, nullptr, -1, trace_));
    stats_.traces.push_back(std::move(st));
  }
  emit({token}, {cs}, trace_.enabled ? &stats_.traces.back() : nullptr);
}

namespace {
// The drafted tree as it ran: its deepest level and its widest level (head nodes and free
// candidates together; 0 x 0 for a root alone).
TreeShape ran_shape(const DraftTree& tree) {
  std::vector<int64_t> per_level;
  for (const auto& n : tree.nodes) {
    if (n.depth == 0) continue;
    if (int64_t(per_level.size()) < n.depth) per_level.resize(size_t(n.depth), 0);
    ++per_level[size_t(n.depth - 1)];
  }
  TreeShape s{int64_t(per_level.size()), 0};
  for (int64_t c : per_level) s.k = std::max(s.k, c);
  return s;
}
}  // namespace

void StepRecorder::step(StepRecord rec, const CommittedStep& s, const Proposer& proposer) {
  const auto& tree = s.tree;
  const int64_t a = int64_t(s.acc.path.size());
  const TreeShape ran = ran_shape(tree);
  TreeShape plan = proposer.planned_shape();
  if (plan.d == 0 && plan.k == 0) plan = {tree.levels, tree.width};  // the tree is the plan
  auto top1 = s.target.top1.to(at::kCPU);
  const float* top1_p = top1.data_ptr<float>();
  std::vector<CellStats> cells;
  for (size_t i = 0; i < s.new_tokens.size(); ++i) {
    CellStats cs;
    const bool drafted = int64_t(i) < a;
    const auto* node = drafted ? &tree.nodes[size_t(s.acc.path[i])] : nullptr;
    cs.depth = node ? int32_t(node->depth) : 0;
    cs.rank = node ? node->rank : 0;
    cs.top1 = top1_p[s.parents[i]];  // p at the node that predicted it
    cs.accept_len = int32_t(s.new_tokens.size());
    cs.tree_depth = int32_t(ran.d);
    cs.tree_width = int32_t(ran.k);
    cs.plan_depth = int32_t(plan.d);
    cs.plan_width = int32_t(plan.k);
    cs.origin = !node                                   ? TokenOrigin::Target
                : node->grid || !proposer.head_drafts() ? TokenOrigin::Guess
                                                        : TokenOrigin::Head;
    if (drafted) ++(cs.origin == TokenOrigin::Guess ? rec.accepted_guess : rec.accepted_head);
    stats_.grids.set(s.first_cell + int64_t(i), cs);
    cells.push_back(cs);
  }
  rec.method = stats_.method;
  rec.tree_depth = ran.d;
  rec.tree_width = ran.k;
  rec.plan_depth = plan.d;
  rec.plan_width = plan.k;
  rec.drafted = tree.size() - 1;
  rec.grid = std::count_if(tree.nodes.begin(), tree.nodes.end(),
                           [](const DraftNode& n) { return n.grid; });
  rec.committed = int64_t(s.new_tokens.size());
  rec.alpha = tree.levels > 0 ? double(a) / double(tree.levels) : 0.0;
  rec.first_cell = s.first_cell;
  rec.cum_tokens = s.first_cell + rec.committed;
  rec.budget = proposer.budget();
  stats_.add_step(rec);
  if (trace_.enabled) {
    // After the timings: tracing is for inspection and must not colour the step's time split.
    auto st = trace_tree_step(rec.step, tree, s.target.view, s.acc, s.first_cell, trace_);
    if (!proposer.head_drafts()) {
      for (size_t i = 1; i < st.nodes.size(); ++i) st.nodes[i].guess = true;
    }
    proposer.annotate(st);
    stats_.traces.push_back(std::move(st));
  }
  emit(s.new_tokens, cells, trace_.enabled ? &stats_.traces.back() : nullptr);
}

}  // namespace adtree::decode
