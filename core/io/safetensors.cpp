#include "io/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>
#include <utility>

#include "io/mapped_pages.h"
#include "util/error.h"

// Tensor bytes are copied verbatim between the file (little-endian by specification) and memory.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors I/O copies raw bytes and assumes a little-endian host");

namespace adtree::io {

namespace {

using json = nlohmann::json;

// Same cap as the reference implementation: no legitimate header comes close, and it bounds the
// memory a hostile length field can make us spend on JSON parsing.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
// A valid header nests three deep (object > entry > shape); the cap keeps a header made of
// brackets from building a huge DOM.
constexpr int kMaxJsonDepth = 64;
constexpr const char* kMetadataKey = "__metadata__";

std::string quoted(const std::string& s) {
  return "'" + s + "'";
}

[[noreturn]] void fail(const std::string& path, const std::string& problem) {
  throw Error("Invalid safetensors file " + quoted(path) + ": " + problem + ".");
}

[[noreturn]] void fail_tensor(const std::string& path, const std::string& tensor,
                              const std::string& problem) {
  throw Error("Invalid safetensors file " + quoted(path) + ": tensor " + quoted(tensor) + ": " +
              problem + ".");
}

[[noreturn]] void fail_write(const std::string& path, const std::string& problem) {
  throw Error("Cannot write safetensors file " + quoted(path) + ": " + problem + ".");
}

std::string errno_text(int err) {
  return std::strerror(err);
}

std::string json_type(const json& j) {
  return j.type_name();
}

// Depth of bracket nesting outside string literals; only needs to be right for valid JSON, since
// invalid JSON is rejected by the parser anyway.
int max_json_depth(const char* p, size_t n) {
  int depth = 0, max_depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < n; ++i) {
    const char c = p[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      max_depth = std::max(max_depth, ++depth);
      if (max_depth > kMaxJsonDepth) return max_depth;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return max_depth;
}

// Reads a non-negative JSON integer; `what` names the field in the error.
uint64_t to_u64(const std::string& path, const std::string& tensor, const json& j,
                const std::string& what) {
  if (j.is_number_unsigned()) return j.get<uint64_t>();
  if (j.is_number_integer()) {
    fail_tensor(path, tensor, what + " is negative (" + std::to_string(j.get<int64_t>()) + ")");
  }
  fail_tensor(path, tensor,
              what + " must be a non-negative integer, but it is a " + json_type(j) +
                  (j.is_number() ? " (" + j.dump() + ")" : ""));
}

TensorInfo parse_entry(const std::string& path, const std::string& name, const json& entry) {
  if (!entry.is_object()) {
    fail_tensor(path, name, "entry must be a JSON object, but it is a " + json_type(entry));
  }
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    if (!entry.contains(key)) fail_tensor(path, name, std::string("missing \"") + key + "\"");
  }
  TensorInfo info;
  info.name = name;

  const json& dtype = entry.at("dtype");
  if (!dtype.is_string()) {
    fail_tensor(path, name, "\"dtype\" must be a string, but it is a " + json_type(dtype));
  }
  try {
    info.dtype = parse_dtype(dtype.get<std::string>());
  } catch (const Error&) {
    fail_tensor(path, name, "unknown dtype \"" + dtype.get<std::string>() + "\"");
  }

  const json& shape = entry.at("shape");
  if (!shape.is_array()) {
    fail_tensor(path, name, "\"shape\" must be an array, but it is a " + json_type(shape));
  }
  uint64_t elements = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    const uint64_t dim = to_u64(path, name, shape[i], "shape dimension " + std::to_string(i));
    if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      fail_tensor(
          path, name,
          "shape dimension " + std::to_string(i) + " (" + std::to_string(dim) + ") is too large");
    }
    info.shape.push_back(static_cast<int64_t>(dim));
    // A zero anywhere makes the product 0, so overflow in other dims of an empty tensor is moot.
    if (elements != 0 && dim != 0 && __builtin_mul_overflow(elements, dim, &elements)) {
      fail_tensor(path, name, "shape " + shape.dump() + " has an element count that overflows");
    }
    if (dim == 0) elements = 0;
  }
  uint64_t nbytes = 0;
  if (__builtin_mul_overflow(elements, dtype_size(info.dtype), &nbytes)) {
    fail_tensor(path, name, "shape " + shape.dump() + " has a byte size that overflows");
  }

