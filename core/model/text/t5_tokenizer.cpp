#include "model/text/t5_tokenizer.h"

#include <dlfcn.h>
#include <locale.h>
#include <wctype.h>

#include <cstdlib>
#include <filesystem>

#include "io/file_write.h"
#include "model/text/spm/spm_c_api.h"
#include "util/error.h"
#include "util/resource_paths.h"

namespace adtree::model {

namespace {

// UTF-8 <-> code points. Python's str holds code points; so does this, for lower() and split().
std::u32string decode_utf8(const std::string& s) {
  std::u32string out;
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const int extra = c < 0x80         ? 0
                      : (c >> 5) == 6  ? 1
                      : (c >> 4) == 14 ? 2
                      : (c >> 3) == 30 ? 3
                                       : -1;
    if (extra < 0 || i + size_t(extra) >= s.size()) {
      throw Error("the prompt is not valid UTF-8 text (byte " + std::to_string(i) + ")");
    }
    char32_t cp = extra == 0 ? c : c & (0x3f >> extra);
    for (int k = 1; k <= extra; ++k) {
      const auto b = static_cast<unsigned char>(s[i + size_t(k)]);
      if ((b >> 6) != 2)
        throw Error("the prompt is not valid UTF-8 text (byte " + std::to_string(i) + ")");
      cp = (cp << 6) | (b & 0x3f);
    }
    out.push_back(cp);
    i += size_t(extra) + 1;
  }
  return out;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(char(cp));
  } else if (cp < 0x800) {
    out.push_back(char(0xc0 | (cp >> 6)));
    out.push_back(char(0x80 | (cp & 0x3f)));
  } else if (cp < 0x10000) {
    out.push_back(char(0xe0 | (cp >> 12)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back(char(0x80 | (cp & 0x3f)));
  } else {
    out.push_back(char(0xf0 | (cp >> 18)));
    out.push_back(char(0x80 | ((cp >> 12) & 0x3f)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back(char(0x80 | (cp & 0x3f)));
  }
}

// Python's str.isspace(): the Unicode White_Space separators and the ASCII controls it counts.
bool python_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f ||
         c == 0x205f || c == 0x3000;
}

// Lower case through the C library's UTF-8 tables (glibc's C.UTF-8 carries Unicode's simple case
// mappings), independent of the process's own locale.
char32_t lower(char32_t c) {
  if (c < 0x80) return c >= 'A' && c <= 'Z' ? c + 32 : c;
  static const locale_t utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", locale_t(nullptr));
  return utf8 ? char32_t(towlower_l(wint_t(c), utf8)) : c;
}

}  // namespace

std::string llamagen_clean_caption(const std::string& text) {
  std::string out;
  bool pending_space = false;
  for (const char32_t c : decode_utf8(text)) {
    if (python_space(c)) {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space) out.push_back(' ');
    pending_space = false;
    append_utf8(out, lower(c));
  }
  return out;
}

namespace {
// The SentencePiece plug-in (spm/spm_c_api.h says why it is one), opened once.
struct Plugin {
  void* handle = nullptr;
  std::string error;  // why it could not be opened
  decltype(&adtree_spm_load) load = nullptr;
  decltype(&adtree_spm_free) free = nullptr;
  decltype(&adtree_spm_encode) encode = nullptr;
  decltype(&adtree_spm_piece_size) piece_size = nullptr;
  decltype(&adtree_spm_eos_id) eos_id = nullptr;
  decltype(&adtree_spm_pad_id) pad_id = nullptr;
  decltype(&adtree_spm_train) train = nullptr;
};

// $ADTREE_SPM_PLUGIN, else lib/adtree-studio/ beside the program's bin/ (the build tree and an
// install alike; tests/ sits beside bin/).
std::vector<std::string> plugin_candidates() {
  std::vector<std::string> out;
  if (const char* env = std::getenv("ADTREE_SPM_PLUGIN"); env && *env) out.push_back(env);
  const std::string exe = util::executable_dir();
  if (!exe.empty()) out.push_back(exe + "/../lib/adtree-studio/libadtree_spm.so");
  return out;
}

template <class F>
void bind(void* handle, const char* name, F& f) {
  f = reinterpret_cast<F>(::dlsym(handle, name));
}

const Plugin& plugin() {
  static const Plugin p = [] {
    Plugin p;
#if defined(__SANITIZE_ADDRESS__)
    // AddressSanitizer refuses RTLD_DEEPBIND, and without it the two protobufs collide.
    p.error = "not available under AddressSanitizer, which refuses RTLD_DEEPBIND";
    return p;
#endif
    std::string tried;
    for (const auto& path : plugin_candidates()) {
      tried += (tried.empty() ? "" : ", ") + path;
      if (!std::filesystem::exists(path)) continue;
      p.handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
      if (p.handle) break;
      p.error = path + ": " + ::dlerror();
    }
    if (!p.handle) {
      if (p.error.empty()) p.error = "no SentencePiece plug-in found (looked for " + tried + ")";
      return p;
    }
    bind(p.handle, "adtree_spm_load", p.load);
    bind(p.handle, "adtree_spm_free", p.free);
    bind(p.handle, "adtree_spm_encode", p.encode);
    bind(p.handle, "adtree_spm_piece_size", p.piece_size);
    bind(p.handle, "adtree_spm_eos_id", p.eos_id);
    bind(p.handle, "adtree_spm_pad_id", p.pad_id);
    bind(p.handle, "adtree_spm_train", p.train);
    if (!p.load || !p.free || !p.encode || !p.piece_size || !p.eos_id || !p.pad_id || !p.train) {
      p.error = "the SentencePiece plug-in lacks a function (a plug-in of another version?)";
      p.handle = nullptr;
    }
    return p;
  }();
  return p;
}
}  // namespace

struct T5Tokenizer::Impl {
  adtree_spm* spm = nullptr;
  ~Impl() {
    if (spm) plugin().free(spm);
  }
};

T5Tokenizer::T5Tokenizer(const std::string& spiece_path) : impl_(std::make_unique<Impl>()) {
  if (!std::filesystem::is_regular_file(spiece_path)) {
    throw Error(spiece_path + ": the T5 tokenizer's SentencePiece model is missing");
  }
  const Plugin& p = plugin();
  if (!p.handle) {
    throw Error(spiece_path + ": cannot tokenize for T5 without the SentencePiece library (" +
                p.error + "); a caption-embedding file works without it");
  }
  char err[512] = {0};
  impl_->spm = p.load(spiece_path.c_str(), err, sizeof err);
  if (!impl_->spm) throw Error(spiece_path + ": not a SentencePiece model (" + err + ")");
  if (eos_id() < 0) throw Error(spiece_path + ": the SentencePiece model has no </s> piece");
}

std::vector<int64_t> T5Tokenizer::encode(const std::string& text) const {
  std::vector<int> ids(text.size() + 8);
  char err[512] = {0};
  long n = plugin().encode(impl_->spm, text.data(), text.size(), ids.data(), long(ids.size()), err,
                           sizeof err);
  if (n > long(ids.size())) {
    ids.resize(size_t(n));
    n = plugin().encode(impl_->spm, text.data(), text.size(), ids.data(), n, err, sizeof err);
  }
  if (n < 0) throw Error(std::string("T5 tokenizer: cannot encode the prompt (") + err + ")");
  return {ids.begin(), ids.begin() + n};
}

int64_t T5Tokenizer::piece_count() const {
  return plugin().piece_size(impl_->spm);
}
int64_t T5Tokenizer::eos_id() const {
  return plugin().eos_id(impl_->spm);
}
int64_t T5Tokenizer::pad_id() const {
  return plugin().pad_id(impl_->spm);
}

T5Tokenizer::~T5Tokenizer() = default;

T5Tokenizer::Caption T5Tokenizer::caption(const std::string& prompt, int64_t max_length) const {
  if (max_length < 2) throw Error("T5 tokenizer: a caption needs at least 2 slots");
  Caption c;
  c.ids = encode(llamagen_clean_caption(prompt));
  c.pieces = int64_t(c.ids.size());
  if (c.pieces > max_length - 1) {
    c.ids.resize(size_t(max_length - 1));
    c.truncated = true;
  }
  c.ids.push_back(eos_id());
  return c;
}

void train_t5_sentencepiece(const std::vector<std::string>& lines, const std::string& out_path,
                            int64_t vocab_size) {
  const Plugin& p = plugin();
  if (!p.handle) throw Error("cannot train a SentencePiece model: " + p.error);
  const std::string corpus = out_path + ".corpus.txt";
  std::string text;
  for (const auto& l : lines) text += llamagen_clean_caption(l) + "\n";
  io::write_file(corpus, text, "the SentencePiece training text");
  const std::string prefix = out_path + ".training";
  // T5's special ids (pad 0, </s> 1, unk 2, no <s>). BPE, not T5's unigram: on a corpus this
  // small the unigram trainer stops at 64 pieces, mostly letters, while BPE keeps the corpus's
  // words whole ("a happy yellow star" is 4 pieces, not 12). One thread, so every machine gets the
  // same pieces.
  const std::string args = "--input=" + corpus + " --model_prefix=" + prefix +
                           " --vocab_size=" + std::to_string(vocab_size) +
                           " --model_type=bpe --character_coverage=1.0 --hard_vocab_limit=false"
                           " --num_threads=1 --pad_id=0 --eos_id=1 --unk_id=2 --bos_id=-1";
  char err[512] = {0};
  const int rc = p.train(args.c_str(), err, sizeof err);
  std::error_code ec;
  std::filesystem::remove(corpus, ec);
  std::filesystem::remove(prefix + ".vocab", ec);
  if (rc != 0) {
    std::filesystem::remove(prefix + ".model", ec);
    throw Error("training a SentencePiece model failed: " + std::string(err));
  }
  std::filesystem::rename(prefix + ".model", out_path);
}

}  // namespace adtree::model
