#include "engine/continuous_jobs.h"

#include <c10/core/InferenceMode.h>

#include "decode/continuous/continuous_decode.h"
#include "decode/settings/method_table.h"
#include "engine/license_summary.h"
#include "util/clock.h"
#include "util/error.h"

namespace adtree::engine {

namespace {

RgbImage continuous_picture(const model::ContinuousBundle& m, const std::vector<at::Tensor>& done) {
  if (done.empty()) return {};
  const auto bytes = m.picture(at::cat(done, 0)).contiguous();
  RgbImage img;
  img.height = int(bytes.size(0));
  img.width = int(bytes.size(1));
  img.pixels.assign(bytes.data_ptr<uint8_t>(), bytes.data_ptr<uint8_t>() + bytes.numel());
  return img;
}

std::vector<float> continuous_floats(const at::Tensor& t) {
  const auto c = t.to(at::kFloat).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

decode::RunSettings continuous_run_settings(const model::ContinuousBundle& m,
                                            const std::string& prompt,
                                            const decode::DecodeRequest& request) {
  decode::RunSettings s;
  s.request = request;
  s.prompt = prompt;
  s.model_dir = m.dir;
  s.model_name = m.manifest.value("name", std::string());
  s.verify = "cspd";
  s.lossless = decode::is_lossless(request);
  return s;
}

}  // namespace

ModelInfo describe_continuous(const model::ContinuousBundle& m, const std::string& dtype) {
  ModelInfo info;
  info.dir = m.dir;
  info.name = m.manifest.value("name", std::string("continuous"));
  info.kind = "continuous";
  info.description = m.manifest.value("description", std::string());
  info.device = "cpu";
  info.dtype = dtype;
  const auto& g = m.target->config().backbone;
  info.grid_h = g.grid_h;
  info.grid_w = g.grid_w;
  const int64_t f = m.vae->config().downsample_factor();
  info.image_h = g.grid_h * f;
  info.image_w = g.grid_w * f;
  info.token_kind = "vectors";
  info.token_dim = m.target->config().token_dim();
  for (const auto& kv : m.target->backbone().weights()) info.gpt_params += kv.second.numel();
  info.gpt_shape = std::to_string(g.dim) + " x " + std::to_string(g.n_layer) + " (" +
                   std::to_string(g.n_head) + " heads), diffusion head " +
                   std::to_string(m.target->config().head.width) + " x " +
                   std::to_string(m.target->config().head.blocks);
  info.has_drafter = m.has_draft();
  info.vocabulary_size = m.vocab.size();
  info.vocabulary = m.vocab.entries();
  const auto r = decode::default_continuous_request(m, decode::Method::Cspd);
  info.default_sampling = r.sampling;
  info.default_cspd = r.method.cspd;
  info.license = license_summary(m.manifest.value("license", nlohmann::json()));
  info.vector_colours = m.token_colours;
  return info;
}

void run_continuous_job(const model::ContinuousBundle& m, JobId id, const std::string& prompt,
                        const decode::DecodeRequest& request, const std::atomic<bool>* cancel,
                        PreviewPolicy previews, const std::function<void(Event)>& emit) {
  const auto t0 = Clock::now();
  try {
    c10::InferenceMode guard;
    decode::check_continuous_request(m, request);
    const auto& g = m.target->config().backbone;
    const int64_t f = m.vae->config().downsample_factor();
    emit(JobStarted{id, prompt, decode::to_string(request.method.method), request.seed, g.grid_h,
                    g.grid_w, g.image_tokens(), g.grid_h * f, g.grid_w * f});
    std::vector<at::Tensor> done;
    auto next_preview = Clock::now();
    auto on_step = [&](const decode::StepEvent& ev, const at::Tensor& tokens) {
      done.push_back(tokens.reshape({-1, m.target->config().token_dim()}));
      emit(JobStep{id, ev.record, ev.tokens, ev.cells, ms_since(t0), nullptr,
                   continuous_floats(tokens)});
      // Previews on this thread, spaced so that decoding them costs at most a small share.
      if (!previews.enabled || Clock::now() < next_preview) return;
      const auto p0 = Clock::now();
      auto img = continuous_picture(m, done);
      const double cost = ms_since(p0);
      int64_t n = 0;
      for (const auto& d : done) n += d.size(0);
      emit(JobPreview{id, std::move(img), n, false, cost});
      next_preview = Clock::now() + std::chrono::microseconds(
                                        int64_t(1000 * std::max(previews.interval_ms, 6 * cost)));
    };
    auto res = decode::run_continuous(m, prompt, request, on_step, cancel);
    res.stats.settings = continuous_run_settings(m, prompt, request);
    res.stats.finish(ms_since(t0));
    auto img = continuous_picture(m, done);
    const int64_t n = res.tokens.size(0);
    if (previews.enabled) emit(JobPreview{id, img, n, true, 0.0});
    if (res.cancelled) {
      emit(JobCancelled{id, n});
      return;
    }
    const auto summary = res.stats.summary;
    emit(JobFinished{id, summary, std::make_shared<const decode::RunStats>(std::move(res.stats)),
                     std::vector<int64_t>(size_t(n), 0), std::move(img), ms_since(t0), 0.0,
                     continuous_floats(res.tokens)});
  } catch (const std::exception& e) {
    emit(JobFailed{id, e.what()});
  } catch (...) {
    emit(JobFailed{id, "unknown error during generation"});
  }
}

}  // namespace adtree::engine
