#include "io/safetensors_shards.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "io/file_write.h"
#include "io/safetensors.h"
#include "util/error.h"

namespace adtree::io {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {
std::string index_path(const std::string& base) {
  return base + ".index.json";
}

// DIR/gpt.safetensors -> "gpt"
std::string stem_of(const std::string& base) {
  auto name = fs::path(base).filename().string();
  const std::string ext = ".safetensors";
  if (name.size() > ext.size() && name.compare(name.size() - ext.size(), ext.size(), ext) == 0)
    name.resize(name.size() - ext.size());
  return name;
}

std::string shard_name(const std::string& stem, size_t i, size_t n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "-%05zu-of-%05zu.safetensors", i + 1, n);
  return stem + buf;
}

// Shard files of `stem` in `dir` that any earlier write may have left.
std::vector<fs::path> existing_shards(const fs::path& dir, const std::string& stem) {
  std::vector<fs::path> out;
  if (!fs::is_directory(dir)) return out;
  const std::regex numbers(R"(-\d{5}-of-\d{5}\.safetensors)");
  for (const auto& e : fs::directory_iterator(dir)) {
    const auto name = e.path().filename().string();
    if (name.size() > stem.size() && name.compare(0, stem.size(), stem) == 0 &&
        std::regex_match(name.substr(stem.size()), numbers))
      out.push_back(e.path());
  }
  return out;
}

uint64_t nbytes(const at::Tensor& t) {
  return uint64_t(t.numel()) * uint64_t(t.element_size());
}

json read_index(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot be read");
  json j;
  try {
    in >> j;
  } catch (const json::exception& e) {
    throw Error(path + ": not valid JSON (" + e.what() + ")");
  }
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object() ||
      j["weight_map"].empty())
    throw Error(path + ": no \"weight_map\" of tensor names to shard files");
  return j;
}
}  // namespace

std::vector<std::string> safetensors_set_files(const std::string& base) {
  if (fs::exists(base)) return {base};
  const auto idx = index_path(base);
  if (!fs::exists(idx)) return {};
  std::vector<std::string> out{idx};
  std::set<std::string> shards;
  try {
    const auto j = read_index(idx);
    for (const auto& [name, file] : j["weight_map"].items())
      if (file.is_string()) shards.insert(file.get<std::string>());
  } catch (const Error&) {
    return out;  // the load reports the index; the hash still covers the file
  }
  const auto dir = fs::path(base).parent_path();
  for (const auto& s : shards) out.push_back((dir / s).string());
  return out;
}

std::map<std::string, at::Tensor> map_safetensors_set(const std::string& base) {
  const auto idx = index_path(base);
  const bool single = fs::exists(base), sharded = fs::exists(idx);
  if (single && sharded)
    throw Error(base + " and " + idx + " both exist: keep one layout of these weights");
  if (single) return map_safetensors(base);
  if (!sharded) throw Error(base + ": does not exist (nor its shard index " + idx + ")");
  const auto j = read_index(idx);
  // Shard names are plain file names next to the index: nothing outside the model directory.
  const std::regex safe(R"([A-Za-z0-9_.-]+\.safetensors)");
  std::map<std::string, std::string> where;  // tensor -> shard
  for (const auto& [name, file] : j["weight_map"].items()) {
    if (!file.is_string() || !std::regex_match(file.get<std::string>(), safe) ||
        file.get<std::string>().find("..") != std::string::npos)
      throw Error(idx + ": tensor \"" + name + "\" names no plain shard file in this directory");
    where[name] = file.get<std::string>();
  }
  std::map<std::string, at::Tensor> out;
  std::set<std::string> shards;
  for (const auto& [name, file] : where) shards.insert(file);
  const auto dir = fs::path(base).parent_path();
  uint64_t total = 0;
  for (const auto& shard : shards) {
    const auto path = (dir / shard).string();
    if (!fs::exists(path)) throw Error(idx + ": its shard " + path + " is missing");
    for (auto& [name, t] : map_safetensors(path)) {
      auto it = where.find(name);
      if (it == where.end() || it->second != shard)
        throw Error(path + ": holds tensor \"" + name + "\", which the index puts elsewhere");
      total += nbytes(t);
      out.emplace(name, std::move(t));
    }
  }
  for (const auto& [name, shard] : where) {
    if (!out.count(name))
      throw Error(idx + ": tensor \"" + name + "\" is not in its shard " + shard);
  }
  const auto& meta = j.value("metadata", json::object());
  if (meta.is_object() && meta.contains("total_size") &&
      (!meta["total_size"].is_number_unsigned() || meta["total_size"].get<uint64_t>() != total))
    throw Error(idx + ": total_size does not match the " + std::to_string(total) +
                " bytes of its shards");
  return out;
}

void write_safetensors_set(const std::string& base,
                           const std::map<std::string, at::Tensor>& tensors, uint64_t max_bytes,
                           const std::map<std::string, std::string>& metadata) {
  const auto dir = fs::path(base).parent_path();
  const auto stem = stem_of(base);
  uint64_t total = 0;
  for (const auto& [name, t] : tensors) total += t.defined() ? nbytes(t) : 0;
  const auto old = existing_shards(dir, stem);
  std::error_code ec;
  if (total <= max_bytes) {
    write_safetensors(base, tensors, metadata);
    fs::remove(index_path(base), ec);
    for (const auto& p : old) fs::remove(p, ec);
    return;
  }
  // Greedy in name order: a shard takes tensors while they fit, and always at least one.
  std::vector<std::map<std::string, at::Tensor>> parts(1);
  uint64_t used = 0;
  for (const auto& [name, t] : tensors) {
    const uint64_t b = t.defined() ? nbytes(t) : 0;
    if (!parts.back().empty() && used + b > max_bytes) parts.emplace_back(), used = 0;
    parts.back().emplace(name, t);
    used += b;
  }
  json map = json::object();
  std::set<std::string> written;
  for (size_t i = 0; i < parts.size(); ++i) {
    const auto name = shard_name(stem, i, parts.size());
    write_safetensors((dir / name).string(), parts[i], metadata);
    for (const auto& [t, _] : parts[i]) map[t] = name;
    written.insert(name);
  }
  const json index = {{"metadata", {{"total_size", total}}}, {"weight_map", map}};
  const auto idx = index_path(base);
  write_file(idx + ".tmp", index.dump(1) + "\n", "the shard index");
  fs::rename(idx + ".tmp", idx, ec);
  if (ec) throw Error(idx + ": cannot be written (" + ec.message() + ")");
  fs::remove(base, ec);
  for (const auto& p : old)
    if (!written.count(p.filename().string())) fs::remove(p, ec);
}

}  // namespace adtree::io
