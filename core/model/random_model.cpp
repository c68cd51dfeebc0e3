#include "model/random_model.h"

#include <filesystem>

#include "io/manifest.h"
#include "io/safetensors.h"
#include "model/conditioning.h"
#include "model/llamagen/drafter.h"
#include "model/llamagen/gpt.h"
#include "model/text/random_t5.h"
#include "util/error.h"

namespace adtree::model {

VqConfig small_vq_config(int64_t codebook_size, int64_t grid) {
  (void)grid;  // two downsamplings: 4 pixels per token side
  VqConfig v;
  v.codebook_size = codebook_size;
  v.codebook_dim = 8;
  v.ch = 32;
  v.ch_mult = {1, 2, 2};
  v.z_channels = 32;
  v.num_res_blocks = 1;
  v.norm_groups = 8;
  return v;
}

namespace {
// Plain words so tests and demos can type prompts; more entries are numbered.
const char* kWords[] = {"a",     "red",  "green", "blue",  "yellow", "cat",     "dog",   "face",
                        "heart", "star", "sun",   "moon",  "tree",   "car",     "house", "smile",
                        "happy", "sad",  "big",   "small", "noto",   "twemoji", "flag",  "fire"};
}  // namespace

void write_random_model(const std::string& dir, const GptConfig& gpt, const VqConfig& vq,
                        uint64_t seed, const std::string& name, const std::string& text_encoder) {
  gpt.validate();
  vq.validate();
  if (vq.codebook_size != gpt.vocab_size) {
    throw Error("the VQ codebook size must equal the GPT vocabulary size");
  }
  std::filesystem::create_directories(dir);
  io::write_safetensors(dir + "/gpt.safetensors", init_params(gpt_param_specs(gpt), seed),
                        {{"format", "adtree"}, {"content", "random initialisation"}});
  io::write_safetensors(dir + "/vq.safetensors", init_params(vq_param_specs(vq, true), seed + 1),
                        {{"format", "adtree"}, {"content", "random initialisation"}});

  io::write_safetensors(dir + "/drafter.safetensors",
                        init_params(drafter_param_specs(gpt), seed + 2),
                        {{"format", "adtree"}, {"content", "random initialisation"}});

  // A caption model without a word table reads caption-embedding files: no vocabulary.
  const bool embeddings = gpt.cond == CondKind::Caption && gpt.num_words == 0;
  std::vector<std::string> entries;
  const int64_t n = gpt.cond == CondKind::Class ? gpt.num_classes : gpt.num_words;
  const int64_t n_named = int64_t(sizeof(kWords) / sizeof(kWords[0]));
  for (int64_t i = 0; i < n; ++i) {
    entries.push_back(i < n_named
                          ? kWords[i]
                          : (gpt.cond == CondKind::Class ? "class" : "word") + std::to_string(i));
  }
  if (!embeddings) {
    Vocabulary(gpt.cond == CondKind::Class ? Vocabulary::Kind::Classes : Vocabulary::Kind::Words,
               entries)
        .save(dir + "/text.json");
  }

  io::Manifest m;
  if (!text_encoder.empty()) {
    if (!embeddings) throw Error("only a model that reads T5 captions takes a text encoder");
    write_random_t5(dir + "/" + text_encoder, gpt.cap_dim, seed + 3);
    m.text_encoder = text_encoder;
  }
  m.name = name;
  m.kind = gpt.cond == CondKind::Class ? "c2i" : (embeddings ? "t2i-embeddings" : "t2i-words");
  m.description = "Randomly initialised weights (seed " + std::to_string(seed) +
                  "): for tests and benchmarks, it draws noise.";
  m.grid_h = gpt.grid_h;
  m.grid_w = gpt.grid_w;
  m.codebook_size = gpt.vocab_size;
  m.gpt = gpt.to_json();
  m.vq = vq.to_json();
  m.drafter = {{"kind", "eagle1"}, {"layers", 1}};
  // No sampling of its own: the model decodes with the defaults (decode/sampling.h), which
  // front ends read through SamplingParams::of_model.
  m.license = {{"weights", "CC0-1.0 (random numbers)"}, {"data", "none"}};
  m.provenance = {{"tool", "adtree model random"}, {"seed", seed}};
  m.save(dir);
}

}  // namespace adtree::model
