// The last training step (`adtree train assemble`): a complete model directory from finished VQ,
// GPT and drafter runs: model.json (config, sampling defaults, licences with attribution,
// provenance and metrics of every run), text.json and the three weight files, stored in fp16,
// bf16 or fp32 (the loader converts them to the compute dtype).
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "decode/sampling.h"
#include "io/dataset.h"

namespace adtree::train {

struct AssembleOptions {
  std::string vq_dir, gpt_dir, drafter_dir;  // finished run folders (drafter optional: "")
  std::string out;                           // model directory to write
  std::string dtype = "fp16";                // storage dtype: fp16 | bf16 | fp32
  std::string name = "emoji";
  std::string description;
  nlohmann::json dataset_info = nlohmann::json::object();  // io::Dataset::info of the training data
  std::string dataset_path;
  decode::SamplingParams sampling;  // model.json "sampling": the defaults unless a run chose others
};

// Writes the directory, then loads it back with the product's loader as a check. Returns the
// manifest it wrote.
nlohmann::json assemble_model(const AssembleOptions& opts);

}  // namespace adtree::train
