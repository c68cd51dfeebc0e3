// What a user chooses: a decoding method = draft source x tree-shape policy x acceptance rule
// (ARCHITECTURE.md), with every constant a named setting with a default (SPEC_DECODING.md 3-6).
// One struct travels from the CLI / GUI through the engine to the decoding loop and into the stats.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "decode/sampling.h"
#include "decode/settings/method_kind.h"
#include "decode/stats/trace.h"

namespace adtree::decode {

// Methods: method_table.h (ar, static = EAGLE-1 tree, dynamic = EAGLE-2, adt = ADT-Tree, sjd and
// pathspec = Jacobi, no draft head).
struct StaticTreeSettings {
  std::string preset = "eagle25";  // "eagle25" (25 nodes, depth 5) | "eagle57" (57 nodes, depth 5)
};

struct DynamicTreeSettings {
  int64_t depth = 4;    // D expansion rounds (d = D + 1 draft levels)
  int64_t width = 10;   // K
  int64_t budget = 58;  // N draft tokens verified; 0 = auto (timed at load, SPEC_DECODING.md 8)
};

enum class AdtMode { Bisect, Step };
// Where a tree's starting shape comes from. Left / LeftUp are ADT-Tree's adjacency; None carries
// the previous step's shape; Random and Confidence are the ablation baselines (docs/adt-tree.md):
// a uniformly random shape per tree, and a shape set from the draft head's own top-1 confidence at
// the root, both without adjacency.
enum class Adjacency { None, Left, LeftUp, Random, Confidence };

// The verification budget of an ADT tree: the dynamic tree's fixed N, N that follows the shape,
// N = min(d * k, budget), so a shallow-wide tree is not cut back to EAGLE-2's top N, or Cost: each
// step's (d, k, N) and grid candidates chosen for the most tokens per millisecond from the device's
// cost curve within the adjacency shape (adt_planner.h, SPEC_DECODING.md 5.8), down to no draft.
enum class AdtBudget { Fixed, Shape, Cost };

struct AdtSettings {              // SPEC_DECODING.md section 5
  int64_t d0 = 4, k0 = 6;         // the very first tree
  int64_t d_min = 2, d_max = 8;   // draft levels
  int64_t k_min = 2, k_max = 10;  // width
  double beta = 0.5;              // alpha >= beta: deeper and narrower
  AdtMode mode = AdtMode::Bisect;
  int64_t step_d = 1, step_k = 1;           // step mode increments
  Adjacency adjacency = Adjacency::LeftUp;  // measured best (docs/adt-tree.md)
  AdtBudget budget_rule = AdtBudget::Cost;  // the device decides (docs/PERFORMANCE.md)
  bool grid = true;        // Cost: free candidates (guesses, codes above) without a head call
  bool grid_tree = true;   // Cost: ... also inside the head's tree, and the codes to the left
  double leftover = 0.15;  // Cost: tokens a guess left for the next step is worth (adt_planner.h)
  std::string cost_curve;  // Cost: a curve file (step_cost.h) instead of timing this device
};

// Lossless, or one of the relaxed (lossy) rules of draft trees: LANTERN (codebook neighbours) or
// CASCADE (context-aware: the target's and the drafter's own rows, SPEC_DECODING.md section 4).
enum class Acceptance { Lossless, Lantern, Cascade };

// How drafts are chosen and verified when sampling (SPEC_DECODING.md section 4). Greedy decoding
// has one rule whatever is set: accept the child equal to the target's argmax.
//   Deterministic  top-k children, accepted with probability p(child) (trees).
//   Sampled        children drawn from q without replacement, recursive rejection with the
//                  residual update (trees); SJD's own rule: drafts re-sampled independently.
//   Coupled        shared Gumbel noise: children are the top-k of log q + g, the target's token is
//                  argmax log p + g, so the output equals coupled AR token for token (every
//                  method).
//   Maximal        Jacobi drafts re-sampled by a maximal coupling with the previous iteration's
//                  draft (MC-SJD), min(1, p/q) verification: lossless in distribution.
//   Auto           the method's default (measured: docs/PERFORMANCE.md; PJD: sampled, docs/pjd.md).
enum class VerifyRule { Auto, Deterministic, Sampled, Coupled, Maximal };
enum class LanternMode { Delta, Lambda };

struct LanternSettings {  // SPEC_DECODING.md section 4, LANTERN / LANTERN++
  LanternMode mode = LanternMode::Delta;
  int64_t k = 100;      // neighbours considered per draft token
  double delta = 0.1;   // TVD budget (delta mode, 0..1)
  double lambda = 2.0;  // ratio (lambda mode, > 1)
};

// CASCADE (Yildirim et al. 2026), relaxed acceptance from redundancy inside the tree: a candidate
// v under node u earns a bonus B = c(v) [convergence: cos(z_u, z_v) of the target's CFG-mixed
// logits > tau_c, while the target is uncertain at u: KL(p_u || softmax(z_u / |z_u|)) < kappa]
// + the target mass of the tokens of v's interchangeable nodes (same depth, and with
// `siblings_only` the same parent, whose draft-head rows have cosine > tau_s), and is accepted with
// probability min(1, p(x) / (q(x) - B)), always when B >= q(x). Thresholds above 1 switch it off.
struct CascadeSettings {
  double tau_s = 0.9;          // interchangeability: cosine of the draft head's rows
  double tau_c = 0.625;        // convergence: cosine of the target's logits at parent and candidate
  double kappa = 4.0;          // the convergence gate: KL(p_u || softmax(z_u / |z_u|)) below this
  bool siblings_only = false;  // interchangeable nodes share the parent (else: the whole level)
};

struct JacobiSettings {                              // SPEC_DECODING.md section 6
  static constexpr double kPathRelaxDefault = 0.01;  // PathRelax's lambda when switched on
  int64_t window = 15;                               // SJD: L draft tokens per step
  bool spatial_init = true;  // init drafts from the token to the left, else random
  int64_t paths = 2;         // PathExplore: K parallel chains (2 x 12 by default)
  int64_t path_length = 12;  // PathExplore: draft tokens per chain
  double path_relax = 0.0;   // PathRelax lambda (lossy; 0 = off); "on" = kPathRelaxDefault
  int64_t start_margin = 0;  // plain AR (no drafts) for the first M image tokens
  int64_t stop_margin = 0;   // ... and for the last M
  // SJD-PAC's proactive drafting: the first `pac_levels` cells after the root get `pac_width`
  // candidates each (a K-ary tree, every candidate of a level under every node of the level
  // above), the rest of the window one chain under candidate 0 (SPEC_DECODING.md section 6).
  int64_t pac_width = 3;
  int64_t pac_levels = 2;
};

// PJD, Parallel Jacobi Decoding (Liao et al. 2026; docs/pjd.md): Jacobi windows on several image
// rows at once. A row starts once the row above holds `row_offset` tokens; each active row feeds
// its frontier token and up to `window` - 1 drafts into one forward; the top (leading) row is
// verified as SJD is, a row below only keeps its accepted prefix. With the row-causal mask a row's
// drafts see no other row's drafts. `max_rows` = 1 is one row at a time: lossless, the relaxation
// off (SPEC_DECODING.md section 6).
struct PjdSettings {
  int64_t window = 8;      // fed tokens per row and step: the frontier token + window - 1 drafts
  int64_t row_offset = 8;  // a row starts when the row above has this many tokens
  int64_t max_rows = 0;    // active rows at most (0 = as many as the offset allows)
  bool row_mask = true;    // the row-causal mask (false: rows see the drafts of rows above)
  // New guesses: the cell above when it is committed, else the cell to the left (images repeat
  // locally, as SJD's spatial init); false = random codes, the paper's init.
  bool spatial_init = true;
};

// CSpD on a continuous-family model (decode/continuous/cspd_decoder.h).
struct CspdSettings {
  int64_t gamma = 4;            // tokens the draft proposes per round
  double prefill_ratio = 0.05;  // share of the first tokens the target makes alone
  int64_t max_tries = 100;      // residual proposals before the target's own sample stands in
  // The released code's "inner temperature" (42 there): both last-step Gaussians widened by this
  // factor in the test and the residual. 1 = the paper's ratio; above 1 is a relaxation (lossy).
  double inner_temperature = 1.0;
};

constexpr int64_t kMaxAutoBudget = 58;   // the largest N `--budget auto` may choose (budget.h)
constexpr int64_t kMaxDraftRows = 4096;  // draft-head scratch rows one step may use

// Where a draft-tree step runs (device_tree.h): Auto = on the model's device when it is not the
// CPU and the settings allow it, On = always (an error for settings it does not cover), Off = the
// host step, whose tree building and rules read the probability rows on the CPU.
// Which draft head drafts a tree: the EAGLE head, one call per level (drafter.safetensors), or the
// parallel head, every level in one call (parallel_head.safetensors,
// model/llamagen/parallel_head.h).
enum class DraftHead { Eagle, Parallel };
std::string to_string(DraftHead h);
DraftHead draft_head_from_string(const std::string& s);

enum class DeviceStep { Auto, On, Off };
std::string to_string(DeviceStep s);
DeviceStep device_step_from_string(const std::string& s);

struct MethodSettings {
  Method method = Method::Ar;
  StaticTreeSettings static_tree;
  DynamicTreeSettings dynamic_tree;
  AdtSettings adt;
  Acceptance acceptance = Acceptance::Lossless;
  VerifyRule verify = VerifyRule::Auto;
  LanternSettings lantern;
  CascadeSettings cascade;
  JacobiSettings jacobi;
  PjdSettings pjd;
  CspdSettings cspd;
  DraftHead head = DraftHead::Eagle;
  DeviceStep device_step = DeviceStep::Auto;  // how the engine runs it, not what it computes

