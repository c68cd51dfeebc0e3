// What an `adtree train <kind>` run is asked to do: its options, its config (the trainer's
// defaults under `--config` overrides, checked key by key) and what it reports back.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace adtree::train {

// What every `adtree train <kind>` run takes besides its kind-specific config.
struct TrainOptions {
  std::string out;    // run folder: checkpoint, metrics.jsonl, final weights
  int64_t steps = 0;  // total optimiser steps (0: the config's default)
  int64_t batch = 0;  // batch size (0: the config's default)
  double lr = 0.0;    // peak learning rate (0: the config's default)
  uint64_t seed = 0;
  bool resume = false;       // continue from <out>/checkpoint.safetensors
  int64_t stop_at = 0;       // > 0: stop after this step (checkpointed), as an interruption would
  double max_minutes = 0.0;  // > 0: stop (checkpointed) once this much wall time is spent
  nlohmann::json config = nlohmann::json::object();  // overrides of the trainer's config
  int64_t log_every = 10;        // progress line and metrics record every N steps
  int64_t eval_every = 0;        // validation every N steps (0: the config's default)
  int64_t checkpoint_every = 0;  // checkpoint every N steps (0: the config's default)
  std::ostream* log = nullptr;   // progress lines (nullptr: std::cout)
  // Hears every optimiser step (done, of all steps): a terminal's progress line between the logs.
  std::function<void(int64_t done, int64_t steps)> on_step;
  std::string device = "cpu";  // "cpu", "cuda", "cuda:N": where parameters and batches live
  // Matrix products of the training step: "tf32" (CUDA tensor cores, 10-bit mantissa inputs, fp32
  // sums; a CPU computes fp32), "fp32", or "bf16" (autocast: products in bfloat16 with fp32 sums,
  // on a CPU or CUDA, train/mixed_precision.h). TF32 and bf16 are exact enough here: the losses
  // are cross-entropies and L1/L2 terms whose gradient noise from minibatches is far above their
  // rounding (2^-11 and 2^-8 relative per input), the master weights and the optimiser stay fp32,
  // and LlamaGen itself trains with bf16 autocast.
  std::string matmul = "tf32";
  nlohmann::json provenance =
      nlohmann::json::object();  // command line, data file: kept in run.json
  // GPT stage: start from a finished run's weights (same architecture and words) instead of the
  // random initialisation, with a fresh optimiser and schedule: a second training stage.
  std::string init_from;
  // GPT stage: start the caption word table from these pretrained word vectors (GloVe text or
  // wink-embeddings JSON, train/word_vectors.h); cap_dim must equal their dimension.
  std::string word_vectors;
};

// One record of a finished (or stopped) run: what the tests and the CLI summary read.
struct TrainResult {
  int64_t first_step = 0;      // step the run started from (> 0 when resumed)
  int64_t last_step = 0;       // steps completed
  std::vector<double> losses;  // training loss of each step taken in this run
  nlohmann::json metrics = nlohmann::json::object();  // final evaluation
  bool finished = false;                              // reached the configured number of steps
};

// Applies `overrides` onto `defaults` key by key; a key the defaults do not have is an
// adtree::Error naming it and listing the known keys (a typo must not silently train the wrong
// model). Types must match (numbers may convert between integer and float).
nlohmann::json merge_config(const nlohmann::json& defaults, const nlohmann::json& overrides,
                            const std::string& what);
// A stage's resolved config: the defaults, the --config overrides, then the run options given on
// the command line (steps, batch, lr when set; the seed always).
nlohmann::json resolve_config(const nlohmann::json& defaults, const TrainOptions& opts,
                              const std::string& what);
// --config value: a JSON object written inline ("{...}") or the path of a JSON file.
nlohmann::json parse_config_arg(const std::string& text);

// Throws adtree::Error("<what>: <key> must be ...") unless the condition holds.
void require(bool ok, const std::string& what, const std::string& message);

// TrainOptions::device parsed (an adtree::Error for unknown names or a build without CUDA).
at::Device train_device(const TrainOptions& opts);

}  // namespace adtree::train
