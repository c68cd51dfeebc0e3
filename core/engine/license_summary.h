// One line of a model's licences for the model card (ModelInfo::license), from model.json's
// "license": free-form across producers, a string, or an object whose "weights" is a string and
// whose "data" is a string or (the project's trained models) a list of per-source records.
#pragma once
#include <nlohmann/json.hpp>

#include <string>

namespace adtree::engine {

// "weights: CC-BY-4.0; data: Apache-2.0 (noto), CC-BY-4.0 (twemoji)"; "" when there is none.
std::string license_summary(const nlohmann::json& lic);

}  // namespace adtree::engine
