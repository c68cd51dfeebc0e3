#include "io/checksum.h"

#include <cstdio>

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

}  // namespace adtree::io
