#include "io/checksum.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include "util/error.h"

#ifdef ADTREE_HAVE_XXHASH
#include <xxhash.h>
#endif

namespace adtree::io {

#ifdef ADTREE_HAVE_XXHASH
Checksum::Checksum() : state_(XXH3_createState()) {
  XXH3_64bits_reset(static_cast<XXH3_state_t*>(state_));
}
Checksum::~Checksum() {
  XXH3_freeState(static_cast<XXH3_state_t*>(state_));
}
void Checksum::update(const void* data, size_t size) {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state_), data, size);
}
uint64_t Checksum::digest() const {
  return XXH3_64bits_digest(static_cast<XXH3_state_t*>(state_));
}
const char* checksum_name() {
  return "xxh3";
}
#else
Checksum::Checksum() = default;
Checksum::~Checksum() = default;
void Checksum::update(const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < size; ++i) fnv_ = (fnv_ ^ p[i]) * 0x100000001b3ull;
}
uint64_t Checksum::digest() const {
  return fnv_;
}
const char* checksum_name() {
  return "fnv1a";
}
#endif

std::string Checksum::hex() const {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(digest()));
  return buf;
}

uint64_t checksum(const void* data, size_t size) {
  Checksum c;
  c.update(data, size);
  return c.digest();
}

std::string checksum_hex(const void* data, size_t size) {
  Checksum c;
  c.update(data, size);
  return c.hex();
}

std::string directory_checksum(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file(ec)) files.push_back(it->path());
  }
  if (ec) throw Error(dir + ": cannot list the folder (" + ec.message() + ")");
  std::sort(files.begin(), files.end());
  Checksum sum;
  std::vector<char> buf(1 << 20);
  for (const auto& f : files) {
    const std::string head =
        f.lexically_relative(dir).string() + "\n" + std::to_string(fs::file_size(f, ec)) + "\n";
    sum.update(head.data(), head.size());
    std::ifstream in(f, std::ios::binary);
    if (!in) throw Error(f.string() + ": cannot be read");
    while (in.read(buf.data(), std::streamsize(buf.size())) || in.gcount() > 0) {
      sum.update(buf.data(), size_t(in.gcount()));
    }
  }
  return sum.hex();
}

}  // namespace adtree::io
