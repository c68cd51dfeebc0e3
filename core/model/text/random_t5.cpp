#include "model/text/random_t5.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "io/file_write.h"
#include "io/safetensors.h"
#include "model/params.h"
#include "model/text/t5_tokenizer.h"

namespace adtree::model {

namespace {
// Captions of the kind the random models' word lists hold, each word in many contexts so that
// SentencePiece keeps whole words as pieces and the test prompts tokenise as a person expects.
std::vector<std::string> training_captions() {
  const char* adjectives[] = {"red",   "green", "blue", "yellow", "big",    "small",
                              "happy", "sad",   "dark", "bright", "smiling"};
  const char* nouns[] = {"cat",  "dog", "face",  "heart", "star",   "sun",  "moon",
                         "tree", "car", "house", "flag",  "flower", "fire", "bus"};
  const char* places[] = {"on a hill", "in the sky", "at night", "by the sea", "in a garden"};
  std::vector<std::string> out;
  for (const char* a : adjectives) {
    for (const char* n : nouns) {
      out.push_back(std::string("a ") + a + " " + n);
      for (const char* p : places) out.push_back(std::string("the ") + a + " " + n + " " + p);
    }
  }
  return out;
}
}  // namespace

T5Config write_random_t5(const std::string& dir, int64_t d_model, uint64_t seed) {
  std::filesystem::create_directories(dir);
  const std::string spiece = dir + "/spiece.model";
  train_t5_sentencepiece(training_captions(), spiece, 160);

  T5Config c;
  c.vocab_size = T5Tokenizer(spiece).piece_count();
  c.d_model = d_model;
  c.d_kv = 16;
  c.num_heads = 4;
  c.d_ff = 128;
  c.num_layers = 2;
  c.validate(dir);
  io::write_file(dir + "/config.json", c.to_hf_json().dump(2) + "\n", "the T5 config");
  io::write_safetensors(dir + "/model.safetensors", init_params(t5_encoder_param_specs(c), seed),
                        {{"format", "pt"}, {"content", "random initialisation (adtree)"}});
  return c;
}

}  // namespace adtree::model
