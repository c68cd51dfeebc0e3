#include "train/head_on_model.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>

#include "io/file_hash.h"
#include "io/manifest.h"
#include "io/safetensors.h"
#include "io/safetensors_shards.h"
#include "train/batches.h"
#include "train/drafter_trainer.h"
#include "train/head_loss.h"
#include "train/loop.h"
#include "train/optimizer.h"
#include "train/prompt_rows.h"
#include "train/run_files.h"
#include "util/error.h"

namespace adtree::train {

namespace fs = std::filesystem;
using json = nlohmann::json;

json head_on_model_default_config(const model::ModelBundle& m) {
  const double cfg = m.manifest.sampling.value("cfg_scale", 1.0);
  const double t = m.manifest.sampling.value("temperature", 1.0);
  return json{{"kind", "eagle1"},  // or "parallel" (model/llamagen/parallel_head.h)
              {"depths", 6},       // parallel: the levels one call drafts
              // eagle1: "streams" (each CFG stream, mixed after) or "mixed" (the guided
              // distribution from the conditional stream alone: one stream to run)
              {"output", "streams"},
              {"steps", 2000},
              {"batch", 8},
              {"lr", 5e-4},
              {"warmup", 50},
              {"min_lr_ratio", 0.1},
              {"schedule", "cosine"},
              {"beta1", 0.9},
              {"beta2", 0.95},
              {"weight_decay", 0.0},
              {"grad_clip", 0.5},
              {"p_weight", 0.1},            // soft cross-entropy per stream, beside the mixed KL
              {"feature_noise", 0.2},       // EAGLE: uniform noise of width 0.2 on input features
              {"samples", 1024},            // the target's pictures of training prompts
              {"validation_samples", 128},  // its pictures of held-out prompts
              {"validation_share", 0.05},   // prompts held out when no validation list is given
              {"sample_cfg", cfg},
              {"sample_temperature", t},
              {"sample_batch", 16},
              {"mix_weight", 1.0},
              {"mix_cfg", cfg},
              {"mix_temperature", t},
              {"tt_passes", 2},
              {"warm_start", true},  // start from the model's own head when it has one
              {"eval_every", 250},
              {"eval_images", 64},  // validation pictures of the periodic evals (the final: all)
              {"checkpoint_every", 100}};
}

namespace {

constexpr uint64_t kNoiseStream = 31, kPromptStream = 32, kHoldStream = 34;

// A stable 64-bit FNV-1a digest of a request, to recognise the samples drawn for it.
std::string fnv1a_hex(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

// The resolved config's numbers, checked once.
struct HeadSettings {
  bool parallel = false, mixed = false;
  int64_t depths = 0;
  int64_t batch = 0, samples = 0, validation_samples = 0, sample_batch = 0;
  double noise = 0, validation_share = 0;
  static HeadSettings read(const json& cfg, const std::string& what);
};

HeadSettings HeadSettings::read(const json& cfg, const std::string& what) {
  HeadSettings s;
  const std::string kind = cfg["kind"];
  require(kind == "eagle1" || kind == "parallel", what, "kind must be eagle1 or parallel");
  s.parallel = kind == "parallel", s.depths = cfg["depths"];
  const std::string output = cfg["output"];
  require(output == "streams" || output == "mixed", what, "output must be streams or mixed");
  require(!s.parallel || output == "streams", what,
          "output applies to eagle1 (the parallel head always predicts the mix)");
  s.mixed = output == "mixed";
  require(s.depths >= 1 && s.depths <= 64, what, "depths must be in 1..64");
  s.batch = cfg["batch"], s.samples = cfg["samples"];
  s.validation_samples = cfg["validation_samples"], s.sample_batch = cfg["sample_batch"];
  s.noise = cfg["feature_noise"], s.validation_share = cfg["validation_share"];
  require(cfg["steps"].get<int64_t>() > 0, what, "steps must be positive");
  require(s.batch > 0, what, "batch must be positive");
  require(s.samples >= s.batch, what, "samples must be at least one batch");
  require(s.validation_samples > 0, what, "validation_samples must be positive");
  require(s.sample_batch > 0, what, "sample_batch must be positive");
  require(s.noise >= 0, what, "feature_noise must not be negative");
  require(s.validation_share > 0 && s.validation_share < 1, what,
          "validation_share must be in (0, 1)");
  require(cfg["sample_cfg"].get<double>() >= 0 && cfg["mix_cfg"].get<double>() >= 0, what,
          "sample_cfg and mix_cfg must not be negative");
  require(cfg["sample_temperature"].get<double>() > 0 && cfg["mix_temperature"].get<double>() > 0,
          what, "sample_temperature and mix_temperature must be > 0");
  require(cfg["mix_weight"].get<double>() >= 0, what, "mix_weight must not be negative");
  require(cfg["tt_passes"].get<int64_t>() >= 1 && cfg["tt_passes"].get<int64_t>() <= 8, what,
          "tt_passes must be in 1..8");
  return s;
}

json head_run_config(const model::ModelBundle& m, const TrainOptions& opts,
                     const std::string& what) {
  auto cfg = merge_config(head_on_model_default_config(m), opts.config, what);
  if (opts.steps > 0) cfg["steps"] = opts.steps;
  if (opts.batch > 0) cfg["batch"] = opts.batch;
  if (opts.lr > 0) cfg["lr"] = opts.lr;
  cfg["seed"] = opts.seed;
  if (!opts.init_from.empty()) cfg["init_from"] = fs::path(opts.init_from).filename().string();
  return cfg;
}

// Without a validation list, a seeded validation_share of the training prompts is held out.
HeadPrompts split_prompts(HeadPrompts p, double share, uint64_t seed, const std::string& what) {
  if (!p.validation.empty()) return p;
  const int64_t n = int64_t(p.train.size()), held = std::max<int64_t>(1, int64_t(share * n));
  if (n < 2) throw Error(what + ": give at least two prompts, or a validation list");
  auto gen = step_generator(seed, 0, kHoldStream);
  auto perm = at::randperm(n, gen, at::TensorOptions().dtype(at::kLong));
  HeadPrompts out;
  out.train_source = p.train_source, out.validation_source = p.train_source + " (held out)";
  for (int64_t i = 0; i < n; ++i) {
    (i < held ? out.validation : out.train).push_back(p.train[size_t(perm[i].item<int64_t>())]);
  }
  return out;
}

// The target's own pictures: sample i shows prompt `prompt[i]`.
struct OwnSamples {
  at::Tensor tokens, prompt;  // [n, N] and [n] int64
  int64_t size() const { return tokens.defined() ? tokens.size(0) : 0; }
};

// Prompt of every sample: the list visited in seeded shuffled passes (each prompt once a pass).
std::vector<int64_t> first_rows(int64_t n) {
  std::vector<int64_t> rows;
  for (int64_t i = 0; i < n; ++i) rows.push_back(i);
  return rows;
}

at::Tensor sample_prompts(int64_t n_prompts, int64_t n, uint64_t seed) {
  BatchOrder order(first_rows(n_prompts), 1, seed ^ kPromptStream);
  std::vector<int64_t> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(order.rows_for_step(i)[0]);
  return at::tensor(out, at::TensorOptions().dtype(at::kLong));
}

// A samples file of the run folder, kept when it holds samples of the same request; a file that
// cannot be read is redrawn (it is a cache: nothing is lost).
OwnSamples read_samples(const std::string& path, const std::string& key, std::ostream& log) {
  OwnSamples s;
  if (!fs::exists(path)) return s;
  try {
    io::SafetensorsReader r(path);
    auto it = r.metadata().find("key");
    if (it == r.metadata().end() || it->second != key) {
      log << path << " holds samples of another request: drawing them again" << std::endl;
      return s;
    }
    s.tokens = r.tensor("tokens").to(at::kLong);
    s.prompt = r.tensor("prompt").to(at::kLong);
    if (s.tokens.dim() != 2 || s.prompt.size(0) != s.tokens.size(0)) throw Error("bad shapes");
  } catch (const Error& e) {
    log << path << " cannot be read (" << e.what() << "): drawing the samples again" << std::endl;
    return {};
  }
  return s;
}

void write_samples(const std::string& path, const std::string& key, const OwnSamples& s) {
  const std::string partial = path + ".partial";
  io::write_safetensors(partial, {{"tokens", s.tokens.to(at::kInt)}, {"prompt", s.prompt}},
                        {{"format", "adtree-samples"}, {"key", key}});
  fs::rename(partial, path);
}

// `n` pictures of `rows` drawn with the model's inference copy (the lean path on a CPU), saved
// after every few batches so an interrupted run keeps what it drew; a file with fewer samples of
// the same request is extended.
OwnSamples own_samples(const model::ModelBundle& m, const PromptRows& rows, int64_t n,
                       const json& cfg, uint64_t seed, const std::string& path, std::ostream& log) {
  const int64_t batch = cfg["sample_batch"];
  const json key = {{"model", m.hash},
                    {"prompts", rows.prompts},
                    {"cfg", cfg["sample_cfg"]},
                    {"temperature", cfg["sample_temperature"]},
                    {"seed", seed},
                    {"batch", batch}};
  const std::string k = fnv1a_hex(key.dump());
  OwnSamples s = read_samples(path, k, log);
  const auto prompts = sample_prompts(rows.size(), n, seed);
  if (s.size() >= n) return {s.tokens.narrow(0, 0, n), s.prompt.narrow(0, 0, n)};
  if (s.size() > 0) log << "extending " << path << " from " << s.size() << " samples" << std::endl;
  log << "sampling " << n - s.size() << " pictures from the target (cfg " << cfg["sample_cfg"]
      << ", temperature " << cfg["sample_temperature"] << ")" << std::endl;
  for (int64_t first = s.size(); first < n;) {
    const int64_t count = std::min(n - first, 4 * batch);
    auto idx = prompts.narrow(0, first, count);
    auto tok = sample_target(*m.gpt, condition_rows(rows.cond, idx), cfg["sample_cfg"],
                             cfg["sample_temperature"], seed, batch, first, &log);
    s.tokens = s.size() ? at::cat({s.tokens, tok}) : tok;
    s.prompt = s.prompt.defined() ? at::cat({s.prompt, idx}) : idx;
    write_samples(path, k, s);
    first += count;
  }
  return s;
}

// The weights the head starts from: a finished run (--init-from), else the model's own head.
// The head's weights file in a run folder and in a model directory.
std::string head_file(bool parallel) {
  return parallel ? "parallel_head.safetensors" : "drafter.safetensors";
}

model::TensorMap initial_weights(const model::ModelBundle& m, const json& cfg,
                                 const HeadSettings& s, const TrainOptions& opts,
                                 const std::string& what, std::ostream& log) {
  const auto specs = s.parallel ? model::parallel_head_param_specs(m.gpt_config, s.depths)
                                : model::drafter_param_specs(m.gpt_config);
  auto init = model::init_params(specs, opts.seed + 2);
  const auto& own = s.parallel ? m.parallel_weights : m.drafter_weights;
  model::TensorMap from;
  std::string source;
  if (!opts.init_from.empty()) {
    const auto path = run_file(opts.init_from, head_file(s.parallel));
    if (!fs::exists(path))
      throw Error(what + ": " + opts.init_from + " has no " + head_file(s.parallel));
    from = io::SafetensorsReader(path).all(), source = opts.init_from;
  } else if (cfg["warm_start"].get<bool>() && !own.empty()) {
    from = own, source = "the model's own head";
  }
  if (from.empty()) return init;
  for (auto& [name, t] : init) {
    auto it = from.find(name);
    if (it == from.end() || it->second.sizes() != t.sizes()) {
      throw Error(what + ": " + source + " is a head of another shape (" + name +
                  (it == from.end() ? " is missing" : " has another shape") + ")");
    }
    t = it->second.to(at::kFloat).clone();
  }
  log << "starting from " << source << std::endl;
  return init;
}

// The training GPT: the model's weights in fp32, as stored (the inference copy fuses some).
model::Gpt training_target(const std::string& dir, const model::ModelBundle& m, at::Device device) {
  model::TensorMap w;
  for (auto& [name, t] : io::map_safetensors_set(dir + "/gpt.safetensors")) {
    w[name] = t.to(at::kFloat).clone();
  }
  return model::Gpt(m.gpt_config, w, device, at::kFloat, /*inference=*/false);
}

// What a step reads: the samples of training prompts and their conditions.
struct HeadData {
  const model::Gpt& target;
  const model::Drafter* head;           // eagle1
  const model::ParallelHead* parallel;  // parallel
  const PromptRows& rows;
  const OwnSamples& samples;
  const HeadSettings& s;
  const json& cfg;
  uint64_t seed;
};

// One step: a batch of samples in both streams (cond first), the loss of head_loss.h.
double head_step(const HeadData& d, BatchOrder& order, int64_t step, double& items) {
  auto idx = row_tensor(order.rows_for_step(step));
  auto tok = d.samples.tokens.index_select(0, idx);
  auto cond = condition_rows(d.rows.cond, d.samples.prompt.index_select(0, idx));
  auto tr = target_rows(d.target, at::cat({tok, tok}),
                        cat_conditions(cond, null_condition(d.target, cond)));
  // The parallel head and a head of output "mixed" run on the conditional stream alone.
  const bool cond_only = d.parallel || d.s.mixed;
  auto feats = cond_only ? tr.feats_in.narrow(0, 0, tok.size(0)) : tr.feats_in;
  if (d.s.noise > 0) {
    auto gen = step_generator(d.seed, step, kNoiseStream);
    auto u = at::empty(feats.sizes(), at::kFloat).uniform_(0.0, 1.0, gen) - 0.5;
    feats = feats + u.to(feats.device()) * d.s.noise;
  }
  const auto pos = head_positions(d.target, tok.size(1) - 1);
  auto loss = d.parallel  ? parallel_loss(*d.parallel, tr, tok, feats, d.cfg)
              : d.s.mixed ? mixed_stream_loss(*d.head, tr, feats, pos, d.cfg)
                          : paired_loss(*d.head, tr, feats, pos, d.cfg);
  loss.backward();
  items += double(tr.tokens_in.numel());
  return loss.item<double>();
}

// The head on the samples of held-out prompts: the first eval_images of them, all at the end.
json head_eval(const HeadData& d, const PromptRows& val_rows, const OwnSamples& val, bool final) {
  int64_t n = val.size();
  const int64_t some = d.cfg["eval_images"];
  if (!final && some > 0) n = std::min(n, some);
  auto cond = condition_rows(val_rows.cond, val.prompt.narrow(0, 0, n));
  const auto tok = val.tokens.narrow(0, 0, n);
  const double cfg = d.cfg["mix_cfg"];
  return json{
      {"validation", d.parallel ? evaluate_parallel_head(d.target, *d.parallel, tok, cond, cfg)
                                : evaluate_head(d.target, *d.head, tok, cond, cfg, 16, d.s.mixed)}};
}

std::string eval_line(const json& m) {
  char buf[96];
  const auto& v = m["validation"];
  std::snprintf(buf, sizeof buf, "| val accept_t1 %.3f cfg top1 %.3f", v["accept_t1"].get<double>(),
                v["cfg_top1"].get<double>());
  return buf;
}

// The GPT's weights' identity: a head belongs to these weights (the model's hash also covers the
// head itself, which installing changes).
std::string gpt_hash(const std::string& dir) {
  return io::sha256_files(io::safetensors_set_files(dir + "/gpt.safetensors"));
}

void write_finished(const TrainOptions& opts, const std::string& dir, const json& cfg,
                    const Params& params, const json& initial, const TrainResult& r) {
  const bool parallel = cfg["kind"] == "parallel";
  io::write_safetensors(run_file(opts.out, head_file(parallel)), params.detached(),
                        {{"format", "adtree"},
                         {"content", std::string(parallel ? "parallel" : "EAGLE-1") +
                                         " draft head trained by adtree train drafter --model"}});
  write_json_file(run_file(opts.out, "run.json"), {{"kind", "drafter"},
                                                   {"source", "model"},
                                                   {"model_dir", fs::absolute(dir).string()},
                                                   {"gpt_hash", gpt_hash(dir)},
                                                   {"config", cfg},
                                                   {"params", params.count()},
                                                   {"steps", cfg["steps"].get<int64_t>()},
                                                   {"initial_metrics", initial},
                                                   {"metrics", r.metrics},
                                                   {"provenance", opts.provenance}});
}

}  // namespace

namespace {

// The heads under training: one of the two, on the training copy of the target.
struct HeadModels {
  std::unique_ptr<model::Drafter> eagle;
  std::unique_ptr<model::ParallelHead> parallel;
};

HeadModels make_heads(const model::ModelBundle& m, const model::Gpt& target, const Params& params,
                      const HeadSettings& s) {
  HeadModels h;
  if (s.parallel) {
    h.parallel = std::make_unique<model::ParallelHead>(target, params.tensors, s.depths, false);
  } else {
    const auto& d = m.manifest.drafter;
    const double eps =
        d.is_object() ? d.value("norm_eps", m.gpt_config.norm_eps) : m.gpt_config.norm_eps;
    h.eagle = std::make_unique<model::Drafter>(target, params.tensors, /*inference=*/false, eps);
  }
  return h;
}

// The starting head's figures: measured before a fresh run, read back when resuming.
json initial_metrics(const HeadData& d, const PromptRows& val_rows, const OwnSamples& val,
                     const TrainOptions& opts, std::ostream& log) {
  const auto path = run_file(opts.out, "initial-metrics.json");
  if (opts.resume) return fs::exists(path) ? read_json_file(path) : json();
  auto initial = head_eval(d, val_rows, val, /*final=*/true);
  log << "before training " << eval_line(initial) << std::endl;
  write_json_file(path, initial);
  return initial;
}

}  // namespace

TrainResult train_head_on_model(const std::string& dir, const HeadPrompts& given,
                                const TrainOptions& opts) {
  const std::string what = "train drafter";
  std::ostream& log = opts.log ? *opts.log : std::cout;
  model::LoadOptions lo;
  lo.load_vq = false;
  const auto m = model::load_model_dir(dir, lo);
  const json cfg = head_run_config(m, opts, what);
  const HeadSettings s = HeadSettings::read(cfg, what);
  fs::create_directories(opts.out);
  const auto prompts = split_prompts(given, s.validation_share, opts.seed, what);
  const auto rows = prompt_rows(m, prompts.train, prompts.train_source);
  const auto val_rows = prompt_rows(m, prompts.validation, prompts.validation_source);
  log << rows.size() << " training prompts, " << val_rows.size() << " held out" << std::endl;
  const auto samples = own_samples(m, rows, s.samples, cfg, opts.seed,
                                   run_file(opts.out, "samples.safetensors"), log);
  const auto val = own_samples(m, val_rows, s.validation_samples, cfg, opts.seed + 1,
                               run_file(opts.out, "validation-samples.safetensors"), log);

  const auto device = train_device(opts);
  const model::Gpt target = training_target(dir, m, device);
  Params params = Params::from(initial_weights(m, cfg, s, opts, what, log), device);
  AdamW opt(params, {cfg["lr"].get<double>(), cfg["beta1"].get<double>(),
                     cfg["beta2"].get<double>(), 1e-8, cfg["weight_decay"].get<double>()});
  const auto heads = make_heads(m, target, params, s);
  log << "draft head: " << params.count() << " parameters; target " << m.gpt_config.dim << "x"
      << m.gpt_config.n_layer << std::endl;

  const HeadData data{target, heads.eagle.get(), heads.parallel.get(), rows, samples, s,
                      cfg,    opts.seed};
  const json initial = initial_metrics(data, val_rows, val, opts, log);
  BatchOrder order(first_rows(samples.size()), s.batch, opts.seed);
  auto spec = LoopSpec::from_config("drafter", "tok", cfg);
  spec.step_fn = [&](int64_t i, double& items) { return head_step(data, order, i, items); };
  spec.eval_fn = [&](int64_t, bool final) { return head_eval(data, val_rows, val, final); };
  spec.eval_text = eval_line;
  auto result = run_loop(opts, params, opt, spec);
  if (result.finished) write_finished(opts, dir, cfg, params, initial, result);
  return result;
}

namespace {

// The finished run's record, checked against the model it is to go into.
json installable_run(const std::string& run_dir, const std::string& model_dir) {
  const auto run_path = run_file(run_dir, "run.json");
  if (!fs::exists(run_path)) {
    throw Error(run_dir + ": not a finished 'adtree train drafter --model' run (no run.json)");
  }
  auto run = read_json_file(run_path);
  if (run.value("kind", "") != "drafter" || run.value("source", "") != "model") {
    throw Error(run_path + ": not a head trained on a model directory ('train drafter --model')");
  }
  const bool parallel = run["config"].value("kind", "eagle1") == "parallel";
  if (!fs::exists(run_file(run_dir, head_file(parallel)))) {
    throw Error(run_dir + ": the run has no " + head_file(parallel));
  }
  const auto want = run.value("gpt_hash", ""), have = gpt_hash(model_dir);
  if (!want.empty() && !have.empty() && want != have) {
    throw Error(run_dir + ": this head was trained for other GPT weights than " + model_dir +
                "'s (" + want + ", the model has " + have + ")");
  }
  return run;
}

// The storage dtype of the model's GPT weights (fp16 in a shipped model, as assembled).
at::ScalarType storage_dtype(const std::string& model_dir) {
  const auto w = io::map_safetensors_set(model_dir + "/gpt.safetensors");
  return w.empty() ? at::kFloat : w.begin()->second.scalar_type();
}

void write_head(const std::string& from, const std::string& path, at::ScalarType dtype) {
  std::map<std::string, at::Tensor> out;
  io::SafetensorsReader r(from);
  for (auto& [name, t] : r.all()) out[name] = t.to(dtype).contiguous();
  io::write_safetensors(path + ".partial", out, r.metadata());
  fs::rename(path + ".partial", path);
}

// model.json with the run's head: its section and the run in the provenance.
io::Manifest manifest_with(io::Manifest m, const json& run, bool parallel) {
  if (parallel) {
    m.parallel_head = {{"kind", "parallel"}, {"depths", run["config"]["depths"]}};
  } else {
    if (!m.drafter.is_object()) m.drafter = {{"kind", "eagle1"}, {"layers", 1}};
    m.drafter["output"] = run["config"].value("output", "streams");
  }
  if (!m.provenance.is_object()) m.provenance = json::object();
  m.provenance["runs"][parallel ? "parallel_head" : "drafter"] = {
      {"steps", run["steps"]},
      {"config", run["config"]},
      {"metrics", run["metrics"]},
      {"initial_metrics", run["initial_metrics"]},
      {"provenance", run["provenance"]}};
  return m;
}

}  // namespace

std::string install_head(const std::string& run_dir, const std::string& model_dir) {
  const json run = installable_run(run_dir, model_dir);
  const bool parallel = run["config"].value("kind", "eagle1") == "parallel";
  const auto old_manifest = io::Manifest::load(model_dir);
  const std::string head = model_dir + "/" + head_file(parallel);
  const std::string kept = run_file(run_dir, "replaced-" + head_file(parallel));
  const bool had = fs::exists(head);
  std::error_code ec;
  if (had && !fs::copy_file(head, kept, fs::copy_options::overwrite_existing, ec)) {
    throw Error("cannot keep the model's head as " + kept + " (" + ec.message() +
                "): nothing was installed");
  }
  try {
    write_head(run_file(run_dir, head_file(parallel)), head, storage_dtype(model_dir));
    manifest_with(old_manifest, run, parallel).save(model_dir);
    model::LoadOptions lo;
    lo.load_vq = false;
    lo.pack_cache = model::LoadOptions::PackCacheUse::Off;
    (void)model::load_model_dir(model_dir, lo);
  } catch (const std::exception& e) {
    // Put the directory back as it was: the old head (or none) and the old manifest.
    if (had)
      fs::copy_file(kept, head, fs::copy_options::overwrite_existing, ec);
    else
      fs::remove(head, ec);
    old_manifest.save(model_dir);
    throw Error("installing the head into " + model_dir +
                " failed, the directory is as it was: " + e.what());
  }
  return "installed the head of " + run_dir + " into " + model_dir +
         (had ? " (the one it replaces is kept as " + kept + ")" : "");
}

}  // namespace adtree::train
