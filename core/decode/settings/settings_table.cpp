// Every setting of a generation, once (setting.h says what an entry declares): the sampling, then
// the method settings. The JSON files, the CLI's flags and help, the studio's form, the sweep's
// axes and the soak's variations are made from these entries; the defaults are the member
// initialisers of decode/sampling.h and decode/settings/method.h.
#include <limits>

#include "decode/settings/method.h"
#include "decode/settings/method_table.h"
#include "decode/settings/setting.h"
#include "model/model_dir.h"

namespace adtree::decode {

namespace {

constexpr double kNoTop = std::numeric_limits<double>::infinity();
using M = Method;
const std::vector<Method> kTrees{M::Static, M::Dynamic, M::Adt};
const std::vector<Method> kAllButAr{M::Static,   M::Dynamic, M::Adt, M::Sjd,
                                    M::PathSpec, M::SjdPac,  M::Pjd};

template <class T>
constexpr SettingType type_of() {
  if constexpr (std::is_same_v<T, int64_t>) return SettingType::Int;
  if constexpr (std::is_same_v<T, double>) return SettingType::Real;
  if constexpr (std::is_same_v<T, bool>) return SettingType::Bool;
  return SettingType::Text;
}

// Where an entry's value lives in a request: a member of its sampling, of its method settings, or
// of a group inside them (MethodSettings::<group>.<member>). Each gives a reference to it.
template <class T>
auto in_sampling(T SamplingParams::*member) {
  return [member](auto& r) -> auto& {
    return r.sampling.*member;
  };
}
template <class T>
auto in_method(T MethodSettings::*member) {
  return [member](auto& r) -> auto& {
    return r.method.*member;
  };
}
template <class G, class T>
auto in_group(G MethodSettings::*group, T G::*member) {
  return [ group, member ](auto& r) -> auto& {
    return (r.method.*group).*member;
  };
}

// A plain member: its value as it is.
template <class T, class At>
Setting plain(const char* key, Scope scope, At at) {
  return Setting(
      key, scope, type_of<T>(), [at](const DecodeRequest& r) { return SettingValue(at(r)); },
      [at](DecodeRequest& r, const SettingValue& v) { at(r) = std::get<T>(v); });
}
template <class G, class T>
Setting field(const char* key, G MethodSettings::*group, T G::*member) {
  return plain<T>(key, Scope::Method, in_group(group, member));
}
template <class T>
Setting sampling_field(const char* key, T SamplingParams::*member) {
  return plain<T>(key, Scope::Sampling, in_sampling(member));
}

// An enum member, written as its word (to_string) and read back by `parse`.
template <class E, class At>
Setting choice_at(const char* key, Scope scope, At at, std::vector<E> values,
                  E (*parse)(const std::string&)) {
  std::vector<std::string> words;
  for (auto v : values) words.push_back(to_string(v));
  return Setting(
             key, scope, SettingType::Choice,
             [at](const DecodeRequest& r) { return SettingValue(to_string(at(r))); },
             [at, parse](DecodeRequest& r, const SettingValue& v) {
               at(r) = parse(std::get<std::string>(v));
             })
      .words(words);
}
template <class E>
Setting choice(const char* key, E MethodSettings::*member, std::vector<E> values,
               E (*parse)(const std::string&)) {
  return choice_at(key, Scope::Method, in_method(member), values, parse);
}
template <class G, class E>
Setting choice(const char* key, G MethodSettings::*group, E G::*member, std::vector<E> values,
               E (*parse)(const std::string&)) {
  return choice_at(key, Scope::Method, in_group(group, member), values, parse);
}
template <class E>
Setting sampling_choice(const char* key, E SamplingParams::*member, std::vector<E> values,
                        E (*parse)(const std::string&)) {
  return choice_at(key, Scope::Sampling, in_sampling(member), values, parse);
}

// A model option: a text member of model::LoadOptions.
Setting load_field(const char* key, std::string model::LoadOptions::*member) {
  return Setting(
      key, SettingType::Text,
      [member](const model::LoadOptions& o) { return SettingValue(o.*member); },
      [member](model::LoadOptions& o, const SettingValue& v) {
        o.*member = std::get<std::string>(v);
      });
}

// The options a model is loaded with (the studio's Model > Device and Precision menus, the CLI's
// model flags). A device name is checked when the model loads (model/device.h: "cuda:N" needs N).
std::vector<Setting> model_option_entries() {
  return {
      load_field("device", &model::LoadOptions::device)
          .cli("device", "DEV")
          .help("where the model runs: cpu, cuda or cuda:N (the N-th GPU)"),
      load_field("dtype", &model::LoadOptions::dtype)
          .cli("dtype", "TYPE")
          .words({"fp32", "bf16", "fp16"})
          .help("the GPT's and the draft head's precision: fp32 is exact; bf16 halves the weights "
                "streamed per step, and where the CPU has AMX tiles its blocks of drafts cost far "
                "less than fp32's (docs/PERFORMANCE.md); fp16 runs on a GPU only"),
      load_field("vq_dtype", &model::LoadOptions::vq_dtype)
          .cli("vq-dtype", "TYPE")
          .words({"auto", "fp32", "bf16"})
          .help("the picture decoder's precision on the CPU: auto is bf16 where the CPU has "
                "AVX512-BF16, else fp32"),
  };
}

// The sampling, in the studio's order. Their defaults are a model's (model.json "sampling"), over
// SamplingParams' initialisers.
std::vector<Setting> sampling_entries() {
  return {
      sampling_field("cfg_scale", &SamplingParams::cfg_scale)
          .cli("cfg", "S")
          .range(0, kNoTop)
          .help("classifier-free guidance s: logits = u + s (c - u), the prompt's logits c mixed "
                "with the unconditional ones u; higher follows the prompt more closely, at some "
                "loss of variety; 1 = off (half the compute)")
          .studio("sampling", "CFG scale", 0.5, 2)
          .studio_top(30)
          .sweep("cfgs", "cfg")
          .soak({1.0}),
      sampling_choice("cfg_schedule", &SamplingParams::cfg_schedule,
                      {CfgSchedule::Constant, CfgSchedule::Linear}, cfg_schedule_from_string)
          .not_in("continuous")
          .cli("cfg-schedule", "WHEN")
          .help("how the guidance scale runs over the image: constant, or linear in the fraction "
                "generated (1 + (s - 1) i / N at image token i of N, as MAR does: weak guidance "
                "early keeps variety)")
          .studio("sampling", "CFG schedule")
          .sweep("cfg-schedules", "cfg-schedule")
          .soak({std::string("linear")}),
      sampling_field("cfg_interval", &SamplingParams::cfg_interval)
          .only_on(TokenKind::Codes)
          .cli("cfg-interval", "N")
          .range(-1, kNoTop, Bound::ImageTokens)
          .help("guidance only for image tokens up to this index, then the prompt's logits alone "
                "(saves compute late in the image); -1 = guide every token")
          .studio("sampling", "CFG until token")
          .studio_special("always"),
      sampling_field("temperature", &SamplingParams::temperature)
          .cli("temperature", "T")
          .range(0, kNoTop)
          .help("divides the logits before sampling: < 1 sharper and safer, > 1 more random; 0 = "
                "greedy, always the most likely token (speculative methods then reproduce AR "
                "token for token)")
          .studio("sampling", "Temperature", 0.1, 2)
          .studio_top(10)
          .studio_special("greedy")
          .sweep("temperatures", "T")
          .soak({0.0}),
      sampling_field("top_k", &SamplingParams::top_k)
          .only_on(TokenKind::Codes)
          .cli("top-k", "K")
          .range(0, kNoTop, Bound::Vocab)
          .help("sample only among the K most likely tokens, ties with the K-th kept; 0 = the "
                "whole codebook")
          .studio("sampling", "Top-k")
          .studio_special("all")
          .soak({int64_t(50)}),
      sampling_field("top_p", &SamplingParams::top_p)
          .only_on(TokenKind::Codes)
          .cli("top-p", "P")
          .above(0, 1)
          .help("nucleus sampling: keep the most likely tokens until their probability mass "
                "reaches P; 1 = off")
          .studio("sampling", "Top-p", 0.05, 2),
      sampling_field("diffusion_steps", &SamplingParams::diffusion_steps)
          .only_on(TokenKind::Vectors)
          .cli("diffusion-steps", "K")
          .range(0, 1000)
          .help("continuous-token models: reverse steps of the diffusion head per token (fewer is "
                "faster and coarser); 0 = the model's own")
          .studio("sampling", "Diffusion steps")
          .studio_special("model's"),
      sampling_choice("head_variance", &SamplingParams::head_variance,
                      {HeadVariance::Learned, HeadVariance::Fixed}, head_variance_from_string)
          .only_on(TokenKind::Vectors)
          .cli("head-variance", "V")
          .help("continuous-token models: each reverse step's spread, learned (the head's own) or "
                "fixed (the posterior's beta~: the same for every model, which makes CSpD's "
                "std product S exactly 1)")
          .studio("sampling", "Head variance"),
      sampling_field("num_iter", &SamplingParams::num_iter)
          .only_on(TokenKind::Vectors)
          .not_in("continuous")
          .cli("num-iter", "N")
          .range(0, kNoTop, Bound::ImageTokens)
          .help("MAR models: steps of the masking schedule, each predicting a share of the "
                "tokens in a random order (the image's token count: one a step; fewer is faster "
                "and coarser); 0 = the model's own")
          .studio("sampling", "MAR iterations")
          .studio_special("model's"),
  };
}

std::vector<Setting> method_entries() {
  std::vector<Method> all;
  for (const auto& i : method_table()) all.push_back(i.method);
  return {
      choice("method", &MethodSettings::method, all, method_from_string),
      choice("verify", &MethodSettings::verify,
             {VerifyRule::Auto, VerifyRule::Coupled, VerifyRule::Sampled, VerifyRule::Deterministic,
              VerifyRule::Maximal},
             verify_rule_from_string)
          .cli("verify", "RULE")
          .reads(kAllButAr)
          .help("how drafts are picked and verified when sampling (greedy has one rule): coupled "
                "(shared Gumbel noise: every method makes AR's picture for the same seed), "
                "sampled (children drawn from the draft q, recursive rejection; SJD's own "
                "independent re-draws), deterministic (the draft's top-k children, accepted with "
                "p(child); trees), maximal (Jacobi drafts re-drawn by a maximal coupling, "
                "MC-SJD), auto (coupled, or sampled with a relaxation)")
          .studio("sampling", "Verification")
          .sweep("verifies", "verify"),
      choice("acceptance", &MethodSettings::acceptance,
             {Acceptance::Lossless, Acceptance::Lantern, Acceptance::Cascade},
             acceptance_from_string)
          .cli("relax", "RULE")
          .reads(kTrees)
          .help("acceptance: lossless, or relaxed (lossy) by lantern (codebook neighbours) or "
                "cascade (redundancy inside the tree)")
          .sweep("relaxes", "relax")
          .soak({std::string("lossless"), std::string("lantern"), std::string("cascade")}),
      field("static_tree.preset", &MethodSettings::static_tree, &StaticTreeSettings::preset)
          .cli("tree", "NAME")
          .words({"eagle25", "eagle57"})
          .reads({M::Static})
          .help("the fixed draft tree, each node the r-th best child of its parent: eagle25 (25 "
                "nodes) or eagle57 (57 nodes), both depth 5")
          .studio("static", "Tree")
          .soak({std::string("eagle25"), std::string("eagle57")}),
      field("dynamic_tree.depth", &MethodSettings::dynamic_tree, &DynamicTreeSettings::depth)
          .cli("depth", "D")
          .range(1, 64)
          .reads({M::Dynamic})
          .help("expansion rounds of the dynamic tree (D + 1 draft levels): deeper trees commit "
                "more per step when drafts are good")
          .studio("dynamic", "Depth D"),
      field("dynamic_tree.width", &MethodSettings::dynamic_tree, &DynamicTreeSettings::width)
          .cli("width", "K")
          .range(1, kNoTop, Bound::Vocab)
          .reads({M::Dynamic})
          .help("children expanded per node and nodes kept per level (top-K by cumulative draft "
                "probability)")
          .studio("dynamic", "Width K"),
      field("dynamic_tree.budget", &MethodSettings::dynamic_tree, &DynamicTreeSettings::budget)
          .cli("budget", "N")
          .range(0, kMaxDraftRows)
          .names({{"auto", 0}})
          .reads({M::Dynamic, M::Adt})
          .help("draft tokens the target verifies in one forward, the tree's N best nodes: more "
                "accept more but cost more; auto times this machine when the model loads")
          .studio("budget", "Budget N")
          .sweep("budgets", "N")
          .soak({int64_t(8), int64_t(58)}),
      field("adt.d0", &MethodSettings::adt, &AdtSettings::d0)
          .cli("adt-d0", "D")
          .range(1, 64)
          .reads({M::Adt})
          .help("draft levels of the very first tree")
          .studio("adt", "Start depth d0"),
      field("adt.k0", &MethodSettings::adt, &AdtSettings::k0)
          .cli("adt-k0", "K")
          .range(1, kNoTop, Bound::Vocab)
          .reads({M::Adt})
          .help("width of the very first tree")
          .studio("adt", "Start width k0"),
      field("adt.d_min", &MethodSettings::adt, &AdtSettings::d_min)
          .cli("adt-d-min", "D")
          .range(1, 64)
          .reads({M::Adt})
          .help("fewest draft levels d")
          .studio("adt", "Depth min"),
      field("adt.d_max", &MethodSettings::adt, &AdtSettings::d_max)
          .cli("adt-d-max", "D")
          .range(1, 64)
          .reads({M::Adt})
          .help("most draft levels d")
          .studio("adt", "Depth max")
          .sweep("d-maxes", "d_max"),
      field("adt.k_min", &MethodSettings::adt, &AdtSettings::k_min)
          .cli("adt-k-min", "K")
          .range(1, kNoTop, Bound::Vocab)
          .reads({M::Adt})
          .help("narrowest width k")
          .studio("adt", "Width min"),
      field("adt.k_max", &MethodSettings::adt, &AdtSettings::k_max)
          .cli("adt-k-max", "K")
          .range(1, kNoTop, Bound::Vocab)
          .reads({M::Adt})
          .help("widest width k")
          .studio("adt", "Width max")
          .sweep("k-maxes", "k_max"),
      field("adt.beta", &MethodSettings::adt, &AdtSettings::beta)
          .cli("adt-beta", "B")
          .range(0, 1)
          .reads({M::Adt})
          .help("threshold on the last tree's acceptance ratio alpha = accepted / d: alpha >= "
                "beta grows the next tree deeper and narrower (a simple region), below it "
                "shallower and wider")
          .studio("adt", "Beta", 0.05, 2)
          .sweep("betas", "beta"),
      choice("adt.mode", &MethodSettings::adt, &AdtSettings::mode, {AdtMode::Bisect, AdtMode::Step},
             adt_mode_from_string)
          .cli("adt-mode", "MODE")
          .reads({M::Adt})
          .help("how (d, k) move after each step: bisect (half-way to the bound, the paper's "
                "rule) or step (by fixed increments)")
          .studio("adt", "Update")
          .sweep("updates", "update")
          .soak({std::string("bisect"), std::string("step")}),
      field("adt.step_d", &MethodSettings::adt, &AdtSettings::step_d)
          .cli("adt-step-d", "N")
          .range(1, 64)
          .reads({M::Adt}, Condition::AdtStepMode)
          .help("depth change per step of the step update")
          .studio("adt", "Step d")
          .sweep("l-d", "l_d"),
      field("adt.step_k", &MethodSettings::adt, &AdtSettings::step_k)
          .cli("adt-step-k", "N")
          .range(1, kNoTop, Bound::Vocab)
          .reads({M::Adt}, Condition::AdtStepMode)
          .help("width change per step of the step update")
          .studio("adt", "Step k")
          .sweep("l-k", "l_k"),
      choice("adt.adjacency", &MethodSettings::adt, &AdtSettings::adjacency,
             {Adjacency::Left, Adjacency::LeftUp, Adjacency::None, Adjacency::Random,
              Adjacency::Confidence},
             adjacency_from_string)
          .cli("adt-adjacency", "SRC")
          .reads({M::Adt})
          .help("where each tree's starting shape comes from: left (the cell to the left, the "
                "paper's), left+up (the mean of the left and upper neighbours), none (carry the "
                "last shape); random and confidence are ablation baselines without adjacency")
          .studio("adt", "Adjacency")
          .sweep("adjacencies", "adjacency"),
      choice("adt.budget_rule", &MethodSettings::adt, &AdtSettings::budget_rule,
             {AdtBudget::Cost, AdtBudget::Fixed, AdtBudget::Shape}, adt_budget_from_string)
          .cli("adt-budget", "RULE")
          .reads({M::Adt})
          .help("cost: each step's tree (d, k, N, grid candidates) chosen for the most tokens "
                "per millisecond from this machine's cost curve, down to no draft where no tree "
                "pays; fixed: the budget N's best nodes; shape: N = min(d x k, N)")
          .studio("adt", "Budget rule")
          .sweep("adt-budgets", "budget"),
      field("adt.grid", &MethodSettings::adt, &AdtSettings::grid)
          .cli("adt-grid", "on|off")
          .bool_words("on", "off")
          .reads({M::Adt})
          .help("cost rule: offer free candidates without a draft-head call, the target's own "
                "guesses from rows it rejected, else the committed codes above the next cells "
                "(coupled rule or temperature 0)")
          .studio("adt", "Grid")
          .check_text("codes above as free candidates"),
      field("adt.grid_tree", &MethodSettings::adt, &AdtSettings::grid_tree)
          .cli("adt-grid-tree", "on|off")
          .bool_words("on", "off")
          .reads({M::Adt})
          .help("cost rule with --adt-grid on: free candidates also below the draft head's "
                "rank-0 path where its drafts miss, and the codes to the left of the cells; off: "
                "one chain of guesses and codes above below the root (the rule before "
                "2026-12-06)")
          .studio("adt", "Free in tree")
          .check_text("free candidates inside the head's tree"),
      field("adt.leftover", &MethodSettings::adt, &AdtSettings::leftover)
          .cli("adt-leftover", "V")
          .range(0, 1)
          .reads({M::Adt})
          .help("cost rule: the tokens a guess left for the next step is worth (a free candidate "
                "verified but not committed leaves the target's guess for its cell); 0: plan one "
                "step only")
          .studio("adt", "Guess worth", 0.05, 2),
      field("adt.cost_curve", &MethodSettings::adt, &AdtSettings::cost_curve)
          .cli("cost-curve", "FILE")
          .reads({M::Adt})
          .help("cost rule: plan with this cost curve (JSON, adtree bench --cost-curve-out) "
                "instead of timing this device"),
      choice("lantern.mode", &MethodSettings::lantern, &LanternSettings::mode,
             {LanternMode::Delta, LanternMode::Lambda}, lantern_mode_from_string)
          .cli("lantern-mode", "MODE")
          .reads({}, Condition::Lantern)
          .help("delta (LANTERN): a draft gets the probability of its nearest codes up to a "
                "total-variation budget; lambda (LANTERN++): up to (lambda - 1) times its own")
          .studio("lantern", "Mode"),
      field("lantern.k", &MethodSettings::lantern, &LanternSettings::k)
          .cli("lantern-k", "K")
          .range(1, kNoTop, Bound::BelowVocab)
          .reads({}, Condition::Lantern)
          .help("nearest codes (codebook L2 distance) considered per draft token")
          .studio("lantern", "Neighbours k"),
      field("lantern.delta", &MethodSettings::lantern, &LanternSettings::delta)
          .cli("lantern-delta", "D")
          .range(0, 1)
          .reads({}, Condition::LanternDelta)
          .help("total-variation budget: how much probability of neighbouring codes may count "
                "for the draft (0 = lossless)")
          .studio("lantern", "Delta", 0.01, 3)
          .sweep("lantern-deltas", "lantern"),
      field("lantern.lambda", &MethodSettings::lantern, &LanternSettings::lambda)
          .cli("lantern-lambda", "L")
          .above(1)
          .reads({}, Condition::LanternLambda)
          .help("ratio: neighbours may add up to (lambda - 1) p(x); closer to 1 is closer to "
                "lossless")
          .studio("lantern", "Lambda", 0.25, 2)
          .studio_top(50),
      field("cascade.tau_c", &MethodSettings::cascade, &CascadeSettings::tau_c)
          .cli("cascade-tau-c", "COS")
          .range(-1, 2)
          .reads(kTrees, Condition::Cascade)
          .help("a draft whose target logits have at least this cosine with its parent's earns "
                "that cosine as a bonus (above 1 = off)")
          .studio("cascade", "Convergence cos", 0.05, 3)
          .sweep("cascade-tau-cs", "tau_c"),
      field("cascade.kappa", &MethodSettings::cascade, &CascadeSettings::kappa)
          .cli("cascade-kappa", "K")
          .range(0, kNoTop)
          .reads(kTrees, Condition::Cascade)
          .help("the convergence bonus applies only while the target is uncertain, KL(p || "
                "softmax(z / |z|)) below this")
          .studio("cascade", "Uncertainty gate", 0.5, 2)
          .studio_top(100)
          .sweep("cascade-kappas", "kappa"),
      field("cascade.tau_s", &MethodSettings::cascade, &CascadeSettings::tau_s)
          .cli("cascade-tau-s", "COS")
          .range(-1, 2)
          .reads(kTrees, Condition::Cascade)
          .help("drafts of one level whose draft-head rows have at least this cosine lend each "
                "other their tokens' target mass (above 1 = off)")
          .studio("cascade", "Interchangeable cos", 0.05, 3)
          .sweep("cascade-tau-ss", "tau_s")
          .soak({0.5, 0.9}),
      field("cascade.siblings_only", &MethodSettings::cascade, &CascadeSettings::siblings_only)
          .cli("cascade-scope", "SCOPE")
          .bool_words("siblings", "level")
          .reads(kTrees, Condition::Cascade)
          .help("interchangeable drafts: any of the same depth (level) or only those under the "
                "same parent (siblings)")
          .studio("cascade", "Interchangeable")
          .check_text("siblings only"),
      field("jacobi.window", &MethodSettings::jacobi, &JacobiSettings::window)
          .cli("window", "L")
          .range(1, kNoTop, Bound::BelowImageTokens)
          .reads({M::Sjd, M::SjdPac})
          .help("draft tokens guessed ahead and refined in parallel each step (no draft head)")
          .studio("jacobi", "Window L"),
      field("jacobi.spatial_init", &MethodSettings::jacobi, &JacobiSettings::spatial_init)
          .cli("jacobi-init", "INIT")
          .bool_words("spatial", "random")
          .reads({M::Sjd, M::PathSpec, M::SjdPac})
          .help("new guesses copy the code to their left (images repeat locally; PathSpec's "
                "other paths the cell above, up-left, up-right) or are random codes")
          .studio("jacobi", "Spatial init")
          .check_text("initialise from the left token"),
      field("jacobi.paths", &MethodSettings::jacobi, &JacobiSettings::paths)
          .cli("paths", "K")
          .range(1, 64)
          .reads({M::PathSpec})
          .help("parallel Jacobi chains sharing the root; the one with the longest accepted "
                "prefix wins")
          .studio("jacobi", "Paths K"),
      field("jacobi.path_length", &MethodSettings::jacobi, &JacobiSettings::path_length)
          .cli("path-length", "N")
          .range(1, kNoTop, Bound::BelowImageTokens)
          .reads({M::PathSpec})
          .help("draft tokens along each chain (the paper's default: 2 paths of 12)")
          .studio("jacobi", "Path length N"),
      field("jacobi.path_relax", &MethodSettings::jacobi, &JacobiSettings::path_relax)
          .cli("path-relax", "LAMBDA")
          .range(0, kNoTop)
          .names({{"off", 0}, {"on", JacobiSettings::kPathRelaxDefault}})
          .reads({M::PathSpec})
          .help("PathRelax (lossy): adds lambda times the mean probability other paths give a "
                "token; combines with --relax lantern")
          .studio("jacobi", "Path relax", 0.05, 2)
          .studio_top(10)
          .soak({0.0, JacobiSettings::kPathRelaxDefault}),
      field("jacobi.pac_width", &MethodSettings::jacobi, &JacobiSettings::pac_width)
          .cli("pac-width", "K")
          .range(1, 16, Bound::BelowVocab)
          .reads({M::SjdPac})
          .help("candidates tried for each of the first window cells (the draft and K - 1 more "
                "from the same distribution)")
          .studio("jacobi", "PAC width K"),
      field("jacobi.pac_levels", &MethodSettings::jacobi, &JacobiSettings::pac_levels)
          .cli("pac-levels", "D")
          .range(0, 3)
          .reads({M::SjdPac})
          .help("window cells after the root that get K candidates (a K-ary tree); 0 = SJD with "
                "kept drafts")
          .studio("jacobi", "PAC levels"),
      field("jacobi.start_margin", &MethodSettings::jacobi, &JacobiSettings::start_margin)
          .cli("jacobi-start-margin", "M")
          .range(0, kNoTop, Bound::BelowImageTokens)
          .reads({M::Sjd, M::PathSpec, M::SjdPac})
          .help("plain AR (no drafts) for the first M image tokens, where the picture has no "
                "context to guess from yet")
          .studio("jacobi", "Start margin"),
      field("jacobi.stop_margin", &MethodSettings::jacobi, &JacobiSettings::stop_margin)
          .cli("jacobi-stop-margin", "M")
          .range(0, kNoTop, Bound::BelowImageTokens)
          .reads({M::Sjd, M::PathSpec, M::SjdPac})
          .help("plain AR for the last M image tokens")
          .studio("jacobi", "Stop margin"),
      field("pjd.window", &MethodSettings::pjd, &PjdSettings::window)
          .cli("pjd-window", "N")
          .range(1, 64)
          .reads({M::Pjd})
          .help("tokens each row feeds per step: its newest token and N - 1 drafts for the cells "
                "after it")
          .studio("pjd", "Window")
          .sweep("pjd-windows", "window"),
      field("pjd.row_offset", &MethodSettings::pjd, &PjdSettings::row_offset)
          .cli("pjd-row-offset", "N")
          .range(1, kNoTop)
          .reads({M::Pjd})
          .help("a row starts once the row above has N tokens")
          .studio("pjd", "Row offset")
          .sweep("pjd-offsets", "offset")
          .soak({int64_t(2), int64_t(8)}),
      field("pjd.max_rows", &MethodSettings::pjd, &PjdSettings::max_rows)
          .cli("pjd-rows", "N")
          .range(0, 64)
          .reads({M::Pjd})
          .help("active rows at most: 0 = as many as the offset allows, 1 = one row at a time "
                "(lossless)")
          .studio("pjd", "Rows at most")
          .studio_special("no limit")
          .sweep("pjd-row-counts", "rows")
          .soak({int64_t(0), int64_t(1)}),
      field("pjd.row_mask", &MethodSettings::pjd, &PjdSettings::row_mask)
          .cli("pjd-mask", "MASK")
          .bool_words("row-causal", "causal")
          .reads({M::Pjd})
          .help("row-causal: a row's drafts see no other row's drafts, only committed tokens "
                "(the paper's mask); causal: they also see the drafts of the rows above")
          .studio("pjd", "Mask")
          .check_text("row-causal")
          .sweep("pjd-masks", "mask"),
      field("pjd.spatial_init", &MethodSettings::pjd, &PjdSettings::spatial_init)
          .cli("pjd-init", "INIT")
          .bool_words("spatial", "random")
          .reads({M::Pjd})
          .help("new guesses copy the token above (else the one to the left) or are random "
                "codes, as in the paper")
          .studio("pjd", "Spatial init")
          .check_text("above, else left")
          .sweep("pjd-inits", "init"),
      choice("head", &MethodSettings::head, {DraftHead::Eagle, DraftHead::Parallel},
             draft_head_from_string)
          .cli("head", "KIND")
          .reads(kTrees)
          .help("the draft head: eagle (one call per tree level) or parallel (every level in one "
                "call, a model with parallel_head.safetensors: adtree train drafter --model DIR "
                "--config '{\"kind\": \"parallel\"}')")
          .studio("budget", "Draft head"),
      field("cspd.gamma", &MethodSettings::cspd, &CspdSettings::gamma)
          .cli("cspd-gamma", "N")
          .range(1, 64)
          .reads({M::Cspd})
          .help("CSpD: tokens the draft model proposes per round, verified by one target forward")
          .studio("cspd", "Draft tokens (gamma)")
          .sweep("cspd-gammas", "gamma"),
      field("cspd.prefill_ratio", &MethodSettings::cspd, &CspdSettings::prefill_ratio)
          .cli("cspd-prefill", "R")
          .range(0, 1)
          .reads({M::Cspd})
          .help("CSpD: share of the first image tokens the target makes alone before drafting "
                "starts (the paper's pre-filling; 0.05)")
          .studio("cspd", "Pre-fill share", 0.01, 2),
      field("cspd.inner_temperature", &MethodSettings::cspd, &CspdSettings::inner_temperature)
          .cli("cspd-inner-temperature", "T")
          .range(1, 1000)
          .reads({M::Cspd})
          .help("CSpD: widen both last-step Gaussians by T in the acceptance test (the released "
                "code uses 42; a refused draft's replacement still comes from the target's own "
                "last step); 1 = the paper's ratio, above 1 relaxes it (lossy)")
          .studio("cspd", "Inner temperature", 1, 0),
      field("cspd.max_tries", &MethodSettings::cspd, &CspdSettings::max_tries)
          .cli("cspd-max-tries", "N")
          .range(1, 100000)
          .reads({M::Cspd})
          .help("CSpD: residual proposals after a refused draft before the target's own sample "
                "stands in (counted as exhausted)")
          .studio("cspd", "Residual tries"),
      choice("device_step", &MethodSettings::device_step,
             {DeviceStep::Auto, DeviceStep::On, DeviceStep::Off}, device_step_from_string)
          .cli("device-step", "WHEN")
          .reads(kTrees)
          .help("draft-tree steps on the model's device with one read back per step: auto (off "
                "the CPU, where the settings allow), on or off"),
  };
}

}  // namespace

const std::vector<Setting>& settings_table() {
  static const std::vector<Setting> table = [] {
    auto all = sampling_entries();
    for (auto& s : method_entries()) all.push_back(std::move(s));
    return all;
  }();
  return table;
}

const std::vector<Setting>& model_options_table() {
  static const std::vector<Setting> table = model_option_entries();
  return table;
}

const std::vector<SettingSection>& setting_sections() {
  static const std::vector<SettingSection> sections{
      {"sampling", "Sampling", ""},
      {"static", "Static tree (EAGLE-1)", ""},
      {"dynamic", "Dynamic tree (EAGLE-2)", ""},
      {"budget", "Verification budget", ""},
      {"adt", "ADT-Tree", ""},
      {"lantern", "LANTERN (relaxed acceptance)",
       "Lossy: accepts a draft if it is close in the VQ codebook to what the target would take. "
       "Faster, slightly different images."},
      {"cascade", "CASCADE (relaxed acceptance)",
       "Lossy: a draft earns a bonus when the target barely changes its mind after it, or when "
       "drafts of its level that the draft head sees alike carry the target's mass. Thresholds "
       "above 1 switch a signal off."},
      {"jacobi", "Jacobi (SJD, PathSpec, SJD-PAC)", ""},
      {"cspd", "CSpD (continuous tokens)",
       "Approximately lossless: a draft token stands with the aligned trajectories' density "
       "ratio, not its exact probability ratio."},
      {"pjd", "PJD (parallel rows)",
       "A row starts once the row above is a few tokens ahead; the note at the top says when the "
       "rows make the run lossy."},
  };
  return sections;
}

}  // namespace adtree::decode
