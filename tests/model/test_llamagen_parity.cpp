// Parity with LlamaGen: tests/llamagen/reference.py, an independent implementation
// written from the published formulas in Python/torch, builds small random models in the exact
// released tensor layout (checkpoints with the same stray buffers) and their reference outputs;
// tools/convert_llamagen.py converts them; the C++ model must reproduce the outputs in fp32:
// teacher-forced logits for c2i and t2i (class / caption and null condition), KV-cached greedy
// tokens with CFG, the VQ decode, and the LANTERN-style draft head. Needs Python 3 with torch
// (Debian: python3-torch, which tools/install-deps.sh installs); skipped with a message without it.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "decode/run.h"
#include "decode/settings/method_table.h"
#include "io/manifest.h"
#include "io/safetensors.h"
#include "model/conditioning.h"
#include "model/llamagen/llamagen_convert.h"
#include "model/llamagen/llamagen_import.h"
#include "model/model_dir.h"
#include "python_reference.h"
#include "util/error.h"

namespace fs = std::filesystem;
using namespace adtree;

using adtree::testing::have_torch;
using adtree::testing::python;

namespace {

// fp32 against fp32 on the same formulas: differences are summation order only (the reference's
// own fp32-vs-fp64 gap is <= 2e-5).
constexpr double kLogitTol = 1e-4;
constexpr double kPixelTol = 1e-4;

void run(const std::string& cmd) {
  const std::string full = "cd '" + std::string(ADTREE_SOURCE_DIR) + "' && nice -n 5 " + cmd;
  ASSERT_EQ(std::system(full.c_str()), 0) << full;
}

// One reference fixture + its converted model directory, built once per kind.
struct Fixture {
  fs::path dir;
  model::ModelBundle model;
  std::map<std::string, at::Tensor> ref;
  nlohmann::json meta;
};

const Fixture& fixture(const std::string& kind) {
  static std::map<std::string, Fixture> cache;
  auto it = cache.find(kind);
  if (it != cache.end()) return it->second;
  Fixture f;
  // One directory per process: ctest runs each test of this file as its own process, in parallel.
  f.dir = fs::path(ADTREE_WORK_DIR) / ("llamagen_" + kind + "_" + std::to_string(::getpid()));
  fs::remove_all(f.dir);
  fs::create_directories(f.dir);
  const std::string ref = f.dir.string() + "/ref", out = f.dir.string() + "/model";
  run(python() + " tests/llamagen/reference.py --out " + ref + " --kind " + kind);
  std::ifstream meta_in(ref + "/meta.json");
  f.meta = nlohmann::json::parse(meta_in);
  std::string args;
  for (const auto& a : f.meta.at("convert")) {
    const auto s = a.get<std::string>();
    args += " " + (s.size() > 3 && s.substr(s.size() - 3) == ".pt" ? ref + "/" + s : s);
  }
  run(python() + " tools/convert_llamagen.py" + args + " --out " + out);
  f.model = model::load_model_dir(out);
  f.ref = io::SafetensorsReader(ref + "/reference.safetensors").all();
  if (cache.empty()) {  // once: the fixtures' directories go when the process ends
    std::atexit([] {
      for (const auto& [k, fx] : cache) {
        std::error_code ec;
        fs::remove_all(fx.dir, ec);
      }
    });
  }
  return cache.emplace(kind, std::move(f)).first->second;
}

double max_diff(const at::Tensor& a, const at::Tensor& b) {
  EXPECT_EQ(a.sizes(), b.sizes());
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
}

// Teacher-forced logits [N, vocab] of `tokens` under condition row `row` of `cond`.
at::Tensor teacher_forced(const model::Gpt& gpt, const model::Condition& cond,
                          const at::Tensor& tokens) {
  const int64_t B = cond.batch();
  auto cache = gpt.new_cache(B);
  auto first = gpt.prefill(cache, cond).logits;  // predicts token 0
  auto rest =
      gpt.forward_tokens(
             cache,
             tokens.narrow(0, 0, tokens.size(0) - 1).unsqueeze(0).expand({B, -1}).contiguous(), 0)
          .logits;
  return at::cat({first.narrow(1, first.size(1) - 1, 1), rest}, 1);  // [B, N, vocab]
}

model::Condition class_cond(const model::Gpt& gpt, int64_t id) {
  model::Condition c;
  c.class_ids = at::tensor({id, gpt.config().num_classes});  // the class and the null class
  return c;
}

std::vector<int64_t> greedy_tokens(const Fixture& f, const model::Condition& cond,
                                   const std::string& method) {
  decode::DecodeRequest r;
  r.method.method = adtree::decode::method_from_string(method);
  r.sampling.cfg_scale = f.meta.at("cfg_scale").get<double>();
  r.sampling.temperature = 0.0;
  r.sampling.top_k = 0;
  return decode::run_decode(f.model, cond, r).tokens;
}

void expect_tokens(const std::vector<int64_t>& got, const at::Tensor& want, const char* method) {
  ASSERT_EQ(int64_t(got.size()), want.numel()) << method;
  for (int64_t i = 0; i < want.numel(); ++i) {
    EXPECT_EQ(got[size_t(i)], want[i].item<int64_t>()) << method << " token " << i;
  }
}

#define REQUIRE_TORCH() \
  if (!have_torch()) GTEST_SKIP() << python() << " has no torch (apt install python3-torch)"

}  // namespace

