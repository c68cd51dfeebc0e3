// safetensors files (https://github.com/huggingface/safetensors format): an 8-byte little-endian
// header length N, N bytes of JSON {name: {dtype, shape, data_offsets: [begin, end]},
// "__metadata__": {str: str}}, then the data area. The reader memory-maps the file (or reads a
// buffer in memory) and validates the whole header before any tensor byte is touched, so a corrupt
// file is an adtree::Error, never a bad read. Nothing it allocates is larger than a small multiple
// of the input's size, whatever sizes the header claims.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace adtree::io {

enum class DType { F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL };

size_t dtype_size(DType d);
std::string dtype_name(DType d);             // "F32", "BF16", ...
DType parse_dtype(const std::string& name);  // throws adtree::Error on unknown names
at::ScalarType to_scalar_type(DType d);
DType from_scalar_type(at::ScalarType t);  // throws adtree::Error for unsupported types

struct TensorInfo {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // byte offsets inside the data area
  uint64_t end = 0;
};

class SafetensorsReader {
 public:
  // Maps and validates `path`. Throws adtree::Error naming the file, the tensor and the problem.
  explicit SafetensorsReader(const std::string& path);
  // Validates safetensors bytes already in memory (same checks as a file). The bytes are borrowed,
  // not copied: they must outlive the reader. `name` stands for the file name in messages.
  SafetensorsReader(const uint8_t* bytes, size_t size, const std::string& name);
  ~SafetensorsReader();
  SafetensorsReader(const SafetensorsReader&) = delete;
  SafetensorsReader& operator=(const SafetensorsReader&) = delete;

  const std::string& path() const { return path_; }
  // In data-area order (by begin offset; ties by name), which for files from write_safetensors is
  // also name order.
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find(const std::string& name) const;  // nullptr if absent
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  // Raw bytes of one tensor (inside the mapping or buffer; valid while the reader lives).
  const uint8_t* data(const TensorInfo& info) const;
  // An owned CPU tensor holding a copy of the bytes (throws if `name` is absent).
  at::Tensor tensor(const std::string& name) const;
  // All tensors as owned CPU tensors.
  std::map<std::string, at::Tensor> all() const;

 private:
  // The one validation of the bytes in map_[0, file_size_), for files and buffers alike.
  void parse();

  std::string path_;
  int fd_ = -1;
  const uint8_t* map_ = nullptr;  // the mapping (fd_ >= 0) or the borrowed buffer (fd_ < 0)
  uint64_t file_size_ = 0;
  uint64_t data_start_ = 0;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

// Tensors that view the memory-mapped file instead of copying it: pages load on first use and
// the kernel may drop them again, so a 3 GB checkpoint costs no second copy in memory. The mapping
// lives as long as any returned tensor (each holds a reference to the reader). The mapping is
// private copy-on-write: writing into a tensor never changes the file. BOOL tensors and tensors
// whose bytes are not aligned for their dtype are copied. Throws adtree::Error like the reader.
std::map<std::string, at::Tensor> map_safetensors(const std::string& path);

// Writes tensors (any device; copied to contiguous CPU) and metadata. Tensors keep their dtype.
// Written to `path`.tmp first, then renamed, so an interrupted write never leaves a corrupt file.
// The header is padded with spaces so the data area starts on a multiple of `data_alignment`
// bytes (a power of two, at least 8) from the start of the file.
void write_safetensors(const std::string& path, const std::map<std::string, at::Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {},
                       size_t data_alignment = 8);

}  // namespace adtree::io
