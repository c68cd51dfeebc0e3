#include "train/loop.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "train/checkpoint.h"
#include "train/mixed_precision.h"
#include "train/reporting.h"
#include "util/error.h"

namespace adtree::train {

namespace fs = std::filesystem;
using json = nlohmann::json;

LoopSpec LoopSpec::from_config(const std::string& kind, const std::string& unit,
                               const json& config) {
  LoopSpec spec;
  spec.kind = kind;
  spec.unit = unit;
  spec.config = config;
  spec.steps = config["steps"];
  spec.eval_every = config["eval_every"];
  spec.checkpoint_every = config["checkpoint_every"];
  spec.schedule = {config["lr"].get<double>(), config["warmup"].get<int64_t>(), spec.steps,
                   config["min_lr_ratio"].get<double>(), config["schedule"].get<std::string>()};
  spec.grad_clip = config["grad_clip"];
  return spec;
}

namespace {

void create_run_folder(const std::string& out) {
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) throw Error(out + ": cannot create the run folder (" + ec.message() + ")");
}

// Parameters, optimiser and trainer state from <out>/checkpoint.safetensors, which must have been
// made by the same kind of run under the same config; returns the steps it was taken after.
int64_t restore_checkpoint(const TrainOptions& opts, Params& params, AdamW& opt,
                           const LoopSpec& spec) {
  auto ck = Checkpoint::load(opts.out, spec.kind, spec.config);
  const std::string where = Checkpoint::path_in(opts.out);
  at::NoGradGuard no_grad;
  for (auto& [name, t] : params.tensors) {
    auto it = ck.params.find(name);
    if (it == ck.params.end() || it->second.sizes() != t.sizes()) {
      throw Error(where + ": parameter '" + name + "' is missing or has another shape");
    }
    t.detach().copy_(it->second);
  }
  opt.load_state(ck.optimizer, where);
  if (spec.load_extra) spec.load_extra(ck.extra);
  return ck.step;
}

void save_checkpoint(const TrainOptions& opts, const Params& params, const AdamW& opt,
                     const LoopSpec& spec, int64_t step) {
  Checkpoint ck;
  ck.kind = spec.kind;
  ck.step = step;
  ck.config = spec.config;
  ck.params = params.detached();
  opt.save_state(ck.optimizer);
  if (spec.save_extra) ck.extra = spec.save_extra();
  ck.save(opts.out);
}

// The trainer's forward and backward of `step`; its loss, which must be finite.
double forward_backward(const TrainOptions& opts, const Params& params, const LoopSpec& spec,
                        int64_t step, double& items) {
  double loss = 0.0;
  {
    // The forward and backward only: the update, the evaluations and the weights stay fp32.
    AutocastBf16 autocast(params.device(), opts.matmul == "bf16");
    loss = spec.step_fn(step, items);
  }
  if (!std::isfinite(loss)) {
    throw Error("train " + spec.kind + ": the loss became " + std::to_string(loss) + " at step " +
                std::to_string(step + 1) + " (try a lower --lr)");
  }
  return loss;
}

// Mean training loss over the steps since the last progress line.
struct LossMean {
  double sum = 0.0;
  int64_t n = 0;

