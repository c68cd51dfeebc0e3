// GPT training (`adtree train gpt`): the LlamaGen transformer at a small size, conditioned on the
// caption's words (word-embedding table -> cap_proj, left-padded with a padding mask), next-token
// cross-entropy on VQ codes under teacher forcing, caption dropout to the null caption for CFG.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "io/dataset.h"
#include "model/conditioning.h"
#include "model/llamagen/gpt.h"
#include "model/llamagen/vq.h"
#include "train/config.h"

namespace adtree::train {

nlohmann::json gpt_default_config();
// The transformer part of a resolved config (num_words and vocab/grid come from the data).
model::GptConfig gpt_model_config(const nlohmann::json& cfg, int64_t num_words, int64_t vocab_size,
                                  int64_t grid);

// VQ codes of every dataset row [N, h*w] (int64), encoded once and cached in
// <out>/tokens.safetensors; the cache is reused only for the same VQ weights and pictures. A
// codes dataset gives its own codes (written to the same file), if `vq` made them.
at::Tensor cached_tokens(const io::Dataset& data, const model::VqModel& vq, const std::string& out,
                         std::ostream& log);

// The codes dataset of `data` (`adtree data codes`): every picture's VQ codes [N, h, w] (int16) and
// the fingerprint of `vq`, with the captions, emoji ids, styles, split and info; no pictures.
io::Dataset encode_dataset(const io::Dataset& data, const model::VqModel& vq, std::ostream& log);

// Trains on the train split with the VQ of `vq_dir` (a finished `train vq` run or a model
// directory) and writes <out>/gpt.safetensors, text.json, tokens.safetensors and run.json.
TrainResult train_gpt(const io::Dataset& data, const std::string& vq_dir, const TrainOptions& opts);

// What a finished GPT run folder holds, for the drafter trainer and the model assembler.
struct GptRun {
  model::GptConfig config;
  model::TensorMap weights;  // fp32
  model::Vocabulary vocab;
  at::Tensor tokens;   // [N, h*w] VQ codes of the dataset the GPT was trained on
  nlohmann::json run;  // run.json
};
GptRun load_gpt_run(const std::string& dir);

// The whole image under teacher forcing: sequence [C condition embeddings, z_0 .. z_{N-2}] in one
// causal forward (padded caption slots hidden). Output logits [B, N, V] (row j predicts z_j) and
// hidden [B, C+N-1, dim]. `null_rows` [B] bool (optional) swaps those rows' captions for the null
// caption; `dropout` > 0 drops input embeddings with `gen`.
model::Gpt::Output teacher_forced(const model::Gpt& gpt, const at::Tensor& tokens,
                                  const at::Tensor& word_ids, const at::Tensor& null_rows = {},
                                  double dropout = 0.0, at::Generator* gen = nullptr);
// The same for any condition (a class, caption vectors with their mask): the sequence
// [condition embeddings, z_0 .. z_{N-2}], hidden [B, cond_tokens + N - 1, dim].
model::Gpt::Output teacher_forced(const model::Gpt& gpt, const at::Tensor& tokens,
                                  const model::Condition& cond, double dropout = 0.0,
                                  at::Generator* gen = nullptr);
// The condition of caption word ids [B, C] (-1 = padding); `null_rows` [B] bool (optional) swaps
// those rows' captions for the null caption with the same padding mask.
model::Condition word_condition(const model::Gpt& gpt, const at::Tensor& word_ids,
                                const at::Tensor& null_rows = {});

// Mean next-token cross-entropy (nats/token) of `rows` under teacher forcing, with the captions'
// word ids (uncond: the null caption with the same padding mask, as CFG sampling uses).
double gpt_loss(const model::Gpt& gpt, const at::Tensor& tokens, const at::Tensor& word_ids,
                const std::vector<int64_t>& rows, bool uncond, int64_t batch = 16);

}  // namespace adtree::train
