#include "train/drafter_trainer.h"

#include <cmath>
#include <filesystem>
#include <iostream>

#include "io/safetensors.h"
#include "train/batches.h"
#include "train/captions.h"
#include "train/gpt_trainer.h"
#include "train/head_loss.h"
#include "train/loop.h"
#include "train/optimizer.h"
#include "train/prompt_rows.h"
#include "train/run_files.h"
#include "util/error.h"

namespace adtree::train {

namespace fs = std::filesystem;
using json = nlohmann::json;

json drafter_default_config() {
  return json{{"steps", 1500},
              {"batch", 8},
              {"lr", 5e-4},
              {"warmup", 100},
              {"min_lr_ratio", 0.1},
              {"schedule", "cosine"},
              {"beta1", 0.9},
              {"beta2", 0.95},
              {"weight_decay", 0.0},
              {"grad_clip", 0.5},
              {"p_weight", 0.1},         // SPEC_DECODING.md 2: SmoothL1 + 0.1 soft cross-entropy
              {"cascade_weight", 1.0},   // CASCADE: soft-CE weight of redundant rows (1 = off)
              {"cascade_tau_h", 0.625},  // CASCADE: feature cosine that makes a row redundant
              {"feature_noise", 0.2},    // EAGLE: uniform noise of width 0.2 on input features
              {"uncond_fraction", 0.2},  // rows in the null-caption stream (the head runs both)
              {"self_samples", 0},       // target samples of training captions to train on
              {"self_eval_samples", 0},  // further samples kept for evaluation only
              {"self_fraction", 0.5},    // share of batch rows drawn from the samples
              {"sample_cfg", 3.0},
              {"sample_temperature", 1.0},
              {"sample_batch", 16},
              {"eval_cfg", 3.0},
              {"eval_every", 500},
              {"eval_images", 0},  // validation pictures for periodic evals (0: all)
              {"checkpoint_every", 200},
              // Training for the verified distribution (head_unroll.h): with mix_weight > 0 every
              // picture runs in both streams and the loss adds KL(target || head) of the
              // CFG-mixed distributions at mix_cfg / mix_temperature; tt_passes > 1 unrolls the
              // head on its own predicted features (training-time test) for that many levels.
              {"mix_weight", 0.0},
              {"mix_cfg", 3.0},
              {"mix_temperature", 1.0},
              {"tt_passes", 1}};
}

at::Tensor cascade_row_weights(const at::Tensor& feats, double tau_h, double weight) {
  at::NoGradGuard no_grad;
  auto f = feats.to(at::kFloat);
  f = f / f.norm(2, -1, true).clamp_min(1e-12);
  auto cos = f.matmul(f.transpose(1, 2));  // [B, L, L]
  const int64_t L = f.size(1);
  // Only later rows j > i count: the strictly upper triangle.
  auto later = at::ones({L, L}, cos.options().dtype(at::kBool)).triu(1);
  auto redundant = ((cos > tau_h) & later).any(-1);
  return 1.0 + (weight - 1.0) * redundant.to(at::kFloat);
}

namespace {

constexpr uint64_t kDrafterRowStream = 21, kDrafterNullStream = 22, kDrafterNoiseStream = 23,
                   kDrafterSampleStream = 24, kDrafterSourceStream = 25;

}  // namespace

json evaluate_drafter(const model::Gpt& target, const model::Drafter& head,
                      const at::Tensor& tokens, const at::Tensor& word_ids, double cfg,
                      int64_t batch) {
  at::NoGradGuard no_grad;
  return evaluate_head(target, head, tokens, word_condition(target, word_ids.to(target.device())),
                       cfg, batch);
}

at::Tensor sample_target(const model::Gpt& target, const at::Tensor& word_ids, double cfg,
                         double temperature, uint64_t seed, int64_t batch, std::ostream* log) {
  at::NoGradGuard no_grad;
  return sample_target(target, word_condition(target, word_ids), cfg, temperature, seed, batch, 0,
                       log);
}

at::Tensor sample_target(const model::Gpt& target, const model::Condition& cond, double cfg,
                         double temperature, uint64_t seed, int64_t batch, int64_t first,
                         std::ostream* log) {
  at::NoGradGuard no_grad;
  const int64_t n = cond.batch(), N = target.config().image_tokens();
  auto out = at::empty({n, N}, at::TensorOptions().dtype(at::kLong));
  for (int64_t i = 0; i < n; i += batch) {
    const int64_t b = std::min(batch, n - i);
    auto part = condition_rows(cond, at::arange(i, i + b, at::TensorOptions().dtype(at::kLong)));
    auto cache = target.new_cache(2 * b, 0);
    auto both = cat_conditions(part, null_condition(target, part));
    auto logits = target.prefill(cache, both).logits.select(1, 0);  // [2b, V]
    // Seeded by the row's index in the whole set, so a set drawn in parts is the same set.
    auto gen = step_generator(seed, first + i, kDrafterSampleStream);
    for (int64_t t = 0; t < N; ++t) {
      auto mixed = cfg_mix(logits.narrow(0, 0, b), logits.narrow(0, b, b), cfg);
      // Drawn on the CPU from a seeded generator: the same samples on every device.
      auto probs = at::softmax(mixed / std::max(temperature, 1e-6), -1).cpu();
      auto next = at::multinomial(probs, 1, false, gen);  // [b, 1]
      out.narrow(0, i, b).narrow(1, t, 1).copy_(next);
      if (t + 1 == N) break;
      auto o = target.forward_tokens(cache, next.repeat({2, 1}).to(target.device()), t);
      cache.commit();
      logits = o.logits.select(1, 0);
    }
    if (log) *log << "sampled " << first + i + b << " target images" << std::endl;
  }
  return out;
}

namespace {

// The defaults, the config's overrides, then the options given on the command line.
json drafter_run_config(const TrainOptions& opts, const std::string& what) {
  auto cfg = resolve_config(drafter_default_config(), opts, what);
  // Part of the config so that resuming a warm-started run must name the same starting run.
  if (!opts.init_from.empty()) cfg["init_from"] = fs::path(opts.init_from).filename().string();
  return cfg;
}

// The numbers of the resolved config that the training step reads, checked once.
struct DrafterSettings {
  int64_t batch = 0;
  double noise = 0, p_weight = 0, cascade_weight = 1, cascade_tau_h = 0;
  double uncond_fraction = 0, self_fraction = 0;
  int64_t self_n = 0, self_eval_n = 0;  // self-distillation samples: trained on, held out
  bool paired = false;                  // mix_weight > 0: every picture in both streams

