#include "decode/settings/method.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

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

std::string to_string(DraftHead h) {
  return h == DraftHead::Parallel ? "parallel" : "eagle";
}

DraftHead draft_head_from_string(const std::string& s) {
  if (s == "eagle") return DraftHead::Eagle;
  if (s == "parallel") return DraftHead::Parallel;
  throw Error("unknown draft head '" + s + "' (expected eagle or parallel)");
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

}  // namespace adtree::decode
