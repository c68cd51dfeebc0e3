#include "train/vq_trainer.h"

#include <c10/core/InferenceMode.h>

#include <cmath>
#include <filesystem>

#include "io/manifest.h"
#include "io/safetensors.h"
#include "train/batches.h"
#include "train/checkpoint.h"
#include "train/loop.h"
#include "train/optimizer.h"
#include "train/run_files.h"
#include "util/error.h"

namespace adtree::train {

namespace fs = std::filesystem;
using json = nlohmann::json;

json vq_default_config() {
  // Sized for a CPU: 16x16 codes on 64x64 pictures (two downsamplings), ~1-2 GFLOP per image.
  return json{{"codebook_size", 1024},
              {"codebook_dim", 8},
              {"ch", 64},
              {"ch_mult", {1, 2, 2}},
              {"z_channels", 64},
              {"num_res_blocks", 1},
              {"norm_groups", 32},
              {"steps", 2000},
              {"batch", 16},
              {"lr", 3e-4},
              {"warmup", 100},
              {"min_lr_ratio", 0.1},
              {"schedule", "cosine"},
              {"beta1", 0.9},
              {"beta2", 0.95},
              {"weight_decay", 0.05},
              {"grad_clip", 1.0},
              {"l1_weight", 1.0},
              {"l2_weight", 1.0},
              {"codebook_weight", 1.0},
              {"commit_beta", 0.25},
              {"restart_every", 100},
              {"restart_until", 0.8},
              {"hflip", true},
              {"eval_every", 500},
              {"eval_images", 128},
              {"checkpoint_every", 200}};
}

model::VqConfig vq_model_config(const json& c) {
  model::VqConfig v;
  v.codebook_size = c.at("codebook_size").get<int64_t>();
  v.codebook_dim = c.at("codebook_dim").get<int64_t>();
  v.ch = c.at("ch").get<int64_t>();
  v.ch_mult = c.at("ch_mult").get<std::vector<int64_t>>();
  v.z_channels = c.at("z_channels").get<int64_t>();
  v.num_res_blocks = c.at("num_res_blocks").get<int64_t>();
  v.norm_groups = c.at("norm_groups").get<int64_t>();
  v.validate();
  return v;
}

namespace {

at::Device device_of(const model::VqModel& vq) {
  return vq.weights().at("post_quant_conv.weight").device();
}

at::Tensor l2_normalize(const at::Tensor& z, int64_t dim) {
  return z / at::clamp_min(z.norm(2, {dim}, true), 1e-12);
}

// Streams of step_generator, one per purpose.
constexpr uint64_t kFlipStream = 1, kRestartStream = 2;

}  // namespace

at::Tensor encode_rows(const model::VqModel& vq, const io::Dataset& data,
                       const std::vector<int64_t>& rows, int64_t batch) {
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> parts;
  for (size_t i = 0; i < rows.size(); i += size_t(batch)) {
    std::vector<int64_t> r(rows.begin() + long(i),
                           rows.begin() + long(std::min(rows.size(), i + size_t(batch))));
    parts.push_back(vq.quantize(vq.encode(images_to_float(data, r, device_of(vq)))).cpu());
  }
  if (parts.empty()) return at::empty({0, 0}, at::TensorOptions().dtype(at::kLong));
  return at::cat(parts, 0);
}

json evaluate_vq(const model::VqModel& vq, const io::Dataset& data,
                 const std::vector<int64_t>& rows, int64_t batch) {
  at::NoGradGuard no_grad;
  const int64_t K = vq.config().codebook_size;
  auto counts = at::zeros({K}, at::TensorOptions().dtype(at::kDouble));
  double psnr_sum = 0.0, mse_sum = 0.0;
  int64_t n = 0;
  for (size_t i = 0; i < rows.size(); i += size_t(batch)) {
    std::vector<int64_t> r(rows.begin() + long(i),
                           rows.begin() + long(std::min(rows.size(), i + size_t(batch))));
    auto x = images_to_float(data, r, device_of(vq));
    auto idx = vq.quantize(vq.encode(x)).cpu();
    const int64_t f = vq.config().downsample_factor();
    auto rec =
        model::VqModel::to_bytes(vq.decode(idx, x.size(2) / f, x.size(3) / f)).to(at::kDouble);
    auto orig = data.images.index_select(0, row_tensor(r)).to(at::kDouble);
    auto mse = (rec - orig).pow(2).mean({1, 2, 3});  // per image, 8-bit scale
    auto psnr = (255.0 * 255.0 / at::clamp_min(mse, 1e-10)).log10() * 10.0;
    psnr_sum += psnr.sum().item<double>();
    mse_sum += mse.sum().item<double>();
    n += int64_t(r.size());
    counts.index_add_(0, idx.reshape(-1), at::ones({idx.numel()}, counts.options()));
  }
  const double total = counts.sum().item<double>();
  auto p = counts / std::max(total, 1.0);
  const double entropy = -(p * at::log(at::clamp_min(p, 1e-30))).sum().item<double>();
  const int64_t used = counts.gt(0).sum().item<int64_t>();
  return json{{"images", n},
              {"psnr_db", n ? psnr_sum / double(n) : 0.0},
              {"psnr_of_mean_mse_db",
               n ? 10.0 * std::log10(255.0 * 255.0 / std::max(mse_sum / double(n), 1e-10)) : 0.0},
              {"codes_used", used},
              {"codebook_size", K},
              {"usage_perplexity", std::exp(entropy)}};
}

at::Tensor reconstruction_pairs(const model::VqModel& vq, const io::Dataset& data,
                                const std::vector<int64_t>& rows) {
  at::NoGradGuard no_grad;
  auto x = images_to_float(data, rows, device_of(vq));
  const int64_t f = vq.config().downsample_factor();
  auto rec =
      model::VqModel::to_bytes(vq.decode(vq.quantize(vq.encode(x)), x.size(2) / f, x.size(3) / f));
  auto orig = data.images.index_select(0, row_tensor(rows));
  // Interleaved original, reconstruction, original, ... so pairs sit next to each other.
  return at::stack({orig, rec}, 1).reshape({-1, orig.size(1), orig.size(2), 3}).contiguous();
}

model::VqModel load_vq(const std::string& dir) {
  const std::string weights = (fs::path(dir) / "vq.safetensors").string();
  if (!fs::exists(weights)) {
    throw Error(dir +
                ": no vq.safetensors (give a finished 'adtree train vq' run folder or a model "
                "directory)");
  }
  model::VqConfig cfg;
  const auto run = (fs::path(dir) / "run.json").string();
  if (fs::exists(run)) {
    cfg = model::VqConfig::from_json(read_json_file(run).at("vq"));
  } else {
    cfg = model::VqConfig::from_json(io::Manifest::load(dir).vq);
  }
  auto w = io::SafetensorsReader(weights).all();
  for (auto& [k, t] : w) t = t.to(at::kFloat);
  return model::VqModel(cfg, std::move(w));
}

namespace {

// The defaults, the config's overrides, then the options given on the command line.
json vq_run_config(const TrainOptions& opts, const std::string& what) {
  auto cfg = resolve_config(vq_default_config(), opts, what);
  return cfg;
}

// The numbers of the resolved config that the training step and the restarts read, checked once.
struct VqSettings {
  int64_t steps = 0, batch = 0;
  double beta = 0;                   // commitment loss weight
  double l1w = 0, l2w = 0, cbw = 0;  // L1, L2 reconstruction and codebook loss weights
  bool hflip = false;                // mirror half the pictures
  int64_t restart_every = 0;         // dead-code restart check every N steps (0: never)
  int64_t restart_until = 0;         // last step that restarts codes (then they settle)
  int64_t eval_images = 0;           // validation pictures of an eval before the final one

