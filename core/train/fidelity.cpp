#include "train/fidelity.h"

#include <algorithm>

#include "model/llamagen/vq.h"
#include "train/batches.h"
#include "train/drafter_trainer.h"
#include "train/vq_trainer.h"
#include "util/error.h"

namespace adtree::train {

using json = nlohmann::json;

FidelityResult prompt_fidelity(const model::ModelBundle& m, const io::Dataset& data,
                               const FidelityOptions& o, std::ostream* log) {
  const std::string what = "fidelity";
  if (!m.vq) throw Error(what + ": the model was loaded without its VQ");
  data.require_images(what + " (nearest training pictures)");
  if (o.prompts <= 0) throw Error(what + ": the number of prompts must be positive");
  const auto& g = m.gpt->config();
  const int64_t f = m.vq->config().downsample_factor();
  if (data.images.size(1) != g.grid_h * f || data.images.size(2) != g.grid_w * f) {
    throw Error(what + ": the dataset's pictures are not the model's size");
  }
  const auto train_rows = split_rows(data, io::Split::Train, what);
  const auto prompt_rows =
      o.split == "validation" ? split_rows(data, io::Split::Validation, what) : train_rows;

  // Prompts: distinct captions in a seeded order. Words outside the model's vocabulary (unseen
  // prompts) are left out, as the trainer does.
  auto gen = step_generator(o.seed, 0, 31);
  auto perm = at::randperm(int64_t(prompt_rows.size()), gen, at::TensorOptions().dtype(at::kLong));
  FidelityResult r;
  std::vector<std::vector<int64_t>> ids;
  std::vector<int64_t> prompt_emoji;  // the emoji each prompt names (any style or skin tone)
  for (int64_t i = 0; i < perm.size(0) && int64_t(r.prompts.size()) < o.prompts; ++i) {
    const auto row = prompt_rows[size_t(perm[i].item<int64_t>())];
    const auto& cap = data.captions[size_t(row)];
    std::vector<int64_t> w;
    for (const auto& word : model::split_words(cap)) {
      const auto& e = m.vocab.entries();
      auto it = std::find(e.begin(), e.end(), word);
      if (it != e.end()) w.push_back(int64_t(it - e.begin()));
    }
    if (w.empty() || int64_t(w.size()) > g.cond_len) continue;
    r.prompts.push_back(cap);
    prompt_emoji.push_back(data.emoji[size_t(row)]);
    ids.push_back(w);
  }
  const int64_t P = int64_t(r.prompts.size());
  auto word_ids = at::full({P, g.cond_len}, -1, at::TensorOptions().dtype(at::kLong));
  for (int64_t i = 0; i < P; ++i) {
    const auto& w = ids[size_t(i)];
    for (size_t j = 0; j < w.size(); ++j)
      word_ids[i][g.cond_len - int64_t(w.size()) + int64_t(j)] = w[j];
  }
  auto tokens = sample_target(*m.gpt, word_ids, o.cfg, o.temperature, o.seed, o.batch, log);
  at::NoGradGuard no_grad;
  r.images = model::VqModel::to_bytes(m.vq->decode(tokens, g.grid_h, g.grid_w));

  // Pixel space: squared L2 over all pixels against every training picture.
  auto train_idx = at::tensor(train_rows, at::TensorOptions().dtype(at::kLong));
  auto train_px = data.images.index_select(0, train_idx)
                      .reshape({int64_t(train_rows.size()), -1})
                      .to(at::kFloat);
  auto gen_px = r.images.reshape({P, -1}).to(at::kFloat);
  auto d_px = (gen_px.pow(2).sum(1, true) + train_px.pow(2).sum(1).unsqueeze(0) -
               2.0 * at::mm(gen_px, train_px.t()));
  // Code space: the number of cells whose code differs (needs the VQ encoder).
  at::Tensor d_tok;
  if (m.vq->has_encoder()) {
    auto train_tok = encode_rows(*m.vq, data, train_rows);
    d_tok = tokens.unsqueeze(1).ne(train_tok.unsqueeze(0)).sum(-1).to(at::kFloat);
  }
  auto score = [&](const at::Tensor& dist, json& out, bool keep_nearest) {
    const int64_t k = std::min<int64_t>(5, dist.size(1));
    auto top = std::get<1>(dist.topk(k, 1, /*largest=*/false));
    // Exact: the nearest picture carries the prompt. Emoji: it shows the prompt's emoji in any
    // style or skin tone (a looser, still strict check: the training set has 1,815 emoji).
    int64_t hit1 = 0, hit5 = 0, emoji1 = 0, emoji5 = 0;
    for (int64_t i = 0; i < P; ++i) {
      bool exact = false, same = false;
      for (int64_t j = 0; j < k; ++j) {
        const auto row = size_t(train_rows[size_t(top[i][j].item<int64_t>())]);
        if (!exact && data.captions[row] == r.prompts[size_t(i)]) {
          exact = true;
          hit1 += j == 0;
          ++hit5;
        }
        if (!same && data.emoji[row] == prompt_emoji[size_t(i)]) {
          same = true;
          emoji1 += j == 0;
          ++emoji5;
        }
      }
    }
    out = {{"top1", double(hit1) / double(P)},
           {"top5", double(hit5) / double(P)},
           {"emoji_top1", double(emoji1) / double(P)},
           {"emoji_top5", double(emoji5) / double(P)}};
    if (keep_nearest)
      r.nearest = data.images.index_select(0, train_idx.index_select(0, top.select(1, 0)));
  };
  // Chance of an emoji-level top-1 hit: the share of training pictures showing the prompt's
  // emoji, averaged over the prompts.
  double emoji_chance = 0.0;
  for (const auto e : prompt_emoji) {
    int64_t n = 0;
    for (const auto row : train_rows) n += data.emoji[size_t(row)] == e;
    emoji_chance += double(n) / double(train_rows.size()) / double(P);
  }
  json px, tok;
  score(d_px, px, true);
  r.metrics = {{"prompts", P},
               {"split", o.split},
               {"cfg", o.cfg},
               {"temperature", o.temperature},
               {"seed", o.seed},
               {"training_pictures", int64_t(train_rows.size())},
               {"chance_top1", 1.0 / double(train_rows.size())},
               {"emoji_chance_top1", emoji_chance},
               {"pixel", px}};
  if (d_tok.defined()) {
    score(d_tok, tok, false);
    r.metrics["tokens"] = tok;
  }
  return r;
}

}  // namespace adtree::train