  void add(double loss) { sum += loss, ++n; }
  double take() {
    const double mean = sum / double(n);
    sum = 0.0, n = 0;
    return mean;
  }
};

// The progress line and its metrics record after `done` steps.
void log_progress(Progress& progress, MetricsLog& metrics, const LoopSpec& spec, int64_t done,
                  double mean_loss, double lr, double grad_norm, const std::string& eval_note) {
  progress.print(done, mean_loss, lr, eval_note);
  metrics.write({{"step", done},
                 {"loss", mean_loss},
                 {"lr", lr},
                 {"grad_norm", grad_norm},
                 {spec.unit + "_per_s", progress.items_per_second()},
                 {"elapsed_s", progress.elapsed_seconds()}});
}

// An evaluation before the last step, logged; returns its note for the progress lines.
std::string evaluate_midway(Progress& progress, MetricsLog& metrics, const LoopSpec& spec,
                            int64_t done) {
  auto m = spec.eval_fn(done, false);
  metrics.write({{"step", done}, {"eval", m}});
  std::string note = spec.eval_text ? spec.eval_text(m) : "";
  progress.log() << spec.kind << " eval at step " << done << ": " << m.dump() << std::endl;
  return note;
}

// Whether to stop (checkpointed) after `done` steps, short of the last: --stop-at or --max-minutes.
bool stop_early(const TrainOptions& opts, const Progress& progress, const LoopSpec& spec,
                int64_t done) {
  const bool out_of_time =
      opts.max_minutes > 0 && progress.elapsed_seconds() > opts.max_minutes * 60.0;
  return done != spec.steps && ((opts.stop_at > 0 && done >= opts.stop_at) || out_of_time);
}

}  // namespace

TrainResult run_loop(const TrainOptions& opts, Params& params, AdamW& opt, const LoopSpec& spec) {
  const std::string what = "train " + spec.kind;
  require(spec.steps > 0, what, "the number of steps must be positive");
  spec.schedule.validate(what);
  create_run_folder(opts.out);

  TrainResult result;
  const int64_t start = opts.resume ? restore_checkpoint(opts, params, opt, spec) : 0;
  result.first_step = start;
  result.last_step = start;
  MetricsLog metrics(opts.out, opts.resume);
  metrics.write({{"event", opts.resume ? "resume" : "start"},
                 {"kind", spec.kind},
                 {"step", start},
                 {"steps", spec.steps},
                 {"params", params.count()},
                 {"config", spec.config}});
  Progress progress(spec.kind, spec.unit, start, spec.steps, opts.log);
  const int64_t log_every = std::max<int64_t>(1, opts.log_every);
  const int64_t ckpt_every =
      opts.checkpoint_every > 0 ? opts.checkpoint_every : spec.checkpoint_every;
  const int64_t eval_every = opts.eval_every > 0 ? opts.eval_every : spec.eval_every;
  std::string eval_note;
  LossMean losses;
  bool stopped = false;
  for (int64_t step = start; step < spec.steps; ++step) {
    params.zero_grad();
    const double lr = spec.schedule.at(step);
    double items = 0.0;
    const double loss = forward_backward(opts, params, spec, step, items);
    const double gnorm = clip_grad_norm(params, spec.grad_clip);
    opt.step(lr);
    if (spec.after_update) spec.after_update(step);
    const int64_t done = step + 1;
    result.losses.push_back(loss);
    result.last_step = done;
    progress.step_done(done, items);
    if (opts.on_step) opts.on_step(done, spec.steps);
    losses.add(loss);
    if (done % log_every == 0 || done == spec.steps)
      log_progress(progress, metrics, spec, done, losses.take(), lr, gnorm, eval_note);
    if (eval_every > 0 && done % eval_every == 0 && done != spec.steps && spec.eval_fn)
      eval_note = evaluate_midway(progress, metrics, spec, done);
    stopped = stop_early(opts, progress, spec, done);
    if (stopped || done == spec.steps || (ckpt_every > 0 && done % ckpt_every == 0))
      save_checkpoint(opts, params, opt, spec, done);
    if (stopped) {
      progress.log() << spec.kind << " stopped at step " << done << " (checkpointed; continue with "
                     << "--resume)" << std::endl;
      metrics.write({{"event", "stopped"}, {"step", done}});
      break;
    }
  }
  result.finished = !stopped;
  if (result.finished && spec.eval_fn) {
    result.metrics = spec.eval_fn(spec.steps, true);
    metrics.write({{"step", spec.steps}, {"final", true}, {"eval", result.metrics}});
    progress.log() << spec.kind << " final eval: " << result.metrics.dump() << std::endl;
  }
  return result;
}

}  // namespace adtree::train
