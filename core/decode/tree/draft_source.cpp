#include "decode/tree/draft_source.h"

#include <c10/core/InferenceMode.h>

#include <chrono>
#include <map>

#include "model/gpu/cuda_graph.h"
#include "model/gpu/static_forward.h"
#include "util/clock.h"
#include "util/error.h"

namespace adtree::decode {

namespace {

// Adds the wall time of its scope to a millisecond counter.
class ScopedTimer {
 public:
  explicit ScopedTimer(double& acc) : acc_(acc), t0_(Clock::now()) {}
  ~ScopedTimer() { acc_ += ms_since(t0_); }

 private:
  double& acc_;
  Clock::time_point t0_;
};

at::Tensor long_tensor(const std::vector<int64_t>& v) {
  return at::tensor(v, at::TensorOptions().dtype(at::kLong));
}

// Scratch bookkeeping shared by both sources: each tree row remembers its parent row, so the
// attention mask of new rows over earlier scratch rows is "ancestors and self".
class ScratchRows {
 public:
  void clear() { parent_.clear(); }
  int64_t size() const { return int64_t(parent_.size()); }
  // Mask [m, size + m] for new rows with the given parents (appended afterwards).
  at::Tensor mask_for(const std::vector<DraftInput>& nodes) const {
    const int64_t s = size(), m = int64_t(nodes.size());
    auto mask = at::zeros({m, s + m}, at::kBool);
    auto acc = mask.accessor<bool, 2>();
    for (int64_t i = 0; i < m; ++i) {
      acc[i][s + i] = true;
      for (int64_t a = nodes[size_t(i)].parent_row; a != kRootRow; a = parent_[size_t(a)]) {
        acc[i][a] = true;
      }
    }
    return mask;
  }
  void append(const std::vector<DraftInput>& nodes, std::vector<int64_t>& rows) {
    for (const auto& n : nodes) {
      if (n.parent_row != kRootRow && (n.parent_row < 0 || n.parent_row >= size())) {
        throw Error("draft source: unknown parent row");
      }
      rows.push_back(size());
      parent_.push_back(n.parent_row);
    }
  }

 private:
  std::vector<int64_t> parent_;
};

// The same bookkeeping on the device: the ancestor matrix of the scratch rows [s, s] (a row sees
// itself and its ancestors), grown level by level from parent rows that stay on the device.
class DeviceScratch {
 public:
  void clear() {
    anc_ = at::Tensor();
    rows_ = 0;
  }
  int64_t size() const { return rows_; }
  // Appends rows with the given parents and returns their mask [m, s + m].
  at::Tensor append(const at::Tensor& parent_rows, int64_t capacity) {
    const int64_t m = parent_rows.numel(), s = rows_;
    if (s + m > capacity) throw Error("draft source: the tree outgrows the scratch rows");
    const auto opts = parent_rows.options().dtype(at::kBool);
    const auto self = at::eye(m, opts);
    at::Tensor mask = self;
    if (s > 0) {
      // Row 0 of `seen` stands for the root (kRootRow + 1), which is no scratch row.
      const auto seen = at::cat({at::zeros({1, s}, opts), anc_}).index_select(0, parent_rows + 1);
      mask = at::cat({seen, self}, 1);
      anc_ = at::cat({at::cat({anc_, at::zeros({s, m}, opts)}, 1), mask});
    } else {
      anc_ = self;
    }
    rows_ += m;
    return mask;
  }

 private:
  at::Tensor anc_;
  int64_t rows_ = 0;
};

// The device step's expansions on fixed shapes: per level width one block and features buffer,
// captured as a graph on first use where graphs are built (eager otherwise).
class FixedLevels {
 public:
  struct Level {
    model::StaticBlock block;
    at::Tensor feats;
    std::unique_ptr<model::GraphedForward> graph;
  };
  // Fills the level's block and runs `forward` (on the block and feats) or its graph.
  template <class Forward>
  model::Gpt::Output run(model::KvCache& cache, const model::Rope2d& rope, const at::Tensor& tokens,
                         const at::Tensor& pos, const at::Tensor& mask, const at::Tensor& feats,
                         Forward forward) {
    const int64_t m = tokens.size(1);
    auto it = levels_.find(m);
    if (it == levels_.end()) {
      it = levels_.emplace(m, Level{model::new_static_block(cache, m), {}, nullptr}).first;
    }
    auto& lv = it->second;
    if (feats.defined()) {
      if (!lv.feats.defined()) lv.feats = at::empty_like(feats);
      lv.feats.copy_(feats);
    }
    model::fill_static_block(lv.block, cache, rope, tokens, pos, mask);
    const auto run = [&] { return forward(lv.block, lv.feats); };
    if (!lv.graph) lv.graph = model::capture_graph(run, cache.key_bias.device());
    return lv.graph ? lv.graph->replay() : run();
  }
  int64_t graphs() const {
    int64_t n = 0;
    for (const auto& [m, lv] : levels_) n += lv.graph ? 1 : 0;
    return n;
  }