  static DrafterSettings read(const json& cfg, const std::string& what);
};

DrafterSettings DrafterSettings::read(const json& cfg, const std::string& what) {
  DrafterSettings s;
  const int64_t steps = cfg["steps"];
  s.batch = cfg["batch"];
  require(steps > 0, what, "steps must be positive");
  require(s.batch > 0, what, "batch must be positive");
  s.noise = cfg["feature_noise"], s.p_weight = cfg["p_weight"];
  s.cascade_weight = cfg["cascade_weight"], s.cascade_tau_h = cfg["cascade_tau_h"];
  require(s.cascade_weight >= 1, what, "cascade_weight must be >= 1 (1 = off)");
  require(s.cascade_tau_h >= -1 && s.cascade_tau_h <= 1, what, "cascade_tau_h must be in [-1, 1]");
  s.uncond_fraction = cfg["uncond_fraction"], s.self_fraction = cfg["self_fraction"];
  s.self_n = cfg["self_samples"], s.self_eval_n = cfg["self_eval_samples"];
  require(s.noise >= 0, what, "feature_noise must not be negative");
  require(s.uncond_fraction >= 0 && s.uncond_fraction <= 1, what,
          "uncond_fraction must be in [0, 1]");
  require(s.self_fraction >= 0 && s.self_fraction <= 1, what, "self_fraction must be in [0, 1]");
  require(s.self_n >= 0 && s.self_eval_n >= 0, what, "sample counts must not be negative");
  s.paired = cfg["mix_weight"].get<double>() > 0;
  require(cfg["mix_weight"].get<double>() >= 0, what, "mix_weight must not be negative");
  require(cfg["mix_temperature"].get<double>() > 0, what, "mix_temperature must be > 0");
  require(cfg["tt_passes"].get<int64_t>() >= 1 && cfg["tt_passes"].get<int64_t>() <= 8, what,
          "tt_passes must be in 1..8");
  require(!s.paired || s.cascade_weight == 1, what,
          "CASCADE's row weights apply without mix_weight");
  return s;
}

GptRun load_target_run(const io::Dataset& data, const std::string& gpt_dir,
                       const std::string& what) {
  auto run = load_gpt_run(gpt_dir);
  if (run.tokens.size(0) != data.size()) {
    throw Error(what + ": the GPT run's VQ codes cover " + std::to_string(run.tokens.size(0)) +
                " pictures but the dataset has " + std::to_string(data.size()) +
                " (train the drafter on the GPT's dataset)");
  }
  return run;
}

// The self-distillation set: tokens [n, N] and their captions' word ids.
struct SelfSamples {
  at::Tensor tokens, ids;
};

// CFG samples of the target for random training captions, generated once (seeded) and cached;
// the last self_eval_samples are held out for evaluation.
SelfSamples self_samples(const GptRun& run, const CaptionIds& caps,
                         const std::vector<int64_t>& train_rows, int64_t total, const json& cfg,
                         const TrainOptions& opts, const std::string& gpt_dir, at::Device device,
                         std::ostream& log) {
  SelfSamples out;
  if (total <= 0) return out;
  const auto spath = run_file(opts.out, "samples.safetensors");
  const json skey = {{"n", total},
                     {"cfg", cfg["sample_cfg"]},
                     {"temperature", cfg["sample_temperature"]},
                     {"seed", opts.seed},
                     {"gpt", fs::absolute(gpt_dir).string()},
                     {"gpt_steps", run.run.value("steps", 0)}};
  if (fs::exists(spath)) {
    io::SafetensorsReader r(spath);
    auto it = r.metadata().find("key");
    if (it != r.metadata().end() && it->second == skey.dump()) {
      out.tokens = r.tensor("tokens").to(at::kLong);
      out.ids = r.tensor("word_ids").to(at::kLong);
      log << "using cached target samples " << spath << std::endl;
      return out;
    }
  }
  auto gen = step_generator(opts.seed, 0, kDrafterSourceStream);
  auto pick =
      at::randint(int64_t(train_rows.size()), {total}, gen, at::TensorOptions().dtype(at::kLong));
  auto rows = at::tensor(train_rows, at::TensorOptions().dtype(at::kLong)).index_select(0, pick);
  out.ids = caps.ids.index_select(0, rows);
  log << "sampling " << total << " images from the target (cfg " << cfg["sample_cfg"]
      << ", temperature " << cfg["sample_temperature"] << ")" << std::endl;
  // Through an inference copy of the target: on a CPU it runs the lean path, many times
  // faster for one-token steps than the autograd-ready forward the training steps need.
  const model::Gpt sampler(run.config, run.weights, device, at::kFloat, /*inference=*/true);
  out.tokens = sample_target(sampler, out.ids, cfg["sample_cfg"], cfg["sample_temperature"],
                             opts.seed, cfg["sample_batch"], &log);
  io::write_safetensors(spath, {{"tokens", out.tokens}, {"word_ids", out.ids}},
                        {{"format", "adtree-samples"}, {"key", skey.dump()}});
  return out;
}

TensorMap initial_head_weights(const GptRun& run, const TrainOptions& opts, const std::string& what,
                               std::ostream& log) {
  auto init = model::init_params(model::drafter_param_specs(run.config), opts.seed + 2);
  if (opts.init_from.empty()) return init;
  // A warm start: the head of an earlier stage of the same GPT (or of a GPT of the same shape)
  // already knows the picture statistics; only the target's features have moved.
  const auto w_path = run_file(opts.init_from, "drafter.safetensors");
  if (!fs::exists(w_path) || !fs::exists(run_file(opts.init_from, "run.json"))) {
    throw Error(what + ": " + opts.init_from +
                " is not a finished 'adtree train drafter' run folder (run.json and "
                "drafter.safetensors are needed)");
  }
  auto prev = io::SafetensorsReader(w_path).all();
  for (auto& [name, t] : init) {
    auto it = prev.find(name);
    if (it == prev.end() || it->second.sizes() != t.sizes()) {
      throw Error(what + ": " + opts.init_from + " is a head for another GPT shape (" + name +
                  (it == prev.end() ? " is missing" : " has another shape") + ")");
    }
    t = it->second.to(at::kFloat).clone();
  }
  log << "starting from the weights of " << opts.init_from << std::endl;
  return init;
}

// One optimiser step's forward and backward. Everything random is drawn from generators seeded by
// (seed, step) (train/batches.h), so a resumed run takes the same steps.
struct DrafterStep {
  const DrafterSettings& s;
  const json& cfg;
  const GptRun& run;
  const CaptionIds& caps;
  const SelfSamples& samples;
  const model::Gpt& target;
  const model::Drafter& head;
  at::Device device;
  uint64_t seed;
  BatchOrder& order;
  BatchOrder& sample_order;

