#include "engine/engine.h"

#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <deque>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>

#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "decode/run.h"
#include "decode/settings/method_table.h"
#include "engine/continuous_jobs.h"
#include "engine/license_summary.h"
#include "engine/mar_jobs.h"
#include "engine/preview_schedule.h"
#include "engine/token_palette.h"
#include "model/model_dir.h"
#include "model/random_model.h"
#include "util/clock.h"
#include "util/error.h"

namespace adtree::engine {

JobId job_of(const Event& e) {
  return std::visit(
      [](const auto& ev) -> JobId {
        using T = std::decay_t<decltype(ev)>;
        if constexpr (std::is_same_v<T, LoadProgress> || std::is_same_v<T, ModelLoaded> ||
                      std::is_same_v<T, LoadFailed> || std::is_same_v<T, TokenColors>) {
          return 0;
        } else {
          return ev.job;
        }
      },
      e);
}

bool is_terminal(const Event& e) {
  return std::holds_alternative<JobFinished>(e) || std::holds_alternative<JobFailed>(e) ||
         std::holds_alternative<JobCancelled>(e);
}

namespace {

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}

struct Task {
  bool is_load = false;
  LoadRequest load;
  JobId id = 0;
  GenerateJob job;
  std::shared_ptr<std::atomic<bool>> cancel;
};

ModelInfo describe(const model::ModelBundle& m, const LoadRequest& req) {
  ModelInfo info;
  info.dir = m.dir;
  info.name = m.manifest.name;
  info.hash = m.hash;
  info.kind = m.manifest.kind;
  info.description = m.manifest.description;
  info.device = m.gpt->device().str();
  info.dtype = req.dtype;
  const auto& g = m.gpt_config;
  info.grid_h = g.grid_h;
  info.grid_w = g.grid_w;
  const int64_t f = m.vq ? m.vq_config.downsample_factor() : 0;
  info.image_h = g.grid_h * f;
  info.image_w = g.grid_w * f;
  info.codebook_size = g.vocab_size;
  for (const auto& kv : m.gpt->weights()) info.gpt_params += kv.second.numel();
  info.gpt_shape = std::to_string(g.dim) + " x " + std::to_string(g.n_layer) + " (" +
                   std::to_string(g.n_head) + " heads)";
  info.has_drafter = !m.drafter_weights.empty();
  info.packed_from_cache = m.pack_cache_hit;
  info.cache_warning = m.pack_cache_warning;
  const auto& prov = m.manifest.provenance;
  info.random_weights =
      prov.is_object() && prov.value("tool", std::string()) == "adtree model random";
  info.vocabulary_is_classes = m.vocab.kind() == model::Vocabulary::Kind::Classes;
  info.prompt_is_file = g.cond == model::CondKind::Caption && g.num_words == 0;
  if (m.text_encoder) info.text_encoder = m.text_encoder->dir();
  info.vocabulary_size = info.prompt_is_file ? 0 : m.vocab.size();
  info.vocabulary = info.vocabulary_is_classes ? m.vocab.class_prompts() : m.vocab.entries();
  try {
    info.default_sampling = decode::SamplingParams::of_model(m.manifest.sampling);
  } catch (const Error&) {
    // A manifest with odd sampling keys still loads; the built-in defaults apply.
  }
  info.license = license_summary(m.manifest.license);
  return info;
}

RgbImage to_rgb(const at::Tensor& bytes_hw3) {
  auto t = bytes_hw3.contiguous();
  RgbImage img;
  img.height = int(t.size(0));
  img.width = int(t.size(1));
  const auto* p = t.data_ptr<uint8_t>();
  img.pixels.assign(p, p + t.numel());
  return img;
}

// VQ decode of the raster prefix tokens[0..n): the engine's one place that turns tokens into
// pixels.
RgbImage decode_prefix(const model::ModelBundle& m, const std::vector<int64_t>& tokens, int64_t n) {
  if (!m.vq || n <= 0) return {};
  auto idx = at::tensor(std::vector<int64_t>(tokens.begin(), tokens.begin() + n),
                        at::TensorOptions().dtype(at::kLong))
                 .unsqueeze(0)
                 .to(m.gpt->device());
  const auto& g = m.gpt_config;
  return to_rgb(model::VqModel::to_bytes(model::decode_picture(m, idx, g.grid_h, g.grid_w))[0]);
}

// Decodes preview images on a thread of its own for the job running on the worker. The worker asks
// (request), and collects finished images at its next step (take), so it never waits for a decode
// and it alone emits events.
class PreviewWorker {
 public:
  PreviewWorker() : thread_([this] { loop(); }) {}
  ~PreviewWorker() { stop(); }