 private:
  std::map<int64_t, Level> levels_;
};

class EagleSource : public DraftSource {
 public:
  EagleSource(const model::Drafter& head, const model::Gpt& target, int64_t batch, int64_t scratch)
      : head_(head),
        target_(target),
        batch_(batch),
        scratch_rows_(scratch),
        cache_(head.new_cache(batch, scratch)) {}

  int64_t scratch_rows() const override { return scratch_rows_; }

  void start(const model::Condition&, const at::Tensor& root_feature) override {
    cache_.truncate(0);
    scratch_.clear();
    last_feature_ = root_feature;
  }

  at::Tensor begin_step(const std::vector<int64_t>& tokens, const at::Tensor& feats,
                        int64_t first_index) override {
    c10::InferenceMode guard;
    const int64_t m = int64_t(tokens.size());
    auto toks = long_tensor(tokens).unsqueeze(0).expand({batch_, m});
    auto pos = at::arange(first_index, first_index + m, at::kLong) + target_.config().cond_tokens();
    ScopedTimer timer(forward_ms_);
    auto out = head_.forward(&cache_, feats, toks, pos);
    cache_.commit();
    scratch_.clear();
    device_scratch_.clear();
    root_hidden_ = out.hidden.narrow(1, m - 1, 1);
    hidden_.clear();
    level_hidden_ = {root_hidden_};
    return out.logits.select(1, m - 1);
  }

  at::Tensor expand_on_device(const at::Tensor& tokens, const at::Tensor& parent_rows,
                              int64_t index) override {
    c10::InferenceMode guard;
    const int64_t m = tokens.numel();
    // Feature of each node: its parent row's predicted hidden (the root's first).
    const auto feats = at::cat(level_hidden_, 1).index_select(1, parent_rows + 1);
    const auto mask = device_scratch_.append(parent_rows, scratch_rows_);
    const auto pos = at::full({m}, target_.config().cond_tokens() + index, at::kLong);
    const auto toks = tokens.unsqueeze(0).expand({batch_, m});
    ScopedTimer timer(forward_ms_);
    if (fixed_) {
      const auto out = fixed_levels_.run(cache_, target_.rope(), toks, pos, mask, feats,
                                         [&](const model::StaticBlock& b, const at::Tensor& f) {
                                           auto o = head_.forward_static(b, f, cache_);
                                           return model::Gpt::Output{o.logits, o.hidden};
                                         });
      level_hidden_.push_back(out.hidden.clone());  // the next replay overwrites it
      return out.logits;
    }
    auto out = head_.forward(&cache_, feats, toks, pos, mask);
    level_hidden_.push_back(out.hidden);
    return out.logits;
  }
  int64_t graphs() const override { return fixed_levels_.graphs(); }

  at::Tensor expand(const std::vector<DraftInput>& nodes, std::vector<int64_t>& rows) override {
    c10::InferenceMode guard;
    const int64_t m = int64_t(nodes.size());
    std::vector<at::Tensor> feats;
    std::vector<int64_t> toks, pos;
    for (const auto& n : nodes) {
      feats.push_back(n.parent_row == kRootRow ? root_hidden_ : hidden_[size_t(n.parent_row)]);
      toks.push_back(n.token);
      pos.push_back(target_.config().cond_tokens() + n.index);
    }
    auto mask = scratch_.mask_for(nodes);
    ScopedTimer timer(forward_ms_);
    auto out =
        head_.forward(&cache_, at::cat(feats, 1),
                      long_tensor(toks).unsqueeze(0).expand({batch_, m}), long_tensor(pos), mask);
    scratch_.append(nodes, rows);
    for (int64_t i = 0; i < m; ++i) hidden_.push_back(out.hidden.narrow(1, i, 1));
    return out.logits;
  }

  void end_step() override {
    cache_.pending = 0;
    scratch_.clear();
    device_scratch_.clear();
    hidden_.clear();
    level_hidden_.clear();
  }

 private:
  const model::Drafter& head_;
  const model::Gpt& target_;
  int64_t batch_, scratch_rows_;
  model::KvCache cache_;
  ScratchRows scratch_;
  DeviceScratch device_scratch_;
  FixedLevels fixed_levels_;
  at::Tensor last_feature_, root_hidden_;
  std::vector<at::Tensor> hidden_;        // per scratch row [B, 1, D]
  std::vector<at::Tensor> level_hidden_;  // device step: the root's, then per level [B, m, D]
};

class ModelSource : public DraftSource {
 public:
  ModelSource(const model::Gpt& model, int64_t batch, int64_t scratch)
      : model_(model),
        batch_(batch),
        scratch_rows_(scratch),
        cache_(model.new_cache(batch, scratch)) {}

  int64_t scratch_rows() const override { return scratch_rows_; }

  void start(const model::Condition& cond, const at::Tensor&) override {
    c10::InferenceMode guard;
    model_.prefill(cache_, cond);
    scratch_.clear();
  }

