#include "train/gpt_trainer.h"

#include <cmath>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <unordered_set>

#include "io/safetensors.h"
#include "io/safetensors_shards.h"
#include "train/batches.h"
#include "train/captions.h"
#include "train/loop.h"
#include "train/optimizer.h"
#include "train/run_files.h"
#include "train/vq_trainer.h"
#include "train/word_vectors.h"
#include "util/error.h"

namespace adtree::train {

namespace fs = std::filesystem;
using json = nlohmann::json;

json gpt_default_config() {
  // CPU-trainable LlamaGen shape: 256 x 8 (head_dim 64), ~7M transformer parameters, so the whole
  // shipped model stays far below 40 MB in fp16 (FINDINGS.md: 384 x 8 came to ~45 MB).
  return json{{"dim", 256},
              {"n_layer", 8},
              {"n_head", 4},
              {"cap_dim", 128},
              {"cond_len", 16},
              {"multiple_of", 256},
              {"steps", 3000},
              {"batch", 16},
              {"lr", 3e-4},
              {"warmup", 200},
              {"min_lr_ratio", 0.1},
              {"schedule", "cosine"},
              {"beta1", 0.9},
              {"beta2", 0.95},
              {"weight_decay", 0.05},
              {"grad_clip", 1.0},
              {"dropout", 0.1},
              {"caption_dropout", 0.1},
              {"token_noise", 0.0},
              {"eval_every", 500},
              {"train_eval_images", 256},
              {"checkpoint_every", 200}};
}

model::GptConfig gpt_model_config(const json& c, int64_t num_words, int64_t vocab_size,
                                  int64_t grid) {
  model::GptConfig g;
  g.dim = c.at("dim").get<int64_t>();
  g.n_layer = c.at("n_layer").get<int64_t>();
  g.n_head = c.at("n_head").get<int64_t>();
  g.cap_dim = c.at("cap_dim").get<int64_t>();
  g.cond_len = c.at("cond_len").get<int64_t>();
  g.multiple_of = c.at("multiple_of").get<int64_t>();
  g.cond = model::CondKind::Caption;
  g.num_words = num_words;
  g.vocab_size = vocab_size;
  g.grid_h = g.grid_w = grid;
  g.validate();
  return g;
}

namespace {

constexpr uint64_t kDropStream = 11, kCaptionStream = 12, kNoiseStream = 13;

// Cheap fingerprints: the cache must not outlive a retrained VQ or a rebuilt dataset.
std::string fingerprint(const model::TensorMap& w) {
  double s = 0.0, a = 0.0;
  for (const auto& [k, t] : w) {
    s += t.to(at::kDouble).sum().item<double>();
    a += t.to(at::kDouble).abs().sum().item<double>();
  }
  std::ostringstream os;
  os.precision(17);
  os << w.size() << ":" << s << ":" << a;
  return os.str();
}
std::string fingerprint(const io::Dataset& d) {
  // A picture dataset and its codes dataset are different inputs: their caches differ too.
  const auto& t = d.has_images() ? d.images : d.codes;
  std::ostringstream os;
  os << d.size() << ":" << t.sizes() << ":" << t.to(at::kLong).sum().item<int64_t>();
  for (size_t i = 0; i < d.captions.size(); i += 97) os << ":" << d.captions[i];
  return os.str();
}

}  // namespace

at::Tensor cached_tokens(const io::Dataset& data, const model::VqModel& vq, const std::string& out,
                         std::ostream& log) {
  const auto path = run_file(out, "tokens.safetensors");
  const std::string vq_fp = fingerprint(vq.weights()), data_fp = fingerprint(data);
  if (!data.has_images()) {
    if (data.codes_vq != vq_fp)
      throw Error(
          "the dataset's codes were made with another VQ than this run's: encode the "
          "pictures again with 'adtree data codes --vq' of this VQ");
    auto tokens = data.codes.reshape({data.size(), -1}).to(at::kLong);
    fs::create_directories(out);
    io::write_safetensors(path, {{"tokens", data.codes.reshape({data.size(), -1})}},
                          {{"format", "adtree-tokens"}, {"vq", vq_fp}, {"data", data_fp}});
    log << "using the dataset's VQ codes" << std::endl;
    return tokens;
  }
  if (fs::exists(path)) {
    io::SafetensorsReader r(path);
    const auto& md = r.metadata();
    auto it_v = md.find("vq"), it_d = md.find("data");
    if (it_v != md.end() && it_d != md.end() && it_v->second == vq_fp && it_d->second == data_fp) {
      log << "using cached VQ codes " << path << std::endl;
      return r.tensor("tokens").to(at::kLong);
    }
    log << "VQ or data changed: re-encoding the codes" << std::endl;
  }
  log << "encoding " << data.size() << " pictures with the VQ (once)" << std::endl;
  std::vector<int64_t> rows(size_t(data.size()));
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = int64_t(i);
  auto tokens = encode_rows(vq, data, rows);
  fs::create_directories(out);
  io::write_safetensors(path, {{"tokens", tokens.to(at::kShort)}},
                        {{"format", "adtree-tokens"}, {"vq", vq_fp}, {"data", data_fp}});
  return tokens;
}

io::Dataset encode_dataset(const io::Dataset& data, const model::VqModel& vq, std::ostream& log) {
  data.require_images("encoding the VQ codes");
  log << "encoding " << data.size() << " pictures with the VQ" << std::endl;
  std::vector<int64_t> rows(size_t(data.size()));
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = int64_t(i);
  const int64_t f = vq.config().downsample_factor();
  const int64_t h = data.images.size(1) / f, w = data.images.size(2) / f;
  io::Dataset out = data.select(rows);
  out.images = at::Tensor();
  out.codes = encode_rows(vq, data, rows).view({data.size(), h, w}).to(at::kShort).contiguous();
  out.codes_vq = fingerprint(vq.weights());
  out.validate("the codes dataset");
  return out;
}

model::Condition word_condition(const model::Gpt& gpt, const at::Tensor& word_ids,
                                const at::Tensor& null_rows) {
  const auto& c = gpt.config();
  const int64_t B = word_ids.size(0);
  if (word_ids.dim() != 2 || word_ids.size(1) != c.cond_len) {
    throw Error("word_condition: expected word ids [B, " + std::to_string(c.cond_len) + "]");
  }
  auto caption = gpt.caption_from_words(word_ids);
  if (null_rows.defined()) {
    auto null = gpt.null_caption().unsqueeze(0).expand_as(caption);
    caption = at::where(null_rows.view({B, 1, 1}), null, caption);
  }
  model::Condition cond;
  cond.caption = caption;
  cond.caption_mask = word_ids.ge(0);
  return cond;
}

model::Gpt::Output teacher_forced(const model::Gpt& gpt, const at::Tensor& tokens,
                                  const at::Tensor& word_ids, const at::Tensor& null_rows,
                                  double dropout, at::Generator* gen) {
  if (word_ids.size(0) != tokens.size(0)) {
    throw Error("teacher_forced: tokens and word ids have different batch sizes");
  }
  return teacher_forced(gpt, tokens, word_condition(gpt, word_ids, null_rows), dropout, gen);
}

model::Gpt::Output teacher_forced(const model::Gpt& gpt, const at::Tensor& tokens,
                                  const model::Condition& cond, double dropout,
                                  at::Generator* gen) {
  const auto& c = gpt.config();
  const int64_t B = tokens.size(0), N = tokens.size(1);
  if (N != c.image_tokens() || cond.batch() != B) {
    throw Error("teacher_forced: expected tokens [" + std::to_string(cond.batch()) + ", " +
                std::to_string(c.image_tokens()) + "]");
  }
  auto x = at::cat({gpt.embed_condition(cond), gpt.embed_tokens(tokens.narrow(1, 0, N - 1))}, 1);
  if (dropout > 0 && gen) {
    // LlamaGen drops the input embeddings (token_drop); its residual/FFN dropout lives inside the
    // shared forward, which stays as inference runs it.
    auto keep = at::empty(x.sizes(), at::kFloat)
                    .bernoulli_(1.0 - dropout, *gen)
                    .to(x.device(), x.scalar_type());
    x = x * keep / (1.0 - dropout);
  }
  auto pos = at::arange(x.size(1), at::TensorOptions().dtype(at::kLong));
  at::Tensor key_valid;  // padded caption slots are hidden; a class has none
  if (c.cond == model::CondKind::Caption && cond.caption_mask.defined()) {
    auto mask = cond.caption_mask.to(x.device());
    key_valid = at::cat({mask, at::ones({B, N - 1}, mask.options())}, 1);
  }
  return gpt.forward(x, pos, nullptr, {}, key_valid, N);
}

double gpt_loss(const model::Gpt& gpt, const at::Tensor& tokens, const at::Tensor& word_ids,
                const std::vector<int64_t>& rows, bool uncond, int64_t batch) {
  at::NoGradGuard no_grad;
  double sum = 0.0;
  int64_t count = 0;
  for (size_t i = 0; i < rows.size(); i += size_t(batch)) {
    std::vector<int64_t> r(rows.begin() + long(i),
                           rows.begin() + long(std::min(rows.size(), i + size_t(batch))));
    auto idx = row_tensor(r);
    auto tok = tokens.index_select(0, idx).to(gpt.device());
    auto ids = word_ids.index_select(0, idx).to(gpt.device());
    at::Tensor null_rows;
    if (uncond)
      null_rows =
          at::ones({int64_t(r.size())}, at::TensorOptions().dtype(at::kBool).device(gpt.device()));
    auto out = teacher_forced(gpt, tok, ids, null_rows);
    auto lp = at::log_softmax(out.logits, -1);
    sum += -lp.gather(2, tok.unsqueeze(-1)).sum().item<double>();
    count += tok.numel();
  }
  return count ? sum / double(count) : 0.0;
}

GptRun load_gpt_run(const std::string& dir) {
  const auto run_path = run_file(dir, "run.json");
  const auto w_path = run_file(dir, "gpt.safetensors");
  // The weights as one file or as shards with an index (how a run folder small enough to be
  // committed or carried keeps them).
  if (!fs::exists(run_path) || io::safetensors_set_files(w_path).empty()) {
    throw Error(dir +
                ": not a finished 'adtree train gpt' run folder (run.json and gpt.safetensors, "
                "or its shards with gpt.safetensors.index.json, are needed)");
  }
  GptRun g;
  g.run = read_json_file(run_path);
  if (g.run.value("kind", "") != "gpt") throw Error(run_path + ": not a GPT run");
  g.config = model::GptConfig::from_json(g.run.at("gpt"));
  g.weights = io::map_safetensors_set(w_path);
  for (auto& [k, t] : g.weights) t = t.to(at::kFloat).clone();  // off the file mapping
  model::require_params(model::gpt_param_specs(g.config), g.weights, w_path);
  g.vocab = model::Vocabulary::load(run_file(dir, "text.json"));
  const auto tok_path = run_file(dir, "tokens.safetensors");
  if (!fs::exists(tok_path)) throw Error(dir + ": tokens.safetensors (the VQ codes) is missing");
  g.tokens = io::SafetensorsReader(tok_path).tensor("tokens").to(at::kLong);
  return g;
}

namespace {

// The defaults, the config's overrides, then the options given on the command line.
json gpt_run_config(const TrainOptions& opts, const std::string& what) {
  auto cfg = resolve_config(gpt_default_config(), opts, what);
  // Part of the config so that a resumed second stage must name the same starting run.
  if (!opts.init_from.empty()) cfg["init_from"] = fs::path(opts.init_from).filename().string();
  if (!opts.word_vectors.empty()) {
    // A second stage already has a trained word table; overwriting rows of it would undo that.
    require(opts.init_from.empty(), what,
            "word vectors start a first stage; a second stage (--init-from) keeps its word table");
    cfg["word_vectors"] = fs::path(opts.word_vectors).filename().string();
  }
  return cfg;
}

// The numbers of the resolved config that the training step reads, checked once.
struct GptSettings {
  int64_t steps = 0, batch = 0;
  double dropout = 0;          // of the input embeddings
  double caption_dropout = 0;  // share of rows trained with the null caption (for CFG)
  double token_noise = 0;      // share of input codes replaced by random ones

