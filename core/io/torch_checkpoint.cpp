#include "io/torch_checkpoint.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <memory>

#include "io/mapped_pages.h"
#include "io/torch_pickle.h"
#include "io/zip_archive.h"
#include "util/error.h"

namespace adtree::io {

namespace {

using pickle::Kind;
using pickle::Pickle;
using pickle::Ref;
using json = nlohmann::json;

// The whole file, mapped private (copy-on-write, as io/safetensors.h maps): tensors over it may be
// written in place by their users without touching the file.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error(path + ": cannot open the checkpoint (" + std::strerror(errno) + ")");
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      throw Error(path + ": not a regular file");
    }
    size_ = size_t(st.st_size);
    if (size_ > 0) {
      void* m = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
      if (m == MAP_FAILED) {
        const int err = errno;
        ::close(fd);
        throw Error(path + ": cannot map the checkpoint (" + std::strerror(err) + ")");
      }
      data_ = static_cast<uint8_t*>(m);
      register_mapping(data_, size_);
    }
    ::close(fd);
  }
  ~MappedFile() {
    if (data_ == nullptr) return;
    unregister_mapping(data_);
    ::munmap(data_, size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

at::ScalarType storage_dtype(const std::string& cls, const std::string& what) {
  static const std::map<std::string, at::ScalarType> types = {
      {"FloatStorage", at::kFloat}, {"DoubleStorage", at::kDouble},
      {"HalfStorage", at::kHalf},   {"BFloat16Storage", at::kBFloat16},
      {"LongStorage", at::kLong},   {"IntStorage", at::kInt},
      {"ShortStorage", at::kShort}, {"CharStorage", at::kChar},
      {"ByteStorage", at::kByte},   {"BoolStorage", at::kBool}};
  const auto it = types.find(cls);
  if (it == types.end()) throw Error(what + ": tensors of storage type " + cls + " are not read");
  return it->second;
}

// Where storages' bytes come from: a key -> (bytes, size); `keep` holds them alive.
using StorageBytes = std::function<std::pair<const uint8_t*, size_t>(const std::string& key)>;

// Builds the tensors of one checkpoint, each storage once.
class TensorBuilder {
 public:
  TensorBuilder(const Pickle& p, StorageBytes bytes, std::shared_ptr<const void> keep, bool copy,
                std::string what)
      : p_(p),
        bytes_(std::move(bytes)),
        keep_(std::move(keep)),
        copy_(copy),
        what_(std::move(what)) {}

  at::Tensor tensor(Ref r, const std::string& name) {
    const pickle::Value& t = p_.at(r);
    const pickle::Value& s = p_.at(t.items.at(0));
    const at::Tensor storage = this->storage(s);
    int64_t last = t.i;  // the furthest element the view reaches
    bool empty = false;
    for (size_t d = 0; d < t.size.size(); ++d) {
      if (t.size[d] < 0 || t.stride[d] < 0) fail(name, "a negative size or stride");
      if (t.size[d] == 0) empty = true;
      if (t.size[d] > 0 && t.stride[d] > 0 && (t.size[d] - 1) > (INT64_MAX - last) / t.stride[d]) {
        fail(name, "a size that overflows");
      }
      if (t.size[d] > 0) last += (t.size[d] - 1) * t.stride[d];
    }
    if (t.i < 0 || (!empty && last >= storage.numel())) {
      fail(name,
           "a view past the end of its storage (" + std::to_string(storage.numel()) + " elements)");
    }
    if (empty) return at::empty(t.size, storage.options());
    at::Tensor v = storage.as_strided(t.size, t.stride, t.i);
    return v.is_contiguous() ? v : v.contiguous();
  }

 private:
  [[noreturn]] void fail(const std::string& name, const std::string& why) const {
    throw Error(what_ + ": tensor '" + name + "' has " + why);
  }

  at::Tensor storage(const pickle::Value& s) {
    const auto it = cache_.find(s.text);
    if (it != cache_.end()) return it->second;
    const at::ScalarType dtype = storage_dtype(s.dtype, what_);
    const size_t elem = c10::elementSize(dtype);
    const auto [data, size] = bytes_(s.text);
    if (uint64_t(s.i) > size / elem || uint64_t(s.i) * elem != size) {
      throw Error(what_ + ": storage " + s.text + " holds " + std::to_string(size) +
                  " bytes, its tensors need " + std::to_string(s.i) + " x " + std::to_string(elem));
    }
    at::Tensor t;
    const bool aligned = reinterpret_cast<uintptr_t>(data) % elem == 0;
    if (copy_ || !aligned || dtype == at::kBool || s.i == 0) {
      t = at::empty({s.i}, at::TensorOptions().dtype(dtype));
      if (size > 0) std::memcpy(t.data_ptr(), data, size);
      if (dtype == at::kBool) t = t.view(at::kByte).ne(0);  // torch needs bools of 0 or 1
    } else {
      auto keep = keep_;
      t = at::from_blob(
          const_cast<uint8_t*>(data), {s.i}, [keep](void*) {}, at::TensorOptions().dtype(dtype));
    }
    return cache_.emplace(s.text, t).first->second;
  }

  const Pickle& p_;
  StorageBytes bytes_;
  std::shared_ptr<const void> keep_;
  bool copy_;
  std::string what_;
  std::map<std::string, at::Tensor> cache_;
};

// A dict of name -> tensor with at least one entry.
bool is_state_dict(const Pickle& p, Ref d) {
  if (d == pickle::kNoRef || p.at(d).kind != Kind::Dict || p.at(d).items.empty()) return false;
  const auto& it = p.at(d).items;
  for (size_t k = 0; k + 1 < it.size(); k += 2) {
    if (p.at(it[k]).kind != Kind::Str || p.at(it[k + 1]).kind != Kind::Tensor) return false;
  }
  return true;
}

json plain(const Pickle& p, Ref r, int depth) {
  if (r == pickle::kNoRef || depth > 16) return nullptr;
  const pickle::Value& v = p.at(r);
  switch (v.kind) {
    case Kind::Bool:
      return v.i != 0;
    case Kind::Int:
      return v.i;
    case Kind::Float:
      return v.f;
    case Kind::Str:
      return v.text;
    case Kind::Tuple:
    case Kind::List: {
      json a = json::array();
      for (Ref x : v.items) a.push_back(plain(p, x, depth + 1));
      return a;
    }
    case Kind::Record:
      return plain(p, v.state, depth + 1);
    case Kind::Dict: {
      json o = json::object();
      for (size_t k = 0; k + 1 < v.items.size(); k += 2) {
        if (p.at(v.items[k]).kind == Kind::Str) {
          o[p.at(v.items[k]).text] = plain(p, v.items[k + 1], depth + 1);
        }
      }
      return o;
    }
    default:
      return nullptr;
  }
}

TorchCheckpoint state_dict(const Pickle& p, TensorBuilder& build, const std::string& what,
                           const std::vector<std::string>& prefer) {
  TorchCheckpoint out;
  Ref sd = pickle::kNoRef;
  if (is_state_dict(p, p.root)) {
    sd = p.root;
  } else if (p.at(p.root).kind == Kind::Dict) {
    const auto& it = p.at(p.root).items;
    for (size_t k = 0; k + 1 < it.size(); k += 2) {
      if (p.at(it[k]).kind == Kind::Str) out.top_keys.push_back(p.at(it[k]).text);
    }
    std::vector<std::string> keys = prefer;
    for (const char* key : {"model", "module", "state_dict", "ema"}) keys.emplace_back(key);
    for (const auto& key : keys) {
      if (is_state_dict(p, p.find(p.root, key))) {
        sd = p.find(p.root, key);
        out.found_at = key;
        break;
      }
    }
    out.args = plain(p, p.find(p.root, "args"), 0);
  }
  if (sd == pickle::kNoRef) {
    std::string keys;
    for (const auto& k : out.top_keys) keys += (keys.empty() ? "" : ", ") + k;
    throw Error(what +
                ": no state dict found: expected tensors at the top level or under "
                "'model', 'module', 'state_dict' or 'ema'" +
                (keys.empty() ? std::string() : " (top-level keys: " + keys + ")"));
  }
  const auto& it = p.at(sd).items;
  for (size_t k = 0; k + 1 < it.size(); k += 2) {
    const std::string& name = p.at(it[k]).text;
    out.tensors[name] = build.tensor(it[k + 1], name);
  }
  return out;
}

// How a file is read: tensors copied out (a buffer that goes away) or mapped; the storages
// checked against their CRC-32 (a conversion) or not (a look at the shapes).
struct ReadMode {
  bool copy = false, verify = true;
  std::vector<std::string> prefer;  // state-dict keys tried before the usual ones
};

// torch >= 1.6: <dir>/data.pkl, <dir>/data/<key> for each storage, <dir>/byteorder (newer).
TorchCheckpoint read_zip(const uint8_t* data, size_t size, std::shared_ptr<const void> keep,
                         ReadMode mode, const std::string& what) {
  auto zip = std::make_shared<ZipArchive>(data, size, what);
  const ZipArchive::Entry* pkl = nullptr;
  for (const auto& e : zip->entries()) {
    const auto slash = e.name.find('/');
    if (slash != std::string::npos && e.name.substr(slash + 1) == "data.pkl") pkl = &e;
  }
  if (pkl == nullptr) throw Error(what + ": a zip file without data.pkl: not a torch.save() file");
  const std::string dir = pkl->name.substr(0, pkl->name.find('/') + 1);
  if (const auto* order = zip->find(dir + "byteorder")) {
    const auto b = zip->read(*order);
    if (std::string(b.begin(), b.end()) != "little") {
      throw Error(what + ": saved on a big-endian machine, which this reader does not take");
    }
  }
  const auto bytes = zip->read(*pkl);
  const Pickle p = pickle::unpickle(bytes.data(), bytes.size(), what);
  auto inflated = std::make_shared<std::map<std::string, std::vector<uint8_t>>>();
  StorageBytes storage = [zip, dir, inflated, what, mode](const std::string& key) {
    const auto* e = zip->find(dir + "data/" + key);
    if (e == nullptr) throw Error(what + ": storage data/" + key + " is missing from the archive");
    if (!e->stored) {
      auto& buf = (*inflated)[key] = zip->read(*e);
      return std::make_pair<const uint8_t*, size_t>(buf.data(), buf.size());
    }
    if (mode.verify) zip->verify(*e);
    return std::make_pair(zip->stored_bytes(*e), size_t(e->size));
  };
  // Tensors over inflated entries keep their buffers alive, as those over the file keep it.
  auto both = std::make_shared<std::pair<std::shared_ptr<const void>, decltype(inflated)>>(
      std::move(keep), inflated);
  TensorBuilder build(p, storage, both, mode.copy, what);
  return state_dict(p, build, what, mode.prefer);
}

// The pickle of torch's legacy magic number, 0x1950a86a20f9469cfc6c: the first bytes of a file
// written with _use_new_zipfile_serialization=False (torch < 1.6's only format).
constexpr uint8_t kLegacyMagic[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46,
                                    0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19, 0x2e};

// Legacy: the magic, the protocol version, system info, the object, the list of storage keys;
// then each storage in that order as an int64 element count and its bytes.
TorchCheckpoint read_legacy(const uint8_t* data, size_t size, std::shared_ptr<const void> keep,
                            ReadMode mode, const std::string& what) {
  size_t pos = sizeof kLegacyMagic;
  for (int k = 0; k < 2; ++k) pos += pickle::unpickle(data + pos, size - pos, what).end;
  const Pickle p = pickle::unpickle(data + pos, size - pos, what);
  pos += p.end;
  const Pickle keys = pickle::unpickle(data + pos, size - pos, what);
  pos += keys.end;
  std::map<std::string, const pickle::Value*> by_key;
  for (const auto& v : p.values) {
    if (v.kind == Kind::Storage) by_key[v.text] = &v;
  }
  auto where = std::make_shared<std::map<std::string, std::pair<const uint8_t*, size_t>>>();
  if (keys.at(keys.root).kind != Kind::List) throw Error(what + ": no list of storages");
  for (Ref k : keys.at(keys.root).items) {
    const auto it = by_key.find(keys.at(k).text);
    if (keys.at(k).kind != Kind::Str || it == by_key.end()) {
      throw Error(what + ": a storage the object does not use");
    }
    const size_t elem = c10::elementSize(storage_dtype(it->second->dtype, what));
    if (size - pos < 8) throw Error(what + ": the storages end early (truncated file?)");
    uint64_t n = 0;
    std::memcpy(&n, data + pos, 8);
    pos += 8;
    if (n > (size - pos) / elem) throw Error(what + ": the storages end early (truncated file?)");
    (*where)[it->first] = {data + pos, size_t(n * elem)};
    pos += size_t(n * elem);
  }
  StorageBytes storage = [where, what](const std::string& key) {
    const auto it = where->find(key);
    if (it == where->end()) throw Error(what + ": storage " + key + " is not in the file");
    return it->second;
  };
  TensorBuilder build(p, storage, keep, mode.copy, what);
  return state_dict(p, build, what, mode.prefer);
}

TorchCheckpoint read_any(const uint8_t* data, size_t size, std::shared_ptr<const void> keep,
                         ReadMode mode, const std::string& what) {
  if (ZipArchive::looks_like_zip(data, size)) return read_zip(data, size, keep, mode, what);
  if (size >= sizeof kLegacyMagic && std::memcmp(data, kLegacyMagic, sizeof kLegacyMagic) == 0) {
    return read_legacy(data, size, keep, mode, what);
  }
  throw Error(what +
              ": not a torch.save() checkpoint (neither a zip archive nor torch's legacy "
              "format)");
}

}  // namespace

TorchCheckpoint read_torch_checkpoint(const std::string& path, bool verify,
                                      const std::vector<std::string>& prefer) {
  auto file = std::make_shared<MappedFile>(path);
  return read_any(file->data(), file->size(), file, ReadMode{false, verify, prefer}, path);
}

TorchCheckpoint read_torch_checkpoint(const uint8_t* data, size_t size, const std::string& name) {
  if (data == nullptr) size = 0;
  return read_any(data, size, nullptr, ReadMode{true, true, {}}, name);
}

}  // namespace adtree::io
