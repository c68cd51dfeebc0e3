#include "decode/tree/parallel_source.h"

#include <c10/core/InferenceMode.h>

#include "util/clock.h"
#include "util/error.h"

namespace adtree::decode {

namespace {

class ParallelSource : public DraftSource {
 public:
  ParallelSource(const model::ParallelHead& head, const model::Gpt& target, int64_t batch)
      : head_(head), target_(target), batch_(batch) {}

  int64_t scratch_rows() const override { return std::numeric_limits<int32_t>::max(); }
  int64_t max_depth() const override { return head_.depths(); }

  void start(const model::Condition&, const at::Tensor&) override {
    committed_.clear();
    rows_ = 0;
  }

  at::Tensor begin_step(const std::vector<int64_t>& tokens, const at::Tensor& feats,
                        int64_t first_index) override {
    c10::InferenceMode guard;
    if (tokens.empty() || first_index > int64_t(committed_.size()))
      throw Error("parallel source: the committed tokens skip cells");
    committed_.resize(size_t(first_index));
    committed_.insert(committed_.end(), tokens.begin(), tokens.end());
    root_ = int64_t(committed_.size()) - 1;
    const int64_t K = head_.depths(), W = target_.config().grid_w;
    const int64_t n_img = target_.config().image_tokens();
    std::vector<int64_t> above(size_t(K), -1);
    for (int64_t j = 1; j <= K; ++j) {
      const int64_t up = root_ + j - W;  // the cell above cell root + j
      if (root_ + j < n_img && up >= 0 && up <= root_)
        above[size_t(j - 1)] = committed_[size_t(up)];
    }
    const auto t0 = Clock::now();
    // The conditional stream's feature of the root (row 0): the head predicts the guided mix.
    const auto f = feats.select(0, 0).narrow(0, feats.size(1) - 1, 1);
    logits_ = head_
                  .forward(f, at::tensor({committed_.back()}, at::kLong),
                           at::tensor(above, at::kLong).view({1, K}))
                  .select(0, 0);  // [K, V]
    forward_ms_ += ms_since(t0);
    rows_ = 0;
    return level(1).unsqueeze(0).expand({batch_, logits_.size(1)});
  }

  at::Tensor expand(const std::vector<DraftInput>& nodes, std::vector<int64_t>& rows) override {
    std::vector<at::Tensor> out;
    for (const auto& n : nodes) {
      out.push_back(level(n.index + 1 - root_));
      rows.push_back(rows_++);
    }
    const int64_t m = int64_t(nodes.size());
    return at::stack(out).unsqueeze(0).expand({batch_, m, logits_.size(1)});
  }

  at::Tensor expand_on_device(const at::Tensor& tokens, const at::Tensor&, int64_t index) override {
    const int64_t m = tokens.numel();
    rows_ += m;
    return level(index + 1 - root_).view({1, 1, -1}).expand({batch_, m, logits_.size(1)});
  }

  void end_step() override { rows_ = 0; }

 private:
  // Logits [V] of the cell `depth` levels below the root.
  at::Tensor level(int64_t depth) const {
    if (depth < 1 || depth > head_.depths())
      throw Error("parallel source: level " + std::to_string(depth) + " is past the head's " +
                  std::to_string(head_.depths()) + " depths");
    return logits_[depth - 1];
  }

  const model::ParallelHead& head_;
  const model::Gpt& target_;
  int64_t batch_;
  std::vector<int64_t> committed_;
  int64_t root_ = 0, rows_ = 0;
  at::Tensor logits_;  // [K, V]
};

}  // namespace

std::unique_ptr<DraftSource> make_parallel_source(const model::ParallelHead& head,
                                                  const model::Gpt& target, int64_t batch) {
  return std::make_unique<ParallelSource>(head, target, batch);
}

}  // namespace adtree::decode
