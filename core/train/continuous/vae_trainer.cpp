#include "train/continuous/vae_trainer.h"

#include <cmath>
#include <filesystem>

#include "io/safetensors.h"
#include "train/batches.h"
#include "train/loop.h"
#include "train/optimizer.h"
#include "train/run_files.h"
#include "util/error.h"

namespace adtree::train {

namespace fs = std::filesystem;
using json = nlohmann::json;

json vae_default_config() {
  // The shipped VQ's trunks (ch 32, two downsamplings: 64x64 pictures -> 16x16 tokens), 4 numbers
  // a token: few dimensions keep CSpD's density ratio, a product over them, near one.
  return json{
      {"latent_dim", 4},     {"ch", 32},          {"ch_mult", {1, 2, 2}},   {"z_channels", 32},
      {"num_res_blocks", 1}, {"norm_groups", 16}, {"steps", 1500},          {"batch", 16},
      {"lr", 4e-4},          {"warmup", 50},      {"min_lr_ratio", 0.1},    {"schedule", "cosine"},
      {"beta1", 0.9},        {"beta2", 0.95},     {"weight_decay", 0.0},    {"grad_clip", 1.0},
      {"l1_weight", 1.0},    {"l2_weight", 1.0},  {"kl_weight", 1e-4},      {"hflip", true},
      {"eval_every", 500},   {"eval_images", 64}, {"checkpoint_every", 100}};
}

namespace {

constexpr uint64_t kFlipStream = 1, kNoiseStream = 2;

model::KlVaeConfig vae_model_config(const json& c) {
  model::KlVaeConfig v;
  v.latent_dim = c.at("latent_dim").get<int64_t>();
  v.ch = c.at("ch").get<int64_t>();
  v.ch_mult = c.at("ch_mult").get<std::vector<int64_t>>();
  v.z_channels = c.at("z_channels").get<int64_t>();
  v.num_res_blocks = c.at("num_res_blocks").get<int64_t>();
  v.norm_groups = c.at("norm_groups").get<int64_t>();
  v.validate();
  return v;
}

at::Device device_of(const model::KlVae& vae) {
  return vae.weights().at("post_quant_conv.weight").device();
}

// KL(N(mean, exp(logvar)) || N(0, 1)), mean over elements.
at::Tensor kl_to_standard(const model::KlVae::Moments& m) {
  return 0.5 * (m.mean.pow(2) + m.logvar.exp() - 1.0 - m.logvar).mean();
}

std::vector<int64_t> slice(const std::vector<int64_t>& rows, size_t i, int64_t batch) {
  return {rows.begin() + long(i), rows.begin() + long(std::min(rows.size(), i + size_t(batch)))};
}

}  // namespace

at::Tensor vae_tokens(const model::KlVae& vae, const io::Dataset& data,
                      const std::vector<int64_t>& rows, int64_t batch) {
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> parts;
  for (size_t i = 0; i < rows.size(); i += size_t(batch))
    parts.push_back(
        vae.tokens_of(images_to_float(data, slice(rows, i, batch), device_of(vae))).cpu());
  require(!parts.empty(), "vae tokens", "no rows to encode");
  return at::cat(parts, 0);
}

json evaluate_vae(const model::KlVae& vae, const io::Dataset& data,
                  const std::vector<int64_t>& rows, int64_t batch) {
  at::NoGradGuard no_grad;
  double psnr_sum = 0.0, kl_sum = 0.0;
  int64_t n = 0;
  for (size_t i = 0; i < rows.size(); i += size_t(batch)) {
    const auto r = slice(rows, i, batch);
    auto x = images_to_float(data, r, device_of(vae));
    const auto m = vae.encode(x);
    auto rec = model::VqModel::to_bytes(vae.decode_latents(m.mean)).to(at::kDouble);
    auto orig = data.images.index_select(0, row_tensor(r)).to(at::kDouble);
    auto mse = (rec - orig).pow(2).mean({1, 2, 3});
    psnr_sum += ((255.0 * 255.0 / at::clamp_min(mse, 1e-10)).log10() * 10.0).sum().item<double>();
    kl_sum += kl_to_standard(m).item<double>() * double(r.size());
    n += int64_t(r.size());
  }
  return json{{"images", n},
              {"psnr_db", n ? psnr_sum / double(n) : 0.0},
              {"kl_per_element", n ? kl_sum / double(n) : 0.0}};
}

model::KlVae load_vae(const std::string& dir) {
  const std::string weights = (fs::path(dir) / "vae.safetensors").string();
  if (!fs::exists(weights)) {
    throw Error(dir +
                ": no vae.safetensors (give a finished 'adtree train vae' run folder or a "
                "continuous model's directory)");
  }
  const auto run = (fs::path(dir) / "run.json").string();
  const auto meta = fs::exists(run) ? run : (fs::path(dir) / "model.json").string();
  const auto cfg = model::KlVaeConfig::from_json(read_json_file(meta).at("vae"));
  auto w = io::SafetensorsReader(weights).all();
  for (auto& [k, t] : w) t = t.to(at::kFloat);
  return model::KlVae(cfg, std::move(w));
}

namespace {

json vae_run_config(const TrainOptions& opts, const std::string& what) {
  auto cfg = resolve_config(vae_default_config(), opts, what);
  return cfg;
}

// One optimiser step: a posterior sample of the step's mirrored pictures, decoded.
struct VaeStep {
  const json& cfg;
  const io::Dataset& data;
  const model::KlVae& vae;
  at::Device device;
  uint64_t seed;
  BatchOrder& order;

