#include "model/dir_files.h"

#include <filesystem>
#include <fstream>

#include "io/safetensors.h"
#include "util/error.h"

namespace adtree::model {

nlohmann::json read_model_json(const std::string& dir) {
  const auto path = (std::filesystem::path(dir) / "model.json").string();
  std::ifstream f(path);
  if (!f) throw Error(path + ": cannot be read");
  auto j = nlohmann::json::parse(f, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw Error(path + ": not a JSON object");
  return j;
}

TensorMap read_dir_weights(const std::string& dir, const std::string& file) {
  const auto path = (std::filesystem::path(dir) / file).string();
  if (!std::filesystem::exists(path))
    throw Error(path + ": missing (the model directory is incomplete)");
  return io::SafetensorsReader(path).all();
}

}  // namespace adtree::model
