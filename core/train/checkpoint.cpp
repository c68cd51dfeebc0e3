#include "train/checkpoint.h"

#include <filesystem>
#include <map>

#include "io/safetensors.h"
#include "train/run_files.h"
#include "util/error.h"

namespace adtree::train {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string Checkpoint::path_in(const std::string& out_dir) {
  return run_file(out_dir, "checkpoint.safetensors");
}

void Checkpoint::save(const std::string& out_dir) const {
  std::map<std::string, at::Tensor> all;
  for (const auto& [k, t] : params) all.emplace("param." + k, t.detach());
  for (const auto& [k, t] : optimizer) all.emplace(k, t.detach());
  for (const auto& [k, t] : extra) all.emplace("extra." + k, t.detach());
  io::write_safetensors(path_in(out_dir), all,
                        {{"format", "adtree-checkpoint"},
                         {"kind", kind},
                         {"step", std::to_string(step)},
                         {"config", config.dump()}});
}

Checkpoint Checkpoint::load(const std::string& out_dir, const std::string& kind,
                            const json& config) {
  const auto path = path_in(out_dir);
  if (!fs::exists(path)) {
    throw Error(path + ": no checkpoint to resume from (run without --resume to start afresh)");
  }
  io::SafetensorsReader r(path);
  const auto& md = r.metadata();
  auto get = [&](const std::string& key) {
    auto it = md.find(key);
    if (it == md.end())
      throw Error(path + ": not a training checkpoint (metadata '" + key + "' missing)");
    return it->second;
  };
  Checkpoint c;
  c.kind = get("kind");
  if (c.kind != kind) {
    throw Error(path + ": this is a '" + c.kind + "' checkpoint, not '" + kind + "'");
  }
  c.step = std::stoll(get("step"));
  c.config = json::parse(get("config"));
  if (c.config != config) {
    // Resuming under different settings would silently train another model than the log says.
    throw Error(path +
                ": the checkpoint was made with another configuration; resume with the same "
                "settings (saved: " +
                c.config.dump() + ")");
  }
  for (auto& [name, t] : r.all()) {
    if (name.rfind("param.", 0) == 0) {
      c.params.emplace(name.substr(6), t);
    } else if (name.rfind("extra.", 0) == 0) {
      c.extra.emplace(name.substr(6), t);
    } else {
      c.optimizer.emplace(name, t);
    }
  }
  return c;
}

}  // namespace adtree::train
