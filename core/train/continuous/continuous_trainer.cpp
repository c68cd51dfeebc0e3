#include "train/continuous/continuous_trainer.h"

#include <cmath>
#include <filesystem>
#include <iostream>

#include "io/safetensors.h"
#include "train/batches.h"
#include "train/captions.h"
#include "train/continuous/diffusion_loss.h"
#include "train/continuous/vae_trainer.h"
#include "train/gpt_trainer.h"
#include "train/loop.h"
#include "train/optimizer.h"
#include "train/run_files.h"
#include "util/error.h"

namespace adtree::train {

namespace fs = std::filesystem;
using json = nlohmann::json;

json continuous_default_config() {
  // The target's size: a 256-wide, 6-layer transformer and a 256-wide, 3-block head (MAR-B's head
  // is 1024 x 6 for 16-d tokens; ours are 4-d). The draft model: e.g. {"dim":128,"n_layer":3,
  // "n_head":2,"head_width":128,"head_blocks":2}.
  return json{{"dim", 256},
              {"n_layer", 6},
              {"n_head", 4},
              {"cap_dim", 100},
              {"cond_len", 16},
              {"multiple_of", 64},
              {"head_width", 256},
              {"head_blocks", 3},
              {"train_steps", 1000},
              {"sample_steps", 25},
              {"diffusion_batch_mul", 4},
              {"steps", 6000},
              {"batch", 16},
              {"lr", 4e-4},
              {"warmup", 200},
              {"min_lr_ratio", 0.1},
              {"schedule", "cosine"},
              {"beta1", 0.9},
              {"beta2", 0.95},
              {"weight_decay", 0.05},
              {"grad_clip", 1.0},
              {"dropout", 0.1},
              {"caption_dropout", 0.1},
              {"token_noise", 0.0},
              {"eval_every", 500},
              {"eval_images", 128},
              {"checkpoint_every", 200}};
}

namespace {

constexpr uint64_t kDropStream = 11, kCaptionStream = 12, kNoiseStream = 13, kHeadStream = 14;

// The training tokens' largest |number|, rounded up to a tenth: where sampling clamps its
// predictions of x0 (model/continuous/diffusion_schedule.h says why it must).
double token_bound(const at::Tensor& tokens) {
  return std::ceil(tokens.abs().max().item<double>() * 10.0) / 10.0;
}

model::ContinuousConfig continuous_model_config(const json& c, int64_t num_words,
                                                const at::Tensor& tokens) {
  const int64_t token_dim = tokens.size(2);
  const int64_t grid = int64_t(std::lround(std::sqrt(double(tokens.size(1)))));
  model::ContinuousConfig m;
  auto& g = m.backbone;
  g.dim = c.at("dim").get<int64_t>();
  g.n_layer = c.at("n_layer").get<int64_t>();
  g.n_head = c.at("n_head").get<int64_t>();
  g.cap_dim = c.at("cap_dim").get<int64_t>();
  g.cond_len = c.at("cond_len").get<int64_t>();
  g.multiple_of = c.at("multiple_of").get<int64_t>();
  g.cond = model::CondKind::Caption;
  g.num_words = num_words;
  g.vocab_size = 2;  // unused: the family's tokens are vectors
  g.grid_h = g.grid_w = grid;
  m.head.token_dim = token_dim;
  m.head.cond_dim = g.dim;
  m.head.width = c.at("head_width").get<int64_t>();
  m.head.blocks = c.at("head_blocks").get<int64_t>();
  m.train_steps = c.at("train_steps").get<int>();
  m.sample_steps = c.at("sample_steps").get<int>();
  m.x0_bound = token_bound(tokens);
  m.validate();
  return m;
}

json continuous_run_config(const TrainOptions& opts, const std::string& what) {
  auto cfg = resolve_config(continuous_default_config(), opts, what);
  // Part of the config so that a resumed second stage must name the same starting run.
  if (!opts.init_from.empty()) cfg["init_from"] = fs::path(opts.init_from).filename().string();
  require(cfg["diffusion_batch_mul"].get<int64_t>() >= 1, what,
          "diffusion_batch_mul must be at least 1");
  const double cd = cfg["caption_dropout"], dr = cfg["dropout"], tn = cfg["token_noise"];
  require(cd >= 0 && cd <= 1 && dr >= 0 && dr < 1 && tn >= 0, what,
          "caption_dropout must be in [0, 1], dropout in [0, 1), token_noise >= 0");
  return cfg;
}

// The VAE's tokens of every row [N, h*w, D], cached in the run folder for the same VAE weights.
at::Tensor cached_vae_tokens(const io::Dataset& data, const std::string& vae_dir,
                             const std::string& out, std::ostream& log) {
  const auto vae = load_vae(vae_dir);
  double sum = 0.0;
  for (const auto& [k, t] : vae.weights()) sum += t.abs().sum().item<double>();
  const std::string stamp = std::to_string(sum) + ":" + std::to_string(data.size());
  const auto path = run_file(out, "tokens.safetensors");
  if (fs::exists(path)) {
    io::SafetensorsReader r(path);
    if (r.metadata().count("vae") && r.metadata().at("vae") == stamp) return r.tensor("tokens");
  }
  log << "encoding " << data.size() << " pictures with the VAE of " << vae_dir << std::endl;
  std::vector<int64_t> rows(size_t(data.size()));
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = int64_t(i);
  auto tokens = vae_tokens(vae, data, rows);
  io::write_safetensors(path, {{"tokens", tokens}}, {{"vae", stamp}});
  return tokens;
}

// One optimiser step: teacher forcing over whole pictures, the head on every token's z.
struct ContinuousStep {
  const json& cfg;
  const at::Tensor& tokens;  // [N, n, D]
  const CaptionIds& caps;
  const model::ContinuousGpt& m;
  at::Device device;
  uint64_t seed;
  BatchOrder& order;
  double last_mse = 0, last_vb = 0;