  const json& offsets = entry.at("data_offsets");
  if (!offsets.is_array() || offsets.size() != 2) {
    fail_tensor(path, name,
                "\"data_offsets\" must be an array [begin, end], but it is " + offsets.dump());
  }
  info.begin = to_u64(path, name, offsets[0], "data_offsets begin");
  info.end = to_u64(path, name, offsets[1], "data_offsets end");
  if (info.begin > info.end) {
    fail_tensor(path, name,
                "data_offsets begin " + std::to_string(info.begin) + " is after end " +
                    std::to_string(info.end));
  }
  if (info.end - info.begin != nbytes) {
    fail_tensor(path, name,
                "data_offsets span " + std::to_string(info.end - info.begin) + " bytes but shape " +
                    shape.dump() + " of " + dtype_name(info.dtype) + " needs " +
                    std::to_string(nbytes) + " bytes (size mismatch)");
  }
  return info;
}

std::map<std::string, std::string> parse_metadata(const std::string& path, const json& meta) {
  if (!meta.is_object()) {
    fail(path, "\"__metadata__\" must be an object of strings, but it is a " + json_type(meta));
  }
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : meta.items()) {
    if (!value.is_string()) {
      fail(path, "\"__metadata__\" value for key '" + key + "' must be a string, but it is a " +
                     json_type(value));
    }
    out.emplace(key, value.get<std::string>());
  }
  return out;
}

// The little-endian header length in the first 8 bytes, checked against the file size.
uint64_t read_header_len(const std::string& path, const uint8_t* map, uint64_t file_size) {
  if (file_size < 8) {
    fail(path, "file is " + std::to_string(file_size) +
                   " bytes, shorter than the 8-byte header length field (truncated or empty)");
  }
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | map[i];
  if (header_len > kMaxHeaderBytes) {
    fail(path, "header length " + std::to_string(header_len) + " is absurdly large (limit " +
                   std::to_string(kMaxHeaderBytes) + " bytes)");
  }
  if (header_len > file_size - 8) {
    fail(path, "header length " + std::to_string(header_len) + " is beyond the file size (" +
                   std::to_string(file_size) + " bytes, so at most " +
                   std::to_string(file_size - 8) + " header bytes)");
  }
  return header_len;
}

// The header's JSON object: no NUL byte, not nested too deep, no top-level key twice.
json parse_header(const std::string& path, const char* header, uint64_t header_len) {
  // nlohmann stops at a NUL byte as if the input ended there, which would let anything after
  // it through unchecked; a NUL cannot occur in valid JSON.
  if (const void* nul = std::memchr(header, '\0', header_len)) {
    fail(path, "header is not valid JSON (NUL byte at header offset " +
                   std::to_string(static_cast<const char*>(nul) - header) + ")");
  }
  if (max_json_depth(header, header_len) > kMaxJsonDepth) {
    fail(path, "header JSON is nested more than " + std::to_string(kMaxJsonDepth) + " levels deep");
  }
  // nlohmann keeps only one of two equal keys; record top-level keys to reject duplicates,
  // which would otherwise silently hide a tensor.
  std::set<std::string> keys;
  std::string duplicate;
  json root;
  try {
    root = json::parse(header, header + header_len,
                       [&](int depth, json::parse_event_t event, json& parsed) {
                         if (depth == 1 && event == json::parse_event_t::key) {
                           const std::string& k = parsed.get_ref<const std::string&>();
                           if (!keys.insert(k).second && duplicate.empty()) duplicate = k;
                         }
                         return true;
                       });
  } catch (const json::exception& e) {
    fail(path, std::string("header is not valid JSON (") + e.what() + ")");
  }
  if (!root.is_object()) {
    fail(path, "header must be a JSON object, but it is a " + json_type(root));
  }
  if (!duplicate.empty())
    fail(path, "header names '" + duplicate + "' more than once (duplicate key)");
  return root;
}

