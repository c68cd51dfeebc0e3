#include "io/file_hash.h"

#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include "util/error.h"
#ifdef ADTREE_HAVE_OPENSSL
#include <openssl/evp.h>
#endif

namespace adtree::io {

#ifdef ADTREE_HAVE_OPENSSL
bool have_sha256() {
  return true;
}

std::string sha256_files(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
    throw Error("SHA-256 is not available from libcrypto");
  }
  std::vector<char> buf(1 << 20);
  for (const auto& path : paths) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) continue;
    // Name and size first: renaming a file or moving bytes between files changes the hash.
    const std::string head =
        fs::path(path).filename().string() + "\n" + std::to_string(fs::file_size(path)) + "\n";
    EVP_DigestUpdate(ctx.get(), head.data(), head.size());
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path + ": cannot be read to compute the model's hash");
    while (in) {
      in.read(buf.data(), std::streamsize(buf.size()));
      if (in.gcount() > 0) EVP_DigestUpdate(ctx.get(), buf.data(), size_t(in.gcount()));
    }
    if (in.bad()) throw Error(path + ": read error while computing the model's hash");
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx.get(), md, &n);
  static const char* kHex = "0123456789abcdef";
  std::string out = "sha256:";
  for (unsigned int i = 0; i < n; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 15];
  }
  return out;
}
#else
bool have_sha256() {
  return false;
}
std::string sha256_files(const std::vector<std::string>&) {
  return {};
}
#endif

}  // namespace adtree::io
