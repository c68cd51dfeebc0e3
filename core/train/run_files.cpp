#include "train/run_files.h"

#include <filesystem>
#include <fstream>

#include "util/error.h"

namespace adtree::train {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string run_file(const std::string& out_dir, const std::string& name) {
  return (fs::path(out_dir) / name).string();
}

void write_json_file(const std::string& path, const json& j) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    if (!out) throw Error(path + ": cannot write");
    out << j.dump(2) << "\n";
    if (!out) throw Error(path + ": write failed");
  }
  fs::rename(tmp, path);
}

json read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot open");
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    throw Error(path + ": invalid JSON (" + std::string(e.what()) + ")");
  }
}

}  // namespace adtree::train