// Puts the tensors in data-area order (by begin, end, name) and rejects overlapping byte ranges.
void sort_and_check_overlaps(const std::string& path, std::vector<TensorInfo>& tensors) {
  std::sort(tensors.begin(), tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  });
  // Empty tensors occupy no bytes, so they cannot overlap anything.
  const TensorInfo* prev = nullptr;
  for (const TensorInfo& t : tensors) {
    if (t.begin == t.end) continue;
    if (prev != nullptr && t.begin < prev->end) {
      fail_tensor(path, t.name,
                  "bytes [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
                      ") overlap tensor '" + prev->name + "' at [" + std::to_string(prev->begin) +
                      ", " + std::to_string(prev->end) + ")");
    }
    prev = &t;
  }
}

// Writes all of `n` bytes, retrying short writes and EINTR.
bool write_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

size_t dtype_size(DType d) {
  switch (d) {
    case DType::F64:
    case DType::I64:
      return 8;
    case DType::F32:
    case DType::I32:
      return 4;
    case DType::F16:
    case DType::BF16:
    case DType::I16:
      return 2;
    case DType::I8:
    case DType::U8:
    case DType::BOOL:
      return 1;
  }
  throw Error("Internal error: unknown safetensors dtype.");
}

std::string dtype_name(DType d) {
  switch (d) {
    case DType::F64:
      return "F64";
    case DType::F32:
      return "F32";
    case DType::F16:
      return "F16";
    case DType::BF16:
      return "BF16";
    case DType::I64:
      return "I64";
    case DType::I32:
      return "I32";
    case DType::I16:
      return "I16";
    case DType::I8:
      return "I8";
    case DType::U8:
      return "U8";
    case DType::BOOL:
      return "BOOL";
  }
  throw Error("Internal error: unknown safetensors dtype.");
}

DType parse_dtype(const std::string& name) {
  static const std::map<std::string, DType> kByName = {
      {"F64", DType::F64}, {"F32", DType::F32},  {"F16", DType::F16}, {"BF16", DType::BF16},
      {"I64", DType::I64}, {"I32", DType::I32},  {"I16", DType::I16}, {"I8", DType::I8},
      {"U8", DType::U8},   {"BOOL", DType::BOOL}};
  const auto it = kByName.find(name);
  if (it == kByName.end()) throw Error("Unknown safetensors dtype \"" + name + "\".");
  return it->second;
}

at::ScalarType to_scalar_type(DType d) {
  switch (d) {
    case DType::F64:
      return at::kDouble;
    case DType::F32:
      return at::kFloat;
    case DType::F16:
      return at::kHalf;
    case DType::BF16:
      return at::kBFloat16;
    case DType::I64:
      return at::kLong;
    case DType::I32:
      return at::kInt;
    case DType::I16:
      return at::kShort;
    case DType::I8:
      return at::kChar;
    case DType::U8:
      return at::kByte;
    case DType::BOOL:
      return at::kBool;
  }
  throw Error("Internal error: unknown safetensors dtype.");
}

DType from_scalar_type(at::ScalarType t) {
  switch (t) {
    case at::kDouble:
      return DType::F64;
    case at::kFloat:
      return DType::F32;
    case at::kHalf:
      return DType::F16;
    case at::kBFloat16:
      return DType::BF16;
    case at::kLong:
      return DType::I64;
    case at::kInt:
      return DType::I32;
    case at::kShort:
      return DType::I16;
    case at::kChar:
      return DType::I8;
    case at::kByte:
      return DType::U8;
    case at::kBool:
      return DType::BOOL;
    default:
      break;
  }
  throw Error(std::string("Tensors of type ") + c10::toString(t) +
              " cannot be stored in a safetensors file.");
}