  double operator()(int64_t step, double& items);
  void pick_rows(int64_t step, at::Tensor& tok, at::Tensor& ids);
  at::Tensor pick_streams(int64_t step, at::Tensor& tok, at::Tensor& ids) const;
  at::Tensor noisy(int64_t step, const at::Tensor& feats) const;
  at::Tensor eagle_loss(const TargetRows& tr, const at::Tensor& feats, const at::Tensor& pos) const;
};

// Each row comes from the real pictures or from the target's samples.
void DrafterStep::pick_rows(int64_t step, at::Tensor& tok, at::Tensor& ids) {
  auto real_rows = order.rows_for_step(step);
  auto idx = at::tensor(real_rows, at::TensorOptions().dtype(at::kLong));
  tok = run.tokens.index_select(0, idx);
  ids = caps.ids.index_select(0, idx);
  if (s.self_n > 0 && s.self_fraction > 0) {
    auto sgen = step_generator(seed, step, kDrafterRowStream);
    auto use = at::empty({s.batch}, at::kFloat).uniform_(0.0, 1.0, sgen).lt(s.self_fraction);
    auto sidx = at::tensor(sample_order.rows_for_step(step), at::TensorOptions().dtype(at::kLong));
    tok = at::where(use.view({s.batch, 1}), samples.tokens.index_select(0, sidx), tok);
    ids = at::where(use.view({s.batch, 1}), samples.ids.index_select(0, sidx), ids);
  }
}

// The rows read with the null caption (the head runs in both streams).
at::Tensor DrafterStep::pick_streams(int64_t step, at::Tensor& tok, at::Tensor& ids) const {
  const int64_t batch = s.batch;
  if (s.paired) {  // every picture in both streams, cond first (paired_loss)
    tok = at::cat({tok, tok}), ids = at::cat({ids, ids});
    return at::cat({at::zeros({batch}, at::kBool), at::ones({batch}, at::kBool)}).to(device);
  }
  auto ngen = step_generator(seed, step, kDrafterNullStream);
  return at::empty({batch}, at::kFloat).uniform_(0.0, 1.0, ngen).lt(s.uncond_fraction).to(device);
}

at::Tensor DrafterStep::noisy(int64_t step, const at::Tensor& feats) const {
  if (s.noise > 0) {
    auto fgen = step_generator(seed, step, kDrafterNoiseStream);
    return feats +
           (at::empty(feats.sizes(), at::kFloat).uniform_(0.0, 1.0, fgen) - 0.5).to(device) *
               s.noise;
  }
  return feats;
}

// EAGLE's loss: feature regression plus p_weight x the soft cross-entropy, its rows weighted by
// CASCADE when cascade_weight > 1.
at::Tensor DrafterStep::eagle_loss(const TargetRows& tr, const at::Tensor& feats,
                                   const at::Tensor& pos) const {
  auto out = head.forward(nullptr, feats, tr.tokens_in, pos);
  auto vloss = at::smooth_l1_loss(out.hidden, tr.feats_next);
  auto p = at::softmax(tr.logits_next, -1);
  auto ce = -(p * at::log_softmax(out.logits, -1)).sum(-1);  // [B, N - 1]
  at::Tensor ploss;
  if (s.cascade_weight > 1) {
    auto w = cascade_row_weights(tr.feats_next, s.cascade_tau_h, s.cascade_weight);
    ploss = (w * ce).sum() / w.sum();
  } else {
    ploss = ce.mean();
  }
  return vloss + s.p_weight * ploss;
}

double DrafterStep::operator()(int64_t step, double& items) {
  at::Tensor tok, ids;
  pick_rows(step, tok, ids);
  const at::Tensor null_rows = pick_streams(step, tok, ids);
  auto tr = target_rows(target, tok, word_condition(target, ids.to(device), null_rows));
  auto feats = noisy(step, tr.feats_in);
  const auto pos = head_positions(target, run.config.image_tokens() - 1);
  auto loss = s.paired ? paired_loss(head, tr, feats, pos, cfg) : eagle_loss(tr, feats, pos);
  loss.backward();
  items += double(tr.tokens_in.numel());
  return loss.item<double>();
}

// Validation pictures (the first eval_images of them before the final eval) and the held-out
// self-distillation samples.
json evaluate_head(const model::Gpt& target, const model::Drafter& head, const GptRun& run,
                   const CaptionIds& caps, const SelfSamples& samples,
                   const std::vector<int64_t>& val_rows, const DrafterSettings& s, const json& cfg,
                   bool final) {
  const int64_t eval_images = cfg["eval_images"];
  const double eval_cfg = cfg["eval_cfg"];
  std::vector<int64_t> rows = val_rows;
  if (!final && eval_images > 0 && int64_t(rows.size()) > eval_images)
    rows.resize(size_t(eval_images));
  auto idx = at::tensor(rows, at::TensorOptions().dtype(at::kLong));
  json m;
  m["validation"] = evaluate_drafter(target, head, run.tokens.index_select(0, idx),
                                     caps.ids.index_select(0, idx), eval_cfg);
  if (s.self_eval_n > 0) {
    m["self_samples_heldout"] =
        evaluate_drafter(target, head, samples.tokens.narrow(0, s.self_n, s.self_eval_n),
                         samples.ids.narrow(0, s.self_n, s.self_eval_n), eval_cfg);
  }
  return m;
}

std::string validation_text(const json& m) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "| val top1 %.3f top3 %.3f", m["validation"]["top1"].get<double>(),
                m["validation"]["top3"].get<double>());
  return std::string(buf);
}

