#include "decode/settings/method.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "decode/settings/setting.h"
#include "util/error.h"
#include "util/json_int.h"

namespace adtree::decode {

std::string to_string(AdtMode m) {
  return m == AdtMode::Bisect ? "bisect" : "step";
}

std::string to_string(Adjacency a) {
  switch (a) {
    case Adjacency::None:
      return "none";
    case Adjacency::Left:
      return "left";
    case Adjacency::Random:
      return "random";
    case Adjacency::Confidence:
      return "confidence";
    case Adjacency::LeftUp:
      return "left+up";
  }
  return "left";
}

std::string to_string(LanternMode m) {
  return m == LanternMode::Delta ? "delta" : "lambda";
}

LanternMode lantern_mode_from_string(const std::string& s) {
  if (s == "delta") return LanternMode::Delta;
  if (s == "lambda") return LanternMode::Lambda;
  throw Error("unknown LANTERN mode '" + s + "' (expected delta or lambda)");
}

std::string to_string(AdtBudget b) {
  return b == AdtBudget::Fixed ? "fixed" : b == AdtBudget::Shape ? "shape" : "cost";
}

AdtBudget adt_budget_from_string(const std::string& s) {
  if (s == "fixed") return AdtBudget::Fixed;
  if (s == "shape") return AdtBudget::Shape;
  if (s == "cost") return AdtBudget::Cost;
  throw Error("unknown ADT budget rule '" + s + "' (expected fixed, shape or cost)");
}

std::string to_string(VerifyRule r) {
  switch (r) {
    case VerifyRule::Auto:
      return "auto";
    case VerifyRule::Deterministic:
      return "deterministic";
    case VerifyRule::Sampled:
      return "sampled";
    case VerifyRule::Coupled:
      return "coupled";
    case VerifyRule::Maximal:
      return "maximal";
  }
  return "auto";
}

std::string to_string(Acceptance a) {
  switch (a) {
    case Acceptance::Lossless:
      return "lossless";
    case Acceptance::Lantern:
      return "lantern";
    case Acceptance::Cascade:
      return "cascade";
  }
  return "lossless";
}

Acceptance acceptance_from_string(const std::string& s) {
  for (auto a : {Acceptance::Lossless, Acceptance::Lantern, Acceptance::Cascade}) {
    if (to_string(a) == s) return a;
  }
  throw Error("unknown acceptance rule '" + s + "' (expected lossless, lantern or cascade)");
}

bool is_relaxed(Acceptance a) {
  return a != Acceptance::Lossless;
}

VerifyRule verify_rule_from_string(const std::string& s) {
  for (auto r : {VerifyRule::Auto, VerifyRule::Deterministic, VerifyRule::Sampled,
                 VerifyRule::Coupled, VerifyRule::Maximal}) {
    if (to_string(r) == s) return r;
  }
  throw Error("unknown verification rule '" + s +
              "' (expected auto, deterministic, sampled, coupled or maximal)");
}

VerifyRule resolve_verify(const MethodSettings& m, const SamplingParams& sampling) {
  const bool jacobi = is_jacobi(m.method);
  if (sampling.greedy()) return jacobi ? VerifyRule::Sampled : VerifyRule::Deterministic;
  if (m.verify != VerifyRule::Auto) return m.verify;
  // PJD's own rule: its followers gain more from independent redraws than from coupling, which
  // buys token identity only for the leading row (docs/pjd.md, sweep M).
  if (m.method == Method::Pjd) return VerifyRule::Sampled;
  // Shared noise commits coupled AR's tokens and accepts most (docs/PERFORMANCE.md); the relaxed
  // rules need a probability to relax, so with LANTERN or PathRelax the default is q-sampling.
  const bool relaxed = is_relaxed(m.acceptance) || (jacobi && m.jacobi.path_relax > 0);
  return relaxed ? VerifyRule::Sampled : VerifyRule::Coupled;
}

AdtMode adt_mode_from_string(const std::string& s) {
  if (s == "bisect") return AdtMode::Bisect;
  if (s == "step") return AdtMode::Step;
  throw Error("unknown ADT update mode '" + s + "' (expected bisect or step)");
}

Adjacency adjacency_from_string(const std::string& s) {
  if (s == "none") return Adjacency::None;
  if (s == "left") return Adjacency::Left;
  if (s == "left+up" || s == "left-up" || s == "leftup") return Adjacency::LeftUp;
  if (s == "random") return Adjacency::Random;
  if (s == "confidence") return Adjacency::Confidence;
  throw Error("unknown adjacency source '" + s +
              "' (expected left, left+up, none, random or confidence)");
}

void MethodSettings::validate(int64_t vocab_size, int64_t image_tokens) const {
  // Each setting the chosen method reads against its range in the table; the others are not
  // checked, since a GUI keeps every group's values.
  validate_verify();  // first: a rule that does not apply says so before its values are checked
  const ModelLimits limits{vocab_size, image_tokens};
  for (const auto& s : method_settings_table()) {
    if (s.read_by(*this)) s.check(s.get(*this), limits);
  }
  validate_links(image_tokens);
}

// The rules that tie settings to each other, which no single entry of the table can state.
void MethodSettings::validate_links(int64_t image_tokens) const {
  auto bad = [](const std::string& m) { throw Error("invalid method setting: " + m); };
  const auto& d = dynamic_tree;
  if (method == Method::Dynamic) {
    const int64_t max_nodes = d.width + d.depth * d.width * d.width;
    if (d.budget > max_nodes) {
      bad("budget N = " + std::to_string(d.budget) + " is larger than the tree can hold (" +
          std::to_string(max_nodes) + " nodes for D = " + std::to_string(d.depth) +
          ", K = " + std::to_string(d.width) + "); 0 = auto");
    }
  }
  const auto& a = adt;
  if (method == Method::Adt) {
    if (a.d_min > a.d_max) bad("ADT depth bounds need d_min <= d_max");
    if (a.k_min > a.k_max) bad("ADT width bounds need k_min <= k_max");
    if (a.d0 < a.d_min || a.d0 > a.d_max) bad("ADT d0 must lie in [d_min, d_max]");
    if (a.k0 < a.k_min || a.k0 > a.k_max) bad("ADT k0 must lie in [k_min, k_max]");
    const int64_t max_nodes = a.k_max + (a.d_max - 1) * a.k_max * a.k_max;
    if (d.budget > max_nodes) {
      bad("budget N = " + std::to_string(d.budget) + " is larger than an ADT tree can hold (" +
          std::to_string(max_nodes) + " nodes for d_max = " + std::to_string(a.d_max) +
          ", k_max = " + std::to_string(a.k_max) + "); 0 = auto");
    }
  }
  if (method == Method::Dynamic || method == Method::Adt) {
    // The draft head feeds each expansion round's frontier through its scratch rows; checked here
    // so that settings too large fail before a generation starts, not in the middle of one.
    const int64_t rows = max_expansion_rows(d.budget > 0 ? d.budget : kMaxAutoBudget);
    if (rows > kMaxDraftRows) {
      bad("these tree settings can draft " + std::to_string(rows) + " rows in one step (at most " +
          std::to_string(kMaxDraftRows) + "): lower the depth, the width or the budget");
    }
  }
  const auto& j = jacobi;
  const bool margins =
      method == Method::Sjd || method == Method::PathSpec || method == Method::SjdPac;
  // Each margin is below image_tokens (the table), so the sum cannot overflow.
  if (margins && j.start_margin + j.stop_margin >= image_tokens)
    bad("Jacobi start + stop margins must leave tokens to draft (< " +
        std::to_string(image_tokens) + ")");
}

int64_t MethodSettings::max_expansion_rows(int64_t budget) const {
  const bool is_adt = method == Method::Adt;
  int64_t levels = is_adt ? adt.d_max : dynamic_tree.depth + 1;
  const int64_t width = is_adt ? adt.k_max : dynamic_tree.width;
  if (budget > 0) levels = std::min(levels, budget);  // N nodes hold at most N levels
  return std::max<int64_t>(0, levels - 1) * width;    // each round feeds <= K frontier rows
}

void MethodSettings::validate_verify() const {
  auto bad = [](const std::string& m) { throw Error("invalid method setting: " + m); };
  const bool jacobi_method = is_jacobi(method);
  if (acceptance == Acceptance::Cascade && !is_tree(method))
    bad("CASCADE relaxes the acceptance of draft trees (static, dynamic, adt), not of " +
        to_string(method));
  if (method == Method::Pjd && acceptance != Acceptance::Lossless)
    bad("PJD's relaxation is its rows below the leading row; LANTERN and CASCADE do not apply to "
        "it");
  if (method != Method::Ar) {
    if (verify == VerifyRule::Maximal && method == Method::Pjd)
      bad("PJD verifies its rows sampled (the paper's rule) or coupled, not maximal");
    if (verify == VerifyRule::Maximal && !jacobi_method)
      bad("maximal coupling re-samples Jacobi drafts: it applies to sjd, pathspec and sjd-pac, "
          "not to trees");
    if (verify == VerifyRule::Deterministic && jacobi_method)
      bad("Jacobi drafts are samples: use sampled, coupled or maximal for " + to_string(method));
    if (verify == VerifyRule::Coupled && acceptance == Acceptance::Lantern)
      bad("LANTERN relaxes p(x) / q(x), which shared-noise coupling does not test: use --verify "
          "sampled or deterministic with --relax lantern");
    if (verify == VerifyRule::Coupled && acceptance == Acceptance::Cascade)
      bad("CASCADE lowers q(x) in the min(1, p / q) test, which shared-noise coupling does not "
          "use: use --verify sampled or deterministic with --relax cascade");
    if (verify == VerifyRule::Coupled && method == Method::PathSpec && jacobi.path_relax > 0)
      bad("PathRelax raises p(x) in the min(1, p/q) test, which shared-noise coupling does not "
          "use: "
          "use --verify sampled or maximal with --path-relax");
  }
}

std::string to_string(DeviceStep s) {
  return s == DeviceStep::On ? "on" : s == DeviceStep::Off ? "off" : "auto";
}

DeviceStep device_step_from_string(const std::string& s) {
  if (s == "auto") return DeviceStep::Auto;
  if (s == "on") return DeviceStep::On;
  if (s == "off") return DeviceStep::Off;
  throw Error("unknown device step '" + s + "' (auto, on or off)");
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
  nlohmann::json j = nlohmann::json::object();
  for (const auto& s : method_settings_table()) {
    auto& slot = s.group().empty() ? j[s.key] : j[s.group()][s.field()];
    slot = s.to_json(s.get(*this));
  }
  return j;
}

void validate_settings(const MethodSettings& m, const SamplingParams& s, int64_t vocab_size,
                       int64_t image_tokens) {
  m.validate(vocab_size, image_tokens);
  s.validate(vocab_size);
}

MethodSettings MethodSettings::from_json(const nlohmann::json& j) {
  MethodSettings m;
  try {
    if (!j.is_object()) throw Error("expected an object of method settings");
    for (const auto& s : method_settings_table()) {
      if (const auto* v = lookup(j, s)) s.set(m, s.from_json(*v));
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("invalid method settings: ") + e.what());
  } catch (const Error& e) {
    throw Error(std::string("invalid method settings: ") + e.what());
  }
  return m;
}

}  // namespace adtree::decode