  // z_i [B, n, dim] of every token under teacher forcing (dropout on the input embeddings).
  at::Tensor conditions(const at::Tensor& tok, const at::Tensor& ids, const at::Tensor& null_rows,
                        double dropout, at::Generator* gen) const {
    const auto& g = m.backbone();
    const int64_t B = tok.size(0), n = tok.size(1), C = g.config().cond_tokens();
    const auto cond = word_condition(g, ids, null_rows);
    auto x = at::cat({g.embed_condition(cond), m.embed(tok.narrow(1, 0, n - 1))}, 1);
    if (dropout > 0 && gen) {
      auto keep = at::empty(x.sizes(), at::kFloat).bernoulli_(1.0 - dropout, *gen).to(x.device());
      x = x * keep / (1.0 - dropout);
    }
    auto pos = at::arange(x.size(1), at::TensorOptions().dtype(at::kLong));
    auto mask = cond.caption_mask.to(x.device());
    auto key_valid = at::cat({mask, at::ones({B, n - 1}, mask.options())}, 1);
    return g.forward(x, pos, nullptr, {}, key_valid, -1).hidden.narrow(1, C - 1, n);
  }

  DiffusionLoss loss_of(const at::Tensor& tok, const at::Tensor& z, at::Generator& gen) const {
    const int64_t mul = cfg["diffusion_batch_mul"], D = tok.size(2);
    auto x0 = tok.reshape({-1, D}).repeat({mul, 1});
    auto zz = z.reshape({-1, z.size(2)}).repeat({mul, 1});
    const int T = m.config().train_steps;
    auto t = at::randint(T, {x0.size(0)}, gen, at::TensorOptions().dtype(at::kLong));
    auto noise = at::empty(x0.sizes(), at::kFloat).normal_(0.0, 1.0, gen).to(device);
    return diffusion_loss(m.head(), T, x0, zz, t.to(device), noise);
  }