TEST(LlamaGenParity, ClassToImageTeacherForcedLogits) {
  REQUIRE_TORCH();
  const auto& f = fixture("c2i");
  const auto tokens = f.ref.at("tokens");
  const int64_t id = f.ref.at("class_id").item<int64_t>();
  const auto logits = teacher_forced(*f.model.gpt, class_cond(*f.model.gpt, id), tokens);
  EXPECT_LT(max_diff(logits[0], f.ref.at("logits")), kLogitTol);
  EXPECT_LT(max_diff(logits[1], f.ref.at("logits_null")), kLogitTol);
  // The class is reachable from the prompt text too (number and the converted names).
  EXPECT_EQ(f.model.vocab.class_id(std::to_string(id)), id);
}

TEST(LlamaGenParity, ClassToImageGreedyWithCfgMatchesForEveryMethodFamily) {
  REQUIRE_TORCH();
  const auto& f = fixture("c2i");
  const auto want = f.ref.at("greedy");
  const auto cond = class_cond(*f.model.gpt, f.ref.at("class_id").item<int64_t>());
  for (const char* method : {"ar", "sjd"}) {
    expect_tokens(greedy_tokens(f, cond, method), want, method);
  }
}

TEST(LlamaGenParity, VqDecodePixels) {
  REQUIRE_TORCH();
  const auto& f = fixture("c2i");
  const auto& g = f.model.gpt_config;
  const auto pixels = f.model.vq->decode(f.ref.at("tokens").unsqueeze(0), g.grid_h, g.grid_w);
  EXPECT_LT(max_diff(pixels[0], f.ref.at("pixels")), kPixelTol);
}

TEST(LlamaGenParity, TextToImageFromAnEmbeddingFileTeacherForcedLogits) {
  REQUIRE_TORCH();
  const auto& f = fixture("t2i");
  // The prompt file is right-padded like a T5 tokenizer's output, padded rows full of garbage:
  // the loader must move the real rows to the end and zero the rest, as LlamaGen does.
  const auto cond = model::make_condition(*f.model.gpt, f.model.vocab,
                                          (f.dir / "ref/prompt.safetensors").string(), true);
  const auto logits = teacher_forced(*f.model.gpt, cond, f.ref.at("tokens"));
  EXPECT_LT(max_diff(logits[0], f.ref.at("logits")), kLogitTol);
  EXPECT_LT(max_diff(logits[1], f.ref.at("logits_null")), kLogitTol);
}

TEST(LlamaGenParity, TextToImageGreedyIsTheSameWithTheLanternDrafter) {
  REQUIRE_TORCH();
  const auto& f = fixture("t2i");
  ASSERT_TRUE(f.model.drafter) << "the HF-style drafter must load as the EAGLE head";
  const auto cond = model::make_condition(*f.model.gpt, f.model.vocab,
                                          (f.dir / "ref/prompt.safetensors").string(), true);
  const auto want = f.ref.at("greedy");
  for (const char* method : {"ar", "static", "dynamic", "adt"}) {
    expect_tokens(greedy_tokens(f, cond, method), want, method);
  }
}

