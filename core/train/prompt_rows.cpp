#include "train/prompt_rows.h"

#include <fstream>

#include "model/prompt_condition.h"
#include "util/error.h"

namespace adtree::train {

std::vector<std::string> read_prompt_list(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("cannot read the prompt list " + path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) {
    const auto b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos || line[b] == '#') continue;
    out.push_back(line.substr(b, line.find_last_not_of(" \t\r") - b + 1));
  }
  if (in.bad()) throw Error("cannot read the prompt list " + path);
  if (out.empty()) throw Error(path + " holds no prompt (one a line; '#' starts a comment)");
  return out;
}

std::vector<std::string> all_classes(const model::ModelBundle& m) {
  if (m.gpt_config.cond != model::CondKind::Class) {
    throw Error("this model reads captions: give its prompts with --prompts FILE");
  }
  std::vector<std::string> out;
  for (int64_t i = 0; i < m.gpt_config.num_classes; ++i) out.push_back(std::to_string(i));
  return out;
}

PromptRows prompt_rows(const model::ModelBundle& m, const std::vector<std::string>& prompts,
                       const std::string& source) {
  PromptRows r;
  r.prompts = prompts;
  std::vector<at::Tensor> ids, caps, masks;
  for (size_t i = 0; i < prompts.size(); ++i) {
    model::Condition c;
    try {
      c = model::condition_for_prompt(m, prompts[i], /*cfg=*/false);
    } catch (const Error& e) {
      throw Error(source + ", prompt " + std::to_string(i + 1) + " ('" + prompts[i] +
                  "'): " + e.what());
    }
    // Clones: the model's inference copy makes inference tensors, which training may not save.
    if (c.class_ids.defined()) ids.push_back(c.class_ids.cpu().clone());
    if (c.caption.defined()) {
      caps.push_back(c.caption.cpu().to(at::kFloat).clone());
      masks.push_back(c.caption_mask.cpu().clone());
    }
  }
  if (!ids.empty()) r.cond.class_ids = at::cat(ids);
  if (!caps.empty()) r.cond.caption = at::cat(caps), r.cond.caption_mask = at::cat(masks);
  return r;
}

model::Condition condition_rows(const model::Condition& c, const at::Tensor& idx) {
  model::Condition out;
  if (c.class_ids.defined()) out.class_ids = c.class_ids.index_select(0, idx);
  if (c.caption.defined()) {
    out.caption = c.caption.index_select(0, idx);
    out.caption_mask = c.caption_mask.index_select(0, idx);
  }
  return out;
}

model::Condition null_condition(const model::Gpt& gpt, const model::Condition& c) {
  model::Condition out;
  if (c.class_ids.defined()) {
    out.class_ids = at::full_like(c.class_ids, gpt.config().num_classes);
  } else {
    out.caption = gpt.null_caption()
                      .to(c.caption.device(), c.caption.scalar_type())
                      .unsqueeze(0)
                      .expand_as(c.caption)
                      .contiguous();
    out.caption_mask = c.caption_mask;
  }
  return out;
}

model::Condition cat_conditions(const model::Condition& a, const model::Condition& b) {
  model::Condition out;
  if (a.class_ids.defined()) out.class_ids = at::cat({a.class_ids, b.class_ids});
  if (a.caption.defined()) {
    out.caption = at::cat({a.caption, b.caption});
    out.caption_mask = at::cat({a.caption_mask, b.caption_mask});
  }
  return out;
}

}  // namespace adtree::train
