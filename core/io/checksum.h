// A fast checksum for the program's own caches (the packed weights, the model hashes, the token
// palettes; issue "Real checkpoints without Python", part 4): not a defence against an attacker
// (the files are the user's own), but damage on disk or a torn write is detected, so a cache can
// never change a picture. XXH3-64 from Debian's libxxhash (about 5.5 GB/s on one core of this
// project's test machine, docs/reliability.md); a build without it uses 64-bit FNV-1a, slower but
// the same guarantee.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace adtree::io {

class Checksum {
 public:
  Checksum();
  ~Checksum();
  Checksum(const Checksum&) = delete;
  Checksum& operator=(const Checksum&) = delete;

  void update(const void* data, size_t size);
  uint64_t digest() const;
  std::string hex() const;  // 16 hex digits

 private:
  void* state_ = nullptr;  // XXH3 state, or null with the FNV fallback
  uint64_t fnv_ = 0xcbf29ce484222325ull;
};

uint64_t checksum(const void* data, size_t size);
std::string checksum_hex(const void* data, size_t size);
inline std::string checksum_hex(const std::string& s) {
  return checksum_hex(s.data(), s.size());
}

// One checksum over a folder's files (their paths relative to it, sizes and bytes, in name
// order): a cached download that was changed or damaged since it was sealed no longer matches.
// Throws adtree::Error when the folder cannot be read.
std::string directory_checksum(const std::string& dir);

// "xxh3" or "fnv1a": which one this build writes (files record it; another's is not trusted).
const char* checksum_name();

}  // namespace adtree::io
