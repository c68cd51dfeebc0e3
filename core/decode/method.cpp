#include "decode/method.h"

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
  auto bad = [](const std::string& m) { throw Error("invalid method setting: " + m); };
  // Only the settings the chosen method reads are checked: a GUI keeps every group's values.
  if (method == Method::Static && static_tree.preset != "eagle25" &&
      static_tree.preset != "eagle57") {
    bad("unknown static tree '" + static_tree.preset + "' (eagle25 or eagle57)");
  }
  const auto& d = dynamic_tree;
  if (method == Method::Dynamic) {
    // 64 rounds is far deeper than any tree worth verifying; the bound keeps the node count below
    // from overflowing (reliability.md, Fuzzing).
    if (d.depth < 1 || d.depth > 64) bad("dynamic tree depth D must be >= 1 and at most 64");
    if (d.width < 1 || d.width > vocab_size) {
      bad("tree width K must be in 1.." + std::to_string(vocab_size) + " (the vocabulary)");
    }
    const int64_t max_nodes = d.width + d.depth * d.width * d.width;
    if (d.budget < 0 || d.budget > max_nodes) {
      bad("budget N = " + std::to_string(d.budget) + " is larger than the tree can hold (" +
          std::to_string(max_nodes) + " nodes for D = " + std::to_string(d.depth) +
          ", K = " + std::to_string(d.width) + "); 0 = auto");
    }
  }
  const auto& a = adt;
  if (method == Method::Adt) {
    if (a.d_min < 1 || a.d_min > a.d_max || a.d_max > 64)
      bad("ADT depth bounds need 1 <= d_min <= d_max <= 64");
    if (a.k_min < 1 || a.k_min > a.k_max) bad("ADT width bounds need 1 <= k_min <= k_max");
    if (a.k_max > vocab_size) bad("ADT k_max exceeds the vocabulary");
    if (a.d0 < a.d_min || a.d0 > a.d_max) bad("ADT d0 must lie in [d_min, d_max]");
    if (a.k0 < a.k_min || a.k0 > a.k_max) bad("ADT k0 must lie in [k_min, k_max]");
    if (!(a.beta >= 0 && a.beta <= 1)) bad("ADT beta must be in [0, 1]");
    if (!(a.leftover >= 0 && a.leftover <= 1)) bad("ADT leftover must be in [0, 1]");
    if (a.step_d < 1 || a.step_k < 1) bad("ADT step sizes must be >= 1");
    const int64_t max_nodes = a.k_max + (a.d_max - 1) * a.k_max * a.k_max;
    if (d.budget < 0 || d.budget > max_nodes) {
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
  validate_verify();
  const auto& l = lantern;
  if (acceptance == Acceptance::Lantern) {
    if (l.k < 1 || l.k >= vocab_size)
      bad("LANTERN k must be in 1.." + std::to_string(vocab_size - 1));
    if (!(l.delta >= 0 && l.delta <= 1)) bad("LANTERN delta must be in [0, 1]");
    if (!(l.lambda > 1)) bad("LANTERN lambda must be > 1");
  }
  const auto& c = cascade;
  if (acceptance == Acceptance::Cascade) {
    if (!is_tree(method))
      bad("CASCADE relaxes the acceptance of draft trees (static, dynamic, adt), not of " +
          to_string(method));
    // A cosine lies in [-1, 1]; a threshold above 1 switches its half of the bonus off.
    if (!std::isfinite(c.tau_s) || !std::isfinite(c.tau_c))
      bad("CASCADE tau_s and tau_c must be numbers (cosines; above 1 = off)");
    if (!(c.kappa >= 0) || !std::isfinite(c.kappa)) bad("CASCADE kappa must be a number >= 0");
  }
  const auto& j = jacobi;
  if (is_jacobi(method)) {
    const std::string last = std::to_string(image_tokens - 1);
    if ((method == Method::Sjd || method == Method::SjdPac) &&
        (j.window < 1 || j.window >= image_tokens))
      bad("Jacobi window L must be in 1.." + last + ", got " + std::to_string(j.window));
    if (method == Method::PathSpec) {
      // 64 chains keep the verification block (K x length + 1 rows) within reason.
      if (j.paths < 1 || j.paths > 64)
        bad("PathSpec paths K must be in 1..64, got " + std::to_string(j.paths));
      if (j.path_length < 1 || j.path_length >= image_tokens)
        bad("PathSpec path length must be in 1.." + last + ", got " +
            std::to_string(j.path_length));
      if (!(j.path_relax >= 0) || !std::isfinite(j.path_relax))
        bad("PathRelax lambda must be a number >= 0 (0 = off)");
    }
    if (method == Method::SjdPac) {
      // 16^3 tree nodes stay within kMaxDraftRows; more candidates than codes cannot be distinct.
      if (j.pac_width < 1 || j.pac_width > 16 || j.pac_width >= vocab_size)
        bad("SJD-PAC width K must be in 1..16 (and below the codebook size), got " +
            std::to_string(j.pac_width));
      if (j.pac_levels < 0 || j.pac_levels > 3)
        bad("SJD-PAC tree levels must be in 0..3, got " + std::to_string(j.pac_levels));
    }
    if (method == Method::Pjd) {
      const auto& p = pjd;
      if (acceptance != Acceptance::Lossless)
        bad("PJD's relaxation is its rows below the leading row; LANTERN and CASCADE do not "
            "apply to it");
      if (p.window < 1 || p.window > 64)
        bad("PJD window must be in 1..64, got " + std::to_string(p.window));
      if (p.row_offset < 1) bad("PJD row offset must be >= 1, got " + std::to_string(p.row_offset));
      if (p.max_rows < 0 || p.max_rows > 64)
        bad("PJD max rows must be in 0..64 (0 = no limit), got " + std::to_string(p.max_rows));
    }
    if (j.start_margin < 0 || j.stop_margin < 0) bad("Jacobi start/stop margins must be >= 0");
    // Each below image_tokens first, so that the sum cannot overflow (reliability.md, Fuzzing).
    if (j.start_margin >= image_tokens || j.stop_margin >= image_tokens ||
        j.start_margin + j.stop_margin >= image_tokens)
      bad("Jacobi start + stop margins must leave tokens to draft (< " +
          std::to_string(image_tokens) + ")");
  }
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

nlohmann::json MethodSettings::to_json() const {
  return {{"method", to_string(method)},
          {"static_tree", {{"preset", static_tree.preset}}},
          {"dynamic_tree",
           {{"depth", dynamic_tree.depth},
            {"width", dynamic_tree.width},
            {"budget", dynamic_tree.budget}}},
          {"adt",
           {{"d0", adt.d0},
            {"k0", adt.k0},
            {"d_min", adt.d_min},
            {"d_max", adt.d_max},
            {"k_min", adt.k_min},
            {"k_max", adt.k_max},
            {"beta", adt.beta},
            {"mode", to_string(adt.mode)},
            {"step_d", adt.step_d},
            {"step_k", adt.step_k},
            {"adjacency", to_string(adt.adjacency)},
            {"budget_rule", to_string(adt.budget_rule)},
            {"grid", adt.grid},
            {"leftover", adt.leftover},
            {"cost_curve", adt.cost_curve}}},
          {"acceptance", to_string(acceptance)},
          {"verify", to_string(verify)},
          {"lantern",
           {{"mode", lantern.mode == LanternMode::Delta ? "delta" : "lambda"},
            {"k", lantern.k},
            {"delta", lantern.delta},
            {"lambda", lantern.lambda}}},
          {"cascade",
           {{"tau_s", cascade.tau_s},
            {"tau_c", cascade.tau_c},
            {"kappa", cascade.kappa},
            {"siblings_only", cascade.siblings_only}}},
          {"jacobi",
           {{"window", jacobi.window},
            {"spatial_init", jacobi.spatial_init},
            {"paths", jacobi.paths},
            {"path_length", jacobi.path_length},
            {"path_relax", jacobi.path_relax},
            {"pac_width", jacobi.pac_width},
            {"pac_levels", jacobi.pac_levels},
            {"start_margin", jacobi.start_margin},
            {"stop_margin", jacobi.stop_margin}}},
          {"pjd",
           {{"window", pjd.window},
            {"row_offset", pjd.row_offset},
            {"max_rows", pjd.max_rows},
            {"row_mask", pjd.row_mask},
            {"spatial_init", pjd.spatial_init}}},
          {"device_step", to_string(device_step)}};
}

void validate_settings(const MethodSettings& m, const SamplingParams& s, int64_t vocab_size,
                       int64_t image_tokens) {
  m.validate(vocab_size, image_tokens);
  s.validate(vocab_size);
}

MethodSettings MethodSettings::from_json(const nlohmann::json& j) {
  MethodSettings m;
  try {
    m.method = method_from_string(json_field(j, "method", to_string(m.method)));
    if (j.contains("static_tree"))
      m.static_tree.preset = json_field(j["static_tree"], "preset", m.static_tree.preset);
    if (j.contains("dynamic_tree")) {
      const auto& d = j["dynamic_tree"];
      m.dynamic_tree.depth = json_int(d, "depth", m.dynamic_tree.depth);
      m.dynamic_tree.width = json_int(d, "width", m.dynamic_tree.width);
      m.dynamic_tree.budget = json_int(d, "budget", m.dynamic_tree.budget);
    }
    if (j.contains("adt")) {
      const auto& a = j["adt"];
      auto& t = m.adt;
      t.d0 = json_int(a, "d0", t.d0), t.k0 = json_int(a, "k0", t.k0);
      t.d_min = json_int(a, "d_min", t.d_min), t.d_max = json_int(a, "d_max", t.d_max);
      t.k_min = json_int(a, "k_min", t.k_min), t.k_max = json_int(a, "k_max", t.k_max);
      t.beta = json_field(a, "beta", t.beta);
      t.mode = adt_mode_from_string(json_field(a, "mode", to_string(t.mode)));
      t.step_d = json_int(a, "step_d", t.step_d), t.step_k = json_int(a, "step_k", t.step_k);
      t.adjacency = adjacency_from_string(json_field(a, "adjacency", to_string(t.adjacency)));
      t.budget_rule =
          adt_budget_from_string(json_field(a, "budget_rule", to_string(t.budget_rule)));
      t.grid = json_field(a, "grid", t.grid);
      t.leftover = json_field(a, "leftover", t.leftover);
      t.cost_curve = json_field(a, "cost_curve", t.cost_curve);
    }
    m.verify = verify_rule_from_string(json_field(j, "verify", to_string(m.verify)));
    m.device_step = device_step_from_string(json_field(j, "device_step", to_string(m.device_step)));
    m.acceptance = acceptance_from_string(json_field(j, "acceptance", std::string("lossless")));
    if (j.contains("lantern")) {
      const auto& l = j["lantern"];
      const auto mode = json_field(l, "mode", std::string("delta"));
      if (mode != "delta" && mode != "lambda") throw Error("LANTERN mode must be delta or lambda");
      m.lantern.mode = mode == "delta" ? LanternMode::Delta : LanternMode::Lambda;
      m.lantern.k = json_int(l, "k", m.lantern.k);
      m.lantern.delta = json_field(l, "delta", m.lantern.delta);
      m.lantern.lambda = json_field(l, "lambda", m.lantern.lambda);
    }
    if (j.contains("cascade")) {
      const auto& c = j["cascade"];
      m.cascade.tau_s = json_field(c, "tau_s", m.cascade.tau_s);
      m.cascade.tau_c = json_field(c, "tau_c", m.cascade.tau_c);
      m.cascade.kappa = json_field(c, "kappa", m.cascade.kappa);
      m.cascade.siblings_only = json_field(c, "siblings_only", m.cascade.siblings_only);
    }
    if (j.contains("jacobi")) {
      const auto& a = j["jacobi"];
      m.jacobi.window = json_int(a, "window", m.jacobi.window);
      m.jacobi.spatial_init = json_field(a, "spatial_init", m.jacobi.spatial_init);
      m.jacobi.paths = json_int(a, "paths", m.jacobi.paths);
      m.jacobi.path_length = json_int(a, "path_length", m.jacobi.path_length);
      m.jacobi.path_relax = json_field(a, "path_relax", m.jacobi.path_relax);
      m.jacobi.pac_width = json_int(a, "pac_width", m.jacobi.pac_width);
      m.jacobi.pac_levels = json_int(a, "pac_levels", m.jacobi.pac_levels);
      m.jacobi.start_margin = json_int(a, "start_margin", m.jacobi.start_margin);
      m.jacobi.stop_margin = json_int(a, "stop_margin", m.jacobi.stop_margin);
    }
    if (j.contains("pjd")) {
      const auto& a = j["pjd"];
      m.pjd.window = json_int(a, "window", m.pjd.window);
      m.pjd.row_offset = json_int(a, "row_offset", m.pjd.row_offset);
      m.pjd.max_rows = json_int(a, "max_rows", m.pjd.max_rows);
      m.pjd.row_mask = json_field(a, "row_mask", m.pjd.row_mask);
      m.pjd.spatial_init = json_field(a, "spatial_init", m.pjd.spatial_init);
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("invalid method settings: ") + e.what());
  } catch (const Error& e) {
    throw Error(std::string("invalid method settings: ") + e.what());
  }
  return m;
}

}  // namespace adtree::decode
