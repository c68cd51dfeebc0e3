// adtree convert: a released LlamaGen checkpoint -> a model directory, without Python, where this
// libtorch can read the file (a .safetensors state dict always; a torch.save() .pt only if the
// unpickler can, which Debian's libtorch 1.13 cannot: the error then points to
// tools/convert_llamagen.py, which does the same with Python's torch).
#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "io/manifest.h"
#include "io/safetensors.h"
#include "model/llamagen/llamagen_import.h"
#include "util/error.h"
#include "util/resource_paths.h"

namespace adtree::cli {

namespace {
namespace fs = std::filesystem;

std::vector<std::string> load_classes(const std::string& given, int64_t want) {
  const std::string path = given.empty() ? util::find_data_file("imagenet/classes.json") : given;
  if (path.empty()) {
    throw Error(
        "no ImageNet class list found (share/adtree-studio/imagenet/classes.json); give "
        "one with --classes FILE");
  }
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot open the class list");
  std::vector<std::string> classes;
  try {
    classes = nlohmann::json::parse(in).at("classes").get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": not a class list ({\"classes\": [...]}): " + e.what());
  }
  if (int64_t(classes.size()) != want) {
    throw Error(path + ": " + std::to_string(classes.size()) + " class names, the model has " +
                std::to_string(want) + " classes");
  }
  return classes;
}

model::TensorMap cast_floats(const model::TensorMap& w, at::ScalarType dtype) {
  model::TensorMap out;
  for (const auto& [k, t] : w) out[k] = t.is_floating_point() ? t.to(dtype) : t;
  return out;
}

int64_t numel(const model::TensorMap& w) {
  int64_t n = 0;
  for (const auto& [k, t] : w) n += t.numel();
  return n;
}

std::string today() {
  const std::time_t now = std::time(nullptr);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&now));
  return buf;
}

void declare_options(Args& a) {
  a.option("gpt", "FILE", "GPT checkpoint (c2i_*.pt, t2i_*.pt or a .safetensors state dict)")
      .option("vq", "FILE", "VQ tokenizer checkpoint (vq_ds16_c2i.pt, ...)")
      .option("out", "DIR", "model directory to create")
      .option("model", "NAME", "LlamaGen model name, for heads and image size (c2i_L_256)", "")
      .option("n-head", "N", "attention heads (overrides --model)", "0")
      .option("image-size", "PX", "image size in pixels (overrides --model)", "0")
      .option("grid", "N", "token grid side (overrides the image size)", "0")
      .option("classes", "FILE", "class names JSON for c2i (default: the shipped ImageNet list)",
              "")
      .option("dtype", "T", "weight storage: fp32, bf16 or fp16", "fp32")
      .option("name", "TEXT", "model name written to model.json (default: the out directory's)",
              "");
  a.flag("force", "replace an existing output directory");
}

// The checkpoints of --gpt and --vq, mapped onto the model layer's names (vq empty without --vq).
struct Checkpoints {
  model::GptImportOptions gopts;
  model::VqConfig vcfg;
  model::Imported vq;
  model::GptConfig gcfg;
  model::Imported gpt;
};

Checkpoints import_checkpoints(const Args& a) {
  Checkpoints c;
  c.gopts.model_name = a.str("model");
  c.gopts.n_head = a.integer("n-head");
  c.gopts.image_size = a.integer("image-size");
  c.gopts.grid = a.integer("grid");
  const auto gsd = model::read_state_dict(a.str("gpt"));
  if (a.given("vq")) {
    const auto vsd = model::read_state_dict(a.str("vq"));
    c.vcfg = model::infer_vq_config(vsd);
    c.vq = model::import_vq(vsd, c.vcfg);
    c.gopts.vq_factor = c.vcfg.downsample_factor();
  }
  c.gcfg = model::infer_gpt_config(gsd, c.gopts);
  c.gpt = model::import_gpt(gsd, c.gcfg);
  if (a.given("vq") && c.vcfg.codebook_size != c.gcfg.vocab_size) {
    throw Error("the VQ codebook has " + std::to_string(c.vcfg.codebook_size) +
                " codes, the GPT's vocabulary " + std::to_string(c.gcfg.vocab_size));
  }
  return c;
}

