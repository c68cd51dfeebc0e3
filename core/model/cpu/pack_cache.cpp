#include "model/cpu/pack_cache.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <system_error>

#include "io/checksum.h"
#include "io/safetensors.h"
#include "model/cpu/pack_rows.h"
#include "util/error.h"
#include "util/worker_pool.h"

namespace adtree::model {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {
// Bumped whenever pack_rows lays panels out differently: an old file is then someone else's.
constexpr const char* kFormat = "adtree-packed-panels";
// 3: each entry carries a checksum of its bytes, and the entry table one of its own.
constexpr const char* kVersion = "3";
// The data area starts on a page: each panel's bytes are a multiple of 64, so every panel starts
// on a cache line as a freshly allocated one does.
constexpr size_t kAlignment = 4096;

std::string file_name(const std::string& hash, const std::string& dtype) {
  const std::string prefix = "sha256:";
  if (hash.rfind(prefix, 0) != 0 || hash.size() <= prefix.size()) return {};
  return hash.substr(prefix.size()) + "-" + dtype + ".safetensors";
}

// "<position>:<key>", zero-padded so the file's name order is the order of writing; the key back
// ("" for padding).
std::string stored_name(int index, const std::string& key) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%06d:", index);
  return buf + key;
}
std::string key_of(const std::string& stored) {
  const auto colon = stored.find(':');
  const std::string key = colon == std::string::npos ? std::string() : stored.substr(colon + 1);
  return key == "~pad" ? std::string() : key;
}

// The panel shapes pack_rows gives for n_out rows of width `in` in `dtype`.
std::vector<int64_t> panel_shape(int64_t n_out, int64_t in, at::ScalarType dtype) {
  const int64_t n_panels = (n_out + kPanelWidth - 1) / kPanelWidth;
  if (dtype == at::kFloat) return {n_panels, in, kPanelWidth};
  return {n_panels, (in + 1) / 2, kPanelWidth, 2};
}

// The cached panels for a request, or an empty PackedWeight when they do not fit it.
PackedWeight matching(const std::map<std::string, PackedWeight>& cached, const std::string& key,
                      const std::vector<at::Tensor>& parts) {
  auto it = cached.find(key);
  if (it == cached.end() || parts.empty() || !parts[0].defined()) return {};
  int64_t n_out = 0;
  for (const auto& p : parts) n_out += p.dim() == 2 ? p.size(0) : -1;
  const auto& c = it->second;
  const auto dtype = parts[0].scalar_type();
  if (c.n_out != n_out || parts[0].dim() != 2 || c.in != parts[0].size(1) ||
      c.panels.scalar_type() != dtype ||
      c.panels.sizes() != at::IntArrayRef(panel_shape(n_out, c.in, dtype)))
    return {};
  return c;
}

// Marks a file as just used, for the pruning's least-recently-used order.
void touch(const std::string& path) {
  std::error_code ec;
  fs::last_write_time(path, fs::file_time_type::clock::now(), ec);
}

// Drops the files used longest ago until the folder holds at most max_bytes; `keep` stays.
void prune(const fs::path& root, const fs::path& keep, uint64_t max_bytes) {
  struct Entry {
    fs::path path;
    fs::file_time_type time;
    uint64_t bytes;
  };
  std::vector<Entry> files;
  std::error_code ec;
  const auto hour_ago = fs::file_time_type::clock::now() - std::chrono::hours(1);
  for (const auto& e : fs::directory_iterator(root, ec)) {
    // A writer killed mid-write leaves its temporary file ("<name>.safetensors.tmp.<pid>.<n>"):
    // one an hour old is no live writer's.
    if (e.path().filename().string().find(".safetensors.tmp.") != std::string::npos &&
        e.last_write_time(ec) < hour_ago) {
      fs::remove(e.path(), ec);
      continue;
    }
    if (!e.is_regular_file(ec) || e.path().extension() != ".safetensors") continue;
    files.push_back({e.path(), e.last_write_time(ec), uint64_t(e.file_size(ec))});
  }
  std::sort(files.begin(), files.end(),
            [](const Entry& a, const Entry& b) { return a.time > b.time; });
  uint64_t total = 0;
  for (const auto& f : files) {
    total += f.bytes;
    if (total > max_bytes && f.path != keep) fs::remove(f.path, ec);
  }
}
}  // namespace

