#include "model/llamagen/llamagen_convert.h"

#include <unistd.h>

#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "io/file_hash.h"
#include "io/manifest.h"
#include "io/safetensors.h"
#include "model/class_names.h"
#include "model/conditioning.h"
#include "model/device.h"
#include "model/llamagen/llamagen_import.h"
#include "util/error.h"
#include "util/resource_paths.h"

namespace adtree::model {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// The stages of a conversion and their share of the time (reading and writing dominate).
struct Stages {
  const ConvertProgress& progress;
  const std::atomic<bool>* cancel;
  void at(const std::string& stage, double fraction) const {
    if (cancel != nullptr && cancel->load()) throw Cancelled();
    if (progress) progress(stage, fraction);
  }
};

// --model as given, or a checkpoint's file name without its extension (c2i_L_256.pt).
std::string model_name(const std::string& given) {
  std::string n = fs::path(given).filename().string();
  for (const char* ext : {".pt", ".pth", ".bin", ".safetensors"}) {
    const std::string e = ext;
    if (n.size() > e.size() && n.compare(n.size() - e.size(), e.size(), e) == 0) {
      return n.substr(0, n.size() - e.size());
    }
  }
  return n;
}

int64_t numel(const TensorMap& w) {
  int64_t n = 0;
  for (const auto& [k, t] : w) n += t.numel();
  return n;
}

std::string now_iso() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S+00:00", std::gmtime(&t));
  return buf;
}

