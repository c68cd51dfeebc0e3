#include "io/file_hash.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include "io/checksum.h"
#include "util/error.h"
#include "util/resource_paths.h"
#ifdef ADTREE_HAVE_OPENSSL
#include <openssl/evp.h>
#endif

namespace adtree::io {

#ifdef ADTREE_HAVE_OPENSSL
bool have_sha256() {
  return true;
}

namespace {
std::string sha256_of(const std::vector<std::string>& paths, bool headers,
                      const std::function<void(double)>& progress = {}) {
  namespace fs = std::filesystem;
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
    throw Error("SHA-256 is not available from libcrypto");
  }
  std::vector<char> buf(1 << 20);
  uint64_t total = 0, done = 0;
  for (const auto& path : paths) {
    std::error_code ec;
    if (fs::is_regular_file(path, ec)) total += fs::file_size(path, ec);
  }
  for (const auto& path : paths) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) continue;
    // Name and size first: renaming a file or moving bytes between files changes the hash.
    const std::string head =
        fs::path(path).filename().string() + "\n" + std::to_string(fs::file_size(path)) + "\n";
    if (headers) EVP_DigestUpdate(ctx.get(), head.data(), head.size());
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path + ": cannot be read to compute the model's hash");
    while (in) {
      in.read(buf.data(), std::streamsize(buf.size()));
      if (in.gcount() > 0) EVP_DigestUpdate(ctx.get(), buf.data(), size_t(in.gcount()));
      done += uint64_t(std::max<std::streamsize>(in.gcount(), 0));
      if (progress && total > 0) progress(double(done) / double(total));
    }
    if (in.bad()) throw Error(path + ": read error while computing the model's hash");
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx.get(), md, &n);
  static const char* kHex = "0123456789abcdef";
  std::string out = "sha256:";
  for (unsigned int i = 0; i < n; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 15];
  }
  return out;
}
}  // namespace

std::string sha256_files(const std::vector<std::string>& paths) {
  return sha256_of(paths, true);
}

std::string sha256_file(const std::string& path) {
  if (!std::filesystem::is_regular_file(path)) throw Error(path + ": no such file to hash");
  return sha256_of({path}, false).substr(7);
}
#else
namespace {
std::string sha256_of(const std::vector<std::string>&, bool,
                      const std::function<void(double)>& = {}) {
  return {};
}
}  // namespace
bool have_sha256() {
  return false;
}
std::string sha256_files(const std::vector<std::string>&) {
  return {};
}
std::string sha256_file(const std::string&) {
  return {};
}
#endif

namespace {
namespace fs = std::filesystem;

fs::path cache_file() {
  const fs::path root = util::user_cache_dir();
  return root.empty() ? fs::path() : root / "model-hashes.json";
}

// What the cache trusts: every file's absolute path, size and modification time. Empty while a
// file was modified in the last two seconds: the file system's clock is coarser than the writes
// (as ccache, the cache does not trust a file that may still be changing in the same tick).
std::string signature(const std::vector<std::string>& paths) {
  std::string sig;
  const auto recent = fs::file_time_type::clock::now() - std::chrono::seconds(2);
  for (const auto& p : paths) {
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) continue;
    if (fs::last_write_time(p, ec) > recent) return {};
    const auto size = fs::file_size(p, ec);
    const auto mtime = fs::last_write_time(p, ec).time_since_epoch().count();
    sig += fs::absolute(p, ec).lexically_normal().string() + "|" + std::to_string(size) + "|" +
           std::to_string(mtime) + "\n";
  }
  return sig;
}
// An entry's own checksum over its fields: a damaged entry (a changed digit of a hash) is not
// trusted and the files are hashed again, so a picture never records a wrong model hash.
std::string entry_check(const nlohmann::json& e) {
  return checksum_hex(e.value("files", std::string()) + "\n" + e.value("sha256", std::string()));
}
}  // namespace

std::string sha256_files_cached(const std::vector<std::string>& paths,
                                const std::function<void(double)>& progress) {
  constexpr size_t kKeep = 64;  // models remembered; the oldest are forgotten first
  if (!have_sha256()) return {};
  const std::string key = signature(paths);
  const fs::path file = key.empty() ? fs::path() : cache_file();
  nlohmann::json cache = nlohmann::json::array();
  if (!file.empty()) {
    std::ifstream in(file);
    try {
      if (in) cache = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception&) {
      cache = nlohmann::json::array();  // a damaged cache is rebuilt
    }
    if (!cache.is_array()) cache = nlohmann::json::array();
    for (const auto& e : cache) {
      if (e.is_object() && e.value("files", std::string()) == key && e.contains("sha256") &&
          e["sha256"].is_string() && e.value("check", std::string()) == entry_check(e))
        return e["sha256"].get<std::string>();
    }
  }
  const std::string hash = have_sha256() ? sha256_of(paths, true, progress) : std::string();
  if (file.empty()) return hash;
  nlohmann::json entry = {{"files", key}, {"sha256", hash}};
  entry["check"] = entry_check(entry);
  cache.push_back(std::move(entry));
  while (cache.size() > kKeep) cache.erase(cache.begin());
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  const fs::path tmp = file.string() + ".tmp" + std::to_string(std::rand());
  {
    std::ofstream out(tmp);
    out << cache.dump(1) << "\n";
    if (!out) {
      fs::remove(tmp, ec);
      return hash;
    }
  }
  fs::rename(tmp, file, ec);  // another process may win the race: both wrote true hashes
  if (ec) fs::remove(tmp, ec);
  return hash;
}

}  // namespace adtree::io