PackCache::PackCache(std::string root, std::string hash, std::string dtype)
    : root_(std::move(root)), hash_(std::move(hash)), dtype_(std::move(dtype)) {
  const std::string name = file_name(hash_, dtype_);
  if (root_.empty() || name.empty()) return;  // no hash (a build without libcrypto): no cache
  path_ = (fs::path(root_) / name).string();
  std::error_code ec;
  if (!fs::is_regular_file(path_, ec)) return;
  try {
    std::map<std::string, std::string> meta;
    {
      io::SafetensorsReader header(path_);
      meta = header.metadata();
    }
    auto entries = check_pack_cache(meta, io::map_safetensors(path_), hash_, dtype_);
    cached_ = std::move(entries.panels);
    cached_copies_ = std::move(entries.copies);
    if (!cached_.empty() || !cached_copies_.empty()) touch(path_);
  } catch (const std::exception& e) {
    cached_.clear();  // packed afresh and replaced at save()
    cached_copies_.clear();
    warning_ = "the packed-weight cache " + path_ + " is damaged (" + e.what() +
               "): packing afresh and replacing it";
  }
}

PackCacheEntries check_pack_cache(const std::map<std::string, std::string>& meta,
                                  const std::map<std::string, at::Tensor>& stored,
                                  const std::string& hash, const std::string& dtype) {
  PackCacheEntries out;
  const auto field = [&](const char* k) {
    const auto it = meta.find(k);
    return it == meta.end() ? std::string() : it->second;
  };
  // Another layout, model or dtype (an older program's file): not damage, just not this cache.
  if (field("format") != kFormat || field("version") != kVersion || field("model_hash") != hash ||
      field("dtype") != dtype)
    return out;
  if (field("checksum") != io::checksum_name())
    return out;  // written by a build that sums otherwise
  const std::string table = field("entries");
  if (io::checksum_hex(table) != field("entries_checksum")) {
    throw Error("its table of entries does not match its checksum");
  }
  const auto entries = json::parse(table);
  std::vector<std::pair<std::string, at::Tensor>> kept;  // padding is never read: not summed
  for (const auto& [name, t] : stored) {
    if (!key_of(name).empty()) kept.emplace_back(key_of(name), t);
  }
  // The entries' sums over the pool (GPT-B's 0.5 GB: about 0.09 s on one core).
  std::vector<std::string> sums(kept.size());
  WorkerPool::shared().run(int64_t(kept.size()), 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const at::Tensor& t = kept[size_t(i)].second;
      if (t.is_contiguous()) sums[size_t(i)] = io::checksum_hex(t.data_ptr(), size_t(t.nbytes()));
    }
  });
  for (size_t i = 0; i < kept.size(); ++i) {
    const auto& [key, t] = kept[i];
    const auto& e = entries.at(key);
    if (sums[i].empty() || sums[i] != e.at("checksum").get<std::string>()) {
      throw Error("entry '" + key + "' does not match its checksum");
    }
    if (e.at("kind") == "panels") {
      out.panels[key] = PackedWeight{t, e.at("n_out").get<int64_t>(), e.at("in").get<int64_t>()};
    } else {
      out.copies[key] = e.at("layout") == "channels_last" ? t.permute({0, 3, 1, 2}) : t;
    }
  }
  if (out.panels.size() + out.copies.size() != entries.size()) {
    throw Error("entries are missing from the file");
  }
  return out;
}

PackCache::~PackCache() = default;

