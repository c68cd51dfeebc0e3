#include "decode/picture_settings.h"

namespace adtree::decode {

nlohmann::json picture_settings(const RunStats& stats, const std::string& app, double elapsed_ms) {
  const auto& s = stats.settings;
  const auto text = [&](const char* key) { return s.value(key, std::string()); };
  return {{"app", app},
          {"model",
           {{"name", text("model_name")}, {"dir", text("model")}, {"hash", text("model_hash")}}},
          {"prompt", text("prompt")},
          {"seed", s.value("seed", uint64_t(0))},
          {"method_settings", s.value("method_settings", nlohmann::json::object())},
          {"sampling", s.value("sampling", nlohmann::json::object())},
          {"verify", text("verify")},
          {"result",
           {{"label", stats.method},
            {"tau", stats.summary.tau},
            {"tokens", stats.summary.tokens},
            {"elapsed_ms", elapsed_ms}}}};
}

}  // namespace adtree::decode
