// From what a user typed to the GPT's Condition, for every kind of model directory: words or a
// class (model/conditioning.h), and for a LlamaGen t2i model either a caption-embedding file or,
// with a T5 encoder loaded (model/text/text_encoder.h), typed text encoded on the spot. The one
// entry point the CLI, the engine and the benches share.
#pragma once
#include <string>

#include "model/conditioning.h"
#include "model/model_dir.h"

namespace adtree::model {

// How a t2i-embeddings prompt became caption rows (what the run's statistics report).
struct PromptEncoding {
  bool typed = false;      // encoded by the text encoder (else a file, words or a class)
  bool cached = false;     // the encoder remembered the prompt
  bool truncated = false;  // more pieces than the model's caption slots: the rest was dropped
  int64_t tokens = 0;      // the caption's T5 ids, </s> included
  double ms = 0;           // encoding time
};

// A t2i-embeddings model's prompt is a caption-embedding file when it names an existing file, and
// typed text otherwise (an error naming --t5 and Model > Text Encoder without an encoder). `enc`,
// when given, receives how it was encoded.
Condition condition_for_prompt(const ModelBundle& m, const std::string& prompt, bool cfg,
                               PromptEncoding* enc = nullptr);

}  // namespace adtree::model
