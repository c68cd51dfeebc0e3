#include "train/common.h"

#include "train/mixed_precision.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Generator.h>

#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <numeric>
#include <sstream>

#include "io/safetensors.h"
#include "model/model_dir.h"
#include "util/error.h"
#include "util/rng.h"

namespace adtree::train {

namespace fs = std::filesystem;
using json = nlohmann::json;

// ---- configuration ------------------------------------------------------------------------------

json merge_config(const json& defaults, const json& overrides, const std::string& what) {
  if (overrides.is_null()) return defaults;
  if (!overrides.is_object()) throw Error(what + ": the configuration must be a JSON object");
  json out = defaults;
  for (const auto& [key, value] : overrides.items()) {
    if (!defaults.contains(key)) {
      std::string known;
      for (const auto& [k, v] : defaults.items()) known += (known.empty() ? "" : ", ") + k;
      throw Error(what + ": unknown configuration key '" + key + "' (known: " + known + ")");
    }
    const auto& d = defaults.at(key);
    const bool same = (d.is_number() && value.is_number()) ||
                      (d.is_string() && value.is_string()) ||
                      (d.is_boolean() && value.is_boolean()) || (d.is_array() && value.is_array());
    if (!same) {
      throw Error(what + ": configuration key '" + key + "' must be a " + d.type_name() +
                  " (like " + d.dump() + "), got " + value.dump());
    }
    if (d.is_number_integer() && !value.is_number_integer()) {
      throw Error(what + ": configuration key '" + key + "' must be an integer, got " +
                  value.dump());
    }
    out[key] = value;
  }
  return out;
}

json parse_config_arg(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\n");
  try {
    if (first != std::string::npos && text[first] == '{') return json::parse(text);
    std::ifstream in(text);
    if (!in) throw Error("--config: cannot open '" + text + "' (give a JSON file or inline {...})");
    return json::parse(in);
  } catch (const json::exception& e) {
    throw Error("--config: invalid JSON (" + std::string(e.what()) + ")");
  }
}

void require(bool ok, const std::string& what, const std::string& message) {
  if (!ok) throw Error(what + ": " + message);
}

// ---- randomness ---------------------------------------------------------------------------------

uint64_t mix_seed(uint64_t seed, uint64_t step, uint64_t stream) {
  return splitmix64(splitmix64(splitmix64(seed) ^ step) ^ (stream * 0x632be59bd9b4e019ULL));
}

at::Generator step_generator(uint64_t seed, int64_t step, uint64_t stream) {
  return at::detail::createCPUGenerator(mix_seed(seed, uint64_t(step), stream));
}

BatchOrder::BatchOrder(std::vector<int64_t> rows, int64_t batch, uint64_t seed)
    : rows_(std::move(rows)), batch_(batch), seed_(seed) {
  if (rows_.empty()) throw Error("no training rows");
  if (batch_ <= 0) throw Error("batch size must be positive");
}

const std::vector<int64_t>& BatchOrder::perm(int64_t epoch) {
  if (epoch != cached_epoch_) {
    auto gen = step_generator(seed_, epoch, /*stream=*/0xba7c4);
    auto p = at::randperm(int64_t(rows_.size()), gen, at::TensorOptions().dtype(at::kLong));
    const int64_t* pp = p.data_ptr<int64_t>();
    cached_.resize(rows_.size());
    for (size_t i = 0; i < rows_.size(); ++i) cached_[i] = rows_[size_t(pp[i])];
    cached_epoch_ = epoch;
  }
  return cached_;
}

std::vector<int64_t> BatchOrder::rows_for_step(int64_t step) {
  std::vector<int64_t> out;
  const int64_t n = int64_t(rows_.size());
  for (int64_t k = step * batch_; k < (step + 1) * batch_; ++k)
    out.push_back(perm(k / n)[size_t(k % n)]);
  return out;
}

double BatchOrder::epoch_of(int64_t step) const {
  return double(step) * double(batch_) / double(rows_.size());
}

// ---- optimisation -------------------------------------------------------------------------------

Params Params::from(const TensorMap& init, at::Device device) {
  Params p;
  for (const auto& [name, t] : init) {
    auto c = t.detach().to(device, at::kFloat).clone().contiguous();
    c.set_requires_grad(true);
    p.tensors.emplace(name, c);
  }
  return p;
}

int64_t Params::count() const {
  int64_t n = 0;
  for (const auto& [k, t] : tensors) n += t.numel();
  return n;
}

at::Device Params::device() const {
  return tensors.empty() ? at::Device(at::kCPU) : tensors.begin()->second.device();
}

void Params::zero_grad() {
  for (auto& [k, t] : tensors) {
    if (t.grad().defined()) t.mutable_grad().zero_();
  }
}

TensorMap Params::detached() const {
  TensorMap out;
  for (const auto& [k, t] : tensors) out.emplace(k, t.detach().clone());
  return out;
}

AdamW::AdamW(Params& params, AdamWConfig cfg, std::set<std::string> no_decay)
    : params_(params), cfg_(cfg), no_decay_(std::move(no_decay)) {
  for (const auto& [name, t] : params_.tensors) {
    m_.emplace(name, at::zeros_like(t.detach()));
    v_.emplace(name, at::zeros_like(t.detach()));
  }
}

void AdamW::step(double lr) {
  at::NoGradGuard no_grad;
  ++t_;
  const double bc1 = 1.0 - std::pow(cfg_.beta1, double(t_));
  const double bc2 = 1.0 - std::pow(cfg_.beta2, double(t_));
  for (auto& [name, p] : params_.tensors) {
    const auto& g = p.grad();
    if (!g.defined()) continue;
    auto w = p.detach();
    if (p.dim() >= 2 && cfg_.weight_decay > 0 && !no_decay_.count(name))
      w.mul_(1.0 - lr * cfg_.weight_decay);
    auto& m = m_.at(name);
    auto& v = v_.at(name);
    m.mul_(cfg_.beta1).add_(g, 1.0 - cfg_.beta1);
    v.mul_(cfg_.beta2).addcmul_(g, g, 1.0 - cfg_.beta2);
    auto denom = (v.sqrt() / std::sqrt(bc2)).add_(cfg_.eps);
    w.addcdiv_(m, denom, -lr / bc1);
  }
}

void AdamW::save_state(TensorMap& out) const {
  for (const auto& [name, t] : m_) out.emplace("adam.m." + name, t);
  for (const auto& [name, t] : v_) out.emplace("adam.v." + name, t);
  out.emplace("adam.t", at::tensor({t_}, at::TensorOptions().dtype(at::kLong)));
}

void AdamW::load_state(const TensorMap& in, const std::string& where) {
  auto take = [&](const std::string& key, at::Tensor& dst) {
    auto it = in.find(key);
    if (it == in.end()) throw Error(where + ": the checkpoint lacks optimiser state '" + key + "'");
    if (it->second.sizes() != dst.sizes()) {
      throw Error(where + ": optimiser state '" + key + "' has shape " +
                  model::shape_str(it->second.sizes()) + ", expected " +
                  model::shape_str(dst.sizes()));
    }
    dst.copy_(it->second);
  };
  for (auto& [name, t] : m_) take("adam.m." + name, t);
  for (auto& [name, t] : v_) take("adam.v." + name, t);
  auto it = in.find("adam.t");
  if (it == in.end()) throw Error(where + ": the checkpoint lacks the optimiser step count");
  t_ = it->second.item<int64_t>();
}

double clip_grad_norm(Params& params, double max_norm) {
  at::NoGradGuard no_grad;
  double sq = 0.0;
  for (auto& [k, t] : params.tensors) {
    if (t.grad().defined()) sq += t.grad().to(at::kDouble).pow(2).sum().item<double>();
  }
  const double norm = std::sqrt(sq);
  if (max_norm > 0 && norm > max_norm) {
    const double scale = max_norm / (norm + 1e-6);
    for (auto& [k, t] : params.tensors) {
      if (t.grad().defined()) t.mutable_grad().mul_(scale);
    }
  }
  return norm;
}

double LrSchedule::at(int64_t step) const {
  if (warmup > 0 && step < warmup) return peak * double(step + 1) / double(warmup);
  if (shape == "constant") return peak;
  const double span = double(std::max<int64_t>(1, total - warmup));
  const double x = std::min(1.0, double(step - warmup) / span);
  const double floor = peak * min_ratio;
  if (shape == "linear") return floor + (peak - floor) * (1.0 - x);
  return floor + (peak - floor) * 0.5 * (1.0 + std::cos(M_PI * x));
}

void LrSchedule::validate(const std::string& what) const {
  require(peak > 0 && std::isfinite(peak), what, "the learning rate must be a positive number");
  require(warmup >= 0, what, "warmup must not be negative");
  require(min_ratio >= 0 && min_ratio <= 1, what, "min_lr_ratio must be in [0, 1]");
  require(shape == "cosine" || shape == "linear" || shape == "constant", what,
          "schedule must be cosine, linear or constant, got '" + shape + "'");
}

// ---- checkpoints --------------------------------------------------------------------------------

std::string Checkpoint::path_in(const std::string& out_dir) {
  return run_file(out_dir, "checkpoint.safetensors");
}

void Checkpoint::save(const std::string& out_dir) const {
  std::map<std::string, at::Tensor> all;
  for (const auto& [k, t] : params) all.emplace("param." + k, t.detach());
  for (const auto& [k, t] : optimizer) all.emplace(k, t.detach());
  for (const auto& [k, t] : extra) all.emplace("extra." + k, t.detach());
  io::write_safetensors(path_in(out_dir), all,
                        {{"format", "adtree-checkpoint"},
                         {"kind", kind},
                         {"step", std::to_string(step)},
                         {"config", config.dump()}});
}

Checkpoint Checkpoint::load(const std::string& out_dir, const std::string& kind,
                            const json& config) {
  const auto path = path_in(out_dir);
  if (!fs::exists(path)) {
    throw Error(path + ": no checkpoint to resume from (run without --resume to start afresh)");
  }
  io::SafetensorsReader r(path);
  const auto& md = r.metadata();
  auto get = [&](const std::string& key) {
    auto it = md.find(key);
    if (it == md.end())
      throw Error(path + ": not a training checkpoint (metadata '" + key + "' missing)");
    return it->second;
  };
  Checkpoint c;
  c.kind = get("kind");
  if (c.kind != kind) {
    throw Error(path + ": this is a '" + c.kind + "' checkpoint, not '" + kind + "'");
  }
  c.step = std::stoll(get("step"));
  c.config = json::parse(get("config"));
  if (c.config != config) {
    // Resuming under different settings would silently train another model than the log says.
    throw Error(path +
                ": the checkpoint was made with another configuration; resume with the same "
                "settings (saved: " +
                c.config.dump() + ")");
  }
  for (auto& [name, t] : r.all()) {
    if (name.rfind("param.", 0) == 0) {
      c.params.emplace(name.substr(6), t);
    } else if (name.rfind("extra.", 0) == 0) {
      c.extra.emplace(name.substr(6), t);
    } else {
      c.optimizer.emplace(name, t);
    }
  }
  return c;
}

// ---- reporting ----------------------------------------------------------------------------------

MetricsLog::MetricsLog(const std::string& out_dir, bool append)
    : out_(run_file(out_dir, "metrics.jsonl"), append ? std::ios::app : std::ios::trunc) {
  if (!out_) throw Error(run_file(out_dir, "metrics.jsonl") + ": cannot write the metrics log");
}

void MetricsLog::write(const json& record) {
  out_ << record.dump() << "\n";
  out_.flush();
}

Progress::Progress(std::string kind, std::string unit, int64_t first_step, int64_t total_steps,
                   std::ostream* log)
    : kind_(std::move(kind)),
      unit_(std::move(unit)),
      first_(first_step),
      total_(total_steps),
      log_(log ? log : &std::cout),
      start_(std::chrono::steady_clock::now()),
      last_step_(first_step) {}

void Progress::step_done(int64_t step, double items) {
  items_ += items;
  last_step_ = step;
}

double Progress::elapsed_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

double Progress::items_per_second() const {
  const double s = elapsed_seconds();
  return s > 0 ? items_ / s : 0.0;
}

namespace {
std::string duration_text(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const int64_t t = int64_t(s + 0.5);
  std::ostringstream os;
  if (t >= 3600)
    os << t / 3600 << "h" << std::setw(2) << std::setfill('0') << (t % 3600) / 60 << "m";
  else
    os << t / 60 << "m" << std::setw(2) << std::setfill('0') << t % 60 << "s";
  return os.str();
}
}  // namespace

void Progress::print(int64_t step, double loss, double lr, const std::string& extra) {
  const double done = double(last_step_ - first_);
  const double per_step = done > 0 ? elapsed_seconds() / done : 0.0;
  std::ostringstream os;
  os << kind_ << " step " << step << "/" << total_ << " loss " << std::fixed << std::setprecision(4)
     << loss << " lr " << std::scientific << std::setprecision(2) << lr << std::fixed
     << std::setprecision(0) << " " << items_per_second() << " " << unit_ << "/s ETA "
     << duration_text(per_step * double(total_ - step));
  if (!extra.empty()) os << " " << extra;
  *log_ << os.str() << std::endl;
}

// ---- the loop
// ------------------------------------------------------------------------------------

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

TrainResult run_loop(const TrainOptions& opts, Params& params, AdamW& opt, const LoopSpec& spec) {
  const std::string what = "train " + spec.kind;
  require(spec.steps > 0, what, "the number of steps must be positive");
  spec.schedule.validate(what);
  std::error_code ec;
  fs::create_directories(opts.out, ec);
  if (ec) throw Error(opts.out + ": cannot create the run folder (" + ec.message() + ")");

  TrainResult result;
  int64_t start = 0;
  if (opts.resume) {
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
    start = ck.step;
  }
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
  auto save = [&](int64_t step) {
    Checkpoint ck;
    ck.kind = spec.kind;
    ck.step = step;
    ck.config = spec.config;
    ck.params = params.detached();
    opt.save_state(ck.optimizer);
    if (spec.save_extra) ck.extra = spec.save_extra();
    ck.save(opts.out);
  };
  std::string eval_note;
  double loss_sum = 0.0;
  int64_t loss_n = 0;
  bool stopped = false;
  for (int64_t step = start; step < spec.steps; ++step) {
    params.zero_grad();
    const double lr = spec.schedule.at(step);
    double items = 0.0;
    double loss = 0.0;
    {
      // The forward and backward only: the update, the evaluations and the weights stay fp32.
      AutocastBf16 autocast(params.device(), opts.matmul == "bf16");
      loss = spec.step_fn(step, items);
    }
    if (!std::isfinite(loss)) {
      throw Error(what + ": the loss became " + std::to_string(loss) + " at step " +
                  std::to_string(step + 1) + " (try a lower --lr)");
    }
    const double gnorm = clip_grad_norm(params, spec.grad_clip);
    opt.step(lr);
    if (spec.after_update) spec.after_update(step);
    const int64_t done = step + 1;
    result.losses.push_back(loss);
    result.last_step = done;
    progress.step_done(done, items);
    loss_sum += loss;
    ++loss_n;
    if (done % log_every == 0 || done == spec.steps) {
      progress.print(done, loss_sum / double(loss_n), lr, eval_note);
      metrics.write({{"step", done},
                     {"loss", loss_sum / double(loss_n)},
                     {"lr", lr},
                     {"grad_norm", gnorm},
                     {spec.unit + "_per_s", progress.items_per_second()},
                     {"elapsed_s", progress.elapsed_seconds()}});
      loss_sum = 0.0;
      loss_n = 0;
    }
    if (eval_every > 0 && done % eval_every == 0 && done != spec.steps && spec.eval_fn) {
      auto m = spec.eval_fn(done, false);
      metrics.write({{"step", done}, {"eval", m}});
      eval_note = spec.eval_text ? spec.eval_text(m) : "";
      progress.log() << spec.kind << " eval at step " << done << ": " << m.dump() << std::endl;
    }
    const bool out_of_time =
        opts.max_minutes > 0 && progress.elapsed_seconds() > opts.max_minutes * 60.0;
    stopped = done != spec.steps && ((opts.stop_at > 0 && done >= opts.stop_at) || out_of_time);
    if (stopped || done == spec.steps || (ckpt_every > 0 && done % ckpt_every == 0)) save(done);
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

// ---- data ---------------------------------------------------------------------------------------

std::vector<int64_t> split_rows(const io::Dataset& d, io::Split s, const std::string& where) {
  auto rows = d.indices(s);
  if (rows.empty()) {
    throw Error(where + ": the dataset has no " + io::split_name(s) + " images");
  }
  return rows;
}

at::Tensor images_to_float(const io::Dataset& d, const std::vector<int64_t>& rows,
                           at::Device device) {
  // Bytes travel to the device (4x less than floats), then convert there.
  return d.images.index_select(0, row_tensor(rows))
      .to(device)
      .permute({0, 3, 1, 2})
      .to(at::kFloat)
      .div_(127.5)
      .sub_(1.0)
      .contiguous();
}

at::Tensor row_tensor(const std::vector<int64_t>& rows, at::Device device) {
  return at::tensor(rows, at::TensorOptions().dtype(at::kLong)).to(device);
}

at::Device train_device(const TrainOptions& opts) {
  check_matmul_choice(opts.matmul);
  const auto device = model::parse_device(opts.device);
  if (device.is_cuda()) {
    // "high" lets cuBLAS use TF32 tensor cores for fp32 products; "highest" keeps full fp32.
    at::globalContext().setFloat32MatmulPrecision(opts.matmul == "tf32" ? "high" : "highest");
  }
  return device;
}

std::string run_file(const std::string& out_dir, const std::string& name) {
  return (fs::path(out_dir) / name).string();
}

void write_json_file(const std::string& path, const json& j) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    if (!out) throw Error(path + ": cannot write");
    out << j.dump(2) << "\n";
    if (!out) throw Error(path + ": write failed");
  }
  fs::rename(tmp, path);
}

json read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot open");
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    throw Error(path + ": invalid JSON (" + std::string(e.what()) + ")");
  }
}

}  // namespace adtree::train
