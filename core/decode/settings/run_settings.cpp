#include "decode/settings/run_settings.h"
#include "decode/settings/method_table.h"

#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/json_int.h"

namespace adtree::decode {

nlohmann::json RunSettings::to_json() const {
  nlohmann::json j = {{"method", to_string(method())},
                      {"method_settings", request.method.to_json()},
                      {"sampling", request.sampling.to_json()},
                      {"seed", request.seed},
                      {"prompt", prompt},
                      {"model", model_dir},
                      {"model_name", model_name},
                      {"model_hash", model_hash},
                      {"device", device},
                      {"dtype", dtype},
                      {"verify", verify},
                      {"budget", budget},
                      {"lantern", lantern},
                      {"relax", to_string(relax)},
                      {"lossless", lossless},
                      {"device_step", device_step},
                      {"fixed_shapes", fixed_shapes},
                      {"graphs", graphs}};
  if (threads > 0) j["threads"] = threads;
  if (!text_encoder.empty()) {
    j["text_encoder"] = text_encoder;
    j["text_encoder_hash"] = text_encoder_hash;
    j["prompt_tokens"] = prompt_tokens;
    j["prompt_truncated"] = prompt_truncated;
    j["prompt_encode_ms"] = prompt_encode_ms;
  }
  if (!ran_as_ar.empty()) j["ran_as_ar"] = ran_as_ar;
  if (ar_estimate_ms > 0) j["ar_estimate_ms"] = ar_estimate_ms;
  return j;
}

RunSettings RunSettings::from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw Error("the run's settings are not a JSON object");
  if (!j.contains("method")) throw Error("the run does not say which method made it");
  RunSettings s;
  auto& r = s.request;
  if (j.contains("method_settings")) r.method = MethodSettings::from_json(j["method_settings"]);
  // Files without method_settings (plain AR before it was recorded) name only the method.
  if (!j.contains("method_settings") && j.contains("method"))
    r.method.method = method_from_string(json_field(j, "method", std::string()));
  if (j.contains("sampling")) r.sampling = SamplingParams::from_json(j["sampling"], r.sampling);
  if (const auto it = j.find("seed"); it != j.end()) {
    // Strictly an unsigned integer: nlohmann would turn -5, 2.5 or a huge double into some seed.
    const bool ok = it->is_number_unsigned() || (it->is_number_integer() && *it >= 0);
    if (!ok) throw Error("the run's seed must be a non-negative integer");
    r.seed = it->get<uint64_t>();
  }
  s.prompt = json_field(j, "prompt", s.prompt);
  s.model_dir = json_field(j, "model", s.model_dir);
  s.model_name = json_field(j, "model_name", s.model_name);
  s.model_hash = json_field(j, "model_hash", s.model_hash);
  s.device = json_field(j, "device", s.device);
  s.dtype = json_field(j, "dtype", s.dtype);
  s.threads = json_int(j, "threads", s.threads);
  s.text_encoder = json_field(j, "text_encoder", s.text_encoder);
  s.text_encoder_hash = json_field(j, "text_encoder_hash", s.text_encoder_hash);
  s.prompt_tokens = json_int(j, "prompt_tokens", s.prompt_tokens);
  s.prompt_truncated = json_field(j, "prompt_truncated", s.prompt_truncated);
  s.prompt_encode_ms = json_field(j, "prompt_encode_ms", s.prompt_encode_ms);
  s.verify = json_field(j, "verify", s.verify);
  s.budget = json_int(j, "budget", s.budget);
  s.lantern = json_field(j, "lantern", s.lantern);
  s.relax = acceptance_from_string(json_field(j, "relax", to_string(s.relax)));
  // Older AR files said nothing: AR is lossless; other methods always wrote it.
  s.lossless = json_field(j, "lossless", s.method() == Method::Ar);
  s.device_step = json_field(j, "device_step", s.device_step);
  s.fixed_shapes = json_field(j, "fixed_shapes", s.fixed_shapes);
  s.graphs = json_int(j, "graphs", s.graphs);
  s.ran_as_ar = json_field(j, "ran_as_ar", s.ran_as_ar);
  s.ar_estimate_ms = json_field(j, "ar_estimate_ms", s.ar_estimate_ms);
  return s;
}

}  // namespace adtree::decode
