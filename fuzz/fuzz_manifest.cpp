// Fuzzes model.json, the manifest of a model directory: the text -> io::Manifest::parse (the
// structural checks load_model_dir runs first), then the sections the model layer reads from it:
// GptConfig::from_json + validate and the sizes derived from it (parameter shapes, FFN width,
// sequence length), VqConfig::from_json + validate and the VQ parameter shapes, and the default
// sampling settings. A manifest is the first thing read from a downloaded model, so a bad one must
// be an adtree::Error listing its problems, never a crash, an overflow or a huge allocation.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "decode/sampling.h"
#include "io/manifest.h"
#include "model/llamagen/gpt.h"
#include "model/llamagen/vq.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  using namespace adtree;
  io::Manifest m;
  try {
    m = io::Manifest::parse(text, "model.json");
    (void)m.to_json().dump();
  } catch (const Error&) {
    return 0;  // the expected answer to a bad manifest
  }
  // The sections are independent: each is checked even when another one is bad.
  try {
    const auto g = model::GptConfig::from_json(m.gpt);
    (void)g.head_dim(), (void)g.ffn_hidden(), (void)g.seq_len(), (void)g.image_tokens();
    (void)g.to_json().dump();
    (void)model::gpt_param_specs(g);
  } catch (const Error&) {
  }
  try {
    const auto v = model::VqConfig::from_json(m.vq);
    (void)v.downsample_factor();
    (void)v.to_json().dump();
    (void)model::vq_param_specs(v, /*with_encoder=*/true);
  } catch (const Error&) {
  }
  try {
    const auto s = decode::SamplingParams::from_json(m.sampling, decode::SamplingParams{});
    s.validate(m.codebook_size, m.grid_h * m.grid_w);
  } catch (const Error&) {
  }
  return 0;
}
