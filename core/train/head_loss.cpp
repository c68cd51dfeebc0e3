#include "train/head_loss.h"

#include <nlohmann/json.hpp>
#include <utility>

#include "train/gpt_trainer.h"
#include "train/head_unroll.h"
#include "train/prompt_rows.h"

namespace adtree::train {

TargetRows target_rows(const model::Gpt& target, const at::Tensor& tokens,
                       const model::Condition& cond) {
  at::NoGradGuard no_grad;
  const int64_t C = target.config().cond_tokens(), N = tokens.size(1);
  auto out = teacher_forced(target, tokens.to(target.device()), cond);
  auto F = out.hidden.narrow(1, C - 1, N);  // F_j: the feature whose logits predict z_j
  TargetRows r;
  r.feats_in = F.narrow(1, 0, N - 1).clone();
  r.feats_next = F.narrow(1, 1, N - 1).clone();
  r.tokens_in = tokens.narrow(1, 0, N - 1).to(target.device());
  r.logits_next = out.logits.narrow(1, 1, N - 1).clone();
  return r;
}

at::Tensor head_positions(const model::Gpt& target, int64_t n) {
  return at::arange(n, at::TensorOptions().dtype(at::kLong)) + target.config().cond_tokens();
}

at::Tensor cfg_mix(const at::Tensor& c, const at::Tensor& u, double s) {
  return u + s * (c - u);
}

at::Tensor paired_loss(const model::Drafter& head, const TargetRows& tr, const at::Tensor& feats,
                       const at::Tensor& pos, const nlohmann::json& cfg) {
  const int64_t passes = cfg["tt_passes"], n = feats.size(1);
  const double p_weight = cfg["p_weight"], mix_weight = cfg["mix_weight"];
  const auto u = unrolled_forward(head, feats, tr.tokens_in, pos, passes);
  at::Tensor loss;
  for (int64_t p = 0; p < passes && p < n; ++p) {
    auto rows = [&](const at::Tensor& t) { return t.narrow(1, p, n - p); };
    const auto logits = rows(u.logits[size_t(p)]), target = rows(tr.logits_next);
    auto ce = -(at::softmax(target, -1) * at::log_softmax(logits, -1)).sum(-1).mean();
    auto kl = mixed_kl(target, logits, cfg["mix_cfg"], cfg["mix_temperature"]).mean();
    auto l = at::smooth_l1_loss(rows(u.hidden[size_t(p)]), rows(tr.feats_next)) + p_weight * ce +
             mix_weight * kl;
    loss = loss.defined() ? loss + l : l;
  }
  return loss / double(std::min(passes, n));
}

at::Tensor mixed_stream_loss(const model::Drafter& head, const TargetRows& tr,
                             const at::Tensor& feats, const at::Tensor& pos,
                             const nlohmann::json& cfg) {
  const int64_t B = feats.size(0), n = feats.size(1), passes = cfg["tt_passes"];
  const double t = cfg["mix_temperature"], p_weight = cfg["p_weight"];
  const double mix_weight = cfg["mix_weight"];
  const auto cond = [&](const at::Tensor& x) { return x.narrow(0, 0, B); };
  const auto mixed = cfg_mix(cond(tr.logits_next), tr.logits_next.narrow(0, B, B), cfg["mix_cfg"]);
  const auto p_t = at::log_softmax(mixed / t, -1), p_1 = at::softmax(mixed, -1);
  const auto u = unrolled_forward(head, feats, cond(tr.tokens_in), pos, passes);
  at::Tensor loss;
  for (int64_t p = 0; p < passes && p < n; ++p) {
    auto rows = [&](const at::Tensor& x) { return x.narrow(1, p, n - p); };
    const auto q = rows(u.logits[size_t(p)]);
    const auto pl = rows(p_t);
    auto kl = (pl.exp() * (pl - at::log_softmax(q / t, -1))).sum(-1).mean();
    auto ce = -(rows(p_1) * at::log_softmax(q, -1)).sum(-1).mean();
    auto l = at::smooth_l1_loss(rows(u.hidden[size_t(p)]), rows(cond(tr.feats_next))) +
             p_weight * ce + mix_weight * kl;
    loss = loss.defined() ? loss + l : l;
  }
  return loss / double(std::min(passes, n));
}

namespace {
// The target's rows of pictures `tok` [b, N] in the cond stream (rows first .. first + b - 1 of
// `cond`) and in the null stream.
std::pair<TargetRows, TargetRows> both_streams(const model::Gpt& target, const at::Tensor& tok,
                                               const model::Condition& cond, int64_t first) {
  const auto idx = at::arange(first, first + tok.size(0), at::TensorOptions().dtype(at::kLong));
  const auto part = condition_rows(cond, idx);
  return {target_rows(target, tok, part), target_rows(target, tok, null_condition(target, part))};
}
}  // namespace

nlohmann::json evaluate_head(const model::Gpt& target, const model::Drafter& head,
                             const at::Tensor& tokens, const model::Condition& cond, double cfg,
                             int64_t batch, bool mixed_output) {
  at::NoGradGuard no_grad;
  const int64_t n = tokens.size(0);
  double top1 = 0, top3 = 0, mix1 = 0, mix3 = 0, acc = 0, rows = 0;
  for (int64_t i = 0; i < n; i += batch) {
    const int64_t b = std::min(batch, n - i);
    auto tok = tokens.narrow(0, i, b);
    const auto [c, u] = both_streams(target, tok, cond, i);
    auto pos = head_positions(target, tok.size(1) - 1);
    auto dc = head.forward(nullptr, c.feats_in, c.tokens_in, pos).logits;
    auto du = head.forward(nullptr, u.feats_in, u.tokens_in, pos).logits;
    auto score = [](const at::Tensor& draft, const at::Tensor& tgt, double& t1, double& t3) {
      auto best = tgt.argmax(-1, true);
      auto top = std::get<1>(draft.topk(3, -1));
      t1 += top.narrow(-1, 0, 1).eq(best).sum().item<double>();
      t3 += top.eq(best).any(-1).sum().item<double>();
    };
    score(dc, c.logits_next, top1, top3);
    auto tm = cfg_mix(c.logits_next, u.logits_next, cfg);
    auto dm = mixed_output ? dc : cfg_mix(dc, du, cfg);
    score(dm, tm, mix1, mix3);
    acc += at::minimum(at::softmax(tm, -1), at::softmax(dm, -1)).sum(-1).sum().item<double>();
    rows += double(c.logits_next.size(0) * c.logits_next.size(1));
  }
  rows = std::max(rows, 1.0);
  return nlohmann::json{{"top1", top1 / rows},
                        {"top3", top3 / rows},
                        {"cfg_top1", mix1 / rows},
                        {"cfg_top3", mix3 / rows},
                        {"accept_t1", acc / rows},
                        {"images", n},
                        {"cfg", cfg}};
}

at::Tensor codes_above(const at::Tensor& tokens, int64_t grid_w, int64_t depths) {
  const int64_t B = tokens.size(0), N = tokens.size(1);
  auto j = at::arange(N - 1, at::kLong).view({N - 1, 1});
  auto d = at::arange(1, depths + 1, at::kLong).view({1, depths});
  auto cell = j + d, up = cell - grid_w;
  auto valid = cell.le(N - 1) & up.ge(0);
  auto idx = up.clamp(0, N - 1).view({1, -1}).expand({B, (N - 1) * depths});
  auto above = tokens.gather(1, idx.to(tokens.device())).view({B, N - 1, depths});
  return above.masked_fill(valid.logical_not().to(tokens.device()), -1);
}

namespace {
// The head's logits [B, N - 1, K, V] for every root of the pictures `tokens` [B, N].
at::Tensor parallel_logits(const model::ParallelHead& head, const model::Gpt& target,
                           const at::Tensor& tokens, const at::Tensor& feats,
                           const at::Tensor& roots) {
  const int64_t B = tokens.size(0), n = feats.size(1), K = head.depths();
  const auto above = codes_above(tokens, target.config().grid_w, K);
  auto logits =
      head.forward(feats.reshape({B * n, -1}), roots.reshape({B * n}), above.reshape({B * n, K}));
  return logits.view({B, n, K, -1});
}
}  // namespace

at::Tensor parallel_loss(const model::ParallelHead& head, const TargetRows& tr,
                         const at::Tensor& tokens, const at::Tensor& feats,
                         const nlohmann::json& cfg) {
  const int64_t B = tokens.size(0), n = feats.size(1), K = head.depths();
  const double t = cfg["mix_temperature"];
  const auto& target = tr.logits_next;
  const auto mixed = cfg_mix(target.narrow(0, 0, B), target.narrow(0, B, B), cfg["mix_cfg"]);
  const auto p_log = at::log_softmax(mixed / t, -1);  // row i: cell i + 1
  const auto logits =
      parallel_logits(head, head.target(), tokens, feats, tr.tokens_in.narrow(0, 0, B));
  at::Tensor loss;
  for (int64_t d = 1; d <= K && d <= n; ++d) {
    const int64_t rows = n - d + 1;  // roots j with cell j + d in the image
    auto pl = p_log.narrow(1, d - 1, rows);
    auto ql = at::log_softmax(logits.narrow(1, 0, rows).select(2, d - 1) / t, -1);
    auto kl = (pl.exp() * (pl - ql)).sum(-1).mean();
    loss = loss.defined() ? loss + kl : kl;
  }
  return loss;
}

nlohmann::json evaluate_parallel_head(const model::Gpt& target, const model::ParallelHead& head,
                                      const at::Tensor& tokens, const model::Condition& cond,
                                      double cfg, int64_t batch) {
  at::NoGradGuard no_grad;
  const int64_t n = tokens.size(0), K = head.depths();
  std::vector<double> acc(size_t(K), 0.0), top1(size_t(K), 0.0), rows(size_t(K), 0.0);
  for (int64_t i = 0; i < n; i += batch) {
    const int64_t b = std::min(batch, n - i);
    auto tok = tokens.narrow(0, i, b);
    const auto [c, u] = both_streams(target, tok, cond, i);
    const auto mixed = cfg_mix(c.logits_next, u.logits_next, cfg);  // [b, N - 1, V]
    const auto logits = parallel_logits(head, target, tok, c.feats_in, c.tokens_in);
    const int64_t N1 = c.feats_in.size(1);
    for (int64_t d = 1; d <= K && d <= N1; ++d) {
      const int64_t r = N1 - d + 1;
      auto tm = mixed.narrow(1, d - 1, r), dm = logits.narrow(1, 0, r).select(2, d - 1);
      acc[size_t(d - 1)] +=
          at::minimum(at::softmax(tm, -1), at::softmax(dm, -1)).sum(-1).sum().item<double>();
      top1[size_t(d - 1)] += dm.argmax(-1).eq(tm.argmax(-1)).sum().item<double>();
      rows[size_t(d - 1)] += double(b * r);
    }
  }
  for (int64_t d = 0; d < K; ++d) {
    acc[size_t(d)] /= std::max(rows[size_t(d)], 1.0);
    top1[size_t(d)] /= std::max(rows[size_t(d)], 1.0);
  }
  return nlohmann::json{
      {"accept_t1", acc[0]},       {"cfg_top1", top1[0]}, {"accept_by_depth", acc},
      {"cfg_top1_by_depth", top1}, {"images", n},         {"cfg", cfg}};
}

}  // namespace adtree::train
