// `adtree train drafter --model DIR`: the EAGLE draft head of any model directory (the shipped
// model, a converted LlamaGen c2i or t2i model), trained on the target's own CFG samples of a
// prompt list, with no dataset: the pictures it learns from are the ones the head will meet when
// it drafts. The loss is the recipe trained for what is verified (train/head_loss.h): the KL of
// the CFG-mixed, temperature-scaled distributions, with a training-time test over tt_passes
// levels; the CFG scale and temperature default to the model's own sampling settings.
// The run folder holds the samples (drawn once, extended or redrawn when the request changes),
// checkpoints, metrics and, when finished, drafter.safetensors and run.json; install_head puts
// the head into the model directory.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/model_dir.h"
#include "train/config.h"

namespace adtree::train {

// The prompts to sample: the training list and the held-out list the head is measured on (empty:
// validation_share of the training list is held out). A class model's default is every class.
struct HeadPrompts {
  std::vector<std::string> train, validation;
  std::string train_source = "the prompt list", validation_source = "the validation list";
};

// The defaults, with the model's own CFG scale and temperature for sampling and for the loss.
nlohmann::json head_on_model_default_config(const model::ModelBundle& m);

// Trains (or resumes) the head; `opts.init_from` names a finished run to start from, else the
// model's own head is the start when it has one and warm_start is on.
TrainResult train_head_on_model(const std::string& model_dir, const HeadPrompts& prompts,
                                const TrainOptions& opts);

// Puts a finished run's head into `model_dir`: drafter.safetensors in the storage dtype of the
// GPT's weights, model.json's drafter section and provenance. A head already there is moved to
// <run>/replaced-drafter.safetensors first; if the directory then fails to load, it is put back.
// Returns a line saying what was done.
std::string install_head(const std::string& run_dir, const std::string& model_dir);

}  // namespace adtree::train
