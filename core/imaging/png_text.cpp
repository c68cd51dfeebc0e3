#include "imaging/png_text.h"

#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "util/error.h"

namespace adtree::imaging {

namespace {

constexpr char kSignature[] = "\x89PNG\r\n\x1a\n";
constexpr size_t kSignatureSize = 8;

uint32_t read_be32(const std::string& s, size_t at) {
  return (uint32_t(uint8_t(s[at])) << 24) | (uint32_t(uint8_t(s[at + 1])) << 16) |
         (uint32_t(uint8_t(s[at + 2])) << 8) | uint32_t(uint8_t(s[at + 3]));
}

std::string be32(uint32_t v) {
  return {char(v >> 24), char((v >> 16) & 0xff), char((v >> 8) & 0xff), char(v & 0xff)};
}

struct Chunk {
  size_t start;  // offset of the length field
  size_t size;   // length + type + data + CRC
  std::string type, data;
};

// Every chunk of the file, in order; throws on a bad signature or a chunk cut short.
std::vector<Chunk> chunks_of(const std::string& png) {
  if (png.size() < kSignatureSize ||
      png.compare(0, kSignatureSize, kSignature, kSignatureSize) != 0)
    throw Error("not a PNG file (bad signature)");
  std::vector<Chunk> out;
  for (size_t at = kSignatureSize; at < png.size();) {
    if (png.size() - at < 12) throw Error("the PNG file is cut short inside a chunk header");
    const uint32_t len = read_be32(png, at);
    if (len > png.size() - at - 12) throw Error("the PNG file is cut short inside a chunk");
    out.push_back(Chunk{at, size_t(len) + 12, png.substr(at + 4, 4), png.substr(at + 8, len)});
    at += size_t(len) + 12;
  }
  return out;
}

std::string chunk(const std::string& type, const std::string& data) {
  const std::string body = type + data;
  const uLong crc = crc32(0L, reinterpret_cast<const Bytef*>(body.data()), uInt(body.size()));
  return be32(uint32_t(data.size())) + body + be32(uint32_t(crc));
}

// The keyword and text of a tEXt or uncompressed iTXt chunk (nullopt: another kind of chunk).
std::optional<std::pair<std::string, std::string>> text_of(const Chunk& c) {
  const auto nul = c.data.find('\0');
  if (nul == std::string::npos) return std::nullopt;
  const std::string key = c.data.substr(0, nul);
  if (c.type == "tEXt") return std::make_pair(key, c.data.substr(nul + 1));
  if (c.type != "iTXt" || c.data.size() < nul + 3 || c.data[nul + 1] != 0) return std::nullopt;
  const auto lang_end = c.data.find('\0', nul + 3);  // language tag, then translated keyword
  const auto trans_end = lang_end == std::string::npos ? lang_end : c.data.find('\0', lang_end + 1);
  if (trans_end == std::string::npos) return std::nullopt;
  return std::make_pair(key, c.data.substr(trans_end + 1));
}

}  // namespace

std::string png_with_text(const std::string& png, const std::string& keyword,
                          const std::string& text) {
  const auto all = chunks_of(png);
  if (all.empty() || all.front().type != "IHDR") throw Error("not a PNG file (IHDR is not first)");
  // ASCII text goes into a tEXt chunk, which every reader shows; other UTF-8 into an iTXt chunk
  // (keyword, compression flag 0, method 0, empty language tag, empty translated keyword, text).
  bool ascii = true;
  for (unsigned char ch : text) ascii = ascii && ch < 0x80;
  std::string data = keyword;
  data.append(1, '\0');
  if (!ascii) data.append(4, '\0');
  data += text;
  const std::string type = ascii ? "tEXt" : "iTXt";
  std::string out = png.substr(0, kSignatureSize);
  for (const auto& c : all) {
    const auto t = text_of(c);
    if (t && t->first == keyword) continue;  // replaced by the new chunk
    out += png.substr(c.start, c.size);
    if (c.type == "IHDR") out += chunk(type, data);
  }
  return out;
}

std::optional<std::string> png_text(const std::string& png, const std::string& keyword) {
  for (const auto& c : chunks_of(png)) {
    const auto t = text_of(c);
    if (t && t->first == keyword) return t->second;
  }
  return std::nullopt;
}

}  // namespace adtree::imaging