TEST(LlamaGenParity, LanternDrafterLogits) {
  REQUIRE_TORCH();
  const auto& f = fixture("t2i");
  ASSERT_TRUE(f.model.drafter);
  const auto out = f.model.drafter->forward(nullptr, f.ref.at("drafter_feats").unsqueeze(0),
                                            f.ref.at("drafter_tokens").unsqueeze(0),
                                            f.ref.at("drafter_positions"));
  // With the target's eps (1e-5) instead of the drafter's (1e-6) the reference moves by ~0.4.
  EXPECT_LT(max_diff(out.logits[0], f.ref.at("drafter_logits")), kLogitTol);
}

TEST(LlamaGenParity, TheCppImporterAgreesWithThePythonConverter) {
  REQUIRE_TORCH();
  for (const char* kind : {"c2i", "t2i"}) {
    const auto& f = fixture(kind);
    // The converted weights as a LlamaGen state dict again (DDP prefix, a stray RoPE buffer).
    auto sd = io::SafetensorsReader((f.dir / "model/gpt.safetensors").string()).all();
    std::map<std::string, at::Tensor> wrapped;
    for (const auto& [k, t] : sd) wrapped["module." + k] = t;
    wrapped["module.freqs_cis"] = at::zeros({4, 2});
    const auto path = (f.dir / "state_dict.safetensors").string();
    io::write_safetensors(path, wrapped);
    const auto read = model::read_state_dict(path);
    model::GptImportOptions o;
    o.n_head = f.model.gpt_config.n_head;
    o.grid = f.model.gpt_config.grid_h;
    const auto cfg = model::infer_gpt_config(read, o);
    EXPECT_EQ(cfg.to_json(), f.model.gpt_config.to_json()) << kind;
    const auto imported = model::import_gpt(read, cfg);
    EXPECT_EQ(imported.weights.size(), sd.size());
    EXPECT_EQ(imported.dropped, std::vector<std::string>{"freqs_cis"});
    // The VQ: the same configuration from the shapes alone.
    const auto vsd = io::SafetensorsReader((f.dir / "model/vq.safetensors").string()).all();
    EXPECT_EQ(model::infer_vq_config(vsd).to_json(), f.model.vq_config.to_json()) << kind;
  }
}

// The same fixture's meta "convert" arguments as a C++ conversion request.
model::ConvertRequest cpp_request(const Fixture& f, const fs::path& out) {
  model::ConvertRequest r;
  const auto& args = f.meta.at("convert");
  for (size_t k = 0; k + 1 < args.size(); k += 2) {
    const auto key = args[k].get<std::string>(), v = args[k + 1].get<std::string>();
    const std::string file = (f.dir / "ref" / v).string();
    if (key == "--gpt") r.gpt = file;
    if (key == "--vq") r.vq = file;
    if (key == "--drafter") r.drafter = file;
    if (key == "--n-head") r.n_head = std::stoll(v);
    if (key == "--grid") r.grid = std::stoll(v);
  }
  r.out = out.string();
  return r;
}

void expect_same_tensors(const fs::path& want_file, const fs::path& got_file) {
  const auto want = io::SafetensorsReader(want_file.string()).all();
  const auto got = io::SafetensorsReader(got_file.string()).all();
  ASSERT_EQ(got.size(), want.size()) << got_file;
  for (const auto& [name, t] : want) {
    ASSERT_TRUE(got.count(name)) << got_file << " lacks " << name;
    EXPECT_EQ(got.at(name).scalar_type(), t.scalar_type()) << name;
    EXPECT_TRUE(got.at(name).sizes() == t.sizes() && at::equal(got.at(name), t)) << name;
  }
}

