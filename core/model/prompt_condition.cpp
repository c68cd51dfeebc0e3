#include "model/prompt_condition.h"

#include <filesystem>

#include "util/error.h"

namespace adtree::model {

namespace {
std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}
}  // namespace

Condition condition_for_prompt(const ModelBundle& m, const std::string& prompt, bool cfg,
                               PromptEncoding* enc) {
  if (enc) *enc = {};
  const auto& g = m.gpt_config;
  const bool embeddings = g.cond == CondKind::Caption && g.num_words == 0;
  const std::string path = trim(prompt);
  std::error_code ec;  // a long caption is not a path: "file name too long" means not a file
  if (!embeddings || std::filesystem::is_regular_file(path, ec)) {
    return make_condition(*m.gpt, m.vocab, prompt, cfg);
  }
  if (!m.text_encoder) {
    throw Error(
        "this model reads captions encoded by T5, and no T5 encoder is loaded: give its "
        "directory (--t5 DIR; in the studio Model > Text Encoder), or a caption-embedding "
        "file (tools/t5_embed.py): '" +
        path + "' is not a file");
  }
  if (path.empty()) throw Error("the prompt is empty");
  const auto c = m.text_encoder->encode(prompt, g.cond_len);
  if (enc) *enc = {true, c.cached, c.truncated, int64_t(c.ids.size()), c.ms};
  return condition_from_caption(*m.gpt, c.embedding, c.mask, cfg, "the T5 encoding of the prompt");
}

}  // namespace adtree::model
