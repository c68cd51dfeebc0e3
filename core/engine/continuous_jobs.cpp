#include "engine/continuous_jobs.h"

#include "decode/continuous/continuous_decode.h"
#include "decode/settings/method_table.h"
#include "engine/license_summary.h"

namespace adtree::engine {

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

VectorJobModel continuous_job_model(const model::ContinuousBundle& m) {
  VectorJobModel v;
  v.dir = m.dir;
  v.name = m.manifest.value("name", std::string());
  const auto& g = m.target->config().backbone;
  v.grid_h = g.grid_h;
  v.grid_w = g.grid_w;
  v.factor = m.vae->config().downsample_factor();
  v.token_dim = m.target->config().token_dim();
  v.raster = true;
  v.picture = [&m](const at::Tensor& tokens) { return m.picture(tokens); };
  v.check = [&m](const decode::DecodeRequest& r) { decode::check_continuous_request(m, r); };
  v.run = [&m](const std::string& prompt, const decode::DecodeRequest& r,
               const decode::ContinuousCallback& on_step, const std::atomic<bool>* cancel) {
    return decode::run_continuous(m, prompt, r, on_step, cancel);
  };
  return v;
}

void run_continuous_job(const model::ContinuousBundle& m, JobId id, const std::string& prompt,
                        const decode::DecodeRequest& request, const std::atomic<bool>* cancel,
                        PreviewPolicy previews, const std::function<void(Event)>& emit) {
  run_vector_job(continuous_job_model(m), id, prompt, request, cancel, previews, emit);
}

}  // namespace adtree::engine
