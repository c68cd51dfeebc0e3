#include "io/file_write.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "util/error.h"

namespace adtree::io {

void write_file(const std::string& path, const std::string& bytes, const std::string& what) {
  // stdio rather than iostreams: fwrite / fflush / fclose each report errno (ENOSPC, EROFS, ...),
  // and the last two are where a full disk shows up for buffered writes.
  auto fail = [&](const char* step) {
    throw Error(path + ": cannot write " + what + " (" + step + ": " + std::strerror(errno) + ")");
  };
  errno = 0;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) fail("open");
  const bool wrote = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  const int saved = errno;
  const bool flushed = wrote && std::fflush(f) == 0;
  const int saved_flush = errno;
  const bool closed = std::fclose(f) == 0;
  if (!wrote) {
    errno = saved;
    fail("write");
  }
  if (!flushed) {
    errno = saved_flush;
    fail("flush");
  }
  if (!closed) fail("close");
}

}  // namespace adtree::io
