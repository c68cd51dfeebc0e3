#include "train/continuous/continuous_fidelity.h"

#include <ostream>

#include "decode/continuous/continuous_decode.h"
#include "decode/settings/method_table.h"
#include "train/batches.h"
#include "util/error.h"

namespace adtree::train {

using json = nlohmann::json;

namespace {

std::string caption_of(const model::Vocabulary& vocab, const std::vector<int64_t>& ids) {
  std::string s;
  for (auto id : ids) s += (s.empty() ? "" : " ") + vocab.entries()[size_t(id)];
  return s;
}

at::Tensor colour_histogram(
    const at::Tensor& images) {  // uint8 [P, H, W, 3] -> [3, 16], normalised
  auto bins = images.to(at::kLong).div(16, "floor").reshape({-1, 3});
  auto h = at::zeros({3, 16}, at::kDouble);
  for (int64_t c = 0; c < 3; ++c) h[c] = at::bincount(bins.select(1, c), {}, 16).to(at::kDouble);
  return h / double(bins.size(0));
}

}  // namespace

json picture_distance(const at::Tensor& a, const at::Tensor& b) {
  if (a.sizes() != b.sizes()) throw Error("picture_distance: the two sets differ in shape");
  const auto diff = (a.to(at::kDouble) - b.to(at::kDouble)).abs();
  const auto per = diff.reshape({a.size(0), -1}).amax(1);
  return {{"mean_abs_pixel", diff.mean().item<double>()},
          {"identical_share", per.eq(0).to(at::kDouble).mean().item<double>()},
          {"histogram_l1",
           (colour_histogram(a) - colour_histogram(b)).abs().sum().item<double>() / 3.0}};
}

json distance_from_ar(const ContinuousFidelity& ar, const ContinuousFidelity& method) {
  auto d = picture_distance(ar.images, method.images);
  d["emoji_top1_difference"] = method.metrics.at("pixel").at("emoji_top1").get<double>() -
                               ar.metrics.at("pixel").at("emoji_top1").get<double>();
  return d;
}

decode::DecodeRequest other_seeds(decode::DecodeRequest request) {
  request.seed += 1000000;  // prompt i adds its index: far from the measured run's seeds
  return request;
}

ContinuousFidelity continuous_fidelity(const model::ContinuousBundle& m, const io::Dataset& data,
                                       const FidelityOptions& o,
                                       const decode::DecodeRequest& request,
                                       const at::Tensor& train_tokens, std::ostream* log) {
  const std::string what = "fidelity";
  data.require_images(what + " (nearest training pictures)");
  if (o.prompts <= 0) throw Error(what + ": the number of prompts must be positive");
  const auto& g = m.target->config().backbone;
  const int64_t f = m.vae->config().downsample_factor();
  if (data.images.size(1) != g.grid_h * f || data.images.size(2) != g.grid_w * f)
    throw Error(what + ": the dataset's pictures are not the model's size");
  const auto train_rows = split_rows(data, io::Split::Train, what);
  const auto prompt_rows =
      o.split == "validation" ? split_rows(data, io::Split::Validation, what) : train_rows;
  const auto p = pick_prompts(m.vocab, g.cond_len, data, prompt_rows, o);
  const int64_t P = int64_t(p.captions.size());

  ContinuousFidelity r;
  r.prompts = p.captions;
  std::vector<at::Tensor> images, tokens;
  double accepted = 0, drafted = 0;
  for (int64_t i = 0; i < P; ++i) {
    auto req = request;
    req.seed = request.seed + o.seed + uint64_t(i);
    const auto res = decode::run_continuous(m, caption_of(m.vocab, p.ids[size_t(i)]), req);
    accepted += double(res.accepted), drafted += double(res.drafted);
    tokens.push_back(res.tokens.unsqueeze(0));
    images.push_back(m.picture(res.tokens).unsqueeze(0));
    if (log && (i + 1) % 16 == 0) *log << "fidelity: " << i + 1 << " of " << P << std::endl;
  }
  r.images = at::cat(images, 0);
  auto train_idx = at::tensor(train_rows, at::TensorOptions().dtype(at::kLong));
  at::Tensor nearest;  // each prompt's nearest training picture in pixels, an index into train_rows
  r.metrics = {{"prompts", P},
               {"split", o.split},
               {"method", decode::to_string(request.method.method)},
               {"cfg", request.sampling.cfg_scale},
               {"temperature", request.sampling.temperature},
               {"seed", o.seed},
               {"first_sampling_seed", request.seed + o.seed},
               {"training_pictures", int64_t(train_rows.size())},
               {"emoji_chance_top1", emoji_chance(data, train_rows, p.emoji)},
               {"pixel", score_nearest(pixel_distances(r.images, data, train_idx), data, train_rows,
                                       p, &nearest)}};
  r.nearest = data.images.index_select(0, train_idx.index_select(0, nearest));
  if (drafted > 0) r.metrics["acceptance"] = accepted / drafted;
  if (train_tokens.defined()) {  // token space: squared L2 over every token's numbers
    const auto gen = at::cat(tokens, 0).reshape({P, -1}).to(at::kFloat);
    const auto tr = train_tokens.index_select(0, train_idx).reshape({train_idx.size(0), -1});
    const auto d =
        gen.pow(2).sum(1, true) + tr.pow(2).sum(1).unsqueeze(0) - 2.0 * at::mm(gen, tr.t());
    r.metrics["tokens"] = score_nearest(d, data, train_rows, p, nullptr);
  }
  return r;
}

}  // namespace adtree::train
