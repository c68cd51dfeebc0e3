// The one statistics format (SPEC_DECODING.md section 7) that every method emits and the GUI, the
// CLI bench and the tests read: per-step records, per-cell grids, per-depth reach, run summary.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "decode/settings/run_settings.h"
#include "decode/stats/trace.h"

namespace adtree::decode {

struct StepRecord {
  int64_t step = 0;
  std::string method;
  int64_t tree_depth = 0;  // d: draft levels of the tree (0 for AR)
  int64_t tree_width = 0;  // k
  int64_t budget = 0;      // N: draft tokens the verifier may take
  int64_t drafted = 0;     // draft tokens proposed
  int64_t grid = 0;        // ... of which free grid candidates (cost-aware ADT, no head call)
  int64_t committed = 0;   // a + 1
  double alpha = 0;        // a / d (0 for AR)
  int64_t first_cell = 0;  // image index of the first token committed by this step
  // The committed cells in order when they are not first_cell, first_cell + 1, ... (PJD commits
  // on several rows at once); empty otherwise.
  std::vector<int64_t> cells;
  int64_t cum_tokens = 0;
  int64_t target_forwards = 0;  // forwards of the target in this step (1 for AR and trees)
  int64_t relaxed = 0;  // accepted draft tokens a lossless test would have rejected (LANTERN, ...)
  // The accepted draft tokens by where they came from: the draft head, or a free guess (the code
  // above, a Jacobi guess: no draft model). Their sum is committed - 1 for a tree step.
  int64_t accepted_head = 0, accepted_guess = 0;
  // The shape the method planned for the step (ADT-Tree: the adjacency policy's (d, k), which the
  // cost rule may cut down; tree_depth and tree_width are the tree that ran).
  int64_t plan_depth = 0, plan_width = 0;
  double t_draft_ms = 0, t_verify_ms = 0, t_sample_ms = 0, t_other_ms = 0;

  int64_t cell(size_t i) const { return cells.empty() ? first_cell + int64_t(i) : cells[i]; }
};

// Where a committed token came from: sampled by the target itself (root, bonus, residual), a draft
// of the draft head, or a free guess (the code above its cell, a Jacobi guess: no draft model).
enum class TokenOrigin : int32_t { Target = 0, Head = 1, Guess = 2 };

// One committed token cell.
struct CellStats {
  int32_t depth = 0;       // 0 = sampled from the target (root/bonus/residual); j = draft level
  float top1 = 0;          // target top-1 probability (after CFG and temperature)
  int32_t accept_len = 0;  // tokens committed by the step that produced this cell
  int32_t tree_depth = 0;  // the drafted tree that produced the cell: its deepest level and
  int32_t tree_width = 0;  // its widest level (head nodes and free guesses together)
  int32_t rank = 0;        // rank among the parent's draft candidates (0 for target tokens)
  int32_t plan_depth = 0;  // the shape the method planned for that step (ADT-Tree: the policy's)
  int32_t plan_width = 0;
  TokenOrigin origin = TokenOrigin::Target;
};

class CellGrids {
 public:
  CellGrids() = default;
  CellGrids(int64_t h, int64_t w);
  int64_t h() const { return h_; }
  int64_t w() const { return w_; }
  void set(int64_t cell, const CellStats& s);
  bool filled(int64_t cell) const { return filled_.at(size_t(cell)) != 0; }
  bool all_filled() const;
  const CellStats& at(int64_t cell) const { return cells_.at(size_t(cell)); }
  nlohmann::json to_json() const;  // one h x w array per quantity; unfilled cells are null
  static CellGrids from_json(const nlohmann::json& j);

 private:
  int64_t h_ = 0, w_ = 0;
  std::vector<CellStats> cells_;
  std::vector<uint8_t> filled_;
};

struct RunSummary {
  int64_t tokens = 0;
  int64_t steps = 0;
  int64_t target_forwards = 0;
  double tau = 0;           // tokens / target forwards
  double mean_drafted = 0;  // draft tokens per step
  int64_t relaxed = 0;      // accepted draft tokens only a relaxed rule let through
  int64_t accepted_head = 0, accepted_guess = 0;  // accepted draft tokens by origin
  double wall_ms = 0;
  double tokens_per_s = 0;
  double t_draft_ms = 0, t_verify_ms = 0, t_sample_ms = 0, t_other_ms = 0;
  nlohmann::json to_json() const;
  static RunSummary from_json(const nlohmann::json& j);
};

struct RunStats {
  std::string method;
  RunSettings settings;  // everything needed to reproduce the run
  std::vector<StepRecord> steps;
  CellGrids grids;
  std::vector<int64_t> depth_reach;  // [j] = steps whose accepted path reached depth j
  RunSummary summary;
  std::vector<StepTrace> traces;  // one per step when DecodeRequest::trace is enabled, else empty

  void add_step(const StepRecord& r);  // appends and updates depth_reach (path depth = committed-1)
  void finish(double wall_ms);         // fills the summary from the steps
  nlohmann::json to_json() const;
  // The inverse of to_json (a saved run read back): throws adtree::Error naming what is wrong.
  static RunStats from_json(const nlohmann::json& j);
};

// Streamed after every step: the record plus the newly committed cells, in order.
struct StepEvent {
  const StepRecord& record;
  const std::vector<int64_t>& tokens;   // committed tokens, on cells record.cell(0), cell(1), ...
  const std::vector<CellStats>& cells;  // their statistics
  const StepTrace* trace = nullptr;     // the step's trace when tracing is on
};
using StepCallback = std::function<void(const StepEvent&)>;

nlohmann::json to_json(const StepRecord& r);
StepRecord step_record_from_json(const nlohmann::json& j);

// A saved run (the statistics JSON with "tokens", as `adtree generate --stats --trace` and the
// studio's run files hold it): the committed image tokens. Throws adtree::Error.
std::vector<int64_t> run_tokens_from_json(const nlohmann::json& j);
// The consistency of a run read back, beyond what RunStats::from_json checks by itself: no more
// tokens than grid cells, steps that follow each other (each starts where the last one ended) and
// commit exactly the tokens. Throws adtree::Error naming the first problem. The studio opens run
// files through this (ui/runs/run_record.cpp); fuzz/fuzz_run_file.cpp fuzzes it.
void validate_run(const RunStats& stats, const std::vector<int64_t>& tokens);

}  // namespace adtree::decode
