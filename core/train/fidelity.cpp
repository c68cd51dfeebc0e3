#include "train/fidelity.h"

#include <algorithm>

#include "model/llamagen/vq.h"
#include "train/batches.h"
#include "train/drafter_trainer.h"
#include "train/vq_trainer.h"
#include "util/error.h"

namespace adtree::train {

using json = nlohmann::json;

namespace {

// The model and the dataset agree: a VQ to decode with, pictures of the model's size.
void check_inputs(const model::ModelBundle& m, const io::Dataset& data, const FidelityOptions& o,
                  const std::string& what) {
  if (!m.vq) throw Error(what + ": the model was loaded without its VQ");
  data.require_images(what + " (nearest training pictures)");
  if (o.prompts <= 0) throw Error(what + ": the number of prompts must be positive");
  const auto& g = m.gpt->config();
  const int64_t f = m.vq->config().downsample_factor();
  if (data.images.size(1) != g.grid_h * f || data.images.size(2) != g.grid_w * f) {
    throw Error(what + ": the dataset's pictures are not the model's size");
  }
}

}  // namespace

// Prompts: distinct captions in a seeded order. Words outside the model's vocabulary (unseen
// prompts) are left out, as the trainer does.
FidelityPrompts pick_prompts(const model::Vocabulary& vocab, int64_t cond_len,
                             const io::Dataset& data, const std::vector<int64_t>& prompt_rows,
                             const FidelityOptions& o) {
  auto gen = step_generator(o.seed, 0, 31);
  auto perm = at::randperm(int64_t(prompt_rows.size()), gen, at::TensorOptions().dtype(at::kLong));
  FidelityPrompts p;
  for (int64_t i = 0; i < perm.size(0) && int64_t(p.captions.size()) < o.prompts; ++i) {
    const auto row = prompt_rows[size_t(perm[i].item<int64_t>())];
    const auto& cap = data.captions[size_t(row)];
    std::vector<int64_t> w;
    for (const auto& word : model::split_words(cap)) {
      const auto& e = vocab.entries();
      auto it = std::find(e.begin(), e.end(), word);
      if (it != e.end()) w.push_back(int64_t(it - e.begin()));
    }
    if (w.empty() || int64_t(w.size()) > cond_len) continue;
    p.captions.push_back(cap);
    p.emoji.push_back(data.emoji[size_t(row)]);
    p.ids.push_back(w);
  }
  return p;
}

// [prompts, cond_len] word ids, each caption right-aligned, -1 before it.
at::Tensor word_id_tensor(const std::vector<std::vector<int64_t>>& ids, int64_t cond_len) {
  const int64_t P = int64_t(ids.size());
  auto word_ids = at::full({P, cond_len}, -1, at::TensorOptions().dtype(at::kLong));
  for (int64_t i = 0; i < P; ++i) {
    const auto& w = ids[size_t(i)];
    for (size_t j = 0; j < w.size(); ++j)
      word_ids[i][cond_len - int64_t(w.size()) + int64_t(j)] = w[j];
  }
  return word_ids;
}

// Pixel space: squared L2 over all pixels against every training picture.
at::Tensor pixel_distances(const at::Tensor& images, const io::Dataset& data,
                           const at::Tensor& train_idx) {
  auto train_px =
      data.images.index_select(0, train_idx).reshape({train_idx.size(0), -1}).to(at::kFloat);
  auto gen_px = images.reshape({images.size(0), -1}).to(at::kFloat);
  return (gen_px.pow(2).sum(1, true) + train_px.pow(2).sum(1).unsqueeze(0) -
          2.0 * at::mm(gen_px, train_px.t()));
}

// Top-1 and top-5 hits of the nearest training pictures under `dist` [prompts, training pictures].
// Exact: the nearest picture carries the prompt. Emoji: it shows the prompt's emoji in any style or
// skin tone (a looser, still strict check: the training set has 1,815 emoji). `top1` receives the
// index (into train_rows) of each prompt's nearest picture.
json score_nearest(const at::Tensor& dist, const io::Dataset& data,
                   const std::vector<int64_t>& train_rows, const FidelityPrompts& p,
                   at::Tensor* top1) {
  const int64_t P = int64_t(p.captions.size());
  const int64_t k = std::min<int64_t>(5, dist.size(1));
  auto top = std::get<1>(dist.topk(k, 1, /*largest=*/false));
  int64_t hit1 = 0, hit5 = 0, emoji1 = 0, emoji5 = 0;
  for (int64_t i = 0; i < P; ++i) {
    bool exact = false, same = false;
    for (int64_t j = 0; j < k; ++j) {
      const auto row = size_t(train_rows[size_t(top[i][j].item<int64_t>())]);
      if (!exact && data.captions[row] == p.captions[size_t(i)]) {
        exact = true;
        hit1 += j == 0;
        ++hit5;
      }
      if (!same && data.emoji[row] == p.emoji[size_t(i)]) {
        same = true;
        emoji1 += j == 0;
        ++emoji5;
      }
    }
  }
  if (top1) *top1 = top.select(1, 0);
  return {{"top1", double(hit1) / double(P)},
          {"top5", double(hit5) / double(P)},
          {"emoji_top1", double(emoji1) / double(P)},
          {"emoji_top5", double(emoji5) / double(P)}};
}

// Chance of an emoji-level top-1 hit: the share of training pictures showing the prompt's emoji,
// averaged over the prompts.
double emoji_chance(const io::Dataset& data, const std::vector<int64_t>& train_rows,
                    const std::vector<int64_t>& prompt_emoji) {
  const double P = double(prompt_emoji.size());
  double chance = 0.0;
  for (const auto e : prompt_emoji) {
    int64_t n = 0;
    for (const auto row : train_rows) n += data.emoji[size_t(row)] == e;
    chance += double(n) / double(train_rows.size()) / P;
  }
  return chance;
}

FidelityResult prompt_fidelity(const model::ModelBundle& m, const io::Dataset& data,
                               const FidelityOptions& o, std::ostream* log) {
  const std::string what = "fidelity";
  check_inputs(m, data, o, what);
  const auto& g = m.gpt->config();
  const auto train_rows = split_rows(data, io::Split::Train, what);
  const auto prompt_rows =
      o.split == "validation" ? split_rows(data, io::Split::Validation, what) : train_rows;

  const FidelityPrompts p = pick_prompts(m.vocab, g.cond_len, data, prompt_rows, o);
  const int64_t P = int64_t(p.captions.size());
  auto tokens = sample_target(*m.gpt, word_id_tensor(p.ids, g.cond_len), o.cfg, o.temperature,
                              o.seed, o.batch, log);
  at::NoGradGuard no_grad;
  FidelityResult r;
  r.prompts = p.captions;
  r.images = model::VqModel::to_bytes(m.vq->decode(tokens, g.grid_h, g.grid_w));

  auto train_idx = at::tensor(train_rows, at::TensorOptions().dtype(at::kLong));
  at::Tensor nearest;
  const json px =
      score_nearest(pixel_distances(r.images, data, train_idx), data, train_rows, p, &nearest);
  r.nearest = data.images.index_select(0, train_idx.index_select(0, nearest));
  r.metrics = {{"prompts", P},
               {"split", o.split},
               {"cfg", o.cfg},
               {"temperature", o.temperature},
               {"seed", o.seed},
               {"training_pictures", int64_t(train_rows.size())},
               {"chance_top1", 1.0 / double(train_rows.size())},
               {"emoji_chance_top1", emoji_chance(data, train_rows, p.emoji)},
               {"pixel", px}};
  // Code space: the number of cells whose code differs (needs the VQ encoder).
  if (m.vq->has_encoder()) {
    auto train_tok = encode_rows(*m.vq, data, train_rows);
    auto d_tok = tokens.unsqueeze(1).ne(train_tok.unsqueeze(0)).sum(-1).to(at::kFloat);
    r.metrics["tokens"] = score_nearest(d_tok, data, train_rows, p, nullptr);
  }
  return r;
}

}  // namespace adtree::train
