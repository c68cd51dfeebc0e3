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

at::ScalarType output_dtype(const std::string& s) {
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

// The parts belong together: the GPT draws codes of the VQ's codebook, the drafter was trained for
// this GPT.
void check_parts(const model::GptConfig& gcfg, const model::VqConfig& vcfg, const json& drafter_run,
                 const std::string& gpt_dir) {
  if (gcfg.vocab_size != vcfg.codebook_size) {
    throw Error("assemble: the GPT's vocabulary (" + std::to_string(gcfg.vocab_size) +
                ") differs from the VQ codebook (" + std::to_string(vcfg.codebook_size) + ")");
  }
  if (!drafter_run.is_null()) {
    const auto gd = fs::weakly_canonical(drafter_run.value("gpt_dir", ""));
    if (gd != fs::weakly_canonical(gpt_dir)) {
      throw Error("assemble: the drafter was trained for the GPT in " + gd.string() + ", not " +
                  gpt_dir);
    }
  }
}

// The model directory's weights (in the storage dtype) and vocabulary; a drafter left there by an
// earlier assembly is removed when this one has none.
void write_model_files(const AssembleOptions& o, at::ScalarType dtype, bool with_drafter) {
  std::error_code ec;
  fs::create_directories(o.out, ec);
  if (ec) throw Error(o.out + ": cannot create the model directory (" + ec.message() + ")");

  write_weights(run_file(o.gpt_dir, "gpt.safetensors"), run_file(o.out, "gpt.safetensors"), dtype,
                "GPT trained by adtree train gpt");
  write_weights(run_file(o.vq_dir, "vq.safetensors"), run_file(o.out, "vq.safetensors"), dtype,
                "VQ tokenizer trained by adtree train vq");
  if (with_drafter) {
    write_weights(run_file(o.drafter_dir, "drafter.safetensors"),
                  run_file(o.out, "drafter.safetensors"), dtype,
                  "EAGLE-1 draft head trained by adtree train drafter");
  } else {
    fs::remove(run_file(o.out, "drafter.safetensors"), ec);
  }
  model::Vocabulary::load(run_file(o.gpt_dir, "text.json")).save(run_file(o.out, "text.json"));
}

// Licences: the images' licences with their attribution texts, as the dataset records them.
json model_licence(const json& dataset_info) {
  json data_licences = json::array();
  for (const auto& s : dataset_info.value("sources", json::array())) {
    data_licences.push_back({{"style", s.value("style", "")},
                             {"package", s.value("package", "") + "@" + s.value("version", "")},
                             {"images_license", s.value("images_license", "")},
                             {"attribution", s.value("attribution", "")}});
  }
  return {{"weights", "CC-BY-4.0"},
          {"weights_note",
           "Trained by ADT-Tree Studio's own code on the images below; the Twemoji images are "
           "CC BY 4.0, "
           "so the weights carry their attribution. See MODEL_CARD.md."},
          {"data", data_licences},
          {"metadata",
           {{"license", dataset_info.value("metadata_license", "")},
            {"attribution", dataset_info.value("metadata_attribution", "")}}}};
}

// Provenance: the dataset and each training run's steps, config, metrics and provenance.
json model_provenance(const AssembleOptions& o, const json& vq_run, const json& gpt_run,
                      const json& drafter_run) {
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
  return {{"tool", "adtree train"},
          {"storage_dtype", o.dtype},
          {"dataset",
           {{"file", fs::path(o.dataset_path).filename().string()},
            {"name", o.dataset_info.value("name", "")},
            {"counts", o.dataset_info.value("counts", json::object())},
            {"caption_rule", o.dataset_info.value("caption_rule", "")}}},
          {"runs", runs}};
}

}  // namespace

json assemble_model(const AssembleOptions& o) {
  const auto dtype = output_dtype(o.dtype);
  const auto vq_run = finished_run(o.vq_dir, "vq", "vq.safetensors");
  const auto gpt_run = finished_run(o.gpt_dir, "gpt", "gpt.safetensors");
  json drafter_run;
  if (!o.drafter_dir.empty())
    drafter_run = finished_run(o.drafter_dir, "drafter", "drafter.safetensors");
  const bool with_drafter = !drafter_run.is_null();
  const auto gcfg = model::GptConfig::from_json(gpt_run.at("gpt"));
  const auto vcfg = model::VqConfig::from_json(vq_run.at("vq"));
  check_parts(gcfg, vcfg, drafter_run, o.gpt_dir);
  write_model_files(o, dtype, with_drafter);

  io::Manifest m;
  m.name = o.name;
  m.kind = "t2i-words";
  m.description = o.description;
  m.grid_h = gcfg.grid_h;
  m.grid_w = gcfg.grid_w;
  m.codebook_size = gcfg.vocab_size;
  m.gpt = gcfg.to_json();
  m.vq = vcfg.to_json();
  if (with_drafter) m.drafter = {{"kind", "eagle1"}, {"layers", 1}};
  m.sampling = o.sampling.to_json();
  m.license = model_licence(o.dataset_info);
  m.provenance = model_provenance(o, vq_run, gpt_run, drafter_run);
  m.save(o.out);

  // The product's loader must accept what was written (fp16/bf16 storage converted on load).
  auto bundle = model::load_model_dir(o.out);
  (void)bundle;
  return m.to_json();
}

}  // namespace adtree::train