  bool needs_drafter() const;  // method_table.cpp: the method's row says
  // Throws adtree::Error naming the bad setting (unknown method, depth 0, width > vocab, ...).
  void validate(int64_t vocab_size, int64_t image_tokens) const;
  // Draft-head rows one step of a dynamic / ADT tree can feed for budget N (<= 0: unbounded).
  int64_t max_expansion_rows(int64_t budget) const;
  // The verification rule and the acceptance rule against the method (part of validate();
  // method_table.cpp, beside the methods' rows).
  void validate_verify() const;
  // The rules that tie settings to each other (part of validate(); ranges: the settings table).
  void validate_links(int64_t image_tokens) const;
  nlohmann::json to_json() const;
  static MethodSettings from_json(const nlohmann::json& j);  // missing keys keep defaults
};

std::string to_string(AdtMode m);
std::string to_string(AdtBudget b);
std::string to_string(VerifyRule r);
std::string to_string(Acceptance a);  // lossless | lantern | cascade
Acceptance acceptance_from_string(const std::string& s);
bool is_relaxed(Acceptance a);  // a lossy rule
AdtBudget adt_budget_from_string(const std::string& s);
VerifyRule verify_rule_from_string(const std::string& s);
// The rule a run uses: Auto resolved to the method's default, greedy sampling to Deterministic.
// Throws adtree::Error for a combination that has no meaning (maximal coupling on a tree,
// LANTERN or PathRelax with shared-noise coupling, deterministic drafts for a Jacobi method).
VerifyRule resolve_verify(const MethodSettings& m, const SamplingParams& sampling);
std::string to_string(Adjacency a);
std::string to_string(LanternMode m);  // delta | lambda
LanternMode lantern_mode_from_string(const std::string& s);
AdtMode adt_mode_from_string(const std::string& s);
Adjacency adjacency_from_string(const std::string& s);

// Everything one generation needs besides the model and the prompt.
struct DecodeRequest {
  MethodSettings method;
  SamplingParams sampling;
  uint64_t seed = 0;
  TraceOptions
      trace;  // record per-step trees and distributions (replay, inspector); off by default
};

// The method and sampling settings checked against a model's vocabulary and image size: the one
// check every entry point (run_decode, the loops, the engine, sweeps) makes before a generation.
void validate_settings(const MethodSettings& m, const SamplingParams& s, int64_t vocab_size,
                       int64_t image_tokens);

// The sampling settings a model of this token kind does not read keep their defaults: a value it
// would ignore (top-k for vectors, the head's variance for codes) is an error naming the flag.
void check_token_kind(const SamplingParams& s, TokenKind kind);

}  // namespace adtree::decode
