// Files of a run folder: where they lie, and JSON written whole or not at all.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace adtree::train {

std::string run_file(const std::string& out_dir, const std::string& name);
void write_json_file(const std::string& path, const nlohmann::json& j);
nlohmann::json read_json_file(const std::string& path);

}  // namespace adtree::train