void write_finished_head(const TrainOptions& opts, const std::string& gpt_dir, const json& cfg,
                         const Params& params, const TrainResult& result) {
  io::write_safetensors(
      run_file(opts.out, "drafter.safetensors"), params.detached(),
      {{"format", "adtree"}, {"content", "EAGLE-1 draft head trained by adtree train drafter"}});
  write_json_file(run_file(opts.out, "run.json"), {{"kind", "drafter"},
                                                   {"config", cfg},
                                                   {"params", params.count()},
                                                   {"steps", cfg["steps"].get<int64_t>()},
                                                   {"gpt_dir", fs::absolute(gpt_dir).string()},
                                                   {"metrics", result.metrics},
                                                   {"provenance", opts.provenance}});
}

}  // namespace

TrainResult train_drafter(const io::Dataset& data, const std::string& gpt_dir,
                          const TrainOptions& opts) {
  const std::string what = "train drafter";
  const json cfg = drafter_run_config(opts, what);
  const DrafterSettings s = DrafterSettings::read(cfg, what);
  data.validate(what);
  std::ostream& log = opts.log ? *opts.log : std::cout;
  fs::create_directories(opts.out);

  const GptRun run = load_target_run(data, gpt_dir, what);
  const auto device = train_device(opts);
  const model::Gpt target(run.config, run.weights, device, at::kFloat, /*inference=*/false);
  const auto caps = caption_ids(data, run.vocab, run.config.cond_len);
  const auto train_rows = split_rows(data, io::Split::Train, what);
  auto val_rows = data.indices(io::Split::Validation);
  if (val_rows.empty()) val_rows = train_rows;
  const SelfSamples samples = self_samples(run, caps, train_rows, s.self_n + s.self_eval_n, cfg,
                                           opts, gpt_dir, device, log);

  Params params = Params::from(initial_head_weights(run, opts, what, log), device);
  AdamW opt(params, {cfg["lr"].get<double>(), cfg["beta1"].get<double>(),
                     cfg["beta2"].get<double>(), 1e-8, cfg["weight_decay"].get<double>()});
  const model::Drafter head(target, params.tensors, /*inference=*/false);
  log << "draft head: " << params.count() << " parameters; target " << run.config.dim << "x"
      << run.config.n_layer << std::endl;

  BatchOrder order(train_rows, s.batch, opts.seed);
  // The samples' own endless shuffled order (an unused one-row order when there are none).
  std::vector<int64_t> sample_rows(size_t(std::max<int64_t>(s.self_n, 1)), 0);
  for (size_t i = 0; i < sample_rows.size(); ++i) sample_rows[i] = int64_t(i);
  BatchOrder sample_order(sample_rows, s.batch, opts.seed + 1);
  DrafterStep step{s,    cfg,    run,       caps,  samples,     target,
                   head, device, opts.seed, order, sample_order};

  auto spec = LoopSpec::from_config("drafter", "tok", cfg);
  spec.step_fn = [&](int64_t i, double& items) { return step(i, items); };
  spec.eval_fn = [&](int64_t, bool final) {
    return evaluate_head(target, head, run, caps, samples, val_rows, s, cfg, final);
  };
  spec.eval_text = validation_text;

  auto result = run_loop(opts, params, opt, spec);
  if (result.finished) write_finished_head(opts, gpt_dir, cfg, params, result);
  return result;
}

}  // namespace adtree::train
