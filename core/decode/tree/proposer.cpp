#include "decode/tree/proposer.h"

#include <algorithm>
#include <optional>

#include "decode/settings/method_table.h"
#include "decode/tree/adt_planner.h"
#include "decode/tree/adt_policy.h"
#include "util/device_sync.h"
#include "util/error.h"

namespace adtree::decode {

namespace {

// The draft-head proposers share the lifecycle of their DraftSource (draft_source.h): the rows
// each step feeds are the tokens committed by the last step, with their predecessors' features.
class DraftTreeProposer : public Proposer {
 public:
  explicit DraftTreeProposer(const ProposerInputs& in)
      : src_(*in.source), proc_(in.draft_proc), picker_(in.picker) {}

  void start(const model::Condition& cond, const at::Tensor& feature) override {
    src_.start(cond, feature);
    src_.take_forward_ms();  // the first rows are fed by the first step
    todo_feats_ = {feature};
  }

  DraftTree propose(const std::vector<int64_t>& committed, int64_t max_levels) override {
    auto root_logits = begin(committed);
    DraftContext ctx{src_,
                     proc_,
                     picker_,
                     root_logits,
                     committed.back(),
                     int64_t(committed.size()) - 1,
                     std::min(max_levels, src_.max_depth())};
    auto tree = build(ctx);
    src_.end_step();
    return tree;
  }

  DeviceTree propose_on_device(const std::vector<int64_t>& committed, int64_t max_levels) override {
    if (!builds_on_device()) return Proposer::propose_on_device(committed, max_levels);
    auto root_logits = begin(committed);
    DeviceDraftContext ctx{src_,
                           proc_,
                           picker_.rule,
                           picker_.noise,
                           root_logits,
                           committed.back(),
                           int64_t(committed.size()) - 1,
                           std::min(max_levels, src_.max_depth())};
    auto tree = build_on_device(ctx);
    src_.end_step();
    return tree;
  }

  void observe(const StepOutcome& out) override {
    // Next step's draft rows: each new token with the target feature of its predecessor. A step
    // that did not call the head leaves its rows waiting; they go in with the next call's.
    auto idx = to_device_async(at::tensor(out.parents, at::TensorOptions().dtype(at::kLong)),
                               out.hidden.device());
    auto feats = out.hidden.index_select(1, idx);
    if (fed_) {
      todo_tokens_ = out.new_tokens;
      todo_feats_ = {feats};
      todo_first_ = out.first_cell;
    } else {
      if (todo_tokens_.empty()) todo_tokens_ = {root_}, todo_first_ = out.first_cell - 1;
      todo_tokens_.insert(todo_tokens_.end(), out.new_tokens.begin(), out.new_tokens.end());
      todo_feats_.push_back(feats);  // joined once, when the head is called
    }
    fed_ = false;
  }

  double take_draft_ms() override { return src_.take_forward_ms(); }

 protected:
  virtual DraftTree build(DraftContext& ctx) = 0;
  virtual DeviceTree build_on_device(DeviceDraftContext&) {
    throw Error("this tree is not built on the device");
  }
  const ChildPicker& picker() const { return picker_; }

 private:
  // Feeds the rows committed by the last step; returns the draft logits after the root.
  at::Tensor begin(const std::vector<int64_t>& committed) {
    if (todo_tokens_.empty()) todo_tokens_ = {committed.back()}, todo_first_ = 0;
    fed_ = true;
    if (todo_feats_.size() > 1) todo_feats_ = {at::cat(todo_feats_, 1)};
    return src_.begin_step(todo_tokens_, todo_feats_.front(), todo_first_);
  }

 protected:
  // Rows the head's next call feeds (the tokens committed since its last call).
  int64_t waiting_rows() const {
    return fed_ ? 0 : std::max<int64_t>(1, int64_t(todo_tokens_.size()));
  }
  // A step that leaves the head alone: its rows wait for the next call (observe appends).
  void skip_head(int64_t root) { root_ = root; }

 private:
  DraftSource& src_;
  const LogitsProcessor& proc_;
  ChildPicker picker_;
  std::vector<int64_t> todo_tokens_;
  std::vector<at::Tensor> todo_feats_;  // [B, rows, dim] pieces, in order
  int64_t todo_first_ = 0;
  bool fed_ = false;  // the head was called this step (its waiting rows are in)
  int64_t root_ = 0;  // the root of a step that skipped the head
};

class StaticProposer : public DraftTreeProposer {
 public:
  explicit StaticProposer(const ProposerInputs& in)
      : DraftTreeProposer(in), spec_(StaticTreeSpec::preset(in.method.static_tree.preset)) {}
  int64_t budget() const override { return int64_t(spec_.paths.size()); }
  int64_t max_nodes() const override { return int64_t(spec_.paths.size()); }

 protected:
  DraftTree build(DraftContext& ctx) override { return build_static_tree(ctx, spec_); }

