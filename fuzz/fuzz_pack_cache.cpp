// Fuzzes the packed-weight cache's reader (core/model/cpu/pack_cache.cpp, check_pack_cache, after
// the safetensors reader it stands on): a cache file lives on the user's disk, where a bad sector
// or a torn write can change any byte. The reader must answer adtree::Error (a warning and a
// rebuild at load) or give entries whose bytes match their checksums; never crash or read outside
// the input. The metadata's own hash and dtype are taken as the model's, so the checks run.
#include <cstddef>
#include <cstdint>

#include "io/safetensors.h"
#include "model/cpu/pack_cache.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const adtree::io::SafetensorsReader reader(data, size, "fuzz-cache.safetensors");
    auto meta = reader.metadata();
    const auto entries =
        adtree::model::check_pack_cache(meta, reader.all(), meta["model_hash"], meta["dtype"]);
    for (const auto& [key, w] : entries.panels) {
      if (!w.panels.defined()) __builtin_trap();
    }
  } catch (const adtree::Error&) {
  } catch (const std::exception&) {
    // nlohmann::json's errors on a malformed table: the constructor catches these too
  }
  return 0;
}
