#include "decode/settings/method_table.h"

#include "decode/settings/method.h"
#include "util/error.h"

namespace adtree::decode {

namespace {

bool always(const DecodeRequest&) {
  return true;
}

// With one chain PathSpec is SJD. With several, keeping the chain that accepted most makes the
// choice depend on the later tests, which biases the committed tokens (docs/JACOBI.md has the
// numbers), unless every chain commits AR's tokens: greedy, or shared-noise coupling. PathRelax
// (which reads the other chains, so only with several) changes the target's p.
bool pathspec_lossless(const DecodeRequest& r) {
  const auto& j = r.method.jacobi;
  if (j.paths == 1) return true;
  const bool ar_tokens =
      r.sampling.greedy() || resolve_verify(r.method, r.sampling) == VerifyRule::Coupled;
  return j.path_relax <= 0 && ar_tokens;
}

// A row below the leading one commits before the rows above are final.
bool pjd_lossless(const DecodeRequest& r) {
  return r.method.pjd.max_rows == 1;
}

MethodRanges no_drafts(const MethodSettings&) {
  return {};
}

// CSpD's ratio compares the last denoising step's densities on aligned trajectories, not the
// tokens' marginals, which a diffusion head does not give: approximate by construction.
bool never(const DecodeRequest&) {
  return false;
}

MethodRanges cspd_ranges(const MethodSettings& m) {
  MethodRanges g;
  g.depth_max = double(m.cspd.gamma);
  g.accept_max = double(m.cspd.gamma + 1);
  return g;
}

MethodRanges static_ranges(const MethodSettings&) {
  MethodRanges g;
  g.depth_max = 5;  // both presets have depth 5
  g.accept_max = 6;
  return g;
}

MethodRanges dynamic_ranges(const MethodSettings& m) {
  MethodRanges g;
  const double d = double(m.dynamic_tree.depth + 1);
  g.depth_max = d;
  g.accept_max = d + 1;
  g.tree_d_min = g.tree_d_max = d;
  g.tree_k_min = g.tree_k_max = double(m.dynamic_tree.width);
  return g;
}

MethodRanges adt_ranges(const MethodSettings& m) {
  MethodRanges g;
  g.depth_max = double(m.adt.d_max);
  g.accept_max = double(m.adt.d_max + 1);
  g.tree_d_min = double(m.adt.d_min);
  g.tree_d_max = double(m.adt.d_max);
  g.tree_k_min = double(m.adt.k_min);
  g.tree_k_max = double(m.adt.k_max);
  return g;
}

// Depth = position in the window (SJD, SJD-PAC) or along the winning chain (PathSpec).
MethodRanges jacobi_ranges(const MethodSettings& m) {
  MethodRanges g;
  const auto n = m.method == Method::PathSpec ? m.jacobi.path_length : m.jacobi.window;
  g.depth_max = double(n);
  g.accept_max = double(n + 1);
  return g;
}

MethodRanges pjd_ranges(const MethodSettings& m) {
  MethodRanges g;
  g.depth_max = double(m.pjd.window - 1);     // position in the row's window (0 = the row's own)
  g.accept_max = 2.0 * double(m.pjd.window);  // tokens per step over all rows: grows with rows
  g.tree_d_min = g.tree_d_max = double(m.pjd.window - 1);
  g.tree_k_min = 1;  // active rows
  g.tree_k_max = m.pjd.max_rows > 0 ? double(m.pjd.max_rows) : 4.0;
  return g;
}

}  // namespace

const std::vector<MethodInfo>& method_table() {
  static const std::vector<MethodInfo> t{
      {Method::Ar, "ar", Family::Ar, false, "Autoregressive (AR)",
       "One target forward per token: the baseline, always available.", always, "", no_drafts, true,
       true},
      {Method::Static, "static", Family::Tree, true, "Static tree (EAGLE-1)",
       "A fixed draft tree from the EAGLE head, verified in one forward.", always, "",
       static_ranges},
      {Method::Dynamic, "dynamic", Family::Tree, true, "Dynamic tree (EAGLE-2)",
       "EAGLE-2: the draft tree grows where the head is confident.", always, "", dynamic_ranges},
      {Method::Adt, "adt", Family::Tree, true, "ADT-Tree",
       "Adjacency-adaptive dynamic draft tree: each tree's depth and width start from the "
       "neighbouring token's and adapt to how much was accepted.",
       always, "", adt_ranges},
      {Method::Sjd, "sjd", Family::Jacobi, false, "SJD (Jacobi)",
       "Speculative Jacobi decoding: training-free, no draft head.", always, "", jacobi_ranges},
      {Method::PathSpec, "pathspec", Family::Jacobi, false, "PathSpec (Jacobi)",
       "Several Jacobi chains in parallel; the longest accepted one wins. Lossless with coupled "
       "verification (the default); with more than one chain and another rule, or PathRelax on, "
       "it is lossy.",
       pathspec_lossless,
       "when it has more than one path and no shared-noise coupling (taking the longest accepted "
       "chain biases the samples), or with PathRelax on and more than one path (it changes the "
       "target distribution; docs/JACOBI.md)",
       jacobi_ranges},
      {Method::SjdPac, "sjd-pac", Family::Jacobi, false, "SJD-PAC (Jacobi)",
       "SJD with proactive drafting: a few candidates for the next cells, tried one after another "
       "in one forward, and drafts kept across steps. Training-free and lossless.",
       always, "", jacobi_ranges},
      {Method::Pjd, "pjd", Family::Jacobi, false, "PJD (parallel rows, lossy)",
       "Parallel Jacobi decoding: Jacobi windows on several image rows at once, a row starting "
       "once the row above is a few tokens ahead. Training-free; lossy, since a row below commits "
       "before the rows above are final (one row at a time is lossless).",
       pjd_lossless,
       "unless it runs one row at a time (--pjd-rows 1): a row below commits before the rows "
       "above it are final (docs/pjd.md)",
       pjd_ranges},
      {Method::Cspd, "cspd", Family::Continuous, true, "CSpD (continuous, approximate)",
       "Continuous speculative decoding for models whose tokens are vectors: a draft model "
       "proposes "
       "tokens from the same noises the target denoises with, and each stands with probability "
       "min(1, r); a refused one is replaced by a residual sample. Approximately lossless.",
       never,
       "always: its acceptance ratio compares the last denoising step's densities on aligned "
       "trajectories, not the tokens' own distributions (docs/design/SPEC_DECODING.md 6.5)",
       cspd_ranges, false, true},
  };
  return t;
}

const MethodInfo& method_info(Method m) {
  for (const auto& i : method_table()) {
    if (i.method == m) return i;
  }
  throw Error("unknown method id (internal error)");
}

std::string to_string(Method m) {
  return method_info(m).key;
}

Method method_from_string(const std::string& key) {
  std::string list;
  for (const auto& i : method_table()) {
    if (key == i.key) return i.method;
    list += (list.empty() ? "" : ", ") + std::string(i.key);
  }
  throw Error("unknown method '" + key + "' (known: " + list + ")");
}

bool is_tree(Method m) {
  return method_info(m).family == Family::Tree;
}

bool is_jacobi(Method m) {
  return method_info(m).family == Family::Jacobi;
}

bool runs_on(Method m, TokenKind kind) {
  const auto& i = method_info(m);
  return kind == TokenKind::Codes ? i.on_codes : i.on_vectors;
}

std::string to_string(TokenKind kind) {
  return kind == TokenKind::Codes ? "codes" : "vectors";
}

bool is_lossless(const DecodeRequest& r) {
  return r.method.acceptance == Acceptance::Lossless && method_info(r.method.method).lossless(r);
}

bool MethodSettings::needs_drafter() const {
  return method_info(method).needs_drafter;
}

// The verification rules against the methods (what each rule applies to), beside the rows.
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

void MethodSettings::validate_verify() const {
  auto bad = [](const std::string& m) { throw Error("invalid method setting: " + m); };
  const bool jacobi_method = is_jacobi(method);
  if (acceptance == Acceptance::Cascade && !is_tree(method))
    bad("CASCADE relaxes the acceptance of draft trees (static, dynamic, adt), not of " +
        to_string(method));
  if (method == Method::Cspd && (acceptance != Acceptance::Lossless || verify != VerifyRule::Auto))
    bad("CSpD has its own acceptance rule (the aligned trajectories' density ratio); --relax and "
        "--verify do not apply to it");
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

}  // namespace adtree::decode