std::string sig3(double v) {  // Python's {:.3g}
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

json source_entry(const std::string& path) {
  return {{"file", fs::path(path).filename().string()},
          {"bytes", int64_t(fs::file_size(path))},
          {"sha256", io::sha256_file(path)}};
}

void write_weights(const fs::path& file, const TensorMap& w, const std::string& dtype,
                   const std::string& source) {
  TensorMap out;
  for (const auto& [k, t] : w) {
    out[k] = dtype.empty() || !t.is_floating_point() ? t : t.to(parse_dtype(dtype));
  }
  io::write_safetensors(file.string(), out,
                        {{"format", "pt"}, {"converter", "adtree convert 1"}, {"source", source}});
}

// The checkpoints, read and checked before anything is written.
struct Parts {
  GptConfig g;
  std::string how;
  Imported gpt, vq;
  VqConfig vcfg;
  bool have_vq = false;
  ImportedDrafter drafter;
  bool have_drafter = false;
};

// --model, else the checkpoint's file name, else its saved arguments (tools/convert_llamagen.py's
// order); the flags override them.
GptImportOptions gpt_options(const ConvertRequest& r, const json& args) {
  GptImportOptions o;
  o.model_name = model_name(r.model);
  o.n_head = r.n_head, o.image_size = r.image_size, o.grid = r.grid;
  o.more_names.emplace_back(fs::path(r.gpt).stem().string(), "the --gpt file name");
  if (args.is_object() && args.value("gpt_model", json()).is_string()) {
    o.more_names.emplace_back(args["gpt_model"].get<std::string>(),
                              "the checkpoint's saved arguments");
  }
  if (args.is_object() && args.value("image_size", json()).is_number_integer()) {
    o.saved_image_size = args["image_size"].get<int64_t>();
  }
  if (args.is_object() && args.value("downsample_size", json()).is_number_integer()) {
    o.vq_factor = args["downsample_size"].get<int64_t>();
  }
  return o;
}

Parts read_parts(const ConvertRequest& r, const Stages& st, std::vector<std::string>& warnings) {
  Parts p;
  if (!r.vq.empty()) {
    st.at("reading the VQ", 0.05);
    const auto vsd = read_state_dict(r.vq);
    p.vcfg = infer_vq_config(vsd);
    p.vq = import_vq(vsd, p.vcfg);
    p.have_vq = true;
  }
  st.at("reading the GPT", 0.2);
  json args;
  const auto gsd = read_state_dict(r.gpt, &args);
  GptImportOptions o = gpt_options(r, args);
  if (p.have_vq) o.vq_factor = p.vcfg.downsample_factor();
  p.g = infer_gpt_config(gsd, o, &p.how);
  p.gpt = import_gpt(gsd, p.g);
  if (p.have_vq && p.vcfg.codebook_size != p.g.vocab_size) {
    throw Error("the VQ codebook has " + std::to_string(p.vcfg.codebook_size) +
                " codes, the GPT a vocabulary of " + std::to_string(p.g.vocab_size) +
                ": they do not belong together");
  }
  if (!r.drafter.empty()) {
    st.at("reading the drafter", 0.4);
    p.drafter = import_drafter(read_state_dict(r.drafter), p.g,
                               p.gpt.weights.at("tok_embeddings.weight"), r.drafter_norm_eps);
    if (!p.drafter.warning.empty()) warnings.push_back(p.drafter.warning);
    p.have_drafter = true;
  }
  return p;
}

io::Manifest manifest(const ConvertRequest& r, const Parts& p) {
  const bool c2i = p.g.cond == CondKind::Class;
  io::Manifest m;
  m.name = !r.name.empty()    ? r.name
           : !r.model.empty() ? model_name(r.model)
                              : fs::path(r.out).filename().string();
  m.kind = c2i ? "c2i" : "t2i-embeddings";
  m.description = "LlamaGen " + m.kind + " transformer (" + std::to_string(p.g.n_layer) + "x" +
                  std::to_string(p.g.n_head) + "x" + std::to_string(p.g.dim) + ", " +
                  sig3(double(numel(p.gpt.weights)) / 1e6) + "M parameters), " +
                  std::to_string(p.g.grid_h) + "x" + std::to_string(p.g.grid_w) + " tokens" +
                  (p.have_vq ? "" : ", no VQ decoder (convert with --vq to decode)") +
                  (p.have_drafter ? ", LANTERN EAGLE drafter" : "") +
                  "; converted by adtree convert";
  m.grid_h = p.g.grid_h, m.grid_w = p.g.grid_w;
  m.codebook_size = p.g.vocab_size;
  m.gpt = p.g.to_json();
  VqConfig v = p.vcfg;
  if (!p.have_vq)
    v = VqConfig{}, v.codebook_size = p.g.vocab_size;  // the VQ-16 the tokens came from
  m.vq = v.to_json();
  m.sampling = {{"cfg_scale", c2i ? 4.0 : 7.5},
                {"temperature", 1.0},
                {"top_k", std::min<int64_t>(c2i ? 2000 : 1000, p.g.vocab_size)},
                {"top_p", 1.0}};
  m.license = {{"weights", "see the LlamaGen release (MIT code licence; check the model's terms)"}};
  json sources = {{"gpt", source_entry(r.gpt)}};
  if (p.have_vq) sources["vq"] = source_entry(r.vq);
  if (p.have_drafter) {
    sources["drafter"] = source_entry(r.drafter);
    m.license["drafter"] = "see the LANTERN release (github.com/jadohu/LANTERN; check its terms)";
    m.drafter = {{"kind", "eagle1"},
                 {"layers", 1},
                 {"norm_eps", p.drafter.norm_eps},
                 {"source", p.drafter.source}};
  }
  m.provenance = {{"tool", "adtree convert"},
                  {"converter_version", "1"},
                  {"date", now_iso()},
                  {"sources", sources},
                  {"sha256", "of each whole source file"},
                  {"storage_dtype", r.dtype.empty() ? "as stored" : r.dtype},
                  {"inferred", p.how},
                  {"vq_included", p.have_vq}};
  return m;
}

void write_dir(const fs::path& dir, const ConvertRequest& r, const Parts& p,
               const std::vector<std::string>& classes, const Stages& st) {
  st.at("writing the GPT", 0.5);
  write_weights(dir / "gpt.safetensors", p.gpt.weights, r.dtype, fs::path(r.gpt).filename());
  if (p.have_vq) {
    st.at("writing the VQ", 0.8);
    write_weights(dir / "vq.safetensors", p.vq.weights, r.dtype, fs::path(r.vq).filename());
  }
  if (p.have_drafter) {
    st.at("writing the drafter", 0.9);
    write_weights(dir / "drafter.safetensors", p.drafter.weights, r.dtype,
                  fs::path(r.drafter).filename());
  }
  st.at("writing model.json", 0.95);
  if (!classes.empty()) {
    Vocabulary(Vocabulary::Kind::Classes, classes).save((dir / "text.json").string());
  }
  manifest(r, p).save(dir.string());
}

std::vector<std::string> summary(const Parts& p, const fs::path& out) {
  const auto& g = p.g;
  std::vector<std::string> s = {
      "gpt      " + std::string(g.cond == CondKind::Class ? "c2i" : "t2i-embeddings") + ": " +
      std::to_string(g.n_layer) + " layers x " + std::to_string(g.n_head) + " heads x dim " +
      std::to_string(g.dim) + ", vocab " + std::to_string(g.vocab_size) + ", grid " +
      std::to_string(g.grid_h) + "x" + std::to_string(g.grid_w) + " (" + p.how + "), " +
      std::to_string(numel(p.gpt.weights)) + " parameters"};
  if (p.have_vq) s.push_back("vq       " + std::to_string(numel(p.vq.weights)) + " parameters");
  if (p.have_drafter) {
    s.push_back("drafter  EAGLE-1, 1 layer, " + p.drafter.source + " names, " +
                std::to_string(numel(p.drafter.weights)) + " parameters");
  }
  s.push_back("wrote " + out.string());
  return s;
}

}  // namespace