  static VqSettings read(const json& cfg, const std::string& what);
};

VqSettings VqSettings::read(const json& cfg, const std::string& what) {
  VqSettings s;
  s.steps = cfg["steps"], s.batch = cfg["batch"];
  require(s.steps > 0, what, "steps must be positive");
  require(s.batch > 0, what, "batch must be positive");
  s.beta = cfg["commit_beta"];
  require(s.beta >= 0, what, "commit_beta must not be negative");
  s.l1w = cfg["l1_weight"], s.l2w = cfg["l2_weight"], s.cbw = cfg["codebook_weight"];
  s.hflip = cfg["hflip"];
  s.restart_every = cfg["restart_every"];
  s.restart_until = int64_t(double(cfg["restart_until"]) * double(s.steps));
  s.eval_images = cfg["eval_images"];
  return s;
}

// The pictures must be there and tile into the VQ's downsampling.
void check_pictures(const io::Dataset& data, const model::VqConfig& vcfg, const std::string& what) {
  const int64_t f = vcfg.downsample_factor();
  data.validate(what);
  data.require_images(what);
  require(data.images.size(1) % f == 0 && data.images.size(2) % f == 0, what,
          "the pictures (" + std::to_string(data.images.size(1)) + "x" +
              std::to_string(data.images.size(2)) +
              ") are not a multiple of the VQ's downsampling (" + std::to_string(f) + ")");
}

TensorMap initial_vq_weights(const model::VqConfig& vcfg, uint64_t seed) {
  auto init = model::init_params(model::vq_param_specs(vcfg, true), seed);
  // LlamaGen's quantiser L2-normalises its codebook at construction; rows start on the unit sphere,
  // the same length a restarted code gets.
  init["quantize.embedding.weight"] = l2_normalize(init["quantize.embedding.weight"], 1);
  return init;
}

// Trainer state beyond the parameters and the optimiser, for the dead-code restarts.
struct CodeUsage {
  at::Tensor hits;  // per code since the last restart check; in the checkpoint so resumes are exact
  at::Tensor last_latents;  // normalised latents of the last batch [B*h*w, dim]: restart pool
  json last_restart = json::object();  // what the last check found (reported by every eval)

