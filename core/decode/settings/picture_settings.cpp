#include "decode/settings/picture_settings.h"

#include "util/error.h"

namespace adtree::decode {

nlohmann::json picture_settings(const RunStats& stats, const std::string& app, double elapsed_ms) {
  const auto& s = stats.settings;
  return {{"app", app},
          {"model", {{"name", s.model_name}, {"dir", s.model_dir}, {"hash", s.model_hash}}},
          {"prompt", s.prompt},
          {"seed", s.request.seed},
          {"method_settings", s.request.method.to_json()},
          {"sampling", s.request.sampling.to_json()},
          {"verify", s.verify},
          {"result",
           {{"label", stats.method},
            {"tau", stats.summary.tau},
            {"tokens", stats.summary.tokens},
            {"elapsed_ms", elapsed_ms}}}};
}

void check_picture_settings(const nlohmann::json& j) {
  if (!j.is_object()) throw Error("settings are not a JSON object");
  using Json = nlohmann::json;
  auto need = [](const Json& o, const char* key, bool (*ok)(const Json&), const std::string& name,
                 const char* what) {
    const auto it = o.find(key);
    if (it != o.end() && !ok(*it)) throw Error("setting '" + name + "' must be " + what);
  };
  const auto string = [](const Json& v) { return v.is_string(); };
  const auto object = [](const Json& v) { return v.is_object(); };
  const auto seed = [](const Json& v) {
    return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
  };
  need(j, "prompt", string, "prompt", "a string");
  need(j, "seed", seed, "seed", "an integer >= 0");
  need(j, "method_settings", object, "method_settings", "an object");
  need(j, "sampling", object, "sampling", "an object");
  need(j, "model", object, "model", "an object");
  if (!j.contains("model")) return;
  need(j["model"], "dir", string, "model.dir", "a string");
  need(j["model"], "hash", string, "model.hash", "a string");
}

PictureSettings read_picture_settings(const nlohmann::json& j) {
  check_picture_settings(j);
  PictureSettings p;
  if (j.contains("method_settings"))
    p.request.method = MethodSettings::from_json(j["method_settings"]);
  if (j.contains("sampling"))
    p.request.sampling = SamplingParams::from_json(j["sampling"], p.request.sampling);
  p.request.seed = j.value("seed", uint64_t(0));
  p.prompt = j.value("prompt", std::string());
  if (j.contains("model")) {
    p.model_dir = j["model"].value("dir", std::string());
    p.model_hash = j["model"].value("hash", std::string());
  }
  return p;
}

}  // namespace adtree::decode
