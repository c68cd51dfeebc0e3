// Pieces every trainer shares: run options, a seeded per-step generator and
// data order, AdamW with weight decay on matrices only, gradient clipping, the learning-rate
// schedule, resumable checkpoints, the progress line and the metrics log.
//
// Reproducibility rule: everything random in step s (batch rows, dropout masks, noise, code
// restarts) is drawn from generators seeded by (seed, s), never from a stream carried across steps,
// so a run resumed from a checkpoint at step s takes exactly the steps an uninterrupted run takes.
#pragma once
#include <ATen/ATen.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <functional>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "io/dataset.h"
#include "model/params.h"

namespace adtree::train {

using model::TensorMap;

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
  std::string device = "cpu";    // "cpu", "cuda", "cuda:N": where parameters and batches live
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

// ---- configuration helpers ------------------------------------------------------------------

// Applies `overrides` onto `defaults` key by key; a key the defaults do not have is an
// adtree::Error naming it and listing the known keys (a typo must not silently train the wrong
// model). Types must match (numbers may convert between integer and float).
nlohmann::json merge_config(const nlohmann::json& defaults, const nlohmann::json& overrides,
                            const std::string& what);
// --config value: a JSON object written inline ("{...}") or the path of a JSON file.
nlohmann::json parse_config_arg(const std::string& text);

// Throws adtree::Error("<what>: <key> must be ...") unless the condition holds.
void require(bool ok, const std::string& what, const std::string& message);

// ---- randomness -------------------------------------------------------------------------------

// A 64-bit seed from (seed, step, stream) through splitmix64, so streams never collide.
uint64_t mix_seed(uint64_t seed, uint64_t step, uint64_t stream);
// A fresh CPU generator for one purpose of one step.
at::Generator step_generator(uint64_t seed, int64_t step, uint64_t stream);

// Rows of each batch: epoch e visits the `rows` in a permutation seeded by (seed, e); step s takes
// the next `batch` rows of that endless sequence. Pure function of (seed, step).
class BatchOrder {
 public:
  BatchOrder(std::vector<int64_t> rows, int64_t batch, uint64_t seed);
  std::vector<int64_t> rows_for_step(int64_t step);
  double epoch_of(int64_t step) const;  // fractional epochs done before `step`

 private:
  const std::vector<int64_t>& perm(int64_t epoch);
  std::vector<int64_t> rows_;
  int64_t batch_;
  uint64_t seed_;
  int64_t cached_epoch_ = -1;
  std::vector<int64_t> cached_;
};

// ---- optimisation -----------------------------------------------------------------------------

// The trainable tensors of a run, by name (fp32, requires_grad). Same map the model classes take.
struct Params {
  TensorMap tensors;
  // Copies to `device`, fp32, contiguous, requires_grad.
  static Params from(const TensorMap& init, at::Device device = at::kCPU);
  int64_t count() const;
  at::Device device() const;  // where the tensors live (the CPU for an empty map)
  void zero_grad();
  // One tensor map without autograd history (for saving weights).
  TensorMap detached() const;
};

struct AdamWConfig {
  double lr = 3e-4;
  double beta1 = 0.9, beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.05;
};

// AdamW (decoupled weight decay, bias-corrected moments: the same update as torch.optim.AdamW).
// Written out rather than taken from torch::optim so its state is plain named tensors that go
// into a safetensors checkpoint, identically on libtorch 1.13 and 2.x (whose optimiser state maps
// are keyed differently). Weight decay applies to matrices (dim >= 2) only: LlamaGen's rule;
// norms, biases and the stored null caption are not pulled towards zero.
class AdamW {
 public:
  // `no_decay`: matrices exempt from weight decay (e.g. an L2-normalised codebook, whose rows'
  // length carries no meaning, so decay would only shrink them and inflate their step size).
  AdamW(Params& params, AdamWConfig cfg, std::set<std::string> no_decay = {});
  // One update with learning rate `lr` from the gradients in params (missing grads are skipped).
  void step(double lr);
  // Moments of one parameter (e.g. to reset rows of restarted codebook entries).
  at::Tensor& exp_avg(const std::string& name) { return m_.at(name); }
  at::Tensor& exp_avg_sq(const std::string& name) { return v_.at(name); }
  // "adam.m.<name>", "adam.v.<name>" for checkpoints; load checks every name and shape.
  void save_state(TensorMap& out) const;
  void load_state(const TensorMap& in, const std::string& where);