SafetensorsReader::SafetensorsReader(const std::string& path) : path_(path) {
  try {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
      const int err = errno;
      throw Error("Cannot open safetensors file " + quoted(path) + ": " + errno_text(err) + ".");
    }
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
      const int err = errno;
      throw Error("Cannot read safetensors file " + quoted(path) + ": " + errno_text(err) + ".");
    }
    if (!S_ISREG(st.st_mode)) fail(path, "it is not a regular file");
    file_size_ = static_cast<uint64_t>(st.st_size);
    if (file_size_ < 8) parse();  // reports the short file (mmap cannot map 0 bytes)
    // Writable but private (copy-on-write): tensors from map_safetensors may be written in place
    // by callers without touching the file; the reader itself only reads.
    void* m = ::mmap(nullptr, file_size_, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd_, 0);
    if (m == MAP_FAILED) {
      const int err = errno;
      throw Error("Cannot map safetensors file " + quoted(path) + ": " + errno_text(err) + ".");
    }
    map_ = static_cast<const uint8_t*>(m);
    register_mapping(map_, file_size_);
    parse();
  } catch (...) {
    if (map_ != nullptr) {
      unregister_mapping(map_);
      ::munmap(const_cast<uint8_t*>(map_), file_size_);
    }
    if (fd_ >= 0) ::close(fd_);
    map_ = nullptr;
    fd_ = -1;
    throw;
  }
}

SafetensorsReader::SafetensorsReader(const uint8_t* bytes, size_t size, const std::string& name)
    : path_(name), map_(bytes), file_size_(bytes == nullptr ? 0 : size) {
  parse();
}

void SafetensorsReader::parse() {
  const std::string& path = path_;
  const uint64_t header_len = read_header_len(path, map_, file_size_);
  data_start_ = 8 + header_len;
  const uint64_t data_size = file_size_ - data_start_;
  const json root = parse_header(path, reinterpret_cast<const char*>(map_ + 8), header_len);

  for (const auto& [key, value] : root.items()) {
    if (key == kMetadataKey) {
      metadata_ = parse_metadata(path, value);
      continue;
    }
    TensorInfo info = parse_entry(path, key, value);
    if (info.end > data_size) {
      fail_tensor(path, key,
                  "data_offsets end " + std::to_string(info.end) + " is beyond the data area (" +
                      std::to_string(data_size) +
                      " bytes; offsets out of range, the file may be truncated)");
    }
    tensors_.push_back(std::move(info));
  }

  sort_and_check_overlaps(path, tensors_);
  for (size_t i = 0; i < tensors_.size(); ++i) index_.emplace(tensors_[i].name, i);
}

SafetensorsReader::~SafetensorsReader() {
  if (fd_ < 0) return;  // a borrowed buffer
  if (map_ != nullptr) {
    unregister_mapping(map_);
    ::munmap(const_cast<uint8_t*>(map_), file_size_);
  }
  ::close(fd_);
}

