#include "train/continuous/assemble_continuous.h"

#include <algorithm>
#include <filesystem>

#include "io/safetensors.h"
#include "model/continuous/continuous_dir.h"
#include "model/continuous/token_colours.h"
#include "train/continuous/continuous_trainer.h"
#include "train/continuous/vae_trainer.h"
#include "train/run_files.h"
#include "util/error.h"

namespace adtree::train {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

at::ScalarType storage_type(const std::string& dtype) {
  if (dtype == "fp16") return at::kHalf;
  if (dtype == "bf16") return at::kBFloat16;
  if (dtype == "fp32") return at::kFloat;
  throw Error("assemble-continuous: --dtype must be fp16, bf16 or fp32, got '" + dtype + "'");
}

std::map<std::string, at::Tensor> stored(const model::TensorMap& w, at::ScalarType t,
                                         const std::string& keep_prefix_a = {},
                                         const std::string& keep_prefix_b = {}) {
  std::map<std::string, at::Tensor> out;
  for (const auto& [k, v] : w) {
    const bool keep = keep_prefix_a.empty() || k.rfind(keep_prefix_a, 0) == 0 ||
                      (!keep_prefix_b.empty() && k.rfind(keep_prefix_b, 0) == 0);
    if (keep) out.emplace(k, v.detach().to(at::kCPU, t).contiguous());
  }
  return out;
}

ContinuousRun load_part(const std::string& dir, bool snapshots) {
  if (snapshots && !fs::exists(run_file(dir, "run.json"))) return load_continuous_snapshot(dir);
  return load_continuous_run(dir);
}

// A run folder as the command named it: the same folders assemble the same model.json on any
// machine, and no absolute path of the training machine ships.
std::string as_given(const std::string& dir) {
  return fs::path(dir).lexically_normal().string();
}

json run_summary(const ContinuousRun& r, const std::string& dir) {
  json j{{"run", as_given(dir)},
         {"command", r.run.value("provenance", json::object()).value("command", "")},
         {"steps", r.run.value("steps", 0)},
         {"epochs", r.run.value("epochs", 0.0)},
         {"metrics", r.run.value("metrics", json::object())}};
  // Only a run still training has a snapshot step: a finished one's record is its steps.
  if (r.run.contains("snapshot_step")) j["snapshot_step"] = r.run.at("snapshot_step");
  return j;
}

// The card's object `key` (empty when it has none).
json card_object(const json& card, const std::string& key) {
  const json v = card.value(key, json::object());
  require(v.is_object(), "assemble-continuous", "the card's \"" + key + "\" must be an object");
  return v;
}

// Up to 64 of a run's token grids, evenly spread over its pictures: enough cells (16,384 at
// 16 x 16) for the token colours' 3 x (D + 1) numbers, at 64 VAE decodes.
at::Tensor colour_sample(const std::string& tokens_file) {
  const auto all = io::SafetensorsReader(tokens_file).tensor("tokens");
  const int64_t n = std::min<int64_t>(64, all.size(0));
  return all.index_select(0, at::linspace(0, double(all.size(0) - 1), n).to(at::kLong));
}

}  // namespace

json assemble_continuous(const ContinuousAssembleOptions& o) {
  require(!o.vae_dir.empty() && !o.target_dir.empty() && !o.out.empty(), "assemble-continuous",
          "give --vae, --target and --out");
  const auto dtype = storage_type(o.dtype);
  const auto vae = load_vae(o.vae_dir);
  const auto vae_run = read_json_file(run_file(o.vae_dir, "run.json"));
  const auto target = load_part(o.target_dir, o.snapshots);
  require(target.config.token_dim() == vae.config().latent_dim, "assemble-continuous",
          o.target_dir + " was not trained on this VAE's tokens");
  fs::create_directories(o.out);
  json m = o.card;
  m["format"] = "adtree-continuous";
  m["family"] = "continuous";
  m["name"] = o.name;
  if (!o.description.empty()) m["description"] = o.description;
  m["vae"] = vae.config().to_json();
  m["target"] = target.config.to_json();
  m["dtype"] = o.dtype;
  // The card may choose the shipped defaults (a measured choice, e.g. fixed variance and an inner
  // temperature); the loader below checks every value.
  m["sampling"] = {
      {"cfg", 3.0}, {"temperature", 1.0}, {"diffusion_steps", target.config.sample_steps}};
  m["sampling"].update(card_object(o.card, "sampling"));
  m["cspd"] = {{"gamma", 4}, {"prefill_ratio", 0.05}};
  m["cspd"].update(card_object(o.card, "cspd"));
  m["provenance"] = {
      {"vae",
       {{"run", as_given(o.vae_dir)}, {"metrics", vae_run.value("metrics", json::object())}}},
      {"target", run_summary(target, o.target_dir)}};
  io::write_safetensors((fs::path(o.out) / "vae.safetensors").string(),
                        stored(vae.weights(), dtype, "decoder.", "post_quant_conv."),
                        {{"format", "adtree"}, {"content", "KL VAE decoder"}});
  io::write_safetensors((fs::path(o.out) / "target.safetensors").string(),
                        stored(target.weights, dtype), {{"format", "adtree"}});
  target.vocab.save((fs::path(o.out) / "text.json").string());
  if (!o.draft_dir.empty()) {
    const auto draft = load_part(o.draft_dir, o.snapshots);
    require(draft.vocab.entries() == target.vocab.entries(), "assemble-continuous",
            o.draft_dir + " was trained with other caption words than the target");
    m["draft"] = draft.config.to_json();
    m["provenance"]["draft"] = run_summary(draft, o.draft_dir);
    io::write_safetensors((fs::path(o.out) / "draft.safetensors").string(),
                          stored(draft.weights, dtype), {{"format", "adtree"}});
  }
  write_json_file((fs::path(o.out) / "model.json").string(), m);
  const auto written = model::load_continuous_dir(o.out, false);  // loads, or this is an error
  // The token colours, fitted on the decodes of the training pictures' own tokens.
  const auto tokens = fs::path(o.target_dir) / "tokens.safetensors";
  if (fs::exists(tokens)) {
    m["token_colours"] = model::fit_token_colours(written, colour_sample(tokens.string()));
    write_json_file((fs::path(o.out) / "model.json").string(), m);
    model::load_continuous_dir(o.out);
  }
  return m;
}

}  // namespace adtree::train
