// The lean path's packed panels (pack_rows.h) kept on disk per model, so a load after the first
// maps them instead of packing: packing GPT-B's matrices reads the 444 MB file and writes 423 MB of
// fresh pages, and on a virtual machine where a page fault costs ~10 us that is most of the load
// (docs/PERFORMANCE.md, "Loading from the packed cache"). A cache file is a safetensors file
//   <root>/<model hash>-<fp32|bf16>.safetensors
// whose tensors are the panels under the names the model asks for ("layers.3.w13"), and the
// converted copies some parts keep (a bf16 model's matrices, the picture decoder's bf16 weights),
// each starting on 64 bytes as a fresh allocation does (the data area page-aligned, U8 padding
// between tensors), with what each is (packed shape, layout) in the metadata. The panels are
// read-only views of the private mapping: the page cache holds them once for every process that
// loads the model.
//
// Each entry carries a checksum of its bytes (io/checksum.h) and the entry table one of its own,
// checked when the file is opened: a damaged file (a flipped sector, a torn write) is a warning and
// a rebuild, never other weights and so never other tokens. Files are written under a temporary
// name unique to the writer and renamed into place, so concurrent first loads each write a whole
// file and the last one stays.
//
// A file is written only at the end of a load whose weights passed every check (the value check
// included), so its existence says the files of that hash were checked: load_model_dir skips the
// value check on a hit. The hash is io/file_hash.h's, remembered by path, size and modification
// time, as make and ccache trust files.
#pragma once
#include <ATen/ATen.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/cpu/packed_gemm.h"

namespace adtree::model {

class PackCache {
 public:
  // The cache of the model `hash` ("sha256:...") packed from `dtype` weights ("fp32" | "bf16")
  // under the folder `root`. Opens the file when it exists and is this model's (format version,
  // hash and dtype in its metadata); a file that is unreadable or someone else's is ignored and
  // replaced at save().
  PackCache(std::string root, std::string hash, std::string dtype);
  ~PackCache();
  PackCache(const PackCache&) = delete;
  PackCache& operator=(const PackCache&) = delete;

  // Whether the file was there for this model (the load's values were checked when it was written).
  bool hit() const { return !cached_.empty(); }
  // Why the file there was not used (damage found at open), for the user; empty otherwise.
  const std::string& warning() const { return warning_; }
  const std::string& path() const { return path_; }

  // The panels of pack_rows(parts, scaled_rows, scale) under `key`: the cached ones when their
  // shape is the request's, else packed now (and kept for save()). An empty PackedWeight where
  // pack_rows gives one (other dtypes and devices).
  PackedWeight pack(const std::string& key, const std::vector<at::Tensor>& parts,
                    int64_t scaled_rows = 0, float scale = 1.0f);

  // A copy of `src` in another dtype or layout that a part of the model keeps beside the file's
  // (a bf16 GPT's matrices from an fp32 file, the picture decoder's bf16 channels-last weights):
  // the cached one when its shape is src's, else convert(src) now (kept for save()). Contiguous and
  // channels-last results keep their layout through the file.
  at::Tensor converted(const std::string& key, const at::Tensor& src,
                       const std::function<at::Tensor(const at::Tensor&)>& convert);

  // Writes the file when anything was packed now: atomically, and then the cache folder pruned to
  // `max_bytes` by dropping the files used longest ago. A failure (a full disk, a read-only
  // folder) costs only the cache: it is returned as a message, and the load goes on.
  std::string save(uint64_t max_bytes = kDefaultMaxBytes);

  // Every file of the folder counts; the default holds GPT-XL's panels in fp32 and bf16 twice.
  static constexpr uint64_t kDefaultMaxBytes = uint64_t(16) << 30;

 private:
  std::string root_, path_, hash_, dtype_, warning_;
  // Views of the file's mapping, and what this load asked for (what save() writes).
  std::map<std::string, PackedWeight> cached_, packed_;
  std::map<std::string, at::Tensor> cached_copies_, copies_;
  bool fresh_ = false;  // something was packed or converted now
};

// What a cache file holds, checked (the constructor's reading, apart for the fuzz target and the
// tests): the entries of `stored` (the file's tensors by stored name) when `meta` says the file is
// `hash`'s in `dtype` in this format; none when it is another model's or layout's. Throws
// adtree::Error when a checksum does not match or the table is malformed.
struct PackCacheEntries {
  std::map<std::string, PackedWeight> panels;
  std::map<std::string, at::Tensor> copies;
};
PackCacheEntries check_pack_cache(const std::map<std::string, std::string>& meta,
                                  const std::map<std::string, at::Tensor>& stored,
                                  const std::string& hash, const std::string& dtype);

// pack_rows through `cache` when there is one (a null cache packs).
PackedWeight pack_with(PackCache* cache, const std::string& key,
                       const std::vector<at::Tensor>& parts, int64_t scaled_rows = 0,
                       float scale = 1.0f);

}  // namespace adtree::model
