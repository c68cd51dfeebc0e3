// Fuzzes the safetensors reader (core/io/safetensors.cpp) on arbitrary bytes: model weights come
// from files users download and pass around, so every byte of them is untrusted. The reader must
// answer adtree::Error for anything malformed and never read outside the input nor allocate more
// than the input justifies (a header claiming huge shapes or offsets must fail, not allocate).
// A file that passes is read completely (every tensor copied out), as a model load does.
#include <cstddef>
#include <cstdint>

#include "io/safetensors.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const adtree::io::SafetensorsReader reader(data, size, "fuzz.safetensors");
    size_t bytes = 0;
    for (const auto& info : reader.tensors()) {
      if (reader.find(info.name) != &info) __builtin_trap();  // the index must be consistent
      const at::Tensor t = reader.tensor(info.name);
      bytes += size_t(t.nbytes());
    }
    if (bytes > size) __builtin_trap();  // tensor bytes come from the input, so they fit in it
    for (const auto& [key, value] : reader.metadata()) bytes += key.size() + value.size();
  } catch (const adtree::Error&) {
    // the expected answer to a bad file
  }
  return 0;
}
