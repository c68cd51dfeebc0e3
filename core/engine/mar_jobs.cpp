#include "engine/mar_jobs.h"

#include "decode/mar/mar_decode.h"
#include "engine/license_summary.h"

namespace adtree::engine {

namespace {

int64_t mar_parameter_count(const model::MarConfig& c) {
  int64_t n = 0;
  auto specs = model::mar_backbone_param_specs(c);
  for (const auto& s : model::diffusion_head_param_specs(c.head())) specs.push_back(s);
  for (const auto& s : specs) {
    int64_t k = 1;
    for (auto d : s.shape) k *= d;
    n += k;
  }
  return n;
}

}  // namespace

ModelInfo describe_mar(const model::MarBundle& m, const std::string& dtype) {
  const auto& c = m.target.backbone->config();
  ModelInfo info;
  info.dir = m.dir;
  info.name = m.manifest.value("name", std::string("MAR"));
  info.kind = "mar";
  info.description = m.manifest.value("description", std::string());
  info.device = "cpu";
  info.dtype = dtype;
  info.grid_h = info.grid_w = c.grid;
  info.image_h = info.image_w = c.grid * m.vae->config().factor();
  info.token_kind = "vectors";
  info.token_dim = c.token_dim;
  info.gpt_params = mar_parameter_count(c);
  info.gpt_shape = "MAR encoder " + std::to_string(c.encoder_depth) + " + decoder " +
                   std::to_string(c.decoder_depth) + " x " + std::to_string(c.encoder_dim) + " (" +
                   std::to_string(c.encoder_heads) + " heads), diffusion head " +
                   std::to_string(c.head_width) + " x " + std::to_string(c.head_blocks);
  info.has_drafter = m.has_draft();
  info.random_weights = m.manifest.value("provenance", nlohmann::json::object())
                            .value("tool", std::string())
                            .find("random") != std::string::npos;
  info.vocabulary_is_classes = true;
  info.vocabulary_size = m.classes.size();
  info.vocabulary = m.classes.class_prompts();
  const auto r = decode::default_mar_request(m, decode::Method::Cspd);
  info.default_sampling = r.sampling;
  info.default_cspd = r.method.cspd;
  info.license = license_summary(m.manifest.value("license", nlohmann::json()));
  return info;
}

VectorJobModel mar_job_model(const model::MarBundle& m) {
  const auto& c = m.target.backbone->config();
  VectorJobModel v;
  v.dir = m.dir;
  v.name = m.manifest.value("name", std::string());
  v.grid_h = v.grid_w = c.grid;
  v.factor = m.vae->config().factor();
  v.token_dim = c.token_dim;
  v.raster = false;
  v.picture = [&m](const at::Tensor& tokens) { return m.picture(tokens); };
  v.check = [&m](const decode::DecodeRequest& r) { decode::check_mar_request(m, r); };
  v.run = [&m](const std::string& prompt, const decode::DecodeRequest& r,
               const decode::ContinuousCallback& on_step, const std::atomic<bool>* cancel) {
    return decode::run_mar(m, prompt, r, on_step, cancel);
  };
  return v;
}

void run_mar_job(const model::MarBundle& m, JobId id, const std::string& prompt,
                 const decode::DecodeRequest& request, const std::atomic<bool>* cancel,
                 PreviewPolicy previews, const std::function<void(Event)>& emit) {
  run_vector_job(mar_job_model(m), id, prompt, request, cancel, previews, emit);
}

}  // namespace adtree::engine