  void stop() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  // Starts decoding tokens (a raster prefix) unless a decode is in flight; false if busy.
  bool request(std::shared_ptr<const model::ModelBundle> m, JobId job,
               std::vector<int64_t> tokens) {
    std::lock_guard<std::mutex> lk(mu_);
    if (busy_ || stop_) return false;
    req_model_ = std::move(m);
    req_job_ = job;
    req_tokens_ = std::move(tokens);
    busy_ = true;
    cv_.notify_all();
    return true;
  }
  // A finished preview for `job`, if one is ready.
  std::optional<JobPreview> take(JobId job) {
    std::lock_guard<std::mutex> lk(mu_);
    if (!result_ || result_->job != job) return std::nullopt;
    auto r = std::move(result_);
    result_.reset();
    return r;
  }
  // How long the last preview decode took (ms); `estimate_ms` before the first one of a model.
  double last_cost_ms() {
    std::lock_guard<std::mutex> lk(mu_);
    return last_cost_ms_;
  }
  // A newly loaded model: the cost of its previews as the load measured it.
  void set_cost_estimate(double estimate_ms) {
    std::lock_guard<std::mutex> lk(mu_);
    last_cost_ms_ = estimate_ms;
  }
  // Waits for a decode in flight (at most one preview's time) and drops its result: a job ends.
  void settle() {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [&] { return !busy_; });
    result_.reset();
  }

 private:
  void loop() {
    at::init_num_threads();  // like the worker: the process's thread policy, not OpenMP's default
#ifdef __linux__
    // Previews are best effort: on a machine with few cores the decoding thread and the GUI thread
    // come first. Nice 5 (about a third of a nice-0 thread's share) rather than more: at nice 10
    // other processes starved the previews on a busy 2-core machine (docs/GUI.md). Linux applies
    // a thread's own nice value to it alone.
    setpriority(PRIO_PROCESS, id_t(syscall(SYS_gettid)), 5);
#endif
    for (;;) {
      std::shared_ptr<const model::ModelBundle> m;
      std::vector<int64_t> tokens;
      JobId job = 0;
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return stop_ || req_model_ != nullptr; });
        if (stop_) return;
        m = std::move(req_model_);
        tokens = std::move(req_tokens_);
        job = req_job_;
      }
      std::optional<JobPreview> p;
      try {
        c10::InferenceMode guard;
        const auto t0 = Clock::now();
        auto img = decode_prefix(*m, tokens, int64_t(tokens.size()));
        p = JobPreview{job, std::move(img), int64_t(tokens.size()), false, ms_since(t0), {}};
      } catch (const std::exception& e) {
        // A preview is a convenience: a failure is logged and the run goes on.
        std::fprintf(stderr, "adtree engine: preview failed: %s\n", e.what());
      }
      m.reset();
      {
        std::lock_guard<std::mutex> lk(mu_);
        if (p && !p->image.empty()) {
          last_cost_ms_ = p->decode_ms;
          result_ = std::move(p);
        }
        busy_ = false;
      }
      cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false, busy_ = false;
  double last_cost_ms_ = 0;
  std::shared_ptr<const model::ModelBundle> req_model_;
  JobId req_job_ = 0;
  std::vector<int64_t> req_tokens_;
  std::optional<JobPreview> result_;
  std::thread thread_;
};

}  // namespace

struct Engine::Impl {
  Listener listener;
  EngineOptions opts;

  mutable std::mutex mu;
  std::condition_variable cv;
  std::deque<Task> queue;
  bool stopping = false;
  bool running = false;  // the worker is inside a task
  JobId next_id = 1;
  JobId current_job = 0;
  std::shared_ptr<std::atomic<bool>> current_cancel;
  std::thread worker;
  std::unique_ptr<PreviewWorker> previews;

  // Worker-only state: nothing but the worker reads or writes it, so it needs no lock.
  std::shared_ptr<const model::ModelBundle> bundle;
  // A continuous-family model (engine/continuous_jobs.h) instead: one of the three is loaded.
  std::shared_ptr<const model::ContinuousBundle> continuous;
  std::shared_ptr<const model::MarBundle> mar;  // or a MAR model (engine/mar_jobs.h)
  LoadRequest bundle_request;
  std::optional<PaletteBuild> palette;  // the loaded model's token colours, built while idle

  void emit(Event e) {
    if (!listener) return;
    try {
      listener(std::move(e));
    } catch (const std::exception& ex) {
      std::fprintf(stderr, "adtree engine: listener threw: %s\n", ex.what());
    } catch (...) {
      std::fprintf(stderr, "adtree engine: listener threw\n");
    }
  }