 private:
  Params& params_;
  AdamWConfig cfg_;
  std::set<std::string> no_decay_;
  TensorMap m_, v_;
  int64_t t_ = 0;
};

// Scales gradients so their global L2 norm is at most max_norm. Returns the norm before clipping.
double clip_grad_norm(Params& params, double max_norm);

// Linear warm-up to `peak`, then cosine (or linear) decay to peak * min_ratio at `total` steps.
struct LrSchedule {
  double peak = 3e-4;
  int64_t warmup = 0;
  int64_t total = 1;
  double min_ratio = 0.1;
  std::string shape = "cosine";  // "cosine" | "linear" | "constant"
  double at(int64_t step) const;
  void validate(const std::string& what) const;
};

// ---- checkpoints -------------------------------------------------------------------------------

// <out>/checkpoint.safetensors: "param.<name>", the optimiser state, "extra.<name>" (trainer
// state such as codebook usage), metadata "kind", "step", "config" (JSON). Written atomically.
struct Checkpoint {
  std::string kind;
  int64_t step = 0;
  nlohmann::json config;
  TensorMap params, optimizer, extra;

  static std::string path_in(const std::string& out_dir);
  void save(const std::string& out_dir) const;
  // Throws adtree::Error when missing, of another kind, or made with a different config.
  static Checkpoint load(const std::string& out_dir, const std::string& kind,
                         const nlohmann::json& config);
};

// ---- reporting ---------------------------------------------------------------------------------

// Appends one JSON object per line to <out>/metrics.jsonl (truncated when a run starts afresh).
class MetricsLog {
 public:
  MetricsLog(const std::string& out_dir, bool append);
  void write(const nlohmann::json& record);

 private:
  std::ofstream out_;
};

// "gpt step 120/2000 loss 2.3456 lr 3.0e-04 5120 tok/s ETA 12m30s": throughput over the steps
// since the run (re)started, so the ETA is honest after a resume.
class Progress {
 public:
  Progress(std::string kind, std::string unit, int64_t first_step, int64_t total_steps,
           std::ostream* log);
  void step_done(int64_t step, double items);  // items processed by the step (tokens, images)
  void print(int64_t step, double loss, double lr, const std::string& extra = "");
  double items_per_second() const;
  double elapsed_seconds() const;
  std::ostream& log() { return *log_; }

 private:
  std::string kind_, unit_;
  int64_t first_, total_;
  std::ostream* log_;
  std::chrono::steady_clock::time_point start_;
  double items_ = 0;
  int64_t last_step_ = 0;
};

// ---- the loop ----------------------------------------------------------------------------------

// What a trainer plugs into run_loop. step_fn runs forward + backward for one step and returns the
// loss (adding the items it processed to `items`); the loop owns zeroing, clipping, the update,
// logging, evaluation, checkpoints, stopping and resuming.
struct LoopSpec {
  std::string kind;       // "vq", "gpt", "drafter"
  std::string unit;       // "img", "tok"
  nlohmann::json config;  // the resolved config: a checkpoint must match it to be resumed
  int64_t steps = 0;
  int64_t eval_every = 0;
  int64_t checkpoint_every = 0;
  LrSchedule schedule;
  double grad_clip = 1.0;
  std::function<double(int64_t step, double& items)> step_fn;
  // Evaluation after `step` steps; `final` on the last one (full validation set).
  std::function<nlohmann::json(int64_t step, bool final)> eval_fn;
  // After the update of each step (e.g. dead-code restarts); may be empty.
  std::function<void(int64_t step)> after_update;
  // Trainer state beyond params and optimiser (e.g. codebook usage counts); may be empty.
  std::function<TensorMap()> save_extra;
  std::function<void(const TensorMap&)> load_extra;
  // One short text for the progress line from the last eval (e.g. "val 3.21"); may be empty.
  std::function<std::string(const nlohmann::json&)> eval_text;

  // The schedule and loop settings every stage reads from its resolved config (steps, lr, warmup,
  // min_lr_ratio, schedule, eval_every, checkpoint_every, grad_clip); the callbacks stay empty.
  static LoopSpec from_config(const std::string& kind, const std::string& unit,
                              const nlohmann::json& config);
};

// Runs (or resumes) the loop. A loss that is not finite is an adtree::Error naming the step.
TrainResult run_loop(const TrainOptions& opts, Params& params, AdamW& opt, const LoopSpec& spec);

// ---- data ----------------------------------------------------------------------------------

// Dataset rows of one split; an adtree::Error naming the data file when the split is empty.
std::vector<int64_t> split_rows(const io::Dataset& d, io::Split s, const std::string& where);
// uint8 [N, H, W, 3] rows -> float [B, 3, H, W] in [-1, 1] (the VQ's input range) on `device`.
at::Tensor images_to_float(const io::Dataset& d, const std::vector<int64_t>& rows,
                           at::Device device = at::kCPU);
// Row indices as an int64 tensor on `device`.
at::Tensor row_tensor(const std::vector<int64_t>& rows, at::Device device = at::kCPU);
// TrainOptions::device parsed (an adtree::Error for unknown names or a build without CUDA).
at::Device train_device(const TrainOptions& opts);

// Files of a run folder.
std::string run_file(const std::string& out_dir, const std::string& name);
void write_json_file(const std::string& path, const nlohmann::json& j);
nlohmann::json read_json_file(const std::string& path);

}  // namespace adtree::train