  void record(const at::Tensor& zn, const at::Tensor& idx);
  TensorMap save() const { return TensorMap{{"usage", hits.clone()}}; }
  void load(const TensorMap& extra, const std::string& out, at::Device device);
};

void CodeUsage::record(const at::Tensor& zn, const at::Tensor& idx) {
  at::NoGradGuard no_grad;
  hits.index_add_(0, idx.reshape(-1), at::ones({idx.numel()}, hits.options()));
  last_latents = zn.detach().permute({0, 2, 3, 1}).reshape({-1, zn.size(1)});
}

void CodeUsage::load(const TensorMap& extra, const std::string& out, at::Device device) {
  auto it = extra.find("usage");
  if (it == extra.end() || it->second.sizes() != hits.sizes()) {
    throw Error(Checkpoint::path_in(out) + ": codebook usage state missing or of another size");
  }
  hits.copy_(it->second.to(device));
}

// One optimiser step's forward and backward. Everything random is drawn from generators seeded by
// (seed, step) (train/batches.h), so a resumed run takes the same steps.
struct VqStep {
  const VqSettings& s;
  const io::Dataset& data;
  const model::VqModel& vq;
  at::Device device;
  uint64_t seed;
  BatchOrder& order;
  CodeUsage& usage;

  double operator()(int64_t step, double& items);
  at::Tensor mirrored(int64_t step, const at::Tensor& x) const;
  at::Tensor loss(const at::Tensor& x, const at::Tensor& zn, const at::Tensor& idx) const;
};

// Mirror images are as good tokenizer data as the originals (the VQ never sees captions).
at::Tensor VqStep::mirrored(int64_t step, const at::Tensor& x) const {
  if (!s.hflip) return x;
  const int64_t B = x.size(0);
  auto gen = step_generator(seed, step, kFlipStream);
  // Drawn on the CPU from the step's generator, so every device sees the same flips.
  auto flip =
      at::empty({B}, at::kFloat).bernoulli_(0.5, gen).to(device, at::kBool).view({B, 1, 1, 1});
  return at::where(flip, x.flip({3}), x);
}

// Reconstruction (L2 + L1) through the straight-through codes, plus the codebook and commitment
// terms on the normalised latents `zn` and their codes `idx`.
at::Tensor VqStep::loss(const at::Tensor& x, const at::Tensor& zn, const at::Tensor& idx) const {
  const int64_t B = x.size(0), h = zn.size(2), w = zn.size(3), d = zn.size(1);
  auto zq = vq.normalized_codebook()
                .index_select(0, idx.reshape(-1))
                .view({B, h, w, d})
                .permute({0, 3, 1, 2});
  auto codebook_loss = at::mse_loss(zq, zn.detach());
  auto commit_loss = at::mse_loss(zn, zq.detach());
  auto z_st = zn + (zq - zn).detach();  // straight-through: decoder gradients reach the encoder
  auto rec = vq.decode_latents(z_st);
  return s.l2w * at::mse_loss(rec, x) + s.l1w * at::l1_loss(rec, x) + s.cbw * codebook_loss +
         s.beta * commit_loss;
}

double VqStep::operator()(int64_t step, double& items) {
  const auto rows = order.rows_for_step(step);
  auto x = mirrored(step, images_to_float(data, rows, device));
  auto z = vq.encode(x);  // [B, d, h, w]
  auto zn = l2_normalize(z, 1);
  auto idx = vq.quantize(z);  // nearest normalised code, no grad
  auto l = loss(x, zn, idx);
  l.backward();
  usage.record(zn, idx);
  items += double(x.size(0));
  return l.item<double>();
}

// Dead-code restart, after the update of `step`: codes no batch chose since the last check are
// moved onto latents the encoder produces now, so the whole codebook stays in use (FINDINGS.md: it
// helped). Stopped for the last part of training so the final codes settle.
void restart_dead_codes(const VqSettings& s, uint64_t seed, int64_t step, at::Device device,
                        CodeUsage& usage, Params& params, AdamW& opt) {
  const int64_t done = step + 1;
  if (s.restart_every <= 0 || done % s.restart_every != 0) return;
  at::NoGradGuard no_grad;
  auto dead = usage.hits.eq(0).nonzero().reshape(-1);
  const int64_t n_dead = dead.numel();
  const auto& pool = usage.last_latents;
  if (n_dead > 0 && done <= s.restart_until && pool.defined()) {
    auto gen = step_generator(seed, step, kRestartStream);
    auto pick =
        at::randint(pool.size(0), {n_dead}, gen, at::TensorOptions().dtype(at::kLong)).to(device);
    auto noise = at::empty({n_dead, pool.size(1)}, at::kFloat).normal_(0.0, 0.01, gen).to(device);
    auto fresh = l2_normalize(pool.index_select(0, pick) + noise, 1);
    auto& cb = params.tensors.at("quantize.embedding.weight");
    cb.detach().index_copy_(0, dead, fresh);
    opt.exp_avg("quantize.embedding.weight").index_fill_(0, dead, 0.0);
    opt.exp_avg_sq("quantize.embedding.weight").index_fill_(0, dead, 0.0);
  }
  usage.last_restart = {
      {"step", done}, {"dead_codes", n_dead}, {"restarted", done <= s.restart_until ? n_dead : 0}};
  usage.hits.zero_();
}

// Validation (its first eval_images pictures before the final eval) and, on the final one, (part
// of) the training set too: what the GPT will be trained on.
json evaluate_during(const model::VqModel& vq, const io::Dataset& data,
                     const std::vector<int64_t>& train_rows, const std::vector<int64_t>& val_rows,
                     const VqSettings& s, const CodeUsage& usage, bool final) {
  std::vector<int64_t> rows = val_rows;
  if (!final && s.eval_images > 0 && int64_t(rows.size()) > s.eval_images)
    rows.resize(size_t(s.eval_images));
  auto m = evaluate_vq(vq, data, rows);
  m["last_restart"] = usage.last_restart;
  if (final) {
    std::vector<int64_t> tr = train_rows;
    if (tr.size() > 1024) tr.resize(1024);
    auto t = evaluate_vq(vq, data, tr);
    m["train_psnr_db"] = t["psnr_db"];
    m["train_codes_used"] = t["codes_used"];
    m["train_images"] = t["images"];
  }
  return m;
}

std::string psnr_text(const json& m) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "| val PSNR %.2f dB, codes %lld", m["psnr_db"].get<double>(),
                static_cast<long long>(m["codes_used"].get<int64_t>()));
  return std::string(buf);
}