  double operator()(int64_t step, double& items) {
    const auto rows = order.rows_for_step(step);
    auto idx = row_tensor(rows);
    auto tok = tokens.index_select(0, idx).to(device);
    auto ids = caps.ids.index_select(0, idx).to(device);
    auto cgen = step_generator(seed, step, kCaptionStream);
    auto null = at::empty({int64_t(rows.size())}, at::kFloat)
                    .uniform_(0.0, 1.0, cgen)
                    .lt(cfg["caption_dropout"].get<double>())
                    .to(device);
    auto input = tok;
    if (cfg["token_noise"].get<double>() > 0) {
      auto ngen = step_generator(seed, step, kNoiseStream);
      input = tok + cfg["token_noise"].get<double>() *
                        at::empty(tok.sizes(), at::kFloat).normal_(0.0, 1.0, ngen).to(device);
    }
    auto dgen = step_generator(seed, step, kDropStream);
    auto z = conditions(input, ids, null, cfg["dropout"].get<double>(), &dgen);
    auto hgen = step_generator(seed, step, kHeadStream);
    auto l = loss_of(tok, z, hgen);
    l.total.backward();
    last_mse = l.mse, last_vb = l.vb;
    items += double(tok.size(0) * tok.size(1));
    return l.total.item<double>();
  }