const TensorInfo* SafetensorsReader::find(const std::string& name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

const uint8_t* SafetensorsReader::data(const TensorInfo& info) const {
  // `info` may not come from this reader; never hand out a pointer past the mapping.
  if (info.begin > info.end || info.end > file_size_ - data_start_) {
    throw Error("Tensor " + quoted(info.name) + " lies outside the data area of safetensors file " +
                quoted(path_) + ".");
  }
  return map_ + data_start_ + info.begin;
}

at::Tensor SafetensorsReader::tensor(const std::string& name) const {
  const TensorInfo* info = find(name);
  if (info == nullptr) {
    throw Error("Safetensors file " + quoted(path_) + " has no tensor " + quoted(name) + ".");
  }
  // A copy rather than from_blob: the mapping offsets need not be aligned for the dtype, and the
  // tensor must outlive the reader.
  at::Tensor out = at::empty(info->shape, at::TensorOptions().dtype(to_scalar_type(info->dtype)));
  const size_t nbytes = static_cast<size_t>(info->end - info->begin);
  if (nbytes > 0) {
    const uint8_t* src = data(*info);
    if (info->dtype == DType::BOOL) {
      // torch assumes bool bytes are exactly 0 or 1; other values would break comparisons.
      auto* dst = static_cast<uint8_t*>(out.data_ptr());
      for (size_t i = 0; i < nbytes; ++i) dst[i] = src[i] != 0 ? 1 : 0;
    } else {
      std::memcpy(out.data_ptr(), src, nbytes);
    }
  }
  return out;
}

std::map<std::string, at::Tensor> SafetensorsReader::all() const {
  std::map<std::string, at::Tensor> out;
  for (const TensorInfo& t : tensors_) out.emplace(t.name, tensor(t.name));
  return out;
}

std::map<std::string, at::Tensor> map_safetensors(const std::string& path) {
  auto reader = std::make_shared<SafetensorsReader>(path);
  std::map<std::string, at::Tensor> out;
  for (const TensorInfo& t : reader->tensors()) {
    const size_t elem = dtype_size(t.dtype);
    const uint8_t* src = t.end > t.begin ? reader->data(t) : nullptr;
    const bool aligned = src != nullptr && reinterpret_cast<uintptr_t>(src) % elem == 0;
    if (t.dtype == DType::BOOL || !aligned) {
      out.emplace(t.name, reader->tensor(t.name));
      continue;
    }
    // The deleter owns a reference to the reader, so the mapping outlives every view of it.
    out.emplace(t.name, at::from_blob(
                            const_cast<uint8_t*>(src), t.shape, [reader](void*) {},
                            at::TensorOptions().dtype(to_scalar_type(t.dtype))));
  }
  return out;
}

void write_safetensors(const std::string& path, const std::map<std::string, at::Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata, size_t data_alignment) {
  std::vector<std::pair<std::string, at::Tensor>> cpu;  // in name order (std::map order)
  json header = json::object();
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    if (name == kMetadataKey)
      fail_write(path, "\"__metadata__\" is reserved and cannot name a tensor");
    if (!t.defined()) fail_write(path, "tensor " + quoted(name) + " is undefined");
    if (t.layout() != at::kStrided)
      fail_write(path, "tensor " + quoted(name) + " is not a dense tensor");
    DType dtype = DType::F32;
    try {
      dtype = from_scalar_type(t.scalar_type());
    } catch (const Error& e) {
      fail_write(path, "tensor " + quoted(name) + ": " + e.what());
    }
    at::Tensor c = t.detach().to(at::kCPU).contiguous();
    const uint64_t nbytes = static_cast<uint64_t>(c.numel()) * dtype_size(dtype);
    header[name] = {{"dtype", dtype_name(dtype)},
                    {"shape", c.sizes().vec()},
                    {"data_offsets", {offset, offset + nbytes}}};
    offset += nbytes;
    cpu.emplace_back(name, std::move(c));
  }
  if (!metadata.empty()) header[kMetadataKey] = metadata;

  std::string text;
  try {
    text = header.dump();
  } catch (const json::exception&) {
    fail_write(path, "a tensor name or metadata string is not valid UTF-8");
  }
  // Pad so the data area starts aligned (8 at least), which lets readers map tensors in place;
  // the 8 bytes of the length come first.
  const size_t align = std::max<size_t>(8, data_alignment);
  text.append((align - (text.size() + 8) % align) % align, ' ');
  uint8_t len_bytes[8];
  for (int i = 0; i < 8; ++i) len_bytes[i] = static_cast<uint8_t>(uint64_t{text.size()} >> (8 * i));

  // A temporary name of this writer's own (process and call): writers of the same file at once
  // (three first loads filling one cache) each write a whole file, and the last rename stays.
  static std::atomic<uint64_t> calls{0};
  const std::string tmp =
      path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(++calls);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    fail_write(path, "cannot create " + quoted(tmp) + " (" + errno_text(err) + ")");
  }
  bool ok = write_all(fd, len_bytes, sizeof len_bytes) && write_all(fd, text.data(), text.size());
  for (size_t i = 0; ok && i < cpu.size(); ++i) {
    const at::Tensor& c = cpu[i].second;
    ok = write_all(fd, c.data_ptr(), c.nbytes());
  }
  // fsync before rename: otherwise a crash can leave the new name pointing at unwritten blocks.
  ok = ok && ::fsync(fd) == 0;
  const int err = errno;
  ok = (::close(fd) == 0) && ok;
  if (!ok) {
    ::unlink(tmp.c_str());
    fail_write(path, "writing " + quoted(tmp) + " failed (" + errno_text(err) + ")");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int rerr = errno;
    ::unlink(tmp.c_str());
    fail_write(path, "cannot rename " + quoted(tmp) + " into place (" + errno_text(rerr) + ")");
  }
}

}  // namespace adtree::io
