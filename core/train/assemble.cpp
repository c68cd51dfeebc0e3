#include "train/assemble.h"

#include <filesystem>

#include "io/manifest.h"
#include "io/safetensors.h"
#include "io/safetensors_shards.h"
#include "model/conditioning.h"
#include "model/llamagen/drafter.h"
#include "model/llamagen/gpt.h"
#include "model/llamagen/vq.h"
#include "model/model_dir.h"
#include "train/run_files.h"
#include "util/error.h"

namespace adtree::train {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

at::ScalarType storage_dtype(const std::string& s) {
  if (s == "fp16" || s == "float16") return at::kHalf;
  if (s == "bf16" || s == "bfloat16") return at::kBFloat16;
  if (s == "fp32" || s == "float32") return at::kFloat;
  throw Error("assemble: unknown storage dtype '" + s + "' (expected fp16, bf16 or fp32)");
}

json finished_run(const std::string& dir, const std::string& kind, const std::string& weights) {
  const auto path = run_file(dir, "run.json");
  // The weights as one file or as shards with an index (io/safetensors_shards.h).
  if (!fs::exists(path) || io::safetensors_set_files(run_file(dir, weights)).empty()) {
    throw Error(dir + ": not a finished 'adtree train " + kind + "' run (run.json and " + weights +
                " are needed)");
  }
  auto j = read_json_file(path);
  if (j.value("kind", "") != kind)
    throw Error(path + ": a '" + j.value("kind", "?") + "' run, not '" + kind + "'");
  return j;
}

void write_weights(const std::string& src, const std::string& dst, at::ScalarType dtype,
                   const std::string& content) {
  auto w = io::map_safetensors_set(src);
  for (auto& [k, t] : w) {
    if (dtype == at::kHalf) {
      // fp16 tops out at 65504: a weight beyond it would load as inf. Checked, not assumed.
      const double m = t.abs().max().item<double>();
      if (m > 6.0e4)
        throw Error(src + ": tensor '" + k + "' exceeds the fp16 range; use --dtype bf16");
    }
    t = t.to(dtype).contiguous();
  }
  // Parts over 16 MiB go into shards: every file of a model can then travel to and from a GPU
  // machine (docs/design/GPU.md).
  io::write_safetensors_set(dst, w, io::kShardBytes, {{"format", "adtree"}, {"content", content}});
}

}  // namespace

json assemble_model(const AssembleOptions& o) {
  const auto dtype = storage_dtype(o.dtype);
  const auto vq_run = finished_run(o.vq_dir, "vq", "vq.safetensors");
  const auto gpt_run = finished_run(o.gpt_dir, "gpt", "gpt.safetensors");
  json drafter_run;
  if (!o.drafter_dir.empty())
    drafter_run = finished_run(o.drafter_dir, "drafter", "drafter.safetensors");
  const auto gcfg = model::GptConfig::from_json(gpt_run.at("gpt"));
  const auto vcfg = model::VqConfig::from_json(vq_run.at("vq"));
  if (gcfg.vocab_size != vcfg.codebook_size) {
    throw Error("assemble: the GPT's vocabulary (" + std::to_string(gcfg.vocab_size) +
                ") differs from the VQ codebook (" + std::to_string(vcfg.codebook_size) + ")");
  }
  if (!drafter_run.is_null()) {
    const auto gd = fs::weakly_canonical(drafter_run.value("gpt_dir", ""));
    if (gd != fs::weakly_canonical(o.gpt_dir)) {
      throw Error("assemble: the drafter was trained for the GPT in " + gd.string() + ", not " +
                  o.gpt_dir);
    }
  }
  std::error_code ec;
  fs::create_directories(o.out, ec);
  if (ec) throw Error(o.out + ": cannot create the model directory (" + ec.message() + ")");

  write_weights(run_file(o.gpt_dir, "gpt.safetensors"), run_file(o.out, "gpt.safetensors"), dtype,
                "GPT trained by adtree train gpt");
  write_weights(run_file(o.vq_dir, "vq.safetensors"), run_file(o.out, "vq.safetensors"), dtype,
                "VQ tokenizer trained by adtree train vq");
  if (!drafter_run.is_null()) {
    write_weights(run_file(o.drafter_dir, "drafter.safetensors"),
                  run_file(o.out, "drafter.safetensors"), dtype,
                  "EAGLE-1 draft head trained by adtree train drafter");
  } else {
    fs::remove(run_file(o.out, "drafter.safetensors"), ec);
  }
  model::Vocabulary::load(run_file(o.gpt_dir, "text.json")).save(run_file(o.out, "text.json"));

  // Licences: the images' licences with their attribution texts, as the dataset records them.
  json data_licences = json::array();
  for (const auto& s : o.dataset_info.value("sources", json::array())) {
    data_licences.push_back({{"style", s.value("style", "")},
                             {"package", s.value("package", "") + "@" + s.value("version", "")},
                             {"images_license", s.value("images_license", "")},
                             {"attribution", s.value("attribution", "")}});
  }
  io::Manifest m;
  m.name = o.name;
  m.kind = "t2i-words";
  m.description = o.description;
  m.grid_h = gcfg.grid_h;
  m.grid_w = gcfg.grid_w;
  m.codebook_size = gcfg.vocab_size;
  m.gpt = gcfg.to_json();
  m.vq = vcfg.to_json();
  if (!drafter_run.is_null()) m.drafter = {{"kind", "eagle1"}, {"layers", 1}};
  m.sampling = o.sampling.to_json();
  m.license = {{"weights", "CC-BY-4.0"},
               {"weights_note",
                "Trained by ADT-Tree Studio's own code on the images below; the Twemoji images are "
                "CC BY 4.0, "
                "so the weights carry their attribution. See MODEL_CARD.md."},
               {"data", data_licences},
               {"metadata",
                {{"license", o.dataset_info.value("metadata_license", "")},
                 {"attribution", o.dataset_info.value("metadata_attribution", "")}}}};
  json runs = {{"vq",
                {{"steps", vq_run["steps"]},
                 {"config", vq_run["config"]},
                 {"metrics", vq_run["metrics"]},
                 {"provenance", vq_run["provenance"]}}},
               {"gpt",
                {{"steps", gpt_run["steps"]},
                 {"epochs", gpt_run.value("epochs", 0.0)},
                 {"config", gpt_run["config"]},
                 {"metrics", gpt_run["metrics"]},
                 {"provenance", gpt_run["provenance"]}}}};
  if (!drafter_run.is_null()) {
    runs["drafter"] = {{"steps", drafter_run["steps"]},
                       {"config", drafter_run["config"]},
                       {"metrics", drafter_run["metrics"]},
                       {"provenance", drafter_run["provenance"]}};
  }
  m.provenance = {{"tool", "adtree train"},
                  {"storage_dtype", o.dtype},
                  {"dataset",
                   {{"file", fs::path(o.dataset_path).filename().string()},
                    {"name", o.dataset_info.value("name", "")},
                    {"counts", o.dataset_info.value("counts", json::object())},
                    {"caption_rule", o.dataset_info.value("caption_rule", "")}}},
                  {"runs", runs}};
  m.save(o.out);

  // The product's loader must accept what was written (fp16/bf16 storage converted on load).
  auto bundle = model::load_model_dir(o.out);
  (void)bundle;
  return m.to_json();
}

}  // namespace adtree::train