// `adtree convert`'s conversion, from the .pt files without Python, writes what
// tools/convert_llamagen.py writes: the same tensors bit for bit, the same configuration, sampling
// and drafter entries, the same class names; and the two directories draw the same tokens.
TEST(LlamaGenParity, TheCppConverterWritesThePythonConvertersDirectory) {
  REQUIRE_TORCH();
  for (const char* kind : {"c2i", "t2i"}) {
    const auto& f = fixture(kind);
    const fs::path out = f.dir / "cpp-model";
    fs::remove_all(out);
    const auto res = model::convert_llamagen(cpp_request(f, out));
    EXPECT_FALSE(res.summary.empty());
    for (const auto& entry : fs::directory_iterator(f.dir / "model")) {
      const auto name = entry.path().filename().string();
      ASSERT_TRUE(fs::exists(out / name)) << kind << ": no " << name;
      if (entry.path().extension() == ".safetensors") expect_same_tensors(entry.path(), out / name);
    }
    const auto py = io::Manifest::load((f.dir / "model").string()).to_json();
    const auto cpp = io::Manifest::load(out.string()).to_json();
    for (const char* key : {"kind", "grid", "codebook_size", "gpt", "vq", "sampling", "drafter"}) {
      EXPECT_EQ(cpp.value(key, nlohmann::json()), py.value(key, nlohmann::json())) << key;
    }
    EXPECT_EQ(cpp["provenance"]["sources"], py["provenance"]["sources"]);  // sizes and SHA-256
    EXPECT_EQ(cpp["provenance"]["inferred"], py["provenance"]["inferred"]);
    const auto cpp_model = model::load_model_dir(out.string());
    EXPECT_EQ(cpp_model.vocab.size(), f.model.vocab.size());
    if (std::string(kind) == "c2i") {
      decode::DecodeRequest r;  // sampled, T = 1: every draw must agree
      r.sampling.cfg_scale = 4.0;
      r.seed = 5;
      const auto cond = class_cond(*f.model.gpt, 3);
      EXPECT_EQ(decode::run_decode(cpp_model, cond, r).tokens,
                decode::run_decode(f.model, cond, r).tokens);
    }
  }
}

// A pickled checkpoint is read as it is, without Python: the state dict under "model" with its
// stray buffers, and the saved arguments (the fixture's GPT-tiny).
TEST(LlamaGenParity, PickledCheckpointsAreReadWithoutPython) {
  REQUIRE_TORCH();
  const auto& f = fixture("c2i");
  nlohmann::json args;
  const auto sd = model::read_state_dict((f.dir / "ref/gpt.pt").string(), &args);
  EXPECT_EQ(args.at("gpt_model"), "GPT-tiny");
  const auto conv = io::SafetensorsReader((f.dir / "model/gpt.safetensors").string()).all();
  for (const auto& [name, t] : conv) {
    ASSERT_TRUE(sd.count(name)) << name;
    EXPECT_TRUE(at::equal(sd.at(name), t)) << name;
  }
  EXPECT_TRUE(sd.count("freqs_cis"));  // dropped later, by the import
}

// The converter's refusals: one line on stderr and exit status 2, nothing written.
TEST(LlamaGenParity, ConverterRefusesWhatItDoesNotRecognise) {
  REQUIRE_TORCH();
  const auto& f = fixture("c2i");
  const std::string ref = (f.dir / "ref").string();
  auto status = [&](const std::string& args, const std::string& out) {
    const std::string cmd = "cd '" + std::string(ADTREE_SOURCE_DIR) + "' && " + python() +
                            " tools/convert_llamagen.py " + args + " --out " + out +
                            " >/dev/null 2>&1";
    const int rc = std::system(cmd.c_str());
    EXPECT_FALSE(fs::exists(out)) << args;
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  };
  const std::string out = (f.dir / "refused").string();
  EXPECT_EQ(status("--gpt " + ref + "/missing.pt --n-head 4 --grid 4", out), 2);
  EXPECT_EQ(status("--gpt " + ref + "/meta.json --n-head 4 --grid 4", out), 2);  // not a checkpoint
  EXPECT_EQ(status("--gpt " + ref + "/vq.pt --n-head 4 --grid 4", out), 2);      // a VQ, not a GPT
  EXPECT_EQ(status("--gpt " + ref + "/gpt.pt --grid 4", out), 2);                // heads unknown
  EXPECT_EQ(status("--gpt " + ref + "/gpt.pt --n-head 4", out), 2);              // grid unknown
  // The C++ conversion refuses the same, with an adtree::Error and nothing written.
  auto refused = [&](model::ConvertRequest r) {
    r.out = out;
    EXPECT_THROW(model::convert_llamagen(r), Error) << r.gpt;
    EXPECT_FALSE(fs::exists(out));
    for (const auto& e : fs::directory_iterator(f.dir)) {
      EXPECT_EQ(e.path().filename().string().find(".refused.converting"), std::string::npos);
    }
  };
  model::ConvertRequest r;
  r.n_head = 4, r.grid = 4;
  for (const char* file : {"missing.pt", "meta.json", "vq.pt"}) {
    r.gpt = ref + "/" + file;
    refused(r);
  }
  r.gpt = ref + "/gpt.pt";
  r.n_head = 0;
  refused(r);
  r.n_head = 4, r.grid = 0;
  refused(r);
}