  at::Tensor begin_step(const std::vector<int64_t>& tokens, const at::Tensor&,
                        int64_t first_index) override {
    c10::InferenceMode guard;
    const int64_t m = int64_t(tokens.size());
    ScopedTimer timer(forward_ms_);
    auto out = model_.forward_tokens(cache_, long_tensor(tokens).unsqueeze(0).expand({batch_, m}),
                                     first_index);
    cache_.commit();
    scratch_.clear();
    device_scratch_.clear();
    return out.logits.select(1, m - 1);
  }

  at::Tensor expand_on_device(const at::Tensor& tokens, const at::Tensor& parent_rows,
                              int64_t index) override {
    c10::InferenceMode guard;
    const int64_t m = tokens.numel();
    const auto mask = device_scratch_.append(parent_rows, scratch_rows_);
    const auto pos = at::full({m}, model_.config().cond_tokens() + index, at::kLong);
    const auto toks = tokens.unsqueeze(0).expand({batch_, m});
    ScopedTimer timer(forward_ms_);
    if (fixed_) {
      return fixed_levels_
          .run(cache_, model_.rope(), toks, pos, mask, {},
               [&](const model::StaticBlock& b, const at::Tensor&) {
                 return model_.forward_static(b, cache_);
               })
          .logits;
    }
    return model_.forward(model_.embed_tokens(toks), pos, &cache_, mask).logits;
  }
  int64_t graphs() const override { return fixed_levels_.graphs(); }

  at::Tensor expand(const std::vector<DraftInput>& nodes, std::vector<int64_t>& rows) override {
    c10::InferenceMode guard;
    const int64_t m = int64_t(nodes.size());
    std::vector<int64_t> toks, pos;
    for (const auto& n : nodes) {
      toks.push_back(n.token);
      pos.push_back(model_.config().cond_tokens() + n.index);
    }
    auto mask = scratch_.mask_for(nodes);
    ScopedTimer timer(forward_ms_);
    auto out =
        model_.forward(model_.embed_tokens(long_tensor(toks).unsqueeze(0).expand({batch_, m})),
                       long_tensor(pos), &cache_, mask);
    scratch_.append(nodes, rows);
    return out.logits;
  }

  void end_step() override {
    cache_.pending = 0;
    scratch_.clear();
    device_scratch_.clear();
  }

 private:
  const model::Gpt& model_;
  int64_t batch_, scratch_rows_;
  model::KvCache cache_;
  ScratchRows scratch_;
  DeviceScratch device_scratch_;
  FixedLevels fixed_levels_;
};

// A head that predicts the guided distribution itself runs on the conditional stream alone: the
// inner source sees row 0 of every feature, and both CFG rows get its logits, which the mix leaves
// as they are (u + s (c - u) with c = u).
class CondStreamSource : public DraftSource {
 public:
  CondStreamSource(std::unique_ptr<DraftSource> inner, int64_t batch)
      : inner_(std::move(inner)), batch_(batch) {}

  int64_t scratch_rows() const override { return inner_->scratch_rows(); }
  int64_t max_depth() const override { return inner_->max_depth(); }
  void use_fixed_shapes(bool on) override { inner_->use_fixed_shapes(on); }
  int64_t graphs() const override { return inner_->graphs(); }
  void start(const model::Condition& cond, const at::Tensor& root_feature) override {
    inner_->start(cond, root_feature.narrow(0, 0, 1));
  }
  at::Tensor begin_step(const std::vector<int64_t>& tokens, const at::Tensor& feats,
                        int64_t first_index) override {
    return both(inner_->begin_step(tokens, feats.narrow(0, 0, 1), first_index));
  }
  at::Tensor expand(const std::vector<DraftInput>& nodes, std::vector<int64_t>& rows) override {
    return both(inner_->expand(nodes, rows));
  }
  at::Tensor expand_on_device(const at::Tensor& tokens, const at::Tensor& parent_rows,
                              int64_t index) override {
    return both(inner_->expand_on_device(tokens, parent_rows, index));
  }
  void end_step() override { inner_->end_step(); }

 private:
  at::Tensor both(const at::Tensor& logits) {
    forward_ms_ += inner_->take_forward_ms();
    auto sizes = logits.sizes().vec();
    sizes[0] = batch_;
    return logits.expand(sizes);
  }
  std::unique_ptr<DraftSource> inner_;
  int64_t batch_;
};

}  // namespace

std::unique_ptr<DraftSource> make_eagle_source(const model::Drafter& head, const model::Gpt& target,
                                               int64_t batch, int64_t scratch, bool mixed) {
  if (mixed && batch > 1) {
    return std::make_unique<CondStreamSource>(
        std::make_unique<EagleSource>(head, target, 1, scratch), batch);
  }
  return std::make_unique<EagleSource>(head, target, batch, scratch);
}

std::unique_ptr<DraftSource> make_model_source(const model::Gpt& draft_model, int64_t batch,
                                               int64_t scratch) {
  return std::make_unique<ModelSource>(draft_model, batch, scratch);
}

}  // namespace adtree::decode