ConvertResult convert_llamagen(const ConvertRequest& r, const ConvertProgress& progress,
                               const std::atomic<bool>* cancel) {
  if (r.gpt.empty()) throw Error("give the GPT checkpoint (--gpt FILE)");
  if (r.out.empty()) throw Error("give the model directory to create (--out DIR)");
  if (!r.dtype.empty()) parse_dtype(r.dtype);  // refuses an unknown type before any reading
  const fs::path out = r.out;
  if (fs::exists(out) && !fs::is_directory(out)) {
    throw Error(out.string() + " exists and is not a directory");
  }
  if (fs::is_directory(out) && !fs::is_empty(out) && !r.force) {
    throw Error(out.string() + " exists and is not empty (use --force to replace it)");
  }
  const Stages st{progress, cancel};
  ConvertResult res;
  const Parts p = read_parts(r, st, res.warnings);
  const auto classes = p.g.cond == CondKind::Class
                           ? class_names(r.classes, p.g.num_classes, res.warnings)
                           : std::vector<std::string>{};
  // A sibling temporary directory, unique to this process, moved into place at the end.
  const fs::path parent = out.has_parent_path() ? out.parent_path() : fs::path(".");
  fs::create_directories(parent);
  const fs::path tmp =
      parent / ("." + out.filename().string() + ".converting-" + std::to_string(::getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  try {
    write_dir(tmp, r, p, classes, st);
    st.at("done", 1.0);
    fs::remove_all(out);
    fs::rename(tmp, out);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
  res.summary = summary(p, out);
  return res;
}

namespace {

std::string millions(int64_t n) {
  return sig3(double(n) / 1e6) + "M parameters";
}

// Three lines: the family and shape; size, conditioning and grid; where the heads and grid came
// from.
std::string describe_gpt(const GptConfig& g, const std::string& how, int64_t params) {
  const bool c2i = g.cond == CondKind::Class;
  return std::string("LlamaGen ") + (c2i ? "class-to-image" : "text-to-image") +
         " GPT: " + std::to_string(g.n_layer) + " layers x " + std::to_string(g.n_head) +
         " heads x dim " + std::to_string(g.dim) + "\n" + millions(params) + ", " +
         (c2i ? std::to_string(g.num_classes) + " classes"
              : "captions of " + std::to_string(g.cond_len) + " T5 embeddings") +
         ", " + std::to_string(g.grid_h) + "x" + std::to_string(g.grid_w) + " tokens\n" + how;
}

}  // namespace

CheckpointSummary describe_checkpoint(const ConvertRequest& r) {
  CheckpointSummary out;
  json args;
  // Names and shapes only: a 3 GB checkpoint is not read through here (the conversion checks it).
  const auto sd = read_state_dict(r.gpt, &args, /*verify=*/false);
  out.model_name = !r.name.empty() ? r.name : model_name(r.model.empty() ? r.gpt : r.model);
  if (sd.count("tok_embeddings.weight")) {
    out.role = "gpt";
    GptImportOptions o = gpt_options(r, args);
    try {
      std::string how;
      const GptConfig g = infer_gpt_config(sd, o, &how);
      int64_t params = 0;  // the weights, not the stray buffers (no value check: shapes only)
      for (const auto& [k, t] : sd) params += is_stray_buffer(k) ? 0 : t.numel();
      out.text = describe_gpt(g, how, params);
      out.c2i = g.cond == CondKind::Class;
    } catch (const Error& e) {
      out.problem = e.what();
      out.text = "LlamaGen GPT (" + millions(numel(sd)) + ")";
      out.c2i = sd.count("cls_embedding.embedding_table.weight") > 0;
    }
  } else if (sd.count("quantize.embedding.weight")) {
    out.role = "vq";
    out.text = "VQ tokenizer: " + std::to_string(sd.at("quantize.embedding.weight").size(0)) +
               " codes, " + millions(numel(sd));
  } else if (sd.count("fc.weight") || sd.count("layers.0.self_attn.q_proj.weight")) {
    out.role = "drafter";
    out.text = std::string("EAGLE draft head (") +
               (sd.count("fc.weight") && !sd.count("layers.0.self_attn.q_proj.weight")
                    ? "the app's names"
                    : "LANTERN's names") +
               ", " + millions(numel(sd)) + ")";
  } else {
    out.problem =
        "not a LlamaGen GPT, VQ or draft head (no tok_embeddings.weight, "
        "quantize.embedding.weight or fc.weight)";
  }
  return out;
}

std::string companion_vq(const std::string& gpt, bool c2i) {
  const fs::path dir = fs::path(gpt).parent_path();
  for (const char* n : {c2i ? "vq_ds16_c2i.pt" : "vq_ds16_t2i.pt", "vq_ds16_c2i.pt",
                        "vq_ds16_t2i.pt", "vq.pt", "vq.safetensors"}) {
    std::error_code ec;
    if (fs::is_regular_file(dir / n, ec)) return (dir / n).string();
  }
  return {};
}

}  // namespace adtree::model
