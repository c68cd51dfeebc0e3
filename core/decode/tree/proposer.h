// The proposers of the one decoding loop (spec_decoder.cpp, llama.cpp's common/speculative split):
// each returns the step's draft tree and learns from the verified outcome.
//   static   EAGLE-1's fixed path list (StaticTreeSpec)
//   dynamic  EAGLE-2's dynamic tree, fixed (D + 1, K), budget N fixed or adaptive (budget.h)
//   adt      the dynamic tree with ADT-Tree's shape policy choosing (d, k) per step (adt_policy.h)
//   jacobi   SJD / PathExplore windows of guesses, no draft model (jacobi.h)
// How children are picked from q is the verification rule's (ChildPicker in tree_builder.h).
#pragma once
#include <ATen/ATen.h>

#include <memory>
#include <vector>

#include "decode/device/device_tree.h"
#include "decode/jacobi/jacobi.h"
#include "decode/settings/method.h"
#include "decode/stats/trace.h"
#include "decode/tree/adt_policy.h"
#include "decode/tree/budget.h"
#include "decode/tree/draft_source.h"
#include "decode/tree/draft_tree.h"
#include "decode/tree/step_cost.h"
#include "decode/tree/tree_builder.h"
#include "decode/verify/acceptance.h"

namespace adtree::decode {

// What verification made of the step's tree, for the proposer to learn from.
struct StepOutcome {
  const DraftTree& tree;
  const AcceptResult& acc;
  const at::Tensor& hidden;                // target features of the verification forward [B, q, D]
  const std::vector<int64_t>& new_tokens;  // committed by this step, cells first_cell ..
  const std::vector<int64_t>& parents;     // node whose row predicted each new token
  int64_t first_cell = 0;
  // The target's processed rows [nodes, V] on the CPU (the host step; undefined otherwise): the
  // rows of rejected nodes are guesses for cells beyond this step (cost-aware ADT's free
  // candidates, adt_planner.h).
  at::Tensor probs;
};

class Proposer {
 public:
  virtual ~Proposer() = default;
  // After the prefill: `feature` [B, 1, D] is the target hidden that predicted image token 0.
  virtual void start(const model::Condition& cond, const at::Tensor& feature) = 0;
  // The tree for the step whose root is committed.back(); `max_levels` draft levels still fit.
  virtual DraftTree propose(const std::vector<int64_t>& committed, int64_t max_levels) = 0;
  // The device step (device_tree.h): the same tree built on the model's device, for proposers
  // whose settings allow it (builds_on_device()); observe() then gets the tree as read back.
  virtual bool builds_on_device() const { return false; }
  virtual DeviceTree propose_on_device(const std::vector<int64_t>& committed, int64_t max_levels);
  virtual void observe(const StepOutcome& out) = 0;
  virtual int64_t budget() const = 0;           // N of the last tree (draft tokens it could hold)
  virtual int64_t max_nodes() const = 0;        // the largest tree these settings build
  virtual double take_draft_ms() { return 0; }  // draft-model time since the last call
  virtual void annotate(StepTrace&) const {}    // the step's policy decision, for traces
  // The shape the method planned for the last tree, for the studio's maps: ADT-Tree's adjacency
  // policy (which the cost rule may cut down) and the dynamic tree's settings; {0, 0} where the
  // tree built is the plan (a static tree, a Jacobi window), whose levels and width then stand.
  virtual TreeShape planned_shape() const { return {}; }
  // Whether the tree's drafted nodes (grid candidates aside) come from a draft model; Jacobi
  // windows hold the target's own guesses.
  virtual bool head_drafts() const { return true; }
};

// What a proposer is built from. `source` is null for the Jacobi methods.
struct ProposerInputs {
  const MethodSettings& method;
  const model::GptConfig& target;
  DraftSource* source = nullptr;
  const LogitsProcessor& draft_proc;
  ChildPicker picker;
  int64_t budget = 0;                         // resolved N (dynamic / ADT)
  const BudgetChoice* auto_budget = nullptr;  // set: N adapts to this run (budget.h)
  int64_t n_img = 0;
  uint64_t seed = 0;
  CouplingNoise* noise = nullptr;
  VerifyRule rule = VerifyRule::Deterministic;
  bool greedy = false;               // temperature 0: any candidate may be verified
  const StepCosts* costs = nullptr;  // the ADT cost rule's curve (step_cost.h)
};

std::unique_ptr<Proposer> make_proposer(const ProposerInputs& in);

// The Jacobi proposer's state, which its verifier shares (JacobiState::accept needs the window).
JacobiState* jacobi_state(Proposer& p);

}  // namespace adtree::decode
