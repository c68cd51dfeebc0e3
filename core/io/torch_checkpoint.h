// torch.save() checkpoints read without Python (issue "Real checkpoints without Python"): the zip
// container of torch >= 1.6 (io/zip_archive.h) or the legacy format before it, the pickled object
// through the restricted unpickler (io/torch_pickle.h), which never runs code, and each tensor
// built over its storage's bytes: mapped from the file where they are aligned and the tensor is
// contiguous, copied otherwise. Every storage is checked against its size and, in a zip file,
// against its CRC-32, so a damaged download is an error rather than wrong weights.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace adtree::io {

struct TorchCheckpoint {
  // The state dict: the whole file when it is name -> tensor, else the first of the preferred keys
  // and then "model", "module", "state_dict", "ema" that is (LlamaGen's and DDP's layouts).
  std::map<std::string, at::Tensor> tensors;
  std::string found_at;               // "" (the whole file) or the key it came from
  std::vector<std::string> top_keys;  // the file's top-level keys, for messages
  // Saved training arguments ("args": LlamaGen's argparse.Namespace, or a dict) as plain JSON
  // values; null when there are none.
  nlohmann::json args;
};

// Throws adtree::Error naming `path` for anything that is not a readable checkpoint of tensors:
// another file, a damaged or truncated archive, a Python object other than a state dict's, a
// big-endian file, storages that do not hold their tensors.
// `verify` false skips the storages' CRC-32 (a look at the names and shapes, as the studio's import
// dialog takes before converting; the conversion reads them again, checked).
// `prefer`: keys whose state dict wins over those (MAR's "model_ema", which it samples with, over
// its "model").
TorchCheckpoint read_torch_checkpoint(const std::string& path, bool verify = true,
                                      const std::vector<std::string>& prefer = {});
// The same from bytes in memory (the fuzz target, tests); the tensors are copies.
TorchCheckpoint read_torch_checkpoint(const uint8_t* data, size_t size, const std::string& name);

}  // namespace adtree::io