  void loop() {
    // A std::thread starts with OpenMP's default thread count, not the process's choice
    // (util/threads.h); re-apply it so the worker runs like the CLI.
    at::init_num_threads();
    for (;;) {
      Task t;
      {
        std::unique_lock<std::mutex> lk(mu);
        cv.wait(lk, [&] { return stopping || !queue.empty() || palette; });
        if (queue.empty() && stopping) return;  // stopping and drained
        if (queue.empty()) {
          lk.unlock();
          palette_step();  // idle: one grid of the token colours
          continue;
        }
        t = std::move(queue.front());
        queue.pop_front();
        if (stopping && t.is_load) continue;  // nobody waits for a model any more
        running = true;
        current_job = t.is_load ? 0 : t.id;
        current_cancel = t.cancel;
      }
      if (t.is_load) {
        run_load(t.load);
      } else {
        run_job(t);
      }
      std::lock_guard<std::mutex> lk(mu);
      running = false;
      current_job = 0;
      current_cancel.reset();
    }
  }

  // One grid of the background palette; at the end it is cached and sent. A failure costs only
  // the colours (hatched cells until the previews).
  void palette_step() {
    try {
      c10::InferenceMode guard;
      palette->step();
      if (!palette->done()) return;
      write_cached_palette(palette->cache(), palette->colours());
      emit(TokenColors{palette->dir(), palette->colours()});
    } catch (const std::exception& e) {
      std::fprintf(stderr, "adtree engine: token colours failed: %s\n", e.what());
    }
    palette.reset();
  }

  void run_load(const LoadRequest& req) {
    const auto t0 = Clock::now();
    palette.reset();  // the previous model's colours are of no use any more
    try {
      c10::InferenceMode guard;
      if (!req.create_random.empty() &&
          !std::filesystem::exists(std::filesystem::path(req.dir) / "model.json")) {
        emit(LoadProgress{req.dir, "Creating a random " + req.create_random + " model", 0.05});
        auto g = model::GptConfig::preset(req.create_random);
        model::write_random_model(req.dir, g, model::small_vq_config(g.vocab_size, g.grid_h), 0,
                                  "random " + req.create_random);
      }
      emit(LoadProgress{req.dir, "Loading model weights", 0.1});
      if (model::is_mar_dir(req.dir)) {
        if (req.device != "cpu") throw Error(req.dir + ": MAR models run on the CPU only for now");
        auto mm =
            std::make_shared<const model::MarBundle>(model::load_mar_dir(req.dir, true, req.dtype));
        auto info = describe_mar(*mm, req.dtype);
        mar = std::move(mm);
        continuous.reset();
        bundle.reset();
        bundle_request = req;
        emit(ModelLoaded{std::move(info), ms_since(t0)});
        return;
      }
      if (model::is_continuous_dir(req.dir)) {
        if (req.device != "cpu") throw Error(req.dir + ": continuous models run on the CPU only");
        auto cm =
            std::make_shared<const model::ContinuousBundle>(model::load_continuous_dir(req.dir));
        auto info = describe_continuous(*cm, req.dtype);
        continuous = std::move(cm);
        mar.reset();
        bundle.reset();
        bundle_request = req;
        emit(ModelLoaded{std::move(info), ms_since(t0)});
        return;
      }
      model::LoadOptions lo;
      lo.device = req.device;
      lo.dtype = req.dtype;
      lo.vq_dtype = req.vq_dtype;
      lo.cache_root = opts.cache_root;
      lo.text_encoder = req.text_encoder;
      auto m = std::make_shared<model::ModelBundle>(model::load_model_dir(req.dir, lo));
      if (!m->vq) throw Error(req.dir + ": the model has no VQ decoder, so it cannot draw images");
      emit(LoadProgress{req.dir, "Computing token colours", 0.9});
      auto info = describe(*m, req);
      double ms_per_cell = 0;
      info.token_colors = token_palette(*m, opts.palette_budget_ms, &ms_per_cell);
      previews->set_cost_estimate(ms_per_cell * double(m->gpt_config.image_tokens()));
      if (info.token_colors.empty()) {
        // Too costly to decode now: from the cache, else built while the engine is idle.
        const auto cache = palette_cache_path(m->hash, opts.cache_root);
        info.token_colors = read_cached_palette(cache, m->vq_config.codebook_size);
        if (info.token_colors.empty() && opts.background_palette)
          palette.emplace(m, req.dir, cache);
      }
      bundle = std::move(m);
      continuous.reset();
      mar.reset();
      bundle_request = req;
      emit(ModelLoaded{std::move(info), ms_since(t0)});
    } catch (const std::exception& e) {
      emit(LoadFailed{req.dir, e.what()});
    } catch (...) {
      emit(LoadFailed{req.dir, "unknown error while loading the model"});
    }
  }

