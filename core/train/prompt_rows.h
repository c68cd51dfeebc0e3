// The conditions of a list of prompts for any kind of model directory (caption words, classes,
// T5 caption embeddings), as rows a trainer indexes: what `adtree train drafter --model` samples
// the target with and trains the head on, so that a head needs no dataset.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

#include "model/model_dir.h"

namespace adtree::train {

// Prompts of a text file: one a line; blank lines and lines starting with '#' are skipped. An
// adtree::Error when the file cannot be read or holds no prompt.
std::vector<std::string> read_prompt_list(const std::string& path);

// Every class of a class-conditional model, by number ("0" .. "num_classes - 1").
std::vector<std::string> all_classes(const model::ModelBundle& m);

struct PromptRows {
  std::vector<std::string> prompts;
  model::Condition cond;  // one row per prompt, the conditional stream (fp32 captions)
  int64_t size() const { return int64_t(prompts.size()); }
};

// The rows of `prompts` through the model's own prompt reading (model/prompt_condition.h). A
// prompt the model cannot read is an adtree::Error naming `source`, its line and the cause.
PromptRows prompt_rows(const model::ModelBundle& m, const std::vector<std::string>& prompts,
                       const std::string& source);

// Rows `idx` [n] (int64) of a condition.
model::Condition condition_rows(const model::Condition& c, const at::Tensor& idx);
// The unconditional stream of `c` for CFG: the null class, or the null caption with c's mask.
model::Condition null_condition(const model::Gpt& gpt, const model::Condition& c);
// `a` on top of `b` (the same kind).
model::Condition cat_conditions(const model::Condition& a, const model::Condition& b);

}  // namespace adtree::train
