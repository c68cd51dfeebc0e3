#include "io/zip_archive.h"

#include <cstring>

#include "util/error.h"

#ifdef ADTREE_HAVE_MINIZIP
#include <unzip.h>
#include <zlib.h>
#endif

namespace adtree::io {

bool ZipArchive::looks_like_zip(const uint8_t* data, size_t size) {
  return data != nullptr && size >= 4 && std::memcmp(data, "PK\x03\x04", 4) == 0;
}

void ZipArchive::fail(const std::string& why) const {
  throw Error(what_ + ": damaged zip archive: " + why);
}

const ZipArchive::Entry* ZipArchive::find(const std::string& name) const {
  for (const Entry& e : entries_) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

const uint8_t* ZipArchive::stored_bytes(const Entry& e) const {
  if (!e.stored || e.offset > stream_.size || e.size > stream_.size - e.offset) return nullptr;
  return stream_.data + e.offset;
}

#ifdef ADTREE_HAVE_MINIZIP

namespace {

// minizip's file functions over a memory buffer: the archive never touches the file system
// itself, so the reader of a mapped file and the fuzz target take the same path.
using MemStream = ZipArchive::Stream;

voidpf mem_open(voidpf opaque, const void*, int mode) {
  if ((mode & ZLIB_FILEFUNC_MODE_READWRITEFILTER) != ZLIB_FILEFUNC_MODE_READ) return nullptr;
  static_cast<MemStream*>(opaque)->pos = 0;
  return opaque;
}

uLong mem_read(voidpf, voidpf stream, void* buf, uLong size) {
  auto* s = static_cast<MemStream*>(stream);
  const size_t k = std::min<size_t>(size, s->size - std::min(s->pos, s->size));
  if (k > 0) std::memcpy(buf, s->data + s->pos, k);
  s->pos += k;
  return uLong(k);
}

uLong mem_write(voidpf, voidpf, const void*, uLong) {
  return 0;
}

ZPOS64_T mem_tell(voidpf, voidpf stream) {
  return static_cast<MemStream*>(stream)->pos;
}

long mem_seek(voidpf, voidpf stream, ZPOS64_T offset, int origin) {
  auto* s = static_cast<MemStream*>(stream);
  uint64_t base = 0;
  if (origin == ZLIB_FILEFUNC_SEEK_CUR) base = s->pos;
  if (origin == ZLIB_FILEFUNC_SEEK_END) base = s->size;
  if (offset > s->size || base > s->size - offset) return -1;
  s->pos = size_t(base + offset);
  return 0;
}

int mem_close(voidpf, voidpf) {
  return 0;
}
int mem_error(voidpf, voidpf) {
  return 0;
}

}  // namespace

ZipArchive::ZipArchive(const uint8_t* data, size_t size, std::string what)
    : stream_{data, size, 0}, what_(std::move(what)) {
  zlib_filefunc64_def f{};
  f.zopen64_file = mem_open;
  f.zread_file = mem_read;
  f.zwrite_file = mem_write;
  f.ztell64_file = mem_tell;
  f.zseek64_file = mem_seek;
  f.zclose_file = mem_close;
  f.zerror_file = mem_error;
  f.opaque = &stream_;
  unz_ = unzOpen2_64("", &f);
  if (unz_ == nullptr) fail("no zip central directory (truncated or not a zip file)");
  try {
    list();
  } catch (...) {
    unzClose(unz_);
    throw;
  }
}

ZipArchive::~ZipArchive() {
  if (unz_ != nullptr) unzClose(unz_);
}

void ZipArchive::list() {
  for (int rc = unzGoToFirstFile(unz_); rc != UNZ_END_OF_LIST_OF_FILE; rc = unzGoToNextFile(unz_)) {
    if (rc != UNZ_OK) fail("its directory cannot be read");
    unz_file_info64 info{};
    char name[1024];
    if (unzGetCurrentFileInfo64(unz_, &info, name, sizeof name, nullptr, 0, nullptr, 0) != UNZ_OK ||
        info.size_filename >= sizeof name) {
      fail("an entry's name cannot be read");
    }
    Entry e;
    e.name = name;
    e.size = info.uncompressed_size;
    e.crc = uint32_t(info.crc);
    e.stored = info.compression_method == 0;
    unz64_file_pos where{};
    unzGetFilePos64(unz_, &where);
    e.dir_pos = where.pos_in_zip_directory;
    e.file_num = where.num_of_file;
    if (e.stored) {
      if (info.compressed_size != info.uncompressed_size) fail(e.name + ": sizes disagree");
      if (unzOpenCurrentFile(unz_) != UNZ_OK) fail(e.name + ": its local header is damaged");
      e.offset = unzGetCurrentFileZStreamPos64(unz_);
      unzCloseCurrentFile(unz_);
      if (e.offset > stream_.size || e.size > stream_.size - e.offset) {
        fail(e.name + ": its data runs past the end of the file (truncated?)");
      }
    }
    entries_.push_back(std::move(e));
  }
}

void ZipArchive::locate(const Entry& e) const {
  unz64_file_pos where{e.dir_pos, e.file_num};
  if (unzGoToFilePos64(unz_, &where) != UNZ_OK) fail(e.name + ": cannot be found again");
}

std::vector<uint8_t> ZipArchive::read(const Entry& e) const {
  std::vector<uint8_t> out;
  if (const uint8_t* p = stored_bytes(e)) {
    out.assign(p, p + e.size);
  } else {
    locate(e);
    if (unzOpenCurrentFile(unz_) != UNZ_OK) fail(e.name + ": cannot be opened");
    out.resize(size_t(e.size));
    size_t got = 0;
    while (got < out.size()) {
      const unsigned chunk = unsigned(std::min<size_t>(out.size() - got, 1u << 30));
      const int n = unzReadCurrentFile(unz_, out.data() + got, chunk);
      if (n <= 0) break;
      got += size_t(n);
    }
    const int rc = unzCloseCurrentFile(unz_);
    if (got != out.size() || rc != UNZ_OK) fail(e.name + ": its compressed data is damaged");
  }
  check_crc(e, out.data(), out.size());
  return out;
}

void ZipArchive::verify(const Entry& e) const {
  const uint8_t* p = stored_bytes(e);
  if (p == nullptr) fail(e.name + ": not stored in place");
  check_crc(e, p, size_t(e.size));
}

void ZipArchive::check_crc(const Entry& e, const uint8_t* p, size_t n) const {
  uLong crc = crc32(0L, Z_NULL, 0);
  for (size_t k = 0; k < n; k += 1u << 30) {
    crc = crc32(crc, p + k, uInt(std::min<size_t>(n - k, 1u << 30)));
  }
  if (uint32_t(crc) != e.crc) fail(e.name + ": its CRC-32 does not match (a damaged download?)");
}

#else  // no libminizip-dev at build time: a zip file is a clear error

ZipArchive::ZipArchive(const uint8_t* data, size_t size, std::string what)
    : stream_{data, size, 0}, what_(std::move(what)) {
  throw Error(what_ +
              ": a zip archive (torch.save), and this build has no zip reader: build "
              "with libminizip-dev, or convert the file to .safetensors elsewhere");
}
ZipArchive::~ZipArchive() = default;
void ZipArchive::list() {}
void ZipArchive::locate(const Entry&) const {}
void ZipArchive::check_crc(const Entry&, const uint8_t*, size_t) const {}
void ZipArchive::verify(const Entry&) const {}
std::vector<uint8_t> ZipArchive::read(const Entry&) const {
  return {};
}

#endif

}  // namespace adtree::io
