// The settings' JSON and range checks, read from the settings table (setting.h): MethodSettings
// and SamplingParams declare them, and every key, range and word comes from the table's entries.
// Kept beside the table rather than in method.cpp and sampling.cpp, which the table reads.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "decode/sampling.h"
#include "decode/settings/method.h"
#include "decode/settings/setting.h"
#include "util/error.h"

namespace adtree::decode {

void MethodSettings::validate(int64_t vocab_size, int64_t image_tokens) const {
  // Each setting the chosen method reads against its range in the table; the others are not
  // checked, since a GUI keeps every group's values.
  validate_verify();  // first: a rule that does not apply says so before its values are checked
  const ModelLimits limits{vocab_size, image_tokens};
  const DecodeRequest r{*this, {}, 0, {}};
  for (const auto& s : settings_table()) {
    if (s.scope == Scope::Method && s.read_by(*this)) s.check(s.get(r), limits);
  }
  validate_links(image_tokens);
}

namespace {
// Where a setting lives in a settings object: j["pjd"]["window"], or j["verify"] at the top.
const nlohmann::json* lookup(const nlohmann::json& j, const Setting& s) {
  const auto group = s.group();
  const nlohmann::json* obj = &j;
  if (!group.empty()) {
    const auto it = j.find(group);
    if (it == j.end()) return nullptr;
    if (!it->is_object()) throw Error("'" + group + "' must be an object");
    obj = &*it;
  }
  const auto it = obj->find(s.field());
  return it == obj->end() ? nullptr : &*it;
}
}  // namespace

nlohmann::json MethodSettings::to_json() const {
  const DecodeRequest r{*this, {}, 0, {}};
  nlohmann::json j = nlohmann::json::object();
  for (const auto& s : settings_table()) {
    if (s.scope != Scope::Method) continue;
    auto& slot = s.group().empty() ? j[s.key] : j[s.group()][s.field()];
    slot = s.to_json(s.get(r));
  }
  return j;
}

void validate_settings(const MethodSettings& m, const SamplingParams& s, int64_t vocab_size,
                       int64_t image_tokens) {
  m.validate(vocab_size, image_tokens);
  s.validate(vocab_size, image_tokens);
}

void check_token_kind(const SamplingParams& s, TokenKind kind) {
  const DecodeRequest given{{}, s, 0, {}}, defaults{};
  for (const auto& e : settings_table()) {
    if (e.scope != Scope::Sampling || e.read_on(kind)) continue;
    if (e.get(given) == e.get(defaults)) continue;
    throw Error("--" + e.flag + " is read by models whose tokens are " +
                (kind == TokenKind::Codes ? "vectors (the continuous family)" : "VQ codes") +
                "; this model's tokens are " + (kind == TokenKind::Codes ? "VQ codes" : "vectors"));
  }
}

MethodSettings MethodSettings::from_json(const nlohmann::json& j) {
  DecodeRequest r;
  try {
    if (!j.is_object()) throw Error("expected an object of method settings");
    for (const auto& s : settings_table()) {
      if (s.scope != Scope::Method) continue;
      if (const auto* v = lookup(j, s)) s.set(r, s.from_json(*v));
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("invalid method settings: ") + e.what());
  } catch (const Error& e) {
    throw Error(std::string("invalid method settings: ") + e.what());
  }
  return r.method;
}

void SamplingParams::validate(int64_t vocab_size, int64_t image_tokens) const {
  const DecodeRequest r{{}, *this, 0, {}};
  const ModelLimits limits{vocab_size, image_tokens};
  for (const auto& s : settings_table()) {
    if (s.scope == Scope::Sampling) s.check(s.get(r), limits);
  }
}

nlohmann::json SamplingParams::to_json() const {
  const DecodeRequest r{{}, *this, 0, {}};
  nlohmann::json j = nlohmann::json::object();
  for (const auto& s : settings_table()) {
    if (s.scope == Scope::Sampling) j[s.key] = s.to_json(s.get(r));
  }
  return j;
}

SamplingParams SamplingParams::from_json(const nlohmann::json& j, const SamplingParams& defaults) {
  DecodeRequest r;
  r.sampling = defaults;
  if (j.is_null()) return defaults;
  try {
    if (!j.is_object()) throw Error("expected a JSON object");
    for (auto it = j.begin(); it != j.end(); ++it) {
      const auto& table = settings_table();
      const auto found = std::find_if(table.begin(), table.end(), [&](const Setting& s) {
        return s.scope == Scope::Sampling && s.key == it.key();
      });
      // A typo must not pass silently.
      if (found == table.end()) throw Error("unknown sampling setting '" + it.key() + "'");
      found->set(r, found->from_json(*it));
    }
  } catch (const Error& e) {
    throw Error(std::string("invalid sampling settings: ") + e.what());
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("invalid sampling settings: ") + e.what());
  }
  return r.sampling;
}

SamplingParams SamplingParams::of_model(const nlohmann::json& model_sampling) {
  return from_json(model_sampling, SamplingParams{});
}

}  // namespace adtree::decode
