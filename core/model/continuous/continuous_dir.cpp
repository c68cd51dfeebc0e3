#include "model/continuous/continuous_dir.h"

#include <cmath>
#include <filesystem>
#include <fstream>

#include "io/safetensors.h"
#include "model/dir_files.h"
#include "util/error.h"
#include "util/json_int.h"

namespace adtree::model {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

TensorMap continuous_weights(const std::string& dir, const std::string& file) {
  auto w = read_dir_weights(dir, file);
  for (auto& [k, t] : w) t = t.to(at::kFloat);
  return w;
}

std::unique_ptr<ContinuousGpt> load_continuous_part(const std::string& dir, const json& m,
                                                    const char* key, const std::string& file) {
  ContinuousConfig cfg;
  try {
    cfg = ContinuousConfig::from_json(m.at(key));
  } catch (const std::exception& e) {
    throw Error(dir + "/model.json: '" + key + "': " + e.what());
  }
  try {
    return std::make_unique<ContinuousGpt>(cfg, continuous_weights(dir, file));
  } catch (const Error& e) {
    throw Error(dir + "/" + file + ": " + e.what());
  }
}

void check_draft_pair(const std::string& dir, const ContinuousConfig& t,
                      const ContinuousConfig& d) {
  const bool same = t.token_dim() == d.token_dim() && t.backbone.grid_h == d.backbone.grid_h &&
                    t.backbone.grid_w == d.backbone.grid_w && t.train_steps == d.train_steps &&
                    t.backbone.num_words == d.backbone.num_words &&
                    t.backbone.cond_len == d.backbone.cond_len;
  if (!same) {
    throw Error(dir +
                "/model.json: the draft does not share the target's tokens, grid, words "
                "and diffusion schedule");
  }
}

// model.json "token_colours": (dim + 1) x 3 finite numbers, or absent.
std::vector<float> read_token_colours(const std::string& dir, const json& manifest, int64_t dim) {
  if (!manifest.contains("token_colours")) return {};
  const auto& v = manifest.at("token_colours");
  const std::string where = dir + "/model.json: token_colours ";
  if (!v.is_array() || int64_t(v.size()) != (dim + 1) * 3)
    throw Error(where + "must be " + std::to_string((dim + 1) * 3) + " numbers");
  std::vector<float> out;
  for (const auto& x : v) {
    if (!x.is_number() || !std::isfinite(x.get<double>()))
      throw Error(where + "holds something that is not a finite number");
    out.push_back(x.get<float>());
  }
  return out;
}

}  // namespace

bool is_continuous_dir(const std::string& dir) {
  const auto path = fs::path(dir) / "model.json";
  if (!fs::exists(path)) return false;
  std::ifstream f(path);
  const json j = json::parse(f, nullptr, false);
  return j.is_object() && j.value("family", std::string()) == "continuous";
}

ContinuousBundle load_continuous_dir(const std::string& dir, bool load_draft) {
  ContinuousBundle b;
  b.dir = dir;
  b.manifest = read_model_json(dir);
  if (b.manifest.value("family", std::string()) != "continuous") {
    throw Error(dir +
                "/model.json: not a continuous-family model (\"family\" is not "
                "\"continuous\")");
  }
  KlVaeConfig vcfg;
  try {
    vcfg = KlVaeConfig::from_json(b.manifest.at("vae"));
  } catch (const std::exception& e) {
    throw Error(dir + "/model.json: 'vae': " + e.what());
  }
  try {
    b.vae = std::make_unique<KlVae>(vcfg, continuous_weights(dir, "vae.safetensors"));
  } catch (const Error& e) {
    throw Error(dir + "/vae.safetensors: " + e.what());
  }
  b.target = load_continuous_part(dir, b.manifest, "target", "target.safetensors");
  if (load_draft && b.manifest.contains("draft")) {
    b.draft = load_continuous_part(dir, b.manifest, "draft", "draft.safetensors");
    check_draft_pair(dir, b.target->config(), b.draft->config());
  }
  if (b.target->config().token_dim() != vcfg.latent_dim) {
    throw Error(dir + "/model.json: the target's tokens are not the VAE's latents");
  }
  b.vocab = Vocabulary::load((fs::path(dir) / "text.json").string());
  if (b.vocab.size() != b.target->config().backbone.num_words) {
    throw Error(dir + "/text.json: " + std::to_string(b.vocab.size()) + " words, the model has " +
                std::to_string(b.target->config().backbone.num_words));
  }
  b.default_fixed_variance();  // a bad sampling default is an error when the model opens
  b.token_colours = read_token_colours(dir, b.manifest, b.target->config().token_dim());
  return b;
}

double ContinuousBundle::default_cfg() const {
  return json_field(manifest.value("sampling", json::object()), "cfg", 3.0);
}
double ContinuousBundle::default_temperature() const {
  return json_field(manifest.value("sampling", json::object()), "temperature", 1.0);
}
int ContinuousBundle::default_diffusion_steps() const {
  return json_int<int>(manifest.value("sampling", json::object()), "diffusion_steps",
                       target->config().sample_steps);
}
bool ContinuousBundle::default_fixed_variance() const {
  const auto s = manifest.value("sampling", json::object());
  const auto v = s.value("head_variance", json("learned"));
  if (v != "learned" && v != "fixed") {
    throw Error(dir + "/model.json: sampling.head_variance must be \"learned\" or \"fixed\"");
  }
  return v == "fixed";
}
int ContinuousBundle::default_gamma() const {
  return json_int<int>(manifest.value("cspd", json::object()), "gamma", 4);
}
double ContinuousBundle::default_prefill_ratio() const {
  return json_field(manifest.value("cspd", json::object()), "prefill_ratio", 0.05);
}
double ContinuousBundle::default_inner_temperature() const {
  return json_field(manifest.value("cspd", json::object()), "inner_temperature", 1.0);
}

at::Tensor ContinuousBundle::picture(const at::Tensor& tokens) const {
  at::NoGradGuard no_grad;
  const auto& g = target->config().backbone;
  const auto img = vae->decode(tokens.unsqueeze(0), g.grid_h, g.grid_w);
  return VqModel::to_bytes(img)[0];
}

}  // namespace adtree::model
