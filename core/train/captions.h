// Captions as the GPT reads them: the word vocabulary of the training prompts and fixed-length,
// left-padded word-id rows (-1 = padding), built with the same split_words the prompt box uses.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

#include "io/dataset.h"
#include "model/conditioning.h"

namespace adtree::train {

// Sorted distinct words of the captions of `rows` (only training prompts: a word never seen in
// training would have an untrained embedding).
model::Vocabulary build_vocabulary(const io::Dataset& data, const std::vector<int64_t>& rows);

struct CaptionIds {
  at::Tensor ids;              // int64 [N, cond_len], left-padded with -1
  int64_t unknown_words = 0;   // words outside the vocabulary, left out (held-out captions)
  int64_t empty_captions = 0;  // captions left with no known word (they read as all padding)
};

// Word ids of every row of the dataset. A caption with more words than cond_len is an
// adtree::Error naming it (cutting it would silently train on another prompt).
CaptionIds caption_ids(const io::Dataset& data, const model::Vocabulary& vocab, int64_t cond_len);

}  // namespace adtree::train