  // Mean loss of `rows` with their captions, fixed steps and noises (comparable between evals).
  json evaluate(const std::vector<int64_t>& rows) const {
    at::NoGradGuard no_grad;
    auto gen = step_generator(seed, 0, 98);
    double mse = 0, vb = 0;
    int64_t batches = 0;
    for (size_t i = 0; i < rows.size(); i += 16) {
      std::vector<int64_t> r(rows.begin() + long(i),
                             rows.begin() + long(std::min(rows.size(), i + 16)));
      auto idx = row_tensor(r);
      auto tok = tokens.index_select(0, idx).to(device);
      auto z = conditions(tok, caps.ids.index_select(0, idx).to(device), {}, 0.0, nullptr);
      const auto l = loss_of(tok, z, gen);
      mse += l.mse, vb += l.vb, ++batches;
    }
    return json{{"mse", batches ? mse / double(batches) : 0.0},
                {"vb_bits", batches ? vb / double(batches) : 0.0}};
  }
};

TensorMap initial_weights(const model::ContinuousConfig& mcfg, const model::Vocabulary& vocab,
                          const TrainOptions& opts, const std::string& what, std::ostream& log) {
  auto init = model::init_params(model::continuous_param_specs(mcfg), opts.seed);
  if (opts.init_from.empty()) return init;
  const auto prev = load_continuous_run(opts.init_from);
  auto same = prev.config;
  same.x0_bound = mcfg.x0_bound;  // a sampling bound, not the architecture
  require(same.to_json() == mcfg.to_json(), what,
          opts.init_from + " has another architecture than this config");
  require(prev.vocab.entries() == vocab.entries(), what,
          opts.init_from + " was trained with another word list");
  for (auto& [name, t] : init) t.copy_(prev.weights.at(name));
  log << "starting from the weights of " << opts.init_from << std::endl;
  return init;
}

}  // namespace

ContinuousRun load_continuous_run(const std::string& dir) {
  const auto run_path = run_file(dir, "run.json");
  if (!fs::exists(run_path))
    throw Error(dir + ": no run.json (not a finished 'train continuous' run)");
  ContinuousRun r;
  r.run = read_json_file(run_path);
  r.config = model::ContinuousConfig::from_json(r.run.at("model"));
  if (!r.run.at("model").contains("x0_bound")) {  // finished before the bound was recorded
    r.config.x0_bound =
        token_bound(io::SafetensorsReader(run_file(dir, "tokens.safetensors")).tensor("tokens"));
  }
  r.weights = io::SafetensorsReader(run_file(dir, "continuous.safetensors")).all();
  for (auto& [k, t] : r.weights) t = t.to(at::kFloat);
  r.vocab = model::Vocabulary::load(run_file(dir, "text.json"));
  return r;
}

ContinuousRun load_continuous_snapshot(const std::string& dir) {
  const auto path = run_file(dir, "checkpoint.safetensors");
  if (!fs::exists(path)) throw Error(dir + ": no checkpoint.safetensors (no step taken yet)");
  io::SafetensorsReader ck(path);
  const auto& md = ck.metadata();
  if (!md.count("kind") || md.at("kind") != "continuous" || !md.count("config"))
    throw Error(path + ": not a checkpoint of 'train continuous'");
  const json cfg = json::parse(md.at("config"));
  const auto tokens = io::SafetensorsReader(run_file(dir, "tokens.safetensors")).tensor("tokens");
  ContinuousRun r;
  r.vocab = model::Vocabulary::load(run_file(dir, "text.json"));
  r.config = continuous_model_config(cfg, r.vocab.size(), tokens);
  for (const auto& info : ck.tensors()) {
    if (info.name.rfind("param.", 0) == 0)
      r.weights.emplace(info.name.substr(6), ck.tensor(info.name).to(at::kFloat));
  }
  r.run = {{"kind", "continuous"},
           {"config", cfg},
           {"snapshot_step", std::stoll(md.at("step"))},
           {"provenance", {{"command", "a checkpoint of a run still training"}}}};
  return r;
}

TrainResult train_continuous(const io::Dataset& data, const std::string& vae_dir,
                             const TrainOptions& opts) {
  const std::string what = "train continuous";
  const json cfg = continuous_run_config(opts, what);
  data.validate(what);
  data.require_images(what);
  std::ostream& log = opts.log ? *opts.log : std::cout;
  fs::create_directories(opts.out);
  const auto tokens = cached_vae_tokens(data, vae_dir, opts.out, log);
  const int64_t n = tokens.size(1), grid = int64_t(std::lround(std::sqrt(double(n))));
  require(grid * grid == n, what, "the VAE's token grid is not square");

  const auto train_rows = split_rows(data, io::Split::Train, what);
  auto val_rows = data.indices(io::Split::Validation);
  const auto vocab = build_vocabulary(data, train_rows);
  const auto mcfg = continuous_model_config(cfg, vocab.size(), tokens);
  const auto caps = caption_ids(data, vocab, mcfg.backbone.cond_len);
  vocab.save(run_file(opts.out, "text.json"));

  const auto device = train_device(opts);
  Params params = Params::from(initial_weights(mcfg, vocab, opts, what, log), device);
  AdamW opt(params, {cfg["lr"].get<double>(), cfg["beta1"].get<double>(),
                     cfg["beta2"].get<double>(), 1e-8, cfg["weight_decay"].get<double>()});
  const model::ContinuousGpt m(mcfg, params.tensors, device, at::kFloat, /*inference=*/false);
  log << "continuous model " << mcfg.backbone.dim << "x" << mcfg.backbone.n_layer << ", head "
      << mcfg.head.width << "x" << mcfg.head.blocks << ", " << params.count() << " parameters, "
      << mcfg.token_dim() << "-d tokens, " << train_rows.size() << " training pictures"
      << std::endl;

  auto train_eval = train_rows;
  const int64_t cap = cfg["eval_images"];
  if (cap > 0 && int64_t(train_eval.size()) > cap) train_eval.resize(size_t(cap));
  if (cap > 0 && int64_t(val_rows.size()) > cap) val_rows.resize(size_t(cap));
  BatchOrder order(train_rows, cfg["batch"].get<int64_t>(), opts.seed);
  ContinuousStep step{cfg, tokens, caps, m, device, opts.seed, order};

  auto spec = LoopSpec::from_config("continuous", "tok", cfg);
  spec.step_fn = [&](int64_t i, double& items) { return step(i, items); };
  spec.eval_fn = [&](int64_t, bool) {
    json e{{"train", step.evaluate(train_eval)}};
    if (!val_rows.empty()) e["val"] = step.evaluate(val_rows);
    return e;
  };
  spec.eval_text = [](const json& e) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "| train mse %.4f val mse %.4f", e["train"]["mse"].get<double>(),
                  e.contains("val") ? e["val"]["mse"].get<double>() : 0.0);
    return std::string(buf);
  };
  auto result = run_loop(opts, params, opt, spec);
  if (!result.finished) return result;
  io::write_safetensors(run_file(opts.out, "continuous.safetensors"), params.detached(),
                        {{"format", "adtree"},
                         {"content", "continuous-token model trained by adtree train continuous"}});
  write_json_file(run_file(opts.out, "run.json"),
                  {{"kind", "continuous"},
                   {"config", cfg},
                   {"model", mcfg.to_json()},
                   {"params", params.count()},
                   {"steps", cfg["steps"].get<int64_t>()},
                   {"epochs", order.epoch_of(cfg["steps"].get<int64_t>())},
                   {"vae_dir", fs::absolute(vae_dir).string()},
                   {"metrics", result.metrics},
                   {"provenance", opts.provenance}});
  return result;
}

}  // namespace adtree::train