  void run_job(const Task& t) {
    if (t.cancel->load()) {
      emit(JobCancelled{t.id, 0});
      return;
    }
    if (mar) {
      const auto mm = mar;  // alive for the job whatever happens to `mar`
      run_mar_job(*mm, t.id, t.job.prompt, t.job.request, t.cancel.get(),
                  {opts.previews, opts.preview_interval_ms},
                  [this](Event e) { emit(std::move(e)); });
      return;
    }
    if (continuous) {
      const auto cm = continuous;  // alive for the job whatever happens to `continuous`
      run_continuous_job(*cm, t.id, t.job.prompt, t.job.request, t.cancel.get(),
                         {opts.previews, opts.preview_interval_ms},
                         [this](Event e) { emit(std::move(e)); });
      return;
    }
    if (!bundle) {
      emit(JobFailed{t.id, "No model is loaded: open a model directory first."});
      return;
    }
    const auto m = bundle;  // keeps the model alive for the job whatever happens to `bundle`
    const auto t0 = Clock::now();
    try {
      c10::InferenceMode guard;
      const auto& g = m->gpt_config;
      const auto& req = t.job.request;
      // Input errors are reported before Started: the job never ran.
      model::LoadOptions where;
      where.device = bundle_request.device;
      where.dtype = bundle_request.dtype;
      auto run = decode::prepare_run(*m, req, t.job.prompt, where);
      const auto cond = decode::prepare_condition(*m, run);

      const int64_t f = m->vq_config.downsample_factor();
      emit(JobStarted{t.id, t.job.prompt, decode::to_string(req.method.method), req.seed, g.grid_h,
                      g.grid_w, g.image_tokens(), g.grid_h * f, g.grid_w * f});
      double decode_cpu_ms = 0;
      auto res = decode_with_steps(t, m, cond, run, t0, &decode_cpu_ms);
      if (res.cancelled) {
        emit_cancelled(t, *m, res);
        return;
      }
      emit_finished(t, *m, std::move(res), t0, decode_cpu_ms);
    } catch (const std::exception& e) {
      emit(JobFailed{t.id, e.what()});
    } catch (...) {
      emit(JobFailed{t.id, "unknown error during generation"});
    }
  }

  // The decoding run, a JobStep per step and, with previews on, the committed raster prefix
  // decoded now and then; `cpu_ms` receives the decoding thread's CPU time. No preview is in
  // flight when it returns or throws.
  decode::DecodeResult decode_with_steps(const Task& t,
                                         const std::shared_ptr<const model::ModelBundle>& m,
                                         const model::Condition& cond,
                                         const decode::RunSettings& run, Clock::time_point t0,
                                         double* cpu_ms) {
    const auto& g = m->gpt_config;
    // The committed cells so far (-1 = open) and their raster prefix, which previews decode:
    // PJD commits on several rows at once.
    std::vector<int64_t> grid(size_t(g.image_tokens()), -1);
    std::vector<int64_t> tokens;
    tokens.reserve(size_t(g.image_tokens()));
    // engine/preview_schedule.h: the first preview waits for a costly decoder.
    const auto after_ms = [](double ms) { return std::chrono::microseconds(int64_t(ms * 1000)); };
    auto next_preview = Clock::now() + after_ms(first_preview_delay_ms(opts.preview_interval_ms,
                                                                       previews->last_cost_ms()));
    auto on_step = [&](const decode::StepEvent& ev) {
      for (size_t i = 0; i < ev.tokens.size(); ++i) {
        const int64_t c = ev.record.cell(i);
        if (c >= 0 && c < int64_t(grid.size())) grid[size_t(c)] = ev.tokens[i];
      }
      while (tokens.size() < grid.size() && grid[tokens.size()] >= 0)
        tokens.push_back(grid[tokens.size()]);
      emit(JobStep{t.id,
                   ev.record,
                   ev.tokens,
                   ev.cells,
                   ms_since(t0),
                   ev.trace ? std::make_shared<const decode::StepTrace>(*ev.trace) : nullptr,
                   {}});
      if (!opts.previews) return;
      if (auto p = previews->take(t.id)) emit(std::move(*p));
      if (int64_t(tokens.size()) >= g.image_tokens() || Clock::now() < next_preview) return;
      if (previews->request(m, t.id, tokens)) {
        next_preview = Clock::now() +
                       after_ms(preview_gap_ms(opts.preview_interval_ms, previews->last_cost_ms()));
      }
    };
    decode::DecodeResult res;
    const double cpu0 = thread_cpu_ms();
    try {
      res = decode::run_decode(*m, cond, run, on_step, t.cancel.get());
    } catch (...) {
      previews->settle();
      throw;
    }
    *cpu_ms = thread_cpu_ms() - cpu0;
    previews->settle();  // a preview still in flight would only show an older prefix
    return res;
  }

