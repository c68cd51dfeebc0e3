// adtree embed: a caption-embedding file from a typed prompt with the C++ T5 encoder, what
// tools/t5_embed.py writes with Python and transformers (for scripts and other programs that read
// such files; adtree generate and the studio encode typed prompts themselves).
#include <iostream>

#include "commands.h"
#include "io/safetensors.h"
#include "model/text/text_encoder.h"
#include "util/error.h"

namespace adtree::cli {

int cmd_embed(int argc, char** argv) {
  Args a("embed", "Write a prompt's caption-embedding file with a T5 encoder (no Python needed).");
  a.option("t5", "DIR", "T5 directory (Hugging Face layout: config.json, spiece.model, weights)")
      .option("prompt", "TEXT", "the caption")
      .option("out", "FILE", "the .safetensors file to write")
      .option("max-length", "N", "caption tokens at most, </s> included (LlamaGen: 120)", "120")
      .option("dtype", "TYPE", "fp32 or bf16 (the encoder's matrices)", "fp32");
  if (!a.parse(argc, argv)) return 0;
  for (const char* need : {"t5", "prompt", "out"}) {
    if (!a.given(need)) throw Error(std::string("give --") + need);
  }
  const int64_t max_length = a.integer("max-length");
  if (max_length < 2) throw Error("--max-length must be at least 2");
  model::TextEncoderOptions o;
  o.dtype = a.str("dtype");
  const auto te = model::TextEncoder::load(a.str("t5"), o);
  const auto c = te->encode(a.str("prompt"), max_length);
  if (c.truncated) {
    std::cerr << "adtree: warning: the prompt has " << c.pieces << " pieces; the caption keeps "
              << max_length - 1 << " and </s>\n";
  }
  io::write_safetensors(a.str("out"),
                        {{"caption_embedding", c.embedding},
                         {"caption_mask", at::ones({c.embedding.size(0)}, at::kLong)}},
                        {{"format", "adtree caption"},
                         {"prompt", a.str("prompt")},
                         {"text_encoder", te->dir()},
                         {"text_encoder_hash", te->hash()}});
  std::cout << "wrote " << a.str("out") << ": " << c.ids.size() << " tokens x "
            << c.embedding.size(1) << " (" << c.ms << " ms)\n";
  return 0;
}

}  // namespace adtree::cli
