// adtree model random: write a randomly initialised model directory of any size.
#include <iostream>

#include "commands.h"
#include "model/continuous/random_continuous.h"
#include "model/mar/random_mar.h"
#include "model/random_model.h"
#include "util/error.h"

namespace adtree::cli {

namespace {

int random_mar_cmd(const Args& a) {
  model::RandomMarRequest r;
  r.out = a.str("out");
  r.shape = a.str("config");
  r.draft = a.str("draft");
  r.vae = a.given("vae") ? a.str("vae") : (r.shape == "tiny" ? "small" : "kl16");
  r.seed = a.non_negative("seed");
  r.name = a.given("name") ? a.str("name") : "";
  model::write_random_mar_model(r);
  std::cout << "wrote a random MAR-" << r.shape
            << (r.draft.empty() ? "" : " with a MAR-" + r.draft + " draft") << " (" << r.vae
            << " VAE) to " << r.out << "\n";
  return 0;
}

}  // namespace

int cmd_model(int argc, char** argv) {
  if (argc < 1 || std::string(argv[0]) == "--help" || std::string(argv[0]) == "-h") {
    std::cout << "Usage: adtree model random [OPTIONS]\n\n"
                 "  random   write a randomly initialised model directory (tests, benchmarks)\n";
    return argc < 1 ? 2 : 0;
  }
  const std::string sub = argv[0];
  if (sub != "random") throw Error("unknown 'model' subcommand '" + sub + "' (known: random)");
  Args a("model random", "Write a randomly initialised model directory of a named size.");
  a.option("config", "NAME",
           "GPT size: micro, tiny, small, B, L, XL; with --family mar: B, L, H (MAR's released "
           "shapes) or tiny",
           "tiny")
      .option("out", "DIR", "directory to create")
      .option("vocab", "N", "codebook size (GPT vocabulary)", "1024")
      .option("grid", "N", "token grid side", "16")
      .option("cond", "KIND",
              "caption (t2i-words: a word table), t5 (t2i-embeddings, LlamaGen's t2i: captions "
              "encoded by a tiny random T5 written beside it, in t5/) or class (c2i)",
              "caption")
      .option("vq", "SHAPE",
              "VQ tokenizer: small (4 pixels per token, for tests) or llamagen (LlamaGen's VQ-16: "
              "16 pixels per token, 72M parameters, for whole-picture benchmarks)",
              "small")
      .option("seed", "N", "initialisation seed", "0")
      .option("name", "TEXT", "model name", "random")
      .option("family", "NAME",
              "llamagen (a GPT over VQ codes, the options above), continuous (a micro "
              "continuous-token model with a draft model: 4x4 vectors, words w0..w11; the size "
              "options do not apply) or mar (MAR's layout: --config, --draft, --vae; ImageNet "
              "classes)",
              "llamagen")
      .option("draft", "NAME", "with --family mar: a draft of this MAR shape (CSpD); none if empty",
              "")
      .option("vae", "KIND",
              "with --family mar: kl16 (MAR's KL-16 shape: 256-pixel pictures; the default for "
              "B, L, H) or small (a few channels: quick pictures; the default for tiny)",
              "kl16");
  if (!a.parse(argc - 1, argv + 1)) return 0;
  if (!a.given("out")) throw Error("give the directory to create with --out DIR");
  if (a.str("family") == "continuous") {
    model::write_random_continuous_model(a.str("out"), a.non_negative("seed"));
    std::cout << "wrote a random continuous model (4x4 tokens of 4 numbers, with a draft model) "
                 "to "
              << a.str("out") << "\n";
    return 0;
  }
  if (a.str("family") == "mar") return random_mar_cmd(a);
  if (a.str("family") != "llamagen")
    throw Error("--family must be llamagen, continuous or mar, got '" + a.str("family") + "'");
  auto g = model::GptConfig::preset(a.str("config"));
  const bool t5 = a.str("cond") == "t5";
  const auto cond = t5 ? model::CondKind::Caption : model::cond_kind_from_string(a.str("cond"));
  if (cond != g.cond) {
    g.cond = cond;
    if (cond == model::CondKind::Caption) {
      g.cond_len = 8, g.cap_dim = 64, g.num_words = 100;
    } else {
      g.num_classes = 100;
    }
  }
  // LlamaGen's t2i sizes read 120 rows of flan-t5-xl (width 2048); a small model 16 rows of its
  // own width (a test prompt's pieces fit, and a long one shows the truncation).
  if (t5) {
    g.num_words = 0;
    g.cond_len = g.dim >= 768 ? 120 : 16;
    if (g.dim >= 768) g.cap_dim = 2048;
  }
  if (a.given("vocab") || a.str("config") != "micro") g.vocab_size = a.integer("vocab");
  if (a.given("grid") || a.str("config") != "micro") g.grid_h = g.grid_w = a.integer("grid");
  auto vq = model::small_vq_config(g.vocab_size, g.grid_h);
  if (a.str("vq") == "llamagen") {
    vq = model::VqConfig{};  // its defaults are LlamaGen's VQ-16
    vq.codebook_size = g.vocab_size;
  } else if (a.str("vq") != "small") {
    throw Error("--vq must be small or llamagen, got '" + a.str("vq") + "'");
  }
  model::write_random_model(a.str("out"), g, vq, a.non_negative("seed"), a.str("name"),
                            t5 ? "t5" : "");
  std::cout << "wrote random model '" << a.str("name") << "' (" << a.str("config") << ", " << g.dim
            << "x" << g.n_layer << ", grid " << g.grid_h << ", vocab " << g.vocab_size << ") to "
            << a.str("out") << "\n";
  return 0;
}

}  // namespace adtree::cli