  static GptSettings read(const json& cfg, const std::string& what);
};

GptSettings GptSettings::read(const json& cfg, const std::string& what) {
  GptSettings s;
  s.steps = cfg["steps"], s.batch = cfg["batch"];
  require(s.steps > 0, what, "steps must be positive");
  require(s.batch > 0, what, "batch must be positive");
  s.dropout = cfg["dropout"], s.caption_dropout = cfg["caption_dropout"];
  require(s.dropout >= 0 && s.dropout < 1, what, "dropout must be in [0, 1)");
  require(s.caption_dropout >= 0 && s.caption_dropout <= 1, what,
          "caption_dropout must be in [0, 1]");
  s.token_noise = cfg["token_noise"];
  require(s.token_noise >= 0 && s.token_noise < 1, what, "token_noise must be in [0, 1)");
  return s;
}

// The side of the square code grid: the pictures' through the VQ, or the codes dataset's own.
int64_t code_grid(const io::Dataset& data, const model::VqModel& vq, const std::string& what) {
  if (!data.has_images()) {
    require(data.codes.size(1) == data.codes.size(2), what, "the code grids must be square");
    return data.codes.size(1);
  }
  const int64_t f = vq.config().downsample_factor();
  require(data.images.size(1) == data.images.size(2), what, "the pictures must be square");
  require(data.images.size(1) % f == 0, what,
          "the picture size is not a multiple of the VQ's downsampling");
  return data.images.size(1) / f;
}

// A first stage's caption word table from pretrained word vectors (the words they lack stay
// random).
void init_words_from_vectors(TensorMap& init, const model::Vocabulary& vocab,
                             const model::GptConfig& gcfg, const TrainOptions& opts,
                             const std::string& what, std::ostream& log) {
  std::unordered_set<std::string> wanted(vocab.entries().begin(), vocab.entries().end());
  const auto wv = load_word_vectors(opts.word_vectors, wanted);
  require(wv.dim == gcfg.cap_dim, what,
          "cap_dim is " + std::to_string(gcfg.cap_dim) + " but the word vectors have " +
              std::to_string(wv.dim) + " dimensions; set \"cap_dim\": " + std::to_string(wv.dim));
  auto& table = init.at("cls_embedding.word_embeddings.weight");
  const int64_t covered = init_word_table(table, vocab.entries(), wv);
  require(covered > 0, what,
          opts.word_vectors + " has a vector for none of the " + std::to_string(vocab.size()) +
              " caption words");
  log << "word table: " << covered << " of " << vocab.size() << " words from " << opts.word_vectors
      << ", the others random" << std::endl;
}

// A second stage continues a finished run: same architecture and the same word ids, else the
// loaded embedding rows would mean other words.
void init_from_run(TensorMap& init, const model::Vocabulary& vocab, const model::GptConfig& gcfg,
                   const TrainOptions& opts, const std::string& what, std::ostream& log) {
  const auto prev = load_gpt_run(opts.init_from);
  require(prev.config.to_json() == gcfg.to_json(), what,
          opts.init_from + " has another architecture (" + prev.config.to_json().dump() +
              ") than this config (" + gcfg.to_json().dump() + ")");
  require(prev.vocab.entries() == vocab.entries(), what,
          opts.init_from + " was trained with another word list (other dataset or split)");
  for (auto& [name, t] : init) t.copy_(prev.weights.at(name));
  log << "starting from the weights of " << opts.init_from << std::endl;
}

// The weights the run starts from: random, with pretrained word vectors or a finished run's.
TensorMap initial_gpt_weights(const model::GptConfig& gcfg, const model::Vocabulary& vocab,
                              const TrainOptions& opts, const std::string& what,
                              std::ostream& log) {
  auto init = model::init_params(model::gpt_param_specs(gcfg), opts.seed);
  init["output.weight"].zero_();  // LlamaGen: the output head starts at zero (uniform first guess)
  if (!opts.word_vectors.empty() && !opts.resume)
    init_words_from_vectors(init, vocab, gcfg, opts, what, log);
  if (!opts.init_from.empty()) init_from_run(init, vocab, gcfg, opts, what, log);
  return init;
}

// Unigram baseline: code frequencies of the training pictures (add-one), scored on validation;
// with the uniform guess and how many caption words the vocabulary misses. Every eval reports it.
json unigram_baseline(const at::Tensor& tokens, const std::vector<int64_t>& train_rows,
                      const std::vector<int64_t>& val_rows, int64_t V, const CaptionIds& caps) {
  json baseline;
  auto tr = tokens.index_select(0, at::tensor(train_rows, at::TensorOptions().dtype(at::kLong)));
  auto counts = at::bincount(tr.reshape(-1), {}, V).to(at::kDouble) + 1.0;
  auto logp = (counts / counts.sum()).log();
  baseline["unigram_train_nats"] = -(logp.index_select(0, tr.reshape(-1))).mean().item<double>();
  if (!val_rows.empty()) {
    auto va = tokens.index_select(0, at::tensor(val_rows, at::TensorOptions().dtype(at::kLong)));
    baseline["unigram_val_nats"] = -(logp.index_select(0, va.reshape(-1))).mean().item<double>();
  }
  baseline["uniform_nats"] = std::log(double(V));
  baseline["caption_unknown_words"] = caps.unknown_words;
  baseline["captions_without_known_words"] = caps.empty_captions;
  return baseline;
}

// A fixed slice of training pictures for the training-caption loss (no dropout), so it can
// stand next to the held-out loss: n of them (n <= 0: all) in a seeded shuffle.
std::vector<int64_t> train_eval_rows(const std::vector<int64_t>& train_rows, uint64_t seed,
                                     int64_t n) {
  auto gen = step_generator(seed, 0, 99);
  auto p = at::randperm(int64_t(train_rows.size()), gen, at::TensorOptions().dtype(at::kLong));
  std::vector<int64_t> shuffled;
  for (int64_t i = 0; i < p.size(0); ++i)
    shuffled.push_back(train_rows[size_t(p[i].item<int64_t>())]);
  if (n > 0 && int64_t(shuffled.size()) > n) shuffled.resize(size_t(n));
  return shuffled;
}

// One optimiser step's forward and backward. Everything random is drawn from generators seeded by
// (seed, step) (train/batches.h), so a resumed run takes the same steps.
struct GptStep {
  const GptSettings& s;
  const at::Tensor& tokens;
  const CaptionIds& caps;
  const model::Gpt& gpt;
  at::Device device;
  uint64_t seed;
  BatchOrder& order;

