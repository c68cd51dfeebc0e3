// The method flags shared by generate and bench: every constant of SPEC_DECODING.md is a flag whose
// default (shown in --help) comes from decode::MethodSettings.
#include <algorithm>
#include <sstream>
#include <vector>

#include "commands.h"
#include "util/error.h"

namespace adtree::cli {

namespace {
// The value of a flag that takes one of a few words; anything else is an error naming them.
std::string one_of(const Args& a, const std::string& flag, const std::vector<std::string>& words) {
  const auto v = a.str(flag);
  if (std::find(words.begin(), words.end(), v) != words.end()) return v;
  std::string list;
  for (size_t i = 0; i < words.size(); ++i)
    list += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i];
  throw Error("--" + flag + " must be " + list + ", not '" + v + "'");
}

template <class T>
std::string str(T v) {
  std::ostringstream os;
  os << v;
  return os.str();
}
}  // namespace

void add_method_options(Args& a, bool list) {
  const decode::MethodSettings d;
  std::string names;
  for (const auto& m : decode::method_table())
    names += (names.empty() ? "" : "|") + std::string(m.key);
  a.option("method", list ? "LIST" : "NAME",
           (list ? "comma-separated methods, each optionally METHOD:RULE with a --verify rule: "
                 : "decoding method: ") +
               names +
               " (pathspec with K > 1 paths is lossless only with --verify coupled, the default: "
               "otherwise picking the longest accepted chain biases the samples, see "
               "docs/JACOBI.md; pjd is lossy unless --pjd-rows 1, see docs/pjd.md); default "
               "adt, the fastest lossless method (docs/PERFORMANCE.md), or ar for a model "
               "without a draft head",
           "adt")
      .option("tree", "NAME", "static tree: eagle25 (25 nodes) or eagle57 (57 nodes), depth 5",
              d.static_tree.preset)
      .option("depth", "D", "dynamic tree expansion rounds (d = D + 1 draft levels)",
              str(d.dynamic_tree.depth))
      .option("width", "K", "dynamic tree width (top-K per node and frontier)",
              str(d.dynamic_tree.width))
      .option("budget", "N",
              "draft tokens verified per step (dynamic and ADT); auto = time this machine",
              str(d.dynamic_tree.budget))
      .option("adt-d0", "D", "ADT: draft levels of the first tree", str(d.adt.d0))
      .option("adt-k0", "K", "ADT: width of the first tree", str(d.adt.k0))
      .option("adt-d-min", "D", "ADT: fewest draft levels", str(d.adt.d_min))
      .option("adt-d-max", "D", "ADT: most draft levels", str(d.adt.d_max))
      .option("adt-k-min", "K", "ADT: narrowest width", str(d.adt.k_min))
      .option("adt-k-max", "K", "ADT: widest width", str(d.adt.k_max))
      .option("adt-beta", "B", "ADT: acceptance ratio a/d at or above which trees grow deeper",
              str(d.adt.beta))
      .option("adt-mode", "MODE", "ADT: bisect (half-way to the bound) or step",
              to_string(d.adt.mode))
      .option("adt-step-d", "N", "ADT step mode: depth change per step", str(d.adt.step_d))
      .option("adt-step-k", "N", "ADT step mode: width change per step", str(d.adt.step_k))
      .option("adt-adjacency", "SRC",
              "ADT: initial shape from left, left+up or none; random / confidence are ablation "
              "baselines",
              to_string(d.adt.adjacency))
      .option("adt-budget", "RULE",
              "ADT: budget cost (each step's d, k, N chosen for tokens per ms from the device's "
              "cost curve, down to no draft), fixed (N) or shape (N = min(d x k, N))",
              to_string(d.adt.budget_rule))
      .option("adt-grid", "on|off",
              "ADT cost rule: offer the codes above the next cells as free candidates",
              d.adt.grid ? "on" : "off")
      .option("adt-leftover", "V",
              "ADT cost rule: tokens a guess left for the next step is worth, in [0, 1] (0: plan "
              "one step only)",
              str(d.adt.leftover))
      .option("cost-curve", "FILE",
              "ADT cost rule: plan with this cost curve (JSON, adtree bench --cost-curve-out) "
              "instead of timing this device")
      .option("verify", "RULE",
              "how drafts are picked and verified when sampling: coupled (shared Gumbel noise, "
              "token-identical to AR), sampled (children drawn from q, recursive rejection; SJD's "
              "own rule), deterministic (top-k children, trees), maximal (MC-SJD, Jacobi), auto "
              "(coupled, or sampled with a relaxation)",
              to_string(d.verify))
      .option("relax", "RULE",
              "acceptance: lossless, lantern or cascade (relaxed, lossy; draft trees)", "lossless")
      .option("lantern-mode", "MODE", "LANTERN: delta (TVD budget) or lambda (ratio, LANTERN++)",
              "delta")
      .option("lantern-k", "K", "LANTERN: latent neighbours per draft token", str(d.lantern.k))
      .option("lantern-delta", "D", "LANTERN delta mode: total-variation budget in [0, 1]",
              str(d.lantern.delta))
      .option("lantern-lambda", "L", "LANTERN lambda mode: ratio > 1", str(d.lantern.lambda))
      .option("cascade-tau-s", "COS",
              "CASCADE: draft-head rows this similar make nodes interchangeable (> 1 = off)",
              str(d.cascade.tau_s))
      .option("cascade-tau-c", "COS",
              "CASCADE: target rows of parent and candidate this similar earn the convergence "
              "bonus (> 1 = off)",
              str(d.cascade.tau_c))
      .option("cascade-kappa", "K",
              "CASCADE: convergence only while KL(p || softmax(z / |z|)) < K (target uncertain)",
              str(d.cascade.kappa))
      .option("cascade-scope", "SCOPE",
              "CASCADE: interchangeable nodes from the whole level or siblings only",
              d.cascade.siblings_only ? "siblings" : "level")
      .option("window", "L", "SJD, SJD-PAC: draft tokens guessed ahead per step",
              str(d.jacobi.window))
      .option("pac-width", "K",
              "SJD-PAC: candidates per cell in the tree at the front of the window",
              str(d.jacobi.pac_width))
      .option("pac-levels", "D",
              "SJD-PAC: window cells that get K candidates (0 = plain SJD with coupling)",
              str(d.jacobi.pac_levels))
      .option("jacobi-init", "INIT",
              "SJD/PathSpec: new guesses are random codes or spatial (the left "
              "cell's code; PathSpec's other paths the cell above, up-left, up-right)",
              d.jacobi.spatial_init ? "spatial" : "random")
      .option("paths", "K", "PathSpec: parallel Jacobi chains sharing the root",
              str(d.jacobi.paths))
      .option("path-length", "N", "PathSpec: draft tokens per chain", str(d.jacobi.path_length))
      .option("path-relax", "LAMBDA",
              "PathSpec PathRelax (lossy): off, on (lambda = " +
                  str(decode::JacobiSettings::kPathRelaxDefault) +
                  ") or a lambda >= 0; "
                  "combines with --relax lantern",
              "off")
      .option("pjd-window", "N",
              "PJD: tokens fed per row and step (its frontier token and N - 1 drafts)",
              str(d.pjd.window))
      .option("pjd-row-offset", "N", "PJD: a row starts when the row above has N tokens",
              str(d.pjd.row_offset))
      .option("device-step", "WHEN",
              "draft-tree steps on the model's device with one read back per step: auto (off the "
              "CPU, where the settings allow), on or off",
              decode::to_string(d.device_step))
      .option("pjd-rows", "N",
              "PJD: active rows at most (0 = as the offset allows; 1 = lossless, one row at a "
              "time)",
              str(d.pjd.max_rows))
      .option("pjd-mask", "MASK",
              "PJD: row-causal (a row's drafts see no other row's drafts) or causal",
              d.pjd.row_mask ? "row-causal" : "causal")
      .option("pjd-init", "INIT",
              "PJD: new guesses are spatial (the cell above, else the left one) or random codes "
              "(the paper's)",
              d.pjd.spatial_init ? "spatial" : "random")
      .option("jacobi-start-margin", "M", "SJD/PathSpec: plain AR for the first M tokens",
              str(d.jacobi.start_margin))
      .option("jacobi-stop-margin", "M", "SJD/PathSpec: plain AR for the last M tokens",
              str(d.jacobi.stop_margin));
}

