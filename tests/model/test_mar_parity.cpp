// Parity with MAR (issue "MAR checkpoints"): tests/mar/reference.py, an independent implementation
// written from MAR's definitions in Python/torch, writes a small random MAR in MAR's own checkpoint
// layout (checkpoint-last.pth: model, model_ema, optimizer, scaler, args) and its reference
// outputs; the C++ importer reads the checkpoint without Python and the runtime must reproduce the
// decoder's head conditions and a whole generation with the same orders and noises, in fp32.
// Needs Python 3 with torch (Debian: python3-torch); skipped with a message without it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "decode/mar/mar_generate.h"
#include "io/safetensors.h"
#include "model/mar/kl16_decoder.h"
#include "model/mar/mar_backbone.h"
#include "model/mar/mar_dir.h"
#include "model/mar/mar_import.h"
#include "python_reference.h"
#include "util/error.h"

namespace fs = std::filesystem;
using namespace adtree;

using adtree::testing::have_torch;
using adtree::testing::python;

namespace {

// By hand, another fixture (reference.py --shapes B --outputs): ADTREE_MAR_FIXTURE=DIR; its
// heads come from its saved model name. The tests that check the small model's own shape skip.
const char* given_fixture() {
  const char* d = std::getenv("ADTREE_MAR_FIXTURE");
  return d && *d ? d : nullptr;
}
int64_t heads() {
  return given_fixture() ? 0 : 4;
}

// The fixture, written once per process into a folder of its own: ctest runs each test as a
// process, two at a time, and one must not rewrite the files another has mapped.
struct OwnFolder {
  fs::path path = fs::path(ADTREE_WORK_DIR) / ("mar_parity_" + std::to_string(::getpid()));
  ~OwnFolder() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

const fs::path& fixture() {
  static const OwnFolder own;
  static const fs::path dir = [] {
    if (given_fixture()) return fs::path(given_fixture());
    const fs::path d = own.path;
    const std::string cmd = "cd '" + std::string(ADTREE_SOURCE_DIR) + "' && nice -n 5 " + python() +
                            " tests/mar/reference.py --out '" + d.string() + "'";
    if (std::system(cmd.c_str()) != 0) throw Error("failed: " + cmd);
    return d;
  }();
  return dir;
}

}  // namespace

TEST(MarParity, TheCheckpointImportsWithItsEmaWeights) {
  if (!have_torch()) GTEST_SKIP() << python() << " has no torch (apt install python3-torch)";
  if (given_fixture()) GTEST_SKIP() << "the small model's shape only";
  const auto ckpt = (fixture() / "checkpoint-last.pth").string();
  // The small model's name is no released size: its heads must be given.
  EXPECT_THROW(model::import_mar(ckpt), Error);
  const auto m = model::import_mar(ckpt, 4);
  EXPECT_EQ(m.found_at, "model_ema");
  EXPECT_EQ(m.config.grid, 4);
  EXPECT_EQ(m.config.buffer_size, 8);
  EXPECT_EQ(m.config.encoder_depth, 2);
  EXPECT_EQ(m.config.head_blocks, 2);
  EXPECT_EQ(m.config.sample_steps, 10);  // the saved args' num_sampling_steps, a string in MAR
  EXPECT_EQ(m.args.at("model"), "mar_small_test");
}

TEST(MarParity, TheDecoderAndAWholeGenerationMatchTheReference) {
  if (!have_torch()) GTEST_SKIP() << python() << " has no torch (apt install python3-torch)";
  const auto m = model::import_mar((fixture() / "checkpoint-last.pth").string(), heads());
  io::SafetensorsReader ref((fixture() / "reference.safetensors").string());
  const model::MarBackbone backbone(m.config, m.backbone);
  const model::DiffusionHead head(m.config.head(), m.head);
  const model::DiffusionSchedule schedule(m.config.train_steps, m.config.sample_steps);
  const auto labels = ref.tensor("labels");
  const auto z = backbone.forward(ref.tensor("tokens"), ref.tensor("unknown").to(at::kBool),
                                  backbone.class_embedding(labels));
  EXPECT_LT((z - ref.tensor("z")).abs().max().item<double>(), 1e-4);
  decode::MarSampling s;
  s.num_iter = 4;
  s.cfg = 3.0;
  s.temperature = 0.9;
  const decode::MarNoise noise{ref.tensor("orders"), ref.tensor("x_T"), ref.tensor("noise")};
  int steps = 0;
  const auto sampled = ref.tensor("sampled");
  const auto tokens = decode::mar_generate(backbone, head, schedule, labels, s, noise,
                                           [&](const decode::MarStepEvent&) { ++steps; });
  EXPECT_EQ(steps, 4);
  // A random head's epsilon has nothing to do with x_t, so the first reverse step's 1 / sqrt(abar)
  // sends the tokens to tens of thousands (MAR clamps nothing): compare relative to their size.
  // fp32 against the reference's fp64 steps differ by about 1e-6 of it; a wrong step, order, mask
  // or CFG ramp by the tokens' whole size.
  const double scale = sampled.abs().max().item<double>();
  const double err = (tokens - sampled).abs().max().item<double>() / scale;
  EXPECT_LT(err, 1e-5) << "largest token difference, relative to the largest token " << scale;
}

TEST(MarParity, TheKl16DecoderMatchesTheReference) {
  if (!have_torch()) GTEST_SKIP() << python() << " has no torch (apt install python3-torch)";
  const auto vae = model::import_kl16((fixture() / "kl16.ckpt").string());
  EXPECT_EQ(vae.config.ch, 32);  // the small VAE, with either fixture
  EXPECT_EQ(vae.config.ch_mult, (std::vector<int64_t>{1, 1, 2, 2, 4}));
  EXPECT_EQ(vae.config.num_res_blocks, 2);
  EXPECT_EQ(vae.decoder.count("loss.discriminator.main.0.weight"), 0u);  // the loss: left out
  io::SafetensorsReader ref((fixture() / "reference.safetensors").string());
  const model::Kl16Decoder decoder(vae.config, vae.decoder);
  const int64_t g = int64_t(std::lround(std::sqrt(double(ref.tensor("vae_tokens").size(1)))));
  const auto pixels = decoder.decode(ref.tensor("vae_tokens"), g, g);
  const auto want = ref.tensor("pixels");
  ASSERT_EQ(pixels.sizes(), want.sizes());
  EXPECT_LT((pixels - want).abs().max().item<double>(),
            1e-4 * (1 + want.abs().max().item<double>()));
}

TEST(MarParity, AModelDirectoryKeepsTheImportedModelAndRefusesDamage) {
  if (!have_torch()) GTEST_SKIP() << python() << " has no torch (apt install python3-torch)";
  if (given_fixture()) GTEST_SKIP() << "the small model's shape only";
  model::MarDirParts parts;
  parts.target = model::import_mar((fixture() / "checkpoint-last.pth").string(), 4);
  parts.vae = model::import_kl16((fixture() / "kl16.ckpt").string());
  for (int i = 0; i < 10; ++i) parts.classes.push_back("class " + std::to_string(i));
  parts.name = "mar-small";
  const auto dir = fixture() / "model";
  fs::remove_all(dir);
  model::write_mar_dir(parts, dir.string());
  EXPECT_THROW(model::write_mar_dir(parts, dir.string()), Error);  // never over an existing one
  ASSERT_TRUE(model::is_mar_dir(dir.string()));
  const auto m = model::load_mar_dir(dir.string());
  EXPECT_FALSE(m.has_draft());
  EXPECT_EQ(m.classes.size(), 10);
  io::SafetensorsReader ref((fixture() / "reference.safetensors").string());
  decode::MarSampling s;
  s.num_iter = 4;
  s.cfg = 3.0;
  s.temperature = 0.9;
  const decode::MarNoise noise{ref.tensor("orders"), ref.tensor("x_T"), ref.tensor("noise")};
  const auto tokens = decode::mar_generate(*m.target.backbone, *m.target.head, m.target.schedule,
                                           ref.tensor("labels"), s, noise);
  const auto sampled = ref.tensor("sampled");
  EXPECT_LT((tokens - sampled).abs().max().item<double>() / sampled.abs().max().item<double>(),
            1e-5);
  EXPECT_EQ(m.picture(ref.tensor("vae_tokens")[0]).sizes(), (std::vector<int64_t>{64, 64, 3}));
  // Damage: a missing weights file, a class list of the wrong length, another family.
  const auto broken = fixture() / "broken";
  auto copy = [&] {
    fs::remove_all(broken);
    fs::copy(dir, broken);
  };
  copy();
  fs::remove(broken / "vae.safetensors");
  EXPECT_THROW(model::load_mar_dir(broken.string()), Error);
  copy();
  model::Vocabulary(model::Vocabulary::Kind::Classes, {"a", "b"})
      .save((broken / "text.json").string());
  EXPECT_THROW(model::load_mar_dir(broken.string()), Error);
  copy();
  std::ofstream(broken / "model.json") << R"({"family": "continuous"})";
  EXPECT_FALSE(model::is_mar_dir(broken.string()));
  EXPECT_THROW(model::load_mar_dir(broken.string()), Error);
}
