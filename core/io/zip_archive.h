// A zip archive read from memory (a mapped file or a buffer) through minizip, Debian's maintained
// zip reader: the container of torch.save() checkpoints (io/torch_checkpoint.h). Entries stored
// without compression, as torch.save writes them, are handed out where they lie, so their bytes
// can be mapped rather than copied; compressed ones are inflated into a buffer.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace adtree::io {

class ZipArchive {
 public:
  struct Entry {
    std::string name;
    uint64_t size = 0;    // uncompressed bytes
    uint32_t crc = 0;     // CRC-32 of the uncompressed bytes, from the central directory
    bool stored = false;  // no compression: `offset` locates its bytes in the buffer
    uint64_t offset = 0;  // stored entries only
    uint64_t dir_pos = 0, file_num = 0;  // where minizip finds it again
  };

  // `data` must outlive the archive. Throws adtree::Error (naming `what`) for a damaged archive.
  ZipArchive(const uint8_t* data, size_t size, std::string what);
  ~ZipArchive();
  ZipArchive(const ZipArchive&) = delete;
  ZipArchive& operator=(const ZipArchive&) = delete;

  const std::vector<Entry>& entries() const { return entries_; }
  const Entry* find(const std::string& name) const;
  // A stored entry's bytes in place (checked against the buffer), else nullptr.
  const uint8_t* stored_bytes(const Entry& e) const;
  // The entry's bytes, inflated if needed, checked against its CRC-32.
  std::vector<uint8_t> read(const Entry& e) const;

  // Throws unless a stored entry's bytes in place match its CRC-32 (about 1 s a GB).
  void verify(const Entry& e) const;

  static bool looks_like_zip(const uint8_t* data, size_t size);

  // The buffer as minizip's file functions see it (zip_archive.cpp).
  struct Stream {
    const uint8_t* data;
    size_t size, pos;
  };

 private:
  void list();
  void locate(const Entry& e) const;
  void check_crc(const Entry& e, const uint8_t* p, size_t n) const;
  [[noreturn]] void fail(const std::string& why) const;

  Stream stream_;
  std::string what_;
  void* unz_ = nullptr;
  std::vector<Entry> entries_;
};

}  // namespace adtree::io