 private:
  StaticTreeSpec spec_;
};

// EAGLE-2's tree with fixed (D + 1, K); the budget N is fixed or follows the run (AdaptiveBudget).
class DynamicProposer : public DraftTreeProposer {
 public:
  explicit DynamicProposer(const ProposerInputs& in)
      : DraftTreeProposer(in),
        shape_{in.method.dynamic_tree.depth + 1, in.method.dynamic_tree.width},
        fixed_(in.budget),
        max_budget_(in.budget) {
    if (in.auto_budget) {
      adaptive_.emplace(*in.auto_budget);
      for (const auto& [n, ms] : in.auto_budget->cost_ms) max_budget_ = std::max(max_budget_, n);
    }
    if (max_budget_ < 1) throw Error("the verification budget N must be resolved (> 0)");
    last_budget_ = step_budget();
  }
  int64_t budget() const override { return last_budget_; }
  int64_t max_nodes() const override { return std::max<int64_t>(max_budget_, shape_.k); }
  bool builds_on_device() const override { return device_tree_supports(picker().rule); }
  void observe(const StepOutcome& out) override {
    DraftTreeProposer::observe(out);
    if (adaptive_) adaptive_->observe(out.tree, out.acc);
  }
  TreeShape planned_shape() const override { return planned_shape_; }

 protected:
  // The step's shape and budget N for the root at image index `root_index`; `confidence` is the
  // head's top-1 after the root where a policy needs it.
  struct Plan {
    TreeShape shape;
    int64_t n = 0;
  };
  virtual Plan plan(int64_t /*root_index*/, double /*confidence*/) {
    return {shape_, step_budget()};
  }
  virtual bool needs_confidence() const { return false; }
  // N for this step: the fixed or adaptive budget (ADT may shrink it to its shape).
  int64_t step_budget() const { return adaptive_ ? adaptive_->current() : fixed_; }
  int64_t max_budget() const { return max_budget_; }
  void set_last_budget(int64_t n) { last_budget_ = n; }
  void set_planned(TreeShape s) { planned_shape_ = s; }
  DraftTree build(DraftContext& ctx) override {
    const auto p = plan(ctx.root_index, needs_confidence() ? root_confidence(ctx) : 0.0);
    last_budget_ = p.n;
    planned_shape_ = p.shape;
    return build_dynamic_tree(ctx, p.shape.d, p.shape.k, p.n);
  }
  DeviceTree build_on_device(DeviceDraftContext& ctx) override {
    const auto p = plan(ctx.root_index, 0.0);
    last_budget_ = p.n;
    planned_shape_ = p.shape;
    return build_dynamic_tree_on_device(ctx, p.shape.d, p.shape.k, p.n);
  }

 private:
  TreeShape shape_;
  TreeShape planned_shape_;  // the last tree's planned shape
  int64_t fixed_, max_budget_;
  std::optional<AdaptiveBudget> adaptive_;
  int64_t last_budget_ = 0;
};

class AdtProposer : public DynamicProposer {
 public:
  explicit AdtProposer(const ProposerInputs& in)
      : DynamicProposer(in),
        s_(in.method.adt),
        policy_(in.method.adt, in.target.grid_h, in.target.grid_w, in.seed) {
    if (s_.budget_rule == AdtBudget::Cost) {
      if (!in.costs) throw Error("the ADT cost rule needs the device's cost curve");
      // Any candidate keeps these rules' tokens AR's (deterministic children would stay lossless
      // in distribution only, with other draws than the same tree without them).
      const bool any_candidate = in.rule == VerifyRule::Coupled || in.greedy;
      // No deeper than the source drafts (a parallel head's depths).
      const int64_t d_max = std::min(s_.d_max, in.source ? in.source->max_depth() : s_.d_max);
      planner_.emplace(*in.costs, in.target.grid_h, in.target.grid_w, d_max, s_.k_max, max_budget(),
                       s_.grid && any_candidate && in.method.acceptance == Acceptance::Lossless,
                       in.noise, s_.leftover, s_.grid_tree);
    }
  }
  int64_t max_nodes() const override {
    return std::max<int64_t>(max_budget(), s_.k_max * s_.d_max) + (planner_ ? kMaxFree : 0);
  }
  void start(const model::Condition& cond, const at::Tensor& feature) override {
    DynamicProposer::start(cond, feature);
    policy_.start();
    if (planner_) planner_->start();
  }
  DraftTree propose(const std::vector<int64_t>& committed, int64_t max_levels) override {
    if (!planner_) return DynamicProposer::propose(committed, max_levels);
    committed_ = committed;
    planned_ = true;
    shape_ = policy_.shape_for(int64_t(committed.size()), &origin_);
    plan_ = planner_->plan(committed, shape_, waiting_rows(), max_levels);
    DraftTree tree;
    if (plan_.d > 0) {
      tree = DynamicProposer::propose(committed, max_levels);
    } else {
      skip_head(committed.back());
      tree = root_only_tree(committed.back());
    }
    planner_->add_free(tree, committed, plan_);
    set_last_budget(tree.size() - 1);
    set_planned(shape_);  // the policy's shape, which the plan above may have cut down
    return tree;
  }
  void observe(const StepOutcome& out) override {
    DynamicProposer::observe(out);
    // alpha: the share of the levels actually built (after the budget and the image end).
    alpha_ = out.tree.levels > 0 ? double(out.acc.path.size()) / double(out.tree.levels) : 0.0;
    accepted_ = int64_t(out.acc.path.size());
    std::vector<int64_t> cells;
    for (size_t i = 0; i < out.new_tokens.size(); ++i) cells.push_back(out.first_cell + int64_t(i));
    if (planned_) {
      committed_.insert(committed_.end(), out.new_tokens.begin(), out.new_tokens.end());
      planner_->observe(out.tree, out.acc, committed_, out.first_cell, out.probs);
      // An AR-sized step says nothing of the shape: its cells keep the one they had.
      if (plan_.d == 0 && plan_.grid == 0) {
        next_ = policy_.keep(shape_, cells);
        return;
      }
    }
    next_ = policy_.update(shape_, alpha_, cells);
  }
  // The confidence-only baseline reads the head's root top-1 on the host; the device step builds
  // the full adjacency shape (what a flat cost curve chooses).
  bool builds_on_device() const override {
    return !needs_confidence() && DynamicProposer::builds_on_device();
  }
  void annotate(StepTrace& st) const override {
    st.has_adt = true;
    st.adt = AdtTrace{shape_.d,  shape_.k, origin_,
                      accepted_, alpha_,   s_.beta,
                      next_.d,   next_.k,  AdtPolicy::describe(s_, alpha_)};
    if (planned_) st.adt.rule += "; the step's plan: " + describe(plan_);
  }