std::string method_or_default(const Args& a, bool has_drafter) {
  return a.given("method") || has_drafter ? a.str("method") : "ar";
}

decode::MethodSettings method_from(const Args& a, const std::string& method) {
  decode::MethodSettings m;
  m.method = decode::method_from_string(method);
  // ADT-Tree picks (d, k) itself: --depth / --width would be silently ignored, so say so (they
  // are fine in a list that also runs the dynamic tree).
  if (m.method == decode::Method::Adt && (a.given("depth") || a.given("width")) &&
      a.str("method").find("dynamic") == std::string::npos) {
    throw Error(
        "--depth and --width shape the dynamic tree; ADT-Tree chooses (d, k) per step within "
        "--adt-d-min..--adt-d-max and --adt-k-min..--adt-k-max, starting from --adt-d0, "
        "--adt-k0");
  }
  m.static_tree.preset = a.str("tree");
  m.dynamic_tree.depth = a.integer("depth");
  m.dynamic_tree.width = a.integer("width");
  m.dynamic_tree.budget = a.str("budget") == "auto" ? 0 : a.integer("budget");
  if (m.dynamic_tree.budget == 0 && a.str("budget") != "auto") {
    throw Error("--budget must be a positive number or auto");
  }
  auto& t = m.adt;
  t.d0 = a.integer("adt-d0"), t.k0 = a.integer("adt-k0");
  t.d_min = a.integer("adt-d-min"), t.d_max = a.integer("adt-d-max");
  t.k_min = a.integer("adt-k-min"), t.k_max = a.integer("adt-k-max");
  t.beta = a.number("adt-beta");
  t.mode = decode::adt_mode_from_string(a.str("adt-mode"));
  t.step_d = a.integer("adt-step-d"), t.step_k = a.integer("adt-step-k");
  t.adjacency = decode::adjacency_from_string(a.str("adt-adjacency"));
  t.budget_rule = decode::adt_budget_from_string(a.str("adt-budget"));
  t.grid = one_of(a, "adt-grid", {"on", "off"}) == "on";
  t.leftover = a.number("adt-leftover");
  t.cost_curve = a.given("cost-curve") ? a.str("cost-curve") : "";
  m.verify = decode::verify_rule_from_string(a.str("verify"));
  m.acceptance =
      decode::acceptance_from_string(one_of(a, "relax", {"lossless", "lantern", "cascade"}));
  m.cascade.tau_s = a.number("cascade-tau-s");
  m.cascade.tau_c = a.number("cascade-tau-c");
  m.cascade.kappa = a.number("cascade-kappa");
  m.cascade.siblings_only = one_of(a, "cascade-scope", {"level", "siblings"}) == "siblings";
  m.lantern.mode = one_of(a, "lantern-mode", {"delta", "lambda"}) == "delta"
                       ? decode::LanternMode::Delta
                       : decode::LanternMode::Lambda;
  m.lantern.k = a.integer("lantern-k");
  m.lantern.delta = a.number("lantern-delta");
  m.lantern.lambda = a.number("lantern-lambda");
  auto& j = m.jacobi;
  j.window = a.integer("window");
  j.spatial_init = one_of(a, "jacobi-init", {"random", "spatial"}) == "spatial";
  j.paths = a.integer("paths");
  j.path_length = a.integer("path-length");
  j.pac_width = a.integer("pac-width");
  j.pac_levels = a.integer("pac-levels");
  const auto pr = a.str("path-relax");
  if (pr == "off")
    j.path_relax = 0;
  else if (pr == "on")
    j.path_relax = decode::JacobiSettings::kPathRelaxDefault;
  else {
    try {
      j.path_relax = a.number("path-relax");  // validate() rejects negative values
    } catch (const Error&) {
      throw Error("--path-relax must be off, on or a lambda >= 0, not '" + pr + "'");
    }
  }
  m.pjd.window = a.integer("pjd-window");
  m.pjd.row_offset = a.integer("pjd-row-offset");
  m.pjd.max_rows = a.integer("pjd-rows");
  m.device_step = decode::device_step_from_string(one_of(a, "device-step", {"auto", "on", "off"}));
  m.pjd.row_mask = one_of(a, "pjd-mask", {"row-causal", "causal"}) == "row-causal";
  m.pjd.spatial_init = one_of(a, "pjd-init", {"spatial", "random"}) == "spatial";
  j.start_margin = a.integer("jacobi-start-margin");
  j.stop_margin = a.integer("jacobi-stop-margin");
  return m;
}

}  // namespace adtree::cli
