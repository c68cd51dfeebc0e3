#include "model/mar/mar_dir.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "io/safetensors.h"
#include "model/device.h"
#include "model/dir_files.h"
#include "util/error.h"

namespace adtree::model {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

MarModel load_mar_part(const std::string& dir, const json& m, const char* key,
                       const std::string& file) {
  MarConfig c;
  try {
    c = MarConfig::from_json(m.at(key));
  } catch (const std::exception& e) {
    throw Error(dir + "/model.json: '" + key + "': " + e.what());
  }
  TensorMap backbone, head;
  for (auto& [name, t] : read_dir_weights(dir, file))
    (name.rfind("head.", 0) == 0 ? head[name.substr(5)] : backbone[name]) = t;
  MarModel out;
  try {
    out.backbone = std::make_unique<MarBackbone>(c, backbone);
    out.head = std::make_unique<DiffusionHead>(c.head(), head);
  } catch (const Error& e) {
    throw Error(dir + "/" + file + ": " + e.what());
  }
  out.schedule = DiffusionSchedule(c.train_steps, c.sample_steps);
  return out;
}

TensorMap cast_mar_weights(const TensorMap& w, const std::string& dtype) {
  TensorMap out;
  for (const auto& [k, t] : w)
    out[k] = dtype.empty() || !t.is_floating_point() ? t : t.to(parse_dtype(dtype));
  return out;
}

void write_mar_part(const MarImport& part, const std::string& dtype, const fs::path& file) {
  TensorMap w = part.backbone;
  for (const auto& [k, t] : part.head) w["head." + k] = t;
  io::write_safetensors(file.string(), cast_mar_weights(w, dtype));
}

// $ADTREE_LEAN=0 keeps fp32 on libtorch's products (A/B runs), as for the LlamaGen family.
bool mar_lean_enabled() {
  const char* env = std::getenv("ADTREE_LEAN");
  return env == nullptr || std::string(env) != "0";
}

}  // namespace

at::Tensor MarBundle::picture(const at::Tensor& tokens) const {
  const int64_t g = target.backbone->config().grid;
  const auto x = vae->decode(tokens.unsqueeze(0), g, g)[0];
  return ((x.clamp(-1, 1) + 1) * 127.5).round().to(at::kByte).permute({1, 2, 0}).contiguous();
}

bool is_mar_dir(const std::string& dir) {
  const auto path = fs::path(dir) / "model.json";
  if (!fs::exists(path)) return false;
  std::ifstream f(path);
  const json j = json::parse(f, nullptr, false);
  return j.is_object() && j.value("family", "") == "mar";
}

MarBundle load_mar_dir(const std::string& dir, bool load_draft, const std::string& dtype) {
  if (dtype != "fp32" && dtype != "bf16")
    throw Error(dir + ": a MAR model runs in fp32 or bf16 on the CPU, not '" + dtype + "'");
  MarBundle b;
  b.dir = dir;
  b.manifest = read_model_json(dir);
  if (b.manifest.value("family", "") != "mar")
    throw Error(dir + "/model.json: not a MAR model (\"family\" is not \"mar\")");
  b.target = load_mar_part(dir, b.manifest, "mar", "mar.safetensors");
  if (load_draft && b.manifest.contains("draft")) {
    b.draft = load_mar_part(dir, b.manifest, "draft", "draft.safetensors");
    const auto &t = b.target.backbone->config(), &d = b.draft.backbone->config();
    if (t.grid != d.grid || t.token_dim != d.token_dim || t.num_classes != d.num_classes)
      throw Error(dir + "/model.json: the draft does not share the target's tokens and classes");
  }
  try {
    b.vae = std::make_unique<Kl16Decoder>(Kl16Config::from_json(b.manifest.at("vae")),
                                          read_dir_weights(dir, "vae.safetensors"));
  } catch (const std::exception& e) {
    throw Error(dir + "/vae.safetensors: " + e.what());
  }
  if (b.vae->config().embed_dim != b.target.backbone->config().token_dim)
    throw Error(dir + "/model.json: the VAE's embed_dim is not the model's token size");
  for (auto* part : {&b.target, &b.draft}) {
    if (!part->backbone) continue;
    part->bf16 = dtype == "bf16";
    if (part->bf16 || mar_lean_enabled()) part->backbone->pack(part->bf16);
  }
  b.classes = Vocabulary::load((fs::path(dir) / "text.json").string());
  if (b.classes.size() != b.target.backbone->config().num_classes)
    throw Error(dir + "/text.json: " + std::to_string(b.classes.size()) + " class names for " +
                std::to_string(b.target.backbone->config().num_classes) + " classes");
  return b;
}

void write_mar_dir(const MarDirParts& p, const std::string& out) {
  if (!p.dtype.empty()) parse_dtype(p.dtype);  // a bad name fails before anything is written
  const fs::path final_dir(out);
  if (fs::exists(final_dir)) throw Error(out + ": already exists");
  const fs::path tmp = final_dir.string() + ".tmp-" + std::to_string(::getpid());
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  try {
    write_mar_part(p.target, p.dtype, tmp / "mar.safetensors");
    if (p.draft) write_mar_part(*p.draft, p.dtype, tmp / "draft.safetensors");
    io::write_safetensors((tmp / "vae.safetensors").string(),
                          cast_mar_weights(p.vae.decoder, p.dtype));
    Vocabulary(Vocabulary::Kind::Classes, p.classes).save((tmp / "text.json").string());
    json m = {{"format", "adtree-mar"},
              {"family", "mar"},
              {"name", p.name},
              {"description", p.description},
              {"mar", p.target.config.to_json()},
              {"vae", p.vae.config.to_json()},
              {"sampling", p.target.config.default_sampling()},
              {"provenance", p.provenance}};
    if (p.draft) m["draft"] = p.draft->config.to_json();
    std::ofstream((tmp / "model.json").string()) << m.dump(2) << "\n";
    fs::rename(tmp, final_dir);
  } catch (...) {
    fs::remove_all(tmp);
    throw;
  }
}

}  // namespace adtree::model
