// The T5 text encoder and its tokenizer against tests/t5/reference.py: an independent T5 v1.1
// written from the published definitions in Python/torch, a random encoder in the Hugging Face
// layout (with decoder tensors the loader must skip), and SentencePiece's own Python binding for
// the tokenizer. Needs Debian's python3-torch and python3-sentencepiece (tools/install-deps.sh);
// skipped with a message without them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "decode/run.h"
#include "decode/settings/method_table.h"
#include "io/safetensors.h"
#include "model/random_model.h"
#include "model/text/random_t5.h"
#include "model/text/t5_convert.h"
#include "model/text/t5_encoder.h"
#include "model/text/t5_tokenizer.h"
#include "model/text/text_encoder.h"
#include "util/error.h"

namespace fs = std::filesystem;
using namespace adtree;
using nlohmann::json;

namespace {

// fp32 against fp32 on the same formulas (the reference's own fp32-vs-fp64 gap is about 3e-6).
constexpr double kTol = 1e-4;

std::string python() {
  const char* p = std::getenv("ADTREE_PYTHON");
  return p && *p ? p : "/usr/bin/python3";
}

bool have_reference_tools() {
  static const bool ok =
      std::system((python() + " -c 'import torch, sentencepiece' >/dev/null 2>&1").c_str()) == 0;
  return ok;
}

struct Fixture {
  fs::path dir;
  std::map<std::string, at::Tensor> ref;
  json tokens;
};

const Fixture& fixture(const std::string& shape) {
  static std::map<std::string, Fixture> cache;
  if (auto it = cache.find(shape); it != cache.end()) return it->second;
  Fixture f;
  f.dir = fs::path(ADTREE_WORK_DIR) / ("t5_" + shape + "_" + std::to_string(::getpid()));
  fs::remove_all(f.dir);
  const std::string cmd = "cd '" + std::string(ADTREE_SOURCE_DIR) + "' && " + python() +
                          " tests/t5/reference.py --out '" + f.dir.string() + "' --shape " + shape;
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  f.ref = io::SafetensorsReader((f.dir / "reference.safetensors").string()).all();
  std::ifstream in(f.dir / "tokens.json");
  f.tokens = json::parse(in);
  if (cache.empty()) {
    std::atexit([] {
      for (auto& [k, v] : cache) fs::remove_all(v.dir);
    });
  }
  return cache.emplace(shape, std::move(f)).first->second;
}

#define NEED_REFERENCE()                                                                   \
  if (!have_reference_tools())                                                             \
  GTEST_SKIP() << "needs " << python() << " with torch and sentencepiece (python3-torch, " \
               << "python3-sentencepiece)"

double max_abs(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
}

std::string load_error(const std::string& dir) {
  try {
    model::TextEncoder::load(dir);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// load_model_dir's error for a model with the text encoder `t5` ("" when it loads).
std::string model_load_error(const std::string& dir, const std::string& t5) {
  model::LoadOptions o;
  o.text_encoder = t5;
  try {
    model::load_model_dir(dir, o);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A folder of this test process under the build's tests/, removed when the process ends.
fs::path scratch(const std::string& name) {
  static std::vector<fs::path> made;
  if (made.empty()) {
    std::atexit([] {
      for (const auto& d : made) fs::remove_all(d);
    });
  }
  const auto d = fs::path(ADTREE_WORK_DIR) / ("t5_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  made.push_back(d);
  return d;
}

// A copy of the small fixture's T5 directory to damage.
fs::path copy_t5(const std::string& name) {
  const auto dst = scratch("bad_" + name);
  fs::copy(fixture("small").dir / "t5", dst, fs::copy_options::recursive);
  return dst;
}

// The random t2i-embeddings model `adtree model random --config micro --cond t5` writes: a micro
// GPT reading 16 caption rows of width 16 and a tiny random T5 in its t5/ folder. Made once.
const std::string& t5_model() {
  static const std::string dir = [] {
    const auto d = scratch("model");
    auto g = model::GptConfig::preset("micro");
    g.num_words = 0;
    g.cond_len = 16;
    model::write_random_model(d.string(), g, model::small_vq_config(g.vocab_size, g.grid_h), 3,
                              "t5 test", "t5");
    return d.string();
  }();
  return dir;
}

decode::DecodeRequest request(const std::string& method, double temperature) {
  decode::DecodeRequest r;
  r.method.method = decode::method_from_string(method);
  r.method.verify = temperature > 0 ? decode::VerifyRule::Coupled : r.method.verify;
  r.sampling.cfg_scale = 3.0;
  r.sampling.temperature = temperature;
  r.seed = 11;
  return r;
}

// The prompt's tokens through the front ends' path (prepare_run, prepare_condition, run_decode).
std::vector<int64_t> generate(const model::ModelBundle& m, const std::string& prompt,
                              const decode::DecodeRequest& r, decode::RunSettings* out = nullptr) {
  auto run = decode::prepare_run(m, r, prompt, {});
  const auto cond = decode::prepare_condition(m, run);
  if (out) *out = run;
  return decode::run_decode(m, cond, run).tokens;
}

}  // namespace

// The encoder's last hidden state, padded row included, for two shapes (inner width = d_model and
// not), within 1e-4 of the reference in fp32; the decoder tensors of the file are skipped.
TEST(T5Encoder, MatchesTheReferenceInFp32) {
  NEED_REFERENCE();
  for (const std::string shape : {"small", "wide"}) {
    const auto& f = fixture(shape);
    const auto te = model::TextEncoder::load((f.dir / "t5").string());
    const auto out = te->encoder().encode(f.ref.at("input_ids"), f.ref.at("attention_mask"));
    const auto& want = f.ref.at("hidden");
    ASSERT_EQ(out.sizes(), want.sizes()) << shape;
    EXPECT_LE(max_abs(out, want), kTol) << shape;
    // The padded row's real positions match that row encoded alone without padding: what the
    // typed-prompt path does (it encodes the caption's ids only).
    const int64_t n = f.ref.at("attention_mask")[1].sum().item<int64_t>();
    const auto ids = f.ref.at("input_ids")[1].narrow(0, 0, n).unsqueeze(0);
    const auto alone = te->encoder().encode(ids, at::ones_like(ids));
    EXPECT_LE(max_abs(alone[0], want[1].narrow(0, 0, n)), kTol) << shape;
  }
}

// T5's relative-position buckets over -200 .. 200 (the 12-token rows reach only the exact ones).
TEST(T5Encoder, PositionBucketsMatchTheReference) {
  NEED_REFERENCE();
  const auto& want = fixture("small").ref.at("position_buckets");
  for (int64_t r = -200; r <= 200; ++r) {
    EXPECT_EQ(model::t5_relative_bucket(r, 32, 128), want[r + 200].item<int64_t>()) << r;
  }
}

// bf16 matrices (norms, softmax and the residual stream stay fp32): the distance from fp32 stated
// and bounded.
TEST(T5Encoder, Bf16StaysWithinItsStatedDistanceOfFp32) {
  NEED_REFERENCE();
  const auto& f = fixture("wide");
  model::TextEncoderOptions o;
  o.dtype = "bf16";
  const auto te = model::TextEncoder::load((f.dir / "t5").string(), o);
  const auto out = te->encoder().encode(f.ref.at("input_ids"), f.ref.at("attention_mask"));
  const auto& want = f.ref.at("hidden");
  const double rel = max_abs(out, want) / want.abs().max().item<double>();
  std::cout << "bf16 vs fp32: max abs " << max_abs(out, want) << ", relative to the largest " << rel
            << "\n";
  EXPECT_LE(rel, 0.05);
  EXPECT_GT(rel, 0.0) << "bf16 ran in fp32";
}

// SentencePiece's own ids for raw prompts (punctuation, digits, upper case, non-ASCII, spaces,
// empty), and LlamaGen's caption: lower case, collapsed spaces, </s>, at most 120 ids.
TEST(T5Tokenizer, MatchesSentencePiecesPythonBindingAndLlamaGensPreparation) {
  NEED_REFERENCE();
  const auto& f = fixture("small");
  const model::T5Tokenizer tok((f.dir / "t5" / "spiece.model").string());
  EXPECT_EQ(tok.eos_id(), 1);
  EXPECT_EQ(tok.pad_id(), 0);
  for (const auto& e : f.tokens.at("raw")) {
    const auto prompt = e.at("prompt").get<std::string>();
    EXPECT_EQ(tok.encode(prompt), e.at("ids").get<std::vector<int64_t>>()) << prompt;
  }
  bool saw_truncated = false;
  for (const auto& e : f.tokens.at("llamagen")) {
    const auto prompt = e.at("prompt").get<std::string>();
    EXPECT_EQ(model::llamagen_clean_caption(prompt), e.at("text").get<std::string>()) << prompt;
    const auto c = tok.caption(prompt, 120);
    EXPECT_EQ(c.ids, e.at("ids").get<std::vector<int64_t>>()) << prompt;
    EXPECT_EQ(int64_t(c.ids.size()), e.at("mask_len").get<int64_t>()) << prompt;
    EXPECT_EQ(c.ids.back(), 1) << prompt;
    saw_truncated |= c.truncated;
    EXPECT_EQ(c.truncated, c.pieces > 119) << prompt;
  }
  EXPECT_TRUE(saw_truncated) << "the fixture has a prompt over 120 tokens";
}

// Python's lower() and split() on what the fixture does not cover.
TEST(T5Tokenizer, CleaningLowersUnicodeAndCollapsesPythonsWhitespace) {
  EXPECT_EQ(model::llamagen_clean_caption("  A\tRed\u00a0BUS \n"), "a red bus");
  EXPECT_EQ(model::llamagen_clean_caption("\xC3\x89T\xC3\x89 \xC3\x9C"
                                          "BER \xCE\xA9"),
            "\xC3\xA9t\xC3\xA9 \xC3\xBC"
            "ber \xCF\x89");  // ÉTÉ ÜBER Ω -> été über ω
  EXPECT_EQ(model::llamagen_clean_caption(""), "");
  EXPECT_THROW(model::llamagen_clean_caption("bad \xC3"), Error);
}

// Every problem of a T5 directory in one error, each naming its file.
TEST(TextEncoder, BadDirectoriesAreClearErrors) {
  NEED_REFERENCE();
  EXPECT_NE(load_error("/nonexistent-t5").find("not a T5 directory"), std::string::npos);

  auto d = copy_t5("spiece");
  fs::remove(d / "spiece.model");
  auto msg = load_error(d.string());
  EXPECT_NE(msg.find("spiece.model: the T5 tokenizer's SentencePiece model is missing"),
            std::string::npos)
      << msg;

  d = copy_t5("relu");
  std::ifstream cin(d / "config.json");
  auto cfg = json::parse(cin);
  cin.close();
  cfg["feed_forward_proj"] = "relu";
  std::ofstream(d / "config.json") << cfg.dump();
  std::ofstream(d / "spiece.model") << "not a model";
  msg = load_error(d.string());
  EXPECT_NE(msg.find("2 problem(s)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("only T5 v1.1's 'gated-gelu'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("spiece.model: not a SentencePiece model"), std::string::npos) << msg;

  d = copy_t5("weights");
  auto w = io::SafetensorsReader((d / "model.safetensors").string()).all();
  w.erase("encoder.block.1.layer.1.DenseReluDense.wo.weight");
  auto bad = w.at("encoder.block.0.layer.0.SelfAttention.k.weight").clone();
  bad.view({-1})[5] = std::numeric_limits<float>::quiet_NaN();
  w["encoder.block.0.layer.0.SelfAttention.k.weight"] = bad;
  io::write_safetensors((d / "model.safetensors").string(), w);
  msg = load_error(d.string());
  EXPECT_NE(msg.find("missing tensor 'encoder.block.1.layer.1.DenseReluDense.wo.weight'"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("'encoder.block.0.layer.0.SelfAttention.k.weight' holds non-finite"),
            std::string::npos)
      << msg;

  d = copy_t5("bin");
  fs::rename(d / "model.safetensors", d / "pytorch_model.bin");
  msg = load_error(d.string());
  EXPECT_NE(msg.find("pytorch_model.bin only"), std::string::npos) << msg;
}

// The memory of encoded prompts: the same prompt comes back without encoding, the same rows.
TEST(TextEncoder, RemembersPromptsItEncoded) {
  NEED_REFERENCE();
  const auto te = model::TextEncoder::load((fixture("small").dir / "t5").string());
  const auto a = te->encode("a red bus", 120);
  EXPECT_FALSE(a.cached);
  EXPECT_GT(a.ms, 0.0);
  const auto b = te->encode("a red bus", 120);
  EXPECT_TRUE(b.cached);
  EXPECT_TRUE(at::equal(a.embedding, b.embedding));
  EXPECT_EQ(a.ids, b.ids);
  EXPECT_EQ(a.embedding.size(0), int64_t(a.ids.size()));
  EXPECT_FALSE(te->encode("a red bus", 3).cached) << "another caption length";
  EXPECT_EQ(te->encode("a red bus", 3).ids.size(), 3u);
}

// A typed prompt is its T5 caption: the same tokens as the caption-embedding file holding the
// encoder's rows for it (the path tools/t5_embed.py serves), greedy and with shared-noise coupling;
// and coupled ADT-Tree on the typed prompt stays token-identical to coupled AR.
TEST(RandomT5Model, TypedPromptsGiveTheTokensOfTheirEmbeddingFiles) {
  const auto m = model::load_model_dir(t5_model());
  EXPECT_EQ(m.manifest.kind, "t2i-embeddings");
  EXPECT_EQ(m.manifest.text_encoder, "t5");
  ASSERT_TRUE(m.text_encoder);
  EXPECT_EQ(m.text_encoder->config().d_model, m.gpt_config.cap_dim);

  const auto c = m.text_encoder->encode("A red  cat", m.gpt_config.cond_len);
  EXPECT_EQ(c.ids, m.text_encoder->tokenizer().caption("a red cat", 16).ids);
  const auto file = (fs::path(t5_model()) / "a-red-cat.safetensors").string();
  io::write_safetensors(file, {{"caption_embedding", c.embedding},
                               {"caption_mask", at::ones({c.embedding.size(0)}, at::kLong)}});
  for (double t : {0.0, 1.0}) {
    decode::RunSettings run;
    const auto typed = generate(m, "A red  cat", request("ar", t), &run);
    EXPECT_EQ(typed, generate(m, file, request("ar", t))) << "T = " << t;
    EXPECT_EQ(run.prompt_tokens, int64_t(c.ids.size()));
    EXPECT_FALSE(run.prompt_truncated);
    EXPECT_EQ(run.text_encoder, m.text_encoder->dir());
    EXPECT_EQ(typed, generate(m, "A red  cat", request("adt", t))) << "T = " << t;
  }
  EXPECT_NE(generate(m, "a red cat", request("ar", 0)), generate(m, "a blue dog", request("ar", 0)))
      << "different prompts, different captions";
}

// A prompt longer than the model's caption rows keeps its first pieces and </s>, and says so.
TEST(RandomT5Model, LongPromptsAreCutToTheCaptionRowsAndSaidSo) {
  const auto m = model::load_model_dir(t5_model());
  std::string prompt;
  for (int i = 0; i < 12; ++i) prompt += "the happy yellow star ";
  decode::RunSettings run;
  generate(m, prompt, request("ar", 0), &run);
  EXPECT_TRUE(run.prompt_truncated);
  EXPECT_EQ(run.prompt_tokens, m.gpt_config.cond_len);
  const auto j = run.to_json();
  EXPECT_EQ(j.value("prompt_truncated", false), true) << j.dump();
}

// Without an encoder a typed prompt names the two ways out; an encoder of another width, or one
// missing its tokenizer, is refused at load with the file named.
TEST(RandomT5Model, MissingOrMismatchedEncodersAreClearErrors) {
  auto bare = scratch("bare");
  fs::copy(t5_model(), bare, fs::copy_options::recursive);
  fs::remove_all(bare / "t5");
  auto j = [&] {
    std::ifstream in(bare / "model.json");
    return json::parse(in);
  }();
  j.erase("text_encoder");
  std::ofstream(bare / "model.json") << j.dump(1);
  const auto m = model::load_model_dir(bare.string());
  EXPECT_FALSE(m.text_encoder);
  try {
    generate(m, "a red cat", request("ar", 0));
    ADD_FAILURE() << "a typed prompt without an encoder";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--t5 DIR"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Model > Text Encoder"), std::string::npos) << e.what();
  }

  const auto narrow = scratch("narrow");
  model::write_random_t5(narrow.string(), 32, 1);
  auto msg = model_load_error(t5_model(), narrow.string());
  EXPECT_NE(msg.find("d_model is 32"), std::string::npos) << msg;
  EXPECT_NE(msg.find("captions of width 16"), std::string::npos) << msg;

  fs::remove(narrow / "spiece.model");
  msg = model_load_error(t5_model(), narrow.string());
  EXPECT_NE(msg.find("spiece.model: the T5 tokenizer's SentencePiece model is missing"),
            std::string::npos)
      << msg;
}

// A directory with pytorch_model.bin only: the loader points to the converter, and the converted
// model.safetensors encodes as the original does.
TEST(TextEncoder, PytorchBinOnlyDirectoriesConvertToTheSameEncoder) {
  NEED_REFERENCE();
  const auto d = copy_t5("pytorch_bin");
  const std::string save =
      python() + " -c 'import sys, torch; sys.path.insert(0, \"" + std::string(ADTREE_SOURCE_DIR) +
      "/tools\"); from convert_llamagen import read_safetensors; d = sys.argv[1]; "
      "torch.save(read_safetensors(d + \"/model.safetensors\")[0], d + \"/pytorch_model.bin\")' '" +
      d.string() + "'";
  ASSERT_EQ(std::system(save.c_str()), 0) << save;
  fs::rename(d / "model.safetensors", d / "original.safetensors");
  EXPECT_NE(load_error(d.string()).find("adtree convert --t5"), std::string::npos);

  // The Python converter and the C++ one (adtree convert --t5) give the same tensors, and the
  // encoder encodes as the original does.
  const std::string convert = python() + " '" + std::string(ADTREE_SOURCE_DIR) +
                              "/tools/t5_to_safetensors.py' '" + d.string() + "' >/dev/null";
  ASSERT_EQ(std::system(convert.c_str()), 0) << convert;
  fs::rename(d / "model.safetensors", d / "python.safetensors");
  EXPECT_NE(model::convert_t5_dir(d.string(), "").find("encoder tensors"), std::string::npos);
  const auto py = io::SafetensorsReader((d / "python.safetensors").string()).all();
  const auto cpp = io::SafetensorsReader((d / "model.safetensors").string()).all();
  ASSERT_EQ(cpp.size(), py.size());
  for (const auto& [name, t] : py) {
    ASSERT_TRUE(cpp.count(name)) << name;
    EXPECT_TRUE(at::equal(cpp.at(name), t)) << name;
  }
  const auto converted = model::TextEncoder::load(d.string())->encode("a red bus at night", 120);
  fs::rename(d / "model.safetensors", d / "converted.safetensors");
  fs::rename(d / "original.safetensors", d / "model.safetensors");
  const auto original = model::TextEncoder::load(d.string())->encode("a red bus at night", 120);
  EXPECT_TRUE(at::equal(converted.embedding, original.embedding));
  EXPECT_EQ(std::system(convert.c_str()) == 0, false) << "refuses to overwrite model.safetensors";
  EXPECT_THROW(model::convert_t5_dir(d.string(), ""), Error) << "refuses to overwrite";
  fs::remove(d / "config.json");
  fs::remove(d / "model.safetensors");
  EXPECT_THROW(model::convert_t5_dir(d.string(), ""), Error) << "no config.json";
}