  double operator()(int64_t step, double& items);
  at::Tensor null_rows(int64_t step, int64_t n) const;
  at::Tensor noisy(int64_t step, const at::Tensor& tok) const;
};

// Caption dropout: the rows that read the null caption this step.
at::Tensor GptStep::null_rows(int64_t step, int64_t n) const {
  auto cgen = step_generator(seed, step, kCaptionStream);
  return at::empty({n}, at::kFloat).uniform_(0.0, 1.0, cgen).lt(s.caption_dropout).to(device);
}

// Token noise: some input codes are replaced by random ones while the targets stay clean. A
// picture can then no longer be continued from its own first codes alone, so the caption has
// to carry the identity, and the model learns to recover from the wrong codes sampling
// produces (teacher forcing never shows it any).
at::Tensor GptStep::noisy(int64_t step, const at::Tensor& tok) const {
  if (s.token_noise <= 0) return tok;
  auto ngen = step_generator(seed, step, kNoiseStream);
  auto hit = at::empty(tok.sizes(), at::kFloat).uniform_(0.0, 1.0, ngen).lt(s.token_noise);
  auto random =
      at::randint(gpt.config().vocab_size, tok.sizes(), ngen, at::TensorOptions().dtype(at::kLong));
  return at::where(hit.to(device), random.to(device), tok);
}

double GptStep::operator()(int64_t step, double& items) {
  const auto rows = order.rows_for_step(step);
  auto idx = row_tensor(rows);
  auto tok = tokens.index_select(0, idx).to(device);
  auto ids = caps.ids.index_select(0, idx).to(device);
  auto null = null_rows(step, int64_t(rows.size()));
  auto input = noisy(step, tok);
  auto dgen = step_generator(seed, step, kDropStream);
  auto out = teacher_forced(gpt, input, ids, null, s.dropout, &dgen);
  const int64_t V = gpt.config().vocab_size;
  auto loss = at::nll_loss(at::log_softmax(out.logits.reshape({-1, V}), -1), tok.reshape(-1));
  loss.backward();
  items += double(tok.numel());
  return loss.item<double>();
}

// Losses with the captions and with the null caption, on the training slice and on validation.
json evaluate_gpt(const model::Gpt& gpt, const at::Tensor& tokens, const at::Tensor& word_ids,
                  const std::vector<int64_t>& train_eval, const std::vector<int64_t>& val_rows,
                  const json& baseline) {
  json m = baseline;
  m["train_nats"] = gpt_loss(gpt, tokens, word_ids, train_eval, false);
  if (!val_rows.empty()) {
    m["val_nats"] = gpt_loss(gpt, tokens, word_ids, val_rows, false);
    m["val_uncond_nats"] = gpt_loss(gpt, tokens, word_ids, val_rows, true);
  }
  // Every eval, not only the last: null minus caption loss on training pictures is how much
  // the caption is used, the quantity a long run must watch.
  m["train_uncond_nats"] = gpt_loss(gpt, tokens, word_ids, train_eval, true);
  return m;
}

std::string loss_text(const json& m) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "| train %.3f val %.3f", m["train_nats"].get<double>(),
                m.value("val_nats", 0.0));
  return std::string(buf);
}