  double operator()(int64_t step, double& items) {
    auto x = images_to_float(data, order.rows_for_step(step), device);
    if (cfg["hflip"].get<bool>()) {
      auto gen = step_generator(seed, step, kFlipStream);
      auto flip = at::empty({x.size(0)}, at::kFloat).bernoulli_(0.5, gen).to(device, at::kBool);
      x = at::where(flip.view({-1, 1, 1, 1}), x.flip({3}), x);
    }
    const auto m = vae.encode(x);
    auto gen = step_generator(seed, step, kNoiseStream);
    auto eps = at::empty(m.mean.sizes(), at::kFloat).normal_(0.0, 1.0, gen).to(device);
    auto rec = vae.decode_latents(m.mean + (0.5 * m.logvar).exp() * eps);
    auto loss = cfg["l2_weight"].get<double>() * at::mse_loss(rec, x) +
                cfg["l1_weight"].get<double>() * at::l1_loss(rec, x) +
                cfg["kl_weight"].get<double>() * kl_to_standard(m);
    loss.backward();
    items += double(x.size(0));
    return loss.item<double>();
  }
};

// 1 / std of the posterior means over (up to 1024) training pictures.
double fitted_latent_scale(const model::KlVae& vae, const io::Dataset& data,
                           std::vector<int64_t> rows) {
  if (rows.size() > 1024) rows.resize(1024);
  const double sd = vae_tokens(vae, data, rows).std().item<double>();
  require(std::isfinite(sd) && sd > 0, "train vae",
          "the latents collapsed (std " + std::to_string(sd) + ")");
  return 1.0 / sd;
}

}  // namespace

TrainResult train_vae(const io::Dataset& data, const TrainOptions& opts) {
  const std::string what = "train vae";
  const json cfg = vae_run_config(opts, what);
  auto vcfg = vae_model_config(cfg);
  require(cfg["steps"].get<int64_t>() > 0 && cfg["batch"].get<int64_t>() > 0, what,
          "steps and batch must be positive");
  require(cfg["kl_weight"].get<double>() >= 0, what, "kl_weight must not be negative");
  data.validate(what);
  data.require_images(what);
  const int64_t f = vcfg.downsample_factor();
  require(data.images.size(1) % f == 0 && data.images.size(2) % f == 0, what,
          "the pictures are not a multiple of the VAE's downsampling (" + std::to_string(f) + ")");
  const auto train_rows = split_rows(data, io::Split::Train, what);
  auto val_rows = data.indices(io::Split::Validation);
  if (val_rows.empty()) val_rows = train_rows;

  const auto device = train_device(opts);
  Params params =
      Params::from(model::init_params(kl_vae_param_specs(vcfg, true), opts.seed), device);
  AdamW opt(params, {cfg["lr"].get<double>(), cfg["beta1"].get<double>(),
                     cfg["beta2"].get<double>(), 1e-8, cfg["weight_decay"].get<double>()});
  const model::KlVae vae(vcfg, params.tensors);
  BatchOrder order(train_rows, cfg["batch"].get<int64_t>(), opts.seed);
  VaeStep step{cfg, data, vae, device, opts.seed, order};

  auto spec = LoopSpec::from_config("vae", "img", cfg);
  spec.step_fn = [&](int64_t i, double& items) { return step(i, items); };
  spec.eval_fn = [&](int64_t, bool final) {
    auto rows = val_rows;
    const int64_t cap = cfg["eval_images"].get<int64_t>();
    if (!final && cap > 0 && int64_t(rows.size()) > cap) rows.resize(size_t(cap));
    return evaluate_vae(vae, data, rows);
  };
  spec.eval_text = [](const json& m) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "| val PSNR %.2f dB, KL %.3f", m["psnr_db"].get<double>(),
                  m["kl_per_element"].get<double>());
    return std::string(buf);
  };
  auto result = run_loop(opts, params, opt, spec);
  if (!result.finished) return result;
  vcfg.latent_scale = fitted_latent_scale(vae, data, train_rows);
  io::write_safetensors(run_file(opts.out, "vae.safetensors"), params.detached(),
                        {{"format", "adtree"}, {"content", "KL VAE trained by adtree train vae"}});
  write_json_file(run_file(opts.out, "run.json"),
                  {{"kind", "vae"},
                   {"config", cfg},
                   {"vae", vcfg.to_json()},
                   {"params", params.count()},
                   {"steps", cfg["steps"].get<int64_t>()},
                   {"metrics", result.metrics},
                   {"provenance", opts.provenance},
                   {"dataset", data.info.value("sources", json::array())}});
  return result;
}

}  // namespace adtree::train
