// Ablation sweeps (research bench, docs/adt-tree.md): a grid of decoding settings run on a prompt
// set with fixed seeds, one JSON row per (setting, prompt, seed) with tau, drafted tokens, target
// forwards, wall time, the speed-up over AR measured in the same process, and the target's
// likelihood of the generated tokens (the quality measure for lossy settings). Work units are
// numbered in a fixed order, so `shard i/n` runs every n-th unit and shards merge back into the
// same rows one process would have written.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "decode/settings/method.h"
#include "decode/settings/setting.h"
#include "model/model_dir.h"

namespace adtree::research {

// Each list is an axis of the grid; an empty list keeps the default. The method settings' axes are
// keyed by their setting (decode/settings/setting.h: "adt.beta"), applied in the table's order and
// only to the methods that read them (beta to adt, budget to dynamic and adt, ...): points that
// differ only in a setting their method ignores are the same point and run once.
struct SweepGrid {
  std::vector<std::string> methods{"adt"};
  std::map<std::string, std::vector<decode::SettingValue>> axes;
  decode::MethodSettings base;
  decode::SamplingParams sampling;
};

struct SweepPoint {
  std::string label;  // "adt T=1 beta=0.5 adjacency=left": the swept axes that apply
  decode::MethodSettings method;
  decode::SamplingParams sampling;
  nlohmann::json to_json() const;
};

std::vector<SweepPoint> expand(const SweepGrid& grid);

struct Shard {
  int64_t index = 0, count = 1;
  static Shard parse(const std::string& s);  // "i/n", 0 <= i < n; throws adtree::Error
  bool owns(int64_t unit) const { return unit % count == index; }
};

struct SweepOptions {
  std::vector<std::string> prompts;
  int64_t seeds = 1;
  Shard shard;
  // Adds, after every adt row, EAGLE-2 (dynamic) with its budget N set to ADT-Tree's measured mean
  // drafted tokens on the same prompt and seed: "EAGLE-2 at equal mean draft size".
  bool match_drafted = false;
  std::vector<std::string> skip_keys;  // rows already written (resume): "label|prompt|seed"
};

// Runs the owned units; calls `row` with each finished row (one or two per unit: the matched
// EAGLE-2 row follows its ADT row). `log` gets one line per row.
void run_sweep(const model::ModelBundle& model, const std::vector<SweepPoint>& points,
               const SweepOptions& opts, const std::function<void(const nlohmann::json&)>& row,
               std::ostream* log = nullptr);

std::string row_key(const nlohmann::json& row);  // "label|prompt|seed"

// Merged rows: one per key (later files win), in (label, prompt, seed) order.
std::vector<nlohmann::json> merge_rows(const std::vector<std::vector<nlohmann::json>>& shards);
std::vector<nlohmann::json> read_jsonl(const std::string& path);  // throws adtree::Error

// Per setting: runs, mean tau, mean drafted, mean speed-up (and its min / max), mean NLL minus
// AR's, share of greedy runs token-identical to AR. As JSON rows and as a Markdown table.
std::vector<nlohmann::json> summarize(const std::vector<nlohmann::json>& rows);
std::string markdown_table(const std::vector<nlohmann::json>& summary);

}  // namespace adtree::research