PackedWeight PackCache::pack(const std::string& key, const std::vector<at::Tensor>& parts,
                             int64_t scaled_rows, float scale) {
  PackedWeight w = matching(cached_, key, parts);
  if (!w.defined()) {
    w = pack_rows(parts, scaled_rows, scale);
    if (!w.defined()) return w;
    fresh_ = true;
  }
  packed_[key] = w;
  return w;
}

at::Tensor PackCache::converted(const std::string& key, const at::Tensor& src,
                                const std::function<at::Tensor(const at::Tensor&)>& convert) {
  auto it = cached_copies_.find(key);
  at::Tensor t;
  if (it != cached_copies_.end() && it->second.sizes() == src.sizes()) {
    t = it->second;
  } else {
    t = convert(src);
    fresh_ = true;
  }
  copies_[key] = t;
  return t;
}

std::string PackCache::save(uint64_t max_bytes) {
  if (!fresh_ || path_.empty()) return {};
  // Stored as "<position>:<key>" so the file keeps this order, each tensor followed by the U8
  // padding that starts the next one on 64 bytes.
  std::map<std::string, at::Tensor> tensors;
  json entries = json::object();
  uint64_t offset = 0;
  int index = 0;
  const auto add = [&](const std::string& key, const at::Tensor& t) {
    const std::string stored = stored_name(index++, key);
    tensors.emplace(stored, t.contiguous());
    offset += uint64_t(t.nbytes());
    if (const uint64_t pad = (64 - offset % 64) % 64) {
      tensors.emplace(stored_name(index - 1, "~pad"), at::zeros({int64_t(pad)}, at::kByte));
      offset += pad;
    }
  };
  // What this load used, and what the file held that it did not (the other picture decoder
  // precision, say), so loads that differ do not rewrite each other's entries away.
  auto panels = packed_;
  panels.insert(cached_.begin(), cached_.end());
  auto copies = copies_;
  copies.insert(cached_copies_.begin(), cached_copies_.end());
  const auto sum = [](const at::Tensor& t) {
    const at::Tensor c = t.contiguous();
    return io::checksum_hex(c.data_ptr(), size_t(c.nbytes()));
  };
  for (const auto& [key, w] : panels) {
    add(key, w.panels);
    entries[key] = {
        {"kind", "panels"}, {"n_out", w.n_out}, {"in", w.in}, {"checksum", sum(w.panels)}};
  }
  for (const auto& [key, t] : copies) {
    const bool nhwc =
        t.dim() == 4 && !t.is_contiguous() && t.is_contiguous(at::MemoryFormat::ChannelsLast);
    const at::Tensor s = nhwc ? t.permute({0, 2, 3, 1}) : t;
    add(key, s);
    entries[key] = {
        {"kind", "copy"}, {"layout", nhwc ? "channels_last" : "contiguous"}, {"checksum", sum(s)}};
  }
  const std::string table = entries.dump();
  const std::map<std::string, std::string> meta{{"format", kFormat},
                                                {"version", kVersion},
                                                {"model_hash", hash_},
                                                {"dtype", dtype_},
                                                {"checksum", io::checksum_name()},
                                                {"entries", table},
                                                {"entries_checksum", io::checksum_hex(table)}};
  try {
    std::error_code ec;
    fs::create_directories(root_, ec);
    if (ec) throw Error("cannot create the folder " + root_ + " (" + ec.message() + ")");
    io::write_safetensors(path_, tensors, meta, kAlignment);
    prune(root_, path_, max_bytes);
  } catch (const std::exception& e) {
    return std::string("the packed weights were not cached: ") + e.what();
  }
  fresh_ = false;
  return {};
}

PackedWeight pack_with(PackCache* cache, const std::string& key,
                       const std::vector<at::Tensor>& parts, int64_t scaled_rows, float scale) {
  return cache ? cache->pack(key, parts, scaled_rows, scale) : pack_rows(parts, scaled_rows, scale);
}

}  // namespace adtree::model
