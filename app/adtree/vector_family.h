// What differs between the vector-token families for the CLI (adtree generate and bench on the
// continuous family or MAR): one overload each, so the commands are one template.
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "decode/continuous/continuous_decode.h"
#include "decode/mar/mar_decode.h"

namespace adtree::cli {

inline decode::DecodeRequest default_request(const model::ContinuousBundle& m,
                                             decode::Method method) {
  return decode::default_continuous_request(m, method);
}
inline decode::DecodeRequest default_request(const model::MarBundle& m, decode::Method method) {
  return decode::default_mar_request(m, method);
}
inline void check_request(const model::ContinuousBundle& m, const decode::DecodeRequest& r) {
  decode::check_continuous_request(m, r);
}
inline void check_request(const model::MarBundle& m, const decode::DecodeRequest& r) {
  decode::check_mar_request(m, r);
}
inline decode::ContinuousResult run_vectors(const model::ContinuousBundle& m,
                                            const std::string& prompt,
                                            const decode::DecodeRequest& r) {
  return decode::run_continuous(m, prompt, r);
}
inline decode::ContinuousResult run_vectors(const model::MarBundle& m, const std::string& prompt,
                                            const decode::DecodeRequest& r) {
  return decode::run_mar(m, prompt, r);
}
inline const char* family(const model::ContinuousBundle&) {
  return "continuous";
}
inline const char* family(const model::MarBundle&) {
  return "mar";
}

// Four prompts spread over what the model knows: words, or classes.
inline std::vector<std::string> sample_prompts(const model::ContinuousBundle& m) {
  std::vector<std::string> p;
  const auto& e = m.vocab.entries();
  for (size_t i = 0; i < 4 && i < e.size(); ++i) p.push_back(e[(i * 7 + 1) % e.size()]);
  return p;
}
inline std::vector<std::string> sample_prompts(const model::MarBundle& m) {
  std::vector<std::string> p;
  const int64_t n = m.classes.size();
  for (int64_t i = 0; i < 4 && i < n; ++i) p.push_back(std::to_string((i * 250 + 207) % n));
  return p;
}

// The shapes a bench records.
inline nlohmann::json shapes_json(const model::ContinuousBundle& m) {
  nlohmann::json j{{"target", m.target->config().to_json()}};
  if (m.has_draft()) j["draft"] = m.draft->config().to_json();
  return j;
}
inline nlohmann::json shapes_json(const model::MarBundle& m) {
  nlohmann::json j{{"target", m.target.backbone->config().to_json()}};
  if (m.has_draft()) j["draft"] = m.draft.backbone->config().to_json();
  return j;
}

}  // namespace adtree::cli
