// Fuzzes the torch.save() reader (core/io/torch_checkpoint.cpp: the zip container through
// minizip, the legacy format, the restricted unpickler) on arbitrary bytes: checkpoints are
// downloaded files, so every byte is untrusted. The reader must answer adtree::Error for anything
// malformed, never run code, never read outside the input, and never allocate more than the input
// justifies. A file that passes has every tensor built, as a conversion does.
#include <cstddef>
#include <cstdint>

#include "io/torch_checkpoint.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto ck = adtree::io::read_torch_checkpoint(data, size, "fuzz.pt");
    size_t bytes = 0;
    for (const auto& [name, t] : ck.tensors) {
      if (t.numel() > 0) bytes += size_t(t.contiguous().sum().numel());  // touch every element
      bytes += name.size();
    }
    (void)bytes;
  } catch (const adtree::Error&) {
    // the expected answer to a bad file
  }
  return 0;
}
