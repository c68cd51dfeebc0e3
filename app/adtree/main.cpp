// adtree: the command-line face of ADT-Tree Studio. Every verb is one file; errors end the process
// with a one-line message and a non-zero status.
#include <iostream>
#include <string>

#include "commands.h"
#include "util/error.h"
#include "util/threads.h"

namespace {
void print_usage() {
  std::cout
      << "Usage: adtree <command> [OPTIONS]\n\n"
         "Image generation with visual autoregressive models and speculative decoding.\n\n"
         "Commands:\n"
         "  generate       generate an image from a prompt (PNG + statistics JSON)\n"
         "  bench          measure decoding speed (JSON + table)\n"
         "  bench-picture  the whole picture: load, prefill, tokens, VQ decode, previews\n"
         "  info           show a model's card, sizes and memory\n"
         "  embed          a prompt's caption-embedding file from a T5 encoder (LlamaGen t2i)\n"
         "  model          make model directories (model random)\n"
         "  convert        convert released LlamaGen checkpoints into a model directory\n"
         "  data           build training datasets (data emoji)\n"
         "  train          train models (train vq|gpt|drafter, assemble, install, fidelity)\n"
         "  soak           many generations through the engine: memory and hang check\n"
         "  sweep          ablation grids of decoding settings (JSONL rows, shards, merge)\n\n"
         "Run 'adtree <command> --help' for a command's options.\n";
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    print_usage();
    return 2;
  }
  const std::string verb = argv[1];
  if (verb == "-h" || verb == "--help" || verb == "help") {
    print_usage();
    return 0;
  }
  if (verb == "--version") {
    std::cout << "adtree 0.1.0\n";
    return 0;
  }
  try {
    adtree::configure_threads();
    if (verb == "generate") return adtree::cli::cmd_generate(argc - 2, argv + 2);
    if (verb == "info") return adtree::cli::cmd_info(argc - 2, argv + 2);
    if (verb == "embed") return adtree::cli::cmd_embed(argc - 2, argv + 2);
    if (verb == "model") return adtree::cli::cmd_model(argc - 2, argv + 2);
    if (verb == "bench") return adtree::cli::cmd_bench(argc - 2, argv + 2);
    if (verb == "bench-picture") return adtree::cli::cmd_bench_picture(argc - 2, argv + 2);
    if (verb == "data") return adtree::cli::cmd_data(argc - 2, argv + 2);
    if (verb == "train") return adtree::cli::cmd_train(argc - 2, argv + 2);
    if (verb == "soak") return adtree::cli::cmd_soak(argc - 2, argv + 2);
    if (verb == "sweep") return adtree::cli::cmd_sweep(argc - 2, argv + 2);
    if (verb == "convert") return adtree::cli::cmd_convert(argc - 2, argv + 2);
    std::cerr << "adtree: unknown command '" << verb << "' (see 'adtree --help')\n";
    return 2;
  } catch (const adtree::Error& e) {
    std::cerr << "adtree " << verb << ": error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "adtree " << verb << ": internal error: " << e.what() << "\n";
    return 1;
  }
}
