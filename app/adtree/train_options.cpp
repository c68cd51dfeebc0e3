#include "train_options.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "model/device.h"
#include "terminal_progress.h"
#include "train/mixed_precision.h"
#include "util/error.h"
#include "util/threads.h"
#ifdef ADTREE_HAVE_IMAGING
#include "imaging/captioned_grid.h"
#include "imaging/emoji_dataset.h"
#include "imaging/image_io.h"
#endif

namespace adtree::cli {

namespace fs = std::filesystem;

namespace {

std::string command_line(const std::string& stage, int argc, char** argv) {
  std::string s = "adtree train " + stage;
  for (int i = 0; i < argc; ++i) s += std::string(" ") + argv[i];
  return s;
}

}  // namespace

void add_run_options(Args& a) {
  a.option("data", "FILE", "dataset file (adtree data emoji)")
      .option("out", "DIR", "run folder (checkpoint, metrics.jsonl, weights)")
      .option("steps", "N", "optimiser steps (default: the config's)")
      .option("batch", "B", "batch size (default: the config's)")
      .option("lr", "X", "peak learning rate (default: the config's)")
      .option("seed", "S", "seed of initialisation, data order and noise", "0")
      .option("config", "JSON", "config overrides: inline {...} or a JSON file (see --show-config)")
      .flag("resume", "continue from <out>/checkpoint.safetensors")
      .option("stop-at", "N", "stop after step N (checkpointed), e.g. to split a run", "0")
      .option("max-minutes", "M", "stop (checkpointed) after M minutes of training", "0")
      .option("log-every", "N", "progress line and metrics record every N steps", "10")
      .option("eval-every", "N", "validation every N steps (default: the config's)", "0")
      .option("checkpoint-every", "N", "checkpoint every N steps (default: the config's)", "0")
      .option("threads", "N",
              "CPU threads (default: $ADTREE_THREADS, else 2 where the machine has 2 cores)", "0")
      .option("device", "DEV", "cpu, cuda or cuda:N", "cpu")
      .option("matmul", "PREC",
              "matrix products of the training step: tf32 (TensorFloat-32 tensor cores on CUDA, "
              "fp32 on a CPU), fp32 (exact) or bf16 (autocast, CPU or CUDA; fast where the CPU "
              "has AMX or AVX512-BF16)",
              "tf32")
      .flag("show-config", "print the stage's default config and exit")
      .flag("quiet", "no progress line on the terminal between the step logs");
}

train::TrainOptions run_options(const Args& a, const std::string& stage, int argc, char** argv) {
  if (!a.given("out")) throw Error("give the run folder with --out DIR");
  train::TrainOptions o;
  o.out = a.str("out");
  o.steps = a.given("steps") ? a.integer("steps") : 0;
  o.batch = a.given("batch") ? a.integer("batch") : 0;
  o.lr = a.given("lr") ? a.number("lr") : 0.0;
  if (a.given("steps") && o.steps <= 0) throw Error("--steps must be positive");
  if (a.given("batch") && o.batch <= 0) throw Error("--batch must be positive");
  if (a.given("lr") && !(o.lr > 0)) throw Error("--lr must be positive");
  o.seed = a.non_negative("seed");
  o.resume = a.flag_set("resume");
  o.device = a.str("device");
  o.matmul = a.str("matmul");
  o.stop_at = a.integer("stop-at");
  o.max_minutes = a.number("max-minutes");
  o.log_every = a.integer("log-every");
  o.eval_every = a.integer("eval-every");
  o.checkpoint_every = a.integer("checkpoint-every");
  if (a.given("config")) o.config = train::parse_config_arg(a.str("config"));
  // A progress line between the step logs on a terminal; cleared when the options go.
  auto bar = std::make_shared<TerminalProgress>("training " + stage, a.flag_set("quiet"));
  if (bar->active()) {
    o.on_step = [bar](int64_t done, int64_t steps) {
      bar->update("step " + std::to_string(done) + " of " + std::to_string(steps),
                  double(done) / double(steps));
    };
  }
  o.provenance = {{"command", command_line(stage, argc, argv)},
                  {"data", a.given("data") ? fs::path(a.str("data")).filename().string() : ""},
                  {"threads", intra_op_threads()},
                  {"device", o.device},
                  {"matmul", train::effective_matmul(o.matmul, model::parse_device(o.device))}};
  return o;
}

io::Dataset load_data(const Args& a) {
  if (!a.given("data"))
    throw Error("give the dataset file with --data FILE (make one with 'adtree data emoji')");
  return io::Dataset::load(a.str("data"));
}

void print_result(const std::string& stage, const train::TrainResult& r, const std::string& out) {
  if (!r.finished) {
    std::cout << stage << ": stopped at step " << r.last_step << "; continue with --resume\n";
    return;
  }
  std::cout << stage << ": finished " << r.last_step << " steps; metrics:\n"
            << r.metrics.dump(2) << "\nwrote " << fs::absolute(out).string() << "\n";
}

void write_fidelity_sheets(const at::Tensor& images, const at::Tensor& nearest,
                           const std::vector<std::string>& prompts, const std::string& out,
                           const std::string& prefix) {
  std::filesystem::create_directories(out);
  std::ofstream list(out + "/prompts.txt");  // the same prompts for every method
  for (size_t i = 0; i < prompts.size(); ++i) {
    list << i / 4 + 1 << "," << (i % 4) * 2 + 1 << ": " << prompts[i] << "\n";
  }
#ifdef ADTREE_HAVE_IMAGING
  const auto pairs =
      at::stack({images, nearest}, 1).reshape({-1, images.size(1), images.size(2), 3});
  imaging::write_image(out + "/" + prefix + "samples.png", imaging::image_grid(pairs, 8, 2, 4));
  imaging::write_image(out + "/" + prefix + "captioned.png",
                       imaging::captioned_grid(images, prompts, 8, 2));
#else
  (void)images, (void)nearest;
#endif
}

}  // namespace adtree::cli
