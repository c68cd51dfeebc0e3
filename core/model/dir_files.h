// Reading a model directory's files, shared by the families' loaders: model.json as a JSON
// object and a safetensors file as tensors, each failure naming the file.
#pragma once
#include <nlohmann/json.hpp>

#include <string>

#include "model/params.h"

namespace adtree::model {

nlohmann::json read_model_json(const std::string& dir);
// <dir>/<file>, tensors as stored; a missing file says the directory is incomplete.
TensorMap read_dir_weights(const std::string& dir, const std::string& file);

}  // namespace adtree::model
