// T5's tokenizer: the checkpoint's SentencePiece model (spiece.model) through Debian's
// libsentencepiece, and LlamaGen's preparation of a caption as tools/t5_embed.py does it: lower
// case and whitespace collapsed as Python's " ".join(s.lower().split()), the pieces' ids, the
// closing </s>, at most max_length ids (pieces past max_length - 1 dropped, </s> kept last, as
// Hugging Face's truncation does). The padding and LlamaGen's left shift are the caption's, not
// the tokenizer's (model/conditioning.h).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace adtree::model {

// Python's str.lower() then " ".join(split()) on UTF-8 text: Unicode lower case (the C library's
// UTF-8 tables) and Python's whitespace set. Invalid UTF-8 is an adtree::Error.
std::string llamagen_clean_caption(const std::string& text);

class T5Tokenizer {
 public:
  // Loads spiece.model; throws adtree::Error naming the file when it is missing or not a
  // SentencePiece model, or when the SentencePiece plug-in is missing (spm/spm_c_api.h: a build
  // without libsentencepiece-dev, such as a GPU box with libtorch alone).
  explicit T5Tokenizer(const std::string& spiece_path);
  ~T5Tokenizer();
  T5Tokenizer(const T5Tokenizer&) = delete;
  T5Tokenizer& operator=(const T5Tokenizer&) = delete;

  // The pieces' ids of `text` as given (no cleaning, no </s>), as SentencePiece's encode does.
  std::vector<int64_t> encode(const std::string& text) const;
  int64_t piece_count() const;
  int64_t eos_id() const;
  int64_t pad_id() const;

  struct Caption {
    std::vector<int64_t> ids;  // the pieces then </s>, at most max_length
    int64_t pieces = 0;        // pieces of the cleaned prompt before truncation
    bool truncated = false;    // pieces were dropped to fit max_length
  };
  // LlamaGen's caption of a typed prompt (see the top of this file). max_length >= 2.
  Caption caption(const std::string& prompt, int64_t max_length) const;

 private:
  struct Impl;  // the plug-in's processor
  std::unique_ptr<Impl> impl_;
};

// Trains a small T5-style SentencePiece model (BPE; pad 0, </s> 1, unk 2) on `lines`, cleaned
// as captions are, and writes it to out_path: the tokenizer of the random T5 that `adtree model
// random --cond t5` writes. vocab_size is an upper bound (a small corpus gives fewer pieces).
void train_t5_sentencepiece(const std::vector<std::string>& lines, const std::string& out_path,
                            int64_t vocab_size);

}  // namespace adtree::model