void write_finished_vq(const TrainOptions& opts, const io::Dataset& data, const json& cfg,
                       const model::VqConfig& vcfg, const Params& params,
                       const TrainResult& result) {
  io::write_safetensors(
      run_file(opts.out, "vq.safetensors"), params.detached(),
      {{"format", "adtree"}, {"content", "VQ tokenizer trained by adtree train vq"}});
  write_json_file(run_file(opts.out, "run.json"),
                  {{"kind", "vq"},
                   {"config", cfg},
                   {"vq", vcfg.to_json()},
                   {"params", params.count()},
                   {"steps", cfg["steps"].get<int64_t>()},
                   {"metrics", result.metrics},
                   {"provenance", opts.provenance},
                   {"dataset", data.info.value("sources", json::array())}});
}

}  // namespace

TrainResult train_vq(const io::Dataset& data, const TrainOptions& opts) {
  const std::string what = "train vq";
  const json cfg = vq_run_config(opts, what);
  const auto vcfg = vq_model_config(cfg);
  const VqSettings s = VqSettings::read(cfg, what);
  check_pictures(data, vcfg, what);
  const auto train_rows = split_rows(data, io::Split::Train, what);
  auto val_rows = data.indices(io::Split::Validation);
  if (val_rows.empty()) val_rows = train_rows;  // tiny test sets: evaluate on what there is

  const auto init = initial_vq_weights(vcfg, opts.seed);
  const auto device = train_device(opts);
  Params params = Params::from(init, device);
  AdamW opt(params,
            {cfg["lr"].get<double>(), cfg["beta1"].get<double>(), cfg["beta2"].get<double>(), 1e-8,
             cfg["weight_decay"].get<double>()},
            {"quantize.embedding.weight"});
  const model::VqModel vq(vcfg, params.tensors);  // same tensors: gradients reach `params`

  CodeUsage usage;
  usage.hits =
      at::zeros({vcfg.codebook_size}, at::TensorOptions().dtype(at::kFloat).device(device));
  BatchOrder order(train_rows, s.batch, opts.seed);
  VqStep step{s, data, vq, device, opts.seed, order, usage};

  auto spec = LoopSpec::from_config("vq", "img", cfg);
  spec.step_fn = [&](int64_t i, double& items) { return step(i, items); };
  spec.after_update = [&](int64_t i) {
    restart_dead_codes(s, opts.seed, i, device, usage, params, opt);
  };
  spec.save_extra = [&]() { return usage.save(); };
  spec.load_extra = [&](const TensorMap& extra) { usage.load(extra, opts.out, device); };
  spec.eval_fn = [&](int64_t, bool final) {
    return evaluate_during(vq, data, train_rows, val_rows, s, usage, final);
  };
  spec.eval_text = psnr_text;

  auto result = run_loop(opts, params, opt, spec);
  if (result.finished) write_finished_vq(opts, data, cfg, vcfg, params, result);
  return result;
}

}  // namespace adtree::train