  // A cancelled run: show where it stopped, unless the whole engine is going away.
  void emit_cancelled(const Task& t, const model::ModelBundle& m, const decode::DecodeResult& res) {
    bool stopping_now = false;
    {
      std::lock_guard<std::mutex> lk(mu);
      stopping_now = stopping;
    }
    if (opts.previews && !stopping_now && !res.tokens.empty()) {
      const auto p0 = Clock::now();
      auto img = decode_prefix(m, res.tokens, int64_t(res.tokens.size()));
      emit(JobPreview{t.id, std::move(img), int64_t(res.tokens.size()), true, ms_since(p0), {}});
    }
    emit(JobCancelled{t.id, int64_t(res.tokens.size())});
  }

  // A finished run: its picture (as the last preview too) and its statistics.
  void emit_finished(const Task& t, const model::ModelBundle& m, decode::DecodeResult res,
                     Clock::time_point t0, double decode_cpu_ms) {
    const auto p0 = Clock::now();
    auto img = decode_prefix(m, res.tokens, int64_t(res.tokens.size()));
    if (opts.previews)
      emit(JobPreview{t.id, img, int64_t(res.tokens.size()), true, ms_since(p0), {}});
    const auto summary = res.stats.summary;
    emit(JobFinished{t.id,
                     summary,
                     std::make_shared<const decode::RunStats>(std::move(res.stats)),
                     std::move(res.tokens),
                     std::move(img),
                     ms_since(t0),
                     decode_cpu_ms,
                     {}});
  }
};

Engine::Engine(Listener listener, EngineOptions opts) : impl_(std::make_unique<Impl>()) {
  impl_->listener = std::move(listener);
  impl_->opts = opts;
  impl_->previews = std::make_unique<PreviewWorker>();
  impl_->worker = std::thread([this] { impl_->loop(); });
}

Engine::~Engine() {
  shutdown();
}

void Engine::load_model(LoadRequest request) {
  std::lock_guard<std::mutex> lk(impl_->mu);
  if (impl_->stopping) return;
  Task t;
  t.is_load = true;
  t.load = std::move(request);
  impl_->queue.push_back(std::move(t));
  impl_->cv.notify_one();
}

JobId Engine::submit(GenerateJob job) {
  std::lock_guard<std::mutex> lk(impl_->mu);
  if (impl_->stopping) return 0;
  Task t;
  t.id = impl_->next_id++;
  t.job = std::move(job);
  t.cancel = std::make_shared<std::atomic<bool>>(false);
  const JobId id = t.id;
  impl_->queue.push_back(std::move(t));
  impl_->cv.notify_one();
  return id;
}

bool Engine::cancel(JobId id) {
  std::lock_guard<std::mutex> lk(impl_->mu);
  if (id != 0 && impl_->current_job == id && impl_->current_cancel) {
    impl_->current_cancel->store(true);
    return true;
  }
  for (auto& t : impl_->queue) {
    // The worker reports the cancellation when it reaches the job, so every event still comes from
    // one thread in one order.
    if (!t.is_load && t.id == id) {
      t.cancel->store(true);
      return true;
    }
  }
  return false;
}

void Engine::shutdown() {
  {
    std::lock_guard<std::mutex> lk(impl_->mu);
    if (impl_->worker.get_id() == std::this_thread::get_id()) {
      throw Error("Engine::shutdown() called from the engine's own listener");
    }
    impl_->stopping = true;
    if (impl_->current_cancel) impl_->current_cancel->store(true);
    for (auto& t : impl_->queue) {
      if (!t.is_load) t.cancel->store(true);
    }
    impl_->cv.notify_one();
  }
  if (impl_->worker.joinable()) impl_->worker.join();
  impl_->previews->stop();
}

std::vector<std::string> Engine::available_devices() {
  std::vector<std::string> d{"cpu"};
  if (at::hasCUDA()) d.push_back("cuda");
  return d;
}

}  // namespace adtree::engine