io::Manifest converted_manifest(const Args& a, const fs::path& out, const Checkpoints& c) {
  const bool c2i = c.gcfg.cond == model::CondKind::Class;
  io::Manifest m;
  m.name = a.str("name").empty() ? out.filename().string() : a.str("name");
  m.kind = c2i ? "c2i" : "t2i-embeddings";
  m.description = "LlamaGen " +
                  (c.gopts.model_name.empty() ? std::string("GPT") : c.gopts.model_name) +
                  ", converted by adtree convert";
  m.grid_h = c.gcfg.grid_h;
  m.grid_w = c.gcfg.grid_w;
  m.codebook_size = c.gcfg.vocab_size;
  m.gpt = c.gcfg.to_json();
  m.vq = c.vcfg.to_json();
  // LlamaGen's sample scripts' defaults (LLAMAGEN.md "Sampling").
  // (top_k is capped at the vocabulary: the sampler refuses a larger one.)
  m.sampling = {{"cfg_scale", c2i ? 4.0 : 7.5},
                {"top_k", std::min<int64_t>(c2i ? 2000 : 1000, c.gcfg.vocab_size)},
                {"temperature", 1.0},
                {"top_p", 1.0}};
  m.license = {{"weights",
                "LlamaGen release (github.com/FoundationVision/LlamaGen): check the "
                "model's terms"}};
  nlohmann::json dropped = c.gpt.dropped;
  for (const auto& d : c.vq.dropped) dropped.push_back(d);
  m.provenance = {
      {"tool", "adtree convert"},
      {"date", today()},
      {"gpt_checkpoint", fs::path(a.str("gpt")).filename().string()},
      {"vq_checkpoint", a.given("vq") ? fs::path(a.str("vq")).filename().string() : std::string()},
      {"dropped_buffers", dropped},
      {"dtype", a.str("dtype")}};
  return m;
}

// The model directory's files, written into `dir`: weights, model.json and, for c2i, the classes.
void write_model_files(const fs::path& dir, const Args& a, const fs::path& out,
                       const Checkpoints& c, at::ScalarType dtype,
                       const std::vector<std::string>& classes) {
  io::write_safetensors((dir / "gpt.safetensors").string(), cast_floats(c.gpt.weights, dtype));
  if (a.given("vq")) {
    io::write_safetensors((dir / "vq.safetensors").string(), cast_floats(c.vq.weights, dtype));
  }
  converted_manifest(a, out, c).save(dir.string());
  if (c.gcfg.cond == model::CondKind::Class) {
    model::Vocabulary(model::Vocabulary::Kind::Classes, classes).save((dir / "text.json").string());
  }
}

void print_summary(const Args& a, const fs::path& out, const Checkpoints& c) {
  const bool c2i = c.gcfg.cond == model::CondKind::Class;
  const auto& g = c.gcfg;
  std::cout << "wrote " << out.string() << ": " << (c2i ? "c2i" : "t2i-embeddings") << ", "
            << g.n_layer << " layers x " << g.n_head << " heads x " << g.dim << " dim, " << g.grid_h
            << "x" << g.grid_w << " grid, " << numel(c.gpt.weights) << " GPT parameters"
            << (a.given("vq") ? ", VQ " + std::to_string(numel(c.vq.weights)) + " parameters"
                              : std::string(", no VQ"))
            << "; dropped " << c.gpt.dropped.size() + c.vq.dropped.size() << " buffer(s)\n";
}
}  // namespace

int cmd_convert(int argc, char** argv) {
  Args a("convert",
         "Convert a released LlamaGen checkpoint (GPT and/or VQ) into a model directory.\n"
         "Reads .safetensors state dicts, and torch.save() files where this libtorch can; "
         "otherwise use tools/convert_llamagen.py (docs/llamagen.md).");
  declare_options(a);
  if (!a.parse(argc, argv)) return 0;
  if (!a.given("gpt")) throw Error("give the GPT checkpoint with --gpt FILE");
  if (!a.given("out")) throw Error("give the directory to create with --out DIR");
  const fs::path out = a.str("out");
  if (fs::exists(out) && !fs::is_empty(out) && !a.flag_set("force")) {
    throw Error(out.string() + " exists and is not empty (use --force to replace it)");
  }
  const auto dtype = model::parse_dtype(a.str("dtype"));

  const Checkpoints c = import_checkpoints(a);
  const bool c2i = c.gcfg.cond == model::CondKind::Class;
  const auto classes =
      c2i ? load_classes(a.str("classes"), c.gcfg.num_classes) : std::vector<std::string>{};

  // Everything goes to a sibling temporary directory first: an interrupted run leaves no
  // half-written model behind, and a failed one leaves an existing --out untouched.
  const fs::path tmp = out.string() + ".converting";
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  try {
    write_model_files(tmp, a, out, c, dtype, classes);
    fs::remove_all(out);
    fs::rename(tmp, out);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
  print_summary(a, out, c);
  return 0;
}

}  // namespace adtree::cli
