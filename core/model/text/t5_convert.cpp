#include "model/text/t5_convert.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "io/safetensors.h"
#include "io/torch_checkpoint.h"
#include "model/device.h"
#include "model/params.h"
#include "util/error.h"

namespace adtree::model {

namespace {

namespace fs = std::filesystem;

// The checkpoint files: the shards an index names, else pytorch_model.bin.
std::vector<fs::path> bin_files(const fs::path& d) {
  const fs::path index = d / "pytorch_model.bin.index.json";
  if (fs::is_regular_file(index)) {
    std::set<std::string> names;
    try {
      std::ifstream in(index);
      for (const auto& [k, v] : nlohmann::json::parse(in).at("weight_map").items()) {
        names.insert(v.get<std::string>());
      }
    } catch (const nlohmann::json::exception& e) {
      throw Error(index.string() + ": not a shard index (" + e.what() + ")");
    }
    std::vector<fs::path> out;
    for (const auto& n : names) {
      if (fs::path(n).filename() != fs::path(n))
        throw Error(index.string() + ": a shard outside the folder");
      out.push_back(d / n);
    }
    return out;
  }
  if (fs::is_regular_file(d / "pytorch_model.bin")) return {d / "pytorch_model.bin"};
  throw Error(d.string() + ": neither pytorch_model.bin nor pytorch_model.bin.index.json");
}

}  // namespace

std::string convert_t5_dir(const std::string& dir, const std::string& dtype,
                           const ConvertProgress& progress, const std::atomic<bool>* cancel) {
  const fs::path d = dir;
  if (!fs::is_regular_file(d / "config.json")) {
    throw Error(dir + ": no config.json (not a Hugging Face T5 directory)");
  }
  const fs::path target = d / "model.safetensors";
  if (fs::exists(target)) throw Error(target.string() + " exists already");
  const at::ScalarType cast = dtype.empty() ? at::kFloat : parse_dtype(dtype);
  const auto files = bin_files(d);
  TensorMap out;
  for (size_t i = 0; i < files.size(); ++i) {
    if (cancel != nullptr && cancel->load()) throw Cancelled();
    if (progress)
      progress("reading " + files[i].filename().string(), 0.9 * double(i) / files.size());
    const auto ck = io::read_torch_checkpoint(files[i].string());
    for (const auto& [name, t] : ck.tensors) {
      if (name != "shared.weight" && name.rfind("encoder.", 0) != 0) continue;
      out[name] = dtype.empty() || !t.is_floating_point() ? t : t.to(cast);
    }
  }
  if (!out.count("shared.weight") && !out.count("encoder.embed_tokens.weight")) {
    throw Error(dir + ": no shared.weight or encoder.embed_tokens.weight: not a T5 checkpoint");
  }
  if (out.count("shared.weight")) out.erase("encoder.embed_tokens.weight");  // tied: one copy
  if (progress) progress("writing model.safetensors", 0.9);
  const fs::path tmp = d / ("model.safetensors.partial-" + std::to_string(::getpid()));
  try {
    io::write_safetensors(tmp.string(), out,
                          {{"format", "pt"}, {"content", "T5 encoder (adtree convert --t5)"}});
    fs::rename(tmp, target);
  } catch (...) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw;
  }
  return "wrote " + target.string() + " (" + std::to_string(out.size()) + " encoder tensors)";
}

}  // namespace adtree::model