// tools/t5_embed.py's file is what the app reads as a t2i prompt (its --fake-encoder writes the
// same format without transformers and FLAN-T5 weights).
TEST(LlamaGenParity, T5HelperFilesArePrompts) {
  REQUIRE_TORCH();
  const auto& f = fixture("t2i");
  const auto file = (f.dir / "bus.safetensors").string();
  run(python() + " tools/t5_embed.py --fake-encoder --prompt 'A red  double-decker bus' --out " +
      file);
  const auto cond = model::make_condition(*f.model.gpt, f.model.vocab, file, true);
  const int64_t real = cond.caption_mask[0].sum().item<int64_t>();
  EXPECT_GT(real, 0);
  EXPECT_LT(real, 120);
  EXPECT_GT(cond.caption[0][119].abs().sum().item<float>(), 0.f);  // the last real row
  EXPECT_EQ(cond.caption[0][0].abs().sum().item<float>(), 0.f);    // left padding
  EXPECT_EQ(greedy_tokens(f, cond, "adt").size(), 16u);
}

// Names and sizes without any download or Python.
TEST(LlamaGenImport, ModelNamesGiveHeadsAndImageSize) {
  EXPECT_EQ(model::llamagen_heads("c2i_B_256"), 12);
  EXPECT_EQ(model::llamagen_heads("c2i_L_384.pt"), 16);
  EXPECT_EQ(model::llamagen_heads("c2i_XL_384"), 20);
  EXPECT_EQ(model::llamagen_heads("GPT-XXL"), 24);
  EXPECT_EQ(model::llamagen_heads("c2i_3B_384"), 32);
  EXPECT_EQ(model::llamagen_heads("t2i_XL_stage1_256"), 20);
  EXPECT_EQ(model::llamagen_heads("mystery"), 0);
  EXPECT_EQ(model::llamagen_image_size("c2i_XL_384"), 384);
  EXPECT_EQ(model::llamagen_image_size("t2i_XL_stage1_256.pt"), 256);
  EXPECT_EQ(model::llamagen_image_size("GPT-B"), 0);
}

TEST(LlamaGenImport, RefusesUnknownAndMissingTensorsAndUnknownShapes) {
  model::TensorMap sd;
  EXPECT_THROW(model::infer_gpt_config(sd, {}), Error);  // no tok_embeddings
  sd["tok_embeddings.weight"] = at::zeros({16, 32});
  sd["layers.0.attention.wqkv.weight"] = at::zeros({96, 32});
  sd["layers.0.feed_forward.w1.weight"] = at::zeros({256, 32});
  sd["cls_embedding.embedding_table.weight"] = at::zeros({11, 32});
  model::GptImportOptions o;
  try {
    model::infer_gpt_config(sd, o);
    ADD_FAILURE() << "n_head must be required";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--n-head"), std::string::npos) << e.what();
  }
  o.n_head = 2;
  try {
    model::infer_gpt_config(sd, o);
    ADD_FAILURE() << "the grid must be required";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--image-size"), std::string::npos) << e.what();
  }
  o.image_size = 64;
  const auto cfg = model::infer_gpt_config(sd, o);
  EXPECT_EQ(cfg.grid_h, 4);
  EXPECT_EQ(cfg.num_classes, 10);
  sd["layers.0.attention.mystery.weight"] = at::zeros({1});
  try {
    model::import_gpt(sd, cfg);
    ADD_FAILURE() << "unknown and missing tensors must be refused";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("unexpected tensor 'layers.0.attention.mystery.weight'"), std::string::npos);
    EXPECT_NE(msg.find("missing tensor 'norm.weight'"), std::string::npos) << msg;
  }
  EXPECT_THROW(model::read_state_dict("/nonexistent/c2i_B_256.pt"), Error);
}
