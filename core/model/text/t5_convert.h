// A Hugging Face T5 directory that holds only pytorch_model.bin (or its shards,
// pytorch_model-0000i-of-0000n.bin with pytorch_model.bin.index.json) -> DIR/model.safetensors,
// the layout the text encoder reads (text_encoder.h), without Python (issue "Real checkpoints
// without Python"): the encoder's tensors and the shared embedding, read by io/torch_checkpoint.h;
// the decoder and the language-model head are left out. tools/t5_to_safetensors.py does the same
// with Python's torch.
#pragma once
#include <string>

#include "model/llamagen/llamagen_convert.h"

namespace adtree::model {

// `dtype`: "" keeps the checkpoint's, "fp32" or "bf16" casts floating tensors. Writes through a
// temporary file; refuses a directory without config.json or one that has model.safetensors
// already. Returns a line for the user.
std::string convert_t5_dir(const std::string& dir, const std::string& dtype,
                           const ConvertProgress& progress = {},
                           const std::atomic<bool>* cancel = nullptr);

}  // namespace adtree::model