 protected:
  bool needs_confidence() const override { return s_.adjacency == Adjacency::Confidence; }
  Plan plan(int64_t root_index, double confidence) override {
    if (planned_ && plan_.d > 0) return {TreeShape{plan_.d, plan_.k}, plan_.n};
    shape_ = policy_.shape_for(root_index + 1, &origin_, confidence);
    int64_t n = step_budget();
    if (s_.budget_rule == AdtBudget::Shape) n = std::min(n, shape_.d * shape_.k);
    return {shape_, n};
  }

 private:
  AdtSettings s_;
  AdtPolicy policy_;
  std::optional<AdtPlanner> planner_;
  StepPlan plan_;
  bool planned_ = false;  // this run's steps are the planner's (the host step)
  std::vector<int64_t> committed_;
  TreeShape shape_, next_;
  std::string origin_;
  double alpha_ = 0;
  int64_t accepted_ = 0;
};

class JacobiProposer : public Proposer {
 public:
  explicit JacobiProposer(const ProposerInputs& in, Rng& rng)
      : state_(in.method.method, in.method.jacobi, in.target.grid_h, in.target.grid_w,
               in.target.vocab_size, in.n_img, in.rule, in.noise),
        rng_(rng) {}
  void start(const model::Condition&, const at::Tensor&) override {}
  DraftTree propose(const std::vector<int64_t>& committed, int64_t max_levels) override {
    return state_.build_tree(committed, max_levels, rng_);
  }
  void observe(const StepOutcome& out) override { state_.recycle(out.acc, rng_); }
  bool head_drafts() const override { return false; }
  int64_t budget() const override { return state_.max_nodes(); }
  int64_t max_nodes() const override { return state_.max_nodes(); }
  JacobiState& state() { return state_; }

 private:
  JacobiState state_;
  Rng& rng_;
};

}  // namespace

DeviceTree Proposer::propose_on_device(const std::vector<int64_t>&, int64_t) {
  throw Error("this method's trees are not built on the device");
}

std::unique_ptr<Proposer> make_proposer(const ProposerInputs& in) {
  const auto& m = in.method.method;
  if (is_jacobi(m)) {
    if (!in.picker.rng) throw Error("make_proposer: the Jacobi proposer needs the job's Rng");
    return std::make_unique<JacobiProposer>(in, *in.picker.rng);
  }
  if (!in.source) throw Error("method '" + to_string(m) + "' needs a draft source");
  if (m == Method::Static) return std::make_unique<StaticProposer>(in);
  if (m == Method::Dynamic) return std::make_unique<DynamicProposer>(in);
  if (m == Method::Adt) return std::make_unique<AdtProposer>(in);
  throw Error("'" + to_string(m) + "' is not a draft-tree method");
}

JacobiState* jacobi_state(Proposer& p) {
  auto* j = dynamic_cast<JacobiProposer*>(&p);
  return j ? &j->state() : nullptr;
}

}  // namespace adtree::decode