void write_finished_gpt(const TrainOptions& opts, const std::string& vq_dir, const json& cfg,
                        const model::GptConfig& gcfg, const Params& params, double epochs,
                        const TrainResult& result) {
  io::write_safetensors_set(run_file(opts.out, "gpt.safetensors"), params.detached(),
                            io::kShardBytes,
                            {{"format", "adtree"}, {"content", "GPT trained by adtree train gpt"}});
  write_json_file(run_file(opts.out, "run.json"), {{"kind", "gpt"},
                                                   {"config", cfg},
                                                   {"gpt", gcfg.to_json()},
                                                   {"params", params.count()},
                                                   {"steps", cfg["steps"].get<int64_t>()},
                                                   {"epochs", epochs},
                                                   {"vq_dir", fs::absolute(vq_dir).string()},
                                                   {"metrics", result.metrics},
                                                   {"provenance", opts.provenance}});
}

}  // namespace

TrainResult train_gpt(const io::Dataset& data, const std::string& vq_dir,
                      const TrainOptions& opts) {
  const std::string what = "train gpt";
  const json cfg = gpt_run_config(opts, what);
  const GptSettings s = GptSettings::read(cfg, what);
  data.validate(what);
  std::ostream& log = opts.log ? *opts.log : std::cout;

  const auto vq = load_vq(vq_dir);
  const int64_t grid = code_grid(data, vq, what);
  fs::create_directories(opts.out);
  const auto tokens = cached_tokens(data, vq, opts.out, log);

  const auto train_rows = split_rows(data, io::Split::Train, what);
  const auto val_rows = data.indices(io::Split::Validation);
  const auto vocab = build_vocabulary(data, train_rows);
  const auto gcfg = gpt_model_config(cfg, vocab.size(), vq.config().codebook_size, grid);
  const auto caps = caption_ids(data, vocab, gcfg.cond_len);
  vocab.save(run_file(opts.out, "text.json"));

  const auto init = initial_gpt_weights(gcfg, vocab, opts, what, log);
  const auto device = train_device(opts);
  Params params = Params::from(init, device);
  AdamW opt(params, {cfg["lr"].get<double>(), cfg["beta1"].get<double>(),
                     cfg["beta2"].get<double>(), 1e-8, cfg["weight_decay"].get<double>()});
  // inference = false: the model keeps these very tensors, so autograd reaches `params`.
  const model::Gpt gpt(gcfg, params.tensors, device, at::kFloat, /*inference=*/false);
  log << "GPT " << gcfg.dim << "x" << gcfg.n_layer << " (" << gcfg.n_head << " heads), "
      << params.count() << " parameters, " << vocab.size() << " words, " << train_rows.size()
      << " training pictures" << std::endl;

  const json baseline = unigram_baseline(tokens, train_rows, val_rows, gcfg.vocab_size, caps);
  const auto train_eval = train_eval_rows(train_rows, opts.seed, cfg["train_eval_images"]);
  BatchOrder order(train_rows, s.batch, opts.seed);
  GptStep step{s, tokens, caps, gpt, device, opts.seed, order};

  auto spec = LoopSpec::from_config("gpt", "tok", cfg);
  spec.step_fn = [&](int64_t i, double& items) { return step(i, items); };
  spec.eval_fn = [&](int64_t, bool) {
    return evaluate_gpt(gpt, tokens, caps.ids, train_eval, val_rows, baseline);
  };
  spec.eval_text = loss_text;

  auto result = run_loop(opts, params, opt, spec);
  if (result.finished)
    write_finished_gpt(opts, vq_dir, cfg, gcfg, params, order.epoch_of(s.steps), result);
  return result;
}

}  // namespace adtree::train
