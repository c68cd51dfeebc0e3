// The packed-panel cache (model/cpu/pack_cache.h): a second load maps byte-identical panels and
// decodes the same logits; a changed file is packed and checked afresh; a damaged (checksums),
// foreign or unwritable cache costs only the cache, and concurrent first loads each write whole.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <thread>
#include <vector>

#include "io/file_hash.h"
#include "io/safetensors.h"
#include "model/conditioning.h"
#include "model/cpu/pack_cache.h"
#include "model/cpu/pack_rows.h"
#include "model/model_dir.h"
#include "model/random_model.h"
#include "util/error.h"

using namespace adtree::model;
namespace fs = std::filesystem;

namespace {
struct Dirs {
  std::string model, cache_root, packed;
};

// A random micro model with a draft head, and an empty cache root beside it.
Dirs fresh(const std::string& name) {
  const fs::path base = fs::path(::testing::TempDir()) / ("adtree_pack_cache_" + name);
  fs::remove_all(base);
  auto g = GptConfig::preset("micro");
  Dirs d{(base / "model").string(), (base / "cache").string(),
         (base / "cache" / "adtree-studio" / "packed").string()};
  write_random_model(d.model, g, small_vq_config(g.vocab_size, g.grid_h), 3, name);
  return d;
}

LoadOptions always(const Dirs& d, const std::string& dtype = "fp32") {
  LoadOptions o;
  o.dtype = dtype;
  o.pack_cache = LoadOptions::PackCacheUse::Always;
  o.cache_root = d.cache_root;
  return o;
}

std::vector<fs::path> files_in(const std::string& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) out.push_back(e.path());
  return out;
}

// Every request the loader makes of the cache, as (key, parts, scaled rows, scale), from the
// bundle's stored matrices (in the dtype it runs).
struct Request {
  std::string key;
  std::vector<at::Tensor> parts;
  int64_t scaled_rows = 0;
  float scale = 1.0f;
};
std::vector<Request> requests_of(const ModelBundle& b) {
  const auto& g = b.gpt_config;
  const float scale = float(1.0 / std::sqrt(double(g.head_dim())));
  std::vector<Request> out{{"output", {b.gpt->weights().at("output.weight")}}};
  const auto layer = [&](const TensorMap& w, const std::string& key, const std::string& prefix) {
    const auto m = [&](const std::string& n) { return w.at(prefix + n + ".weight"); };
    out.push_back({key + "wqkv", {m("attention.wqkv")}, g.dim, scale});
    out.push_back({key + "wo", {m("attention.wo")}});
    out.push_back({key + "w13", {m("feed_forward.w1"), m("feed_forward.w3")}});
    out.push_back({key + "w2", {m("feed_forward.w2")}});
  };
  for (int64_t i = 0; i < g.n_layer; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    layer(b.gpt->weights(), p, p);
  }
  layer(b.drafter->weights(), "drafter.layers.0.", "layers.0.");
  out.push_back({"drafter.fc", {b.drafter->weights().at("fc.weight")}});
  return out;
}

// The logits of a prefill and three blocks of tokens (a caption and the null one: CFG batch 2).
at::Tensor logits_of(const ModelBundle& b) {
  c10::InferenceMode guard;
  auto cache = b.gpt->new_cache(2);
  const auto c = condition_from_words(*b.gpt, {1, 4}, /*cfg=*/true);
  std::vector<at::Tensor> out{b.gpt->prefill(cache, c).logits};
  for (int64_t t = 0; t < 3; ++t) {
    auto tok = at::full({2, t + 1}, t + 5, at::kLong);
    out.push_back(b.gpt->forward_tokens(cache, tok, t * (t + 1) / 2).logits);
  }
  return at::cat(out, 1);
}
}  // namespace

// Lazy packing = eager packing: the panels mapped from the cache hold the bytes packing gives, the
// converted copies are the conversions' bytes, and the model decodes bit-identical logits and
// pictures, in fp32 and bf16.
TEST(PackCache, SecondLoadMapsTheSamePanelsAndDecodesTheSameLogits) {
  if (!adtree::io::have_sha256()) GTEST_SKIP() << "built without libcrypto";
  for (const std::string dtype : {"fp32", "bf16"}) {
    const auto d = fresh("same-" + dtype);
    const auto first = load_model_dir(d.model, always(d, dtype));
    EXPECT_FALSE(first.pack_cache_hit);
    EXPECT_TRUE(first.pack_cache_warning.empty()) << first.pack_cache_warning;
    ASSERT_EQ(files_in(d.packed).size(), 1u);
    EXPECT_NE(files_in(d.packed)[0].filename().string().find("-" + dtype + ".safetensors"),
              std::string::npos);
    const auto second = load_model_dir(d.model, always(d, dtype));
    EXPECT_TRUE(second.pack_cache_hit) << dtype;
    // What the file holds for each request is what packing gives.
    PackCache cache(d.packed, first.hash, dtype);
    ASSERT_TRUE(cache.hit());
    for (const auto& r : requests_of(first)) {
      const auto cached = cache.pack(r.key, r.parts, r.scaled_rows, r.scale);
      const auto packed = pack_rows(r.parts, r.scaled_rows, r.scale);
      ASSERT_TRUE(cached.defined() && packed.defined()) << r.key;
      EXPECT_EQ(cached.n_out, packed.n_out) << r.key;
      EXPECT_EQ(cached.in, packed.in) << r.key;
      EXPECT_EQ(cached.panels.scalar_type(), packed.panels.scalar_type()) << r.key;
      EXPECT_TRUE(at::equal(cached.panels, packed.panels)) << dtype << " " << r.key;
      EXPECT_EQ(reinterpret_cast<uintptr_t>(cached.panels.data_ptr()) % 64, 0u) << r.key;
    }
    EXPECT_EQ(cache.save(), "") << "nothing new to write";
    EXPECT_TRUE(at::equal(logits_of(first), logits_of(second))) << dtype;
    // The converted copies too: the GPT's matrices in bf16 (the reference path's), and the
    // picture decoder's weights, which give the same picture.
    for (const auto& [name, t] : first.gpt->weights())
      EXPECT_TRUE(at::equal(t, second.gpt->weights().at(name))) << dtype << " " << name;
    const auto tokens =
        at::arange(16, at::kLong).remainder(first.gpt_config.vocab_size).view({1, 16});
    EXPECT_TRUE(
        at::equal(decode_picture(first, tokens, 4, 4), decode_picture(second, tokens, 4, 4)));
    // Not written again on a hit (a write renames a new file into place).
    const auto inode = [&] {
      struct stat st {};
      return ::stat(files_in(d.packed).at(0).c_str(), &st) == 0 ? st.st_ino : ino_t(0);
    };
    const auto before = inode();
    load_model_dir(d.model, always(d, dtype));
    EXPECT_EQ(files_in(d.packed).size(), 1u);
    EXPECT_EQ(inode(), before);
  }
}

// The cache vouches only for the files it was packed from: a weight file changed afterwards has
// another hash, so its values are checked (a NaN is found) and nothing is mapped.
TEST(PackCache, AChangedWeightFileIsCheckedAndPackedAfresh) {
  if (!adtree::io::have_sha256()) GTEST_SKIP() << "built without libcrypto";
  const auto d = fresh("changed");
  load_model_dir(d.model, always(d));
  const auto path = d.model + "/gpt.safetensors";
  auto w = adtree::io::SafetensorsReader(path).all();
  auto bad = w.at("layers.0.attention.wo.weight").clone();
  bad.view({-1})[7] = std::numeric_limits<float>::quiet_NaN();
  w["layers.0.attention.wo.weight"] = bad;
  adtree::io::write_safetensors(path, w);
  try {
    load_model_dir(d.model, always(d));
    FAIL() << "a NaN weight loaded";
  } catch (const adtree::Error& e) {
    EXPECT_NE(std::string(e.what()).find("holds non-finite values"), std::string::npos) << e.what();
  }
}

// A damaged cache file, or one holding another model's panels under this model's name, is packed
// afresh and replaced; the load is the same.
TEST(PackCache, DamagedOrForeignFilesAreReplaced) {
  if (!adtree::io::have_sha256()) GTEST_SKIP() << "built without libcrypto";
  const auto d = fresh("damaged");
  const auto want = logits_of(load_model_dir(d.model, always(d)));
  const auto file = files_in(d.packed).at(0);
  const auto size = fs::file_size(file);
  fs::resize_file(file, size / 2);
  auto again = load_model_dir(d.model, always(d));
  EXPECT_FALSE(again.pack_cache_hit);
  EXPECT_TRUE(at::equal(logits_of(again), want));
  EXPECT_EQ(fs::file_size(file), size) << "rewritten whole";
  EXPECT_TRUE(load_model_dir(d.model, always(d)).pack_cache_hit);

  // Another model's file under this model's name: its metadata names the other hash.
  const auto other = fresh("foreign");
  load_model_dir(other.model, always(other));
  fs::copy_file(files_in(other.packed).at(0), file, fs::copy_options::overwrite_existing);
  auto foreign = load_model_dir(d.model, always(d));
  EXPECT_FALSE(foreign.pack_cache_hit);
  EXPECT_TRUE(at::equal(logits_of(foreign), want));
  EXPECT_TRUE(load_model_dir(d.model, always(d)).pack_cache_hit);
}

// 4 KiB XOR-ed anywhere in the file (the damage): the load either finds the damage (a
// warning, packed afresh, the file rewritten) or the bytes were padding nobody reads; the logits
// are the same either way, so no picture can change.
TEST(PackCache, XoredBlocksAreWarningsAndRebuildsNeverOtherLogits) {
  if (!adtree::io::have_sha256()) GTEST_SKIP() << "built without libcrypto";
  const auto d = fresh("xored");
  const auto want = logits_of(load_model_dir(d.model, always(d)));
  const auto file = files_in(d.packed).at(0);
  const auto size = fs::file_size(file);
  int warned = 0, blocks = 0;
  for (uint64_t at = 0; at < size; at += 3 * 4096 + 1000, ++blocks) {  // about 160 places
    {
      std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
      std::vector<char> buf(std::min<uint64_t>(4096, size - at));
      f.seekg(std::streamoff(at));
      f.read(buf.data(), std::streamsize(buf.size()));
      for (auto& c : buf) c = char(c ^ 0x5a);
      f.seekp(std::streamoff(at));
      f.write(buf.data(), std::streamsize(buf.size()));
    }
    const auto b = load_model_dir(d.model, always(d));
    ASSERT_TRUE(at::equal(logits_of(b), want)) << "XOR at " << at;
    if (!b.pack_cache_hit) {
      ++warned;
      EXPECT_NE(b.pack_cache_warning.find("is damaged"), std::string::npos) << at;
      EXPECT_TRUE(load_model_dir(d.model, always(d)).pack_cache_hit) << "rebuilt after " << at;
    }
  }
  EXPECT_GT(warned, blocks / 2) << "almost every block holds panels or the table";
}

// Three first loads at once into one empty cache: no warning, and one whole file is left (each
// writer renames its own temporary file into place).
TEST(PackCache, ConcurrentFirstLoadsLeaveOneValidFile) {
  if (!adtree::io::have_sha256()) GTEST_SKIP() << "built without libcrypto";
  const auto d = fresh("concurrent");
  std::vector<std::string> warnings(3);
  std::vector<std::thread> loads;
  for (size_t i = 0; i < 3; ++i) {
    loads.emplace_back(
        [&, i] { warnings[i] = load_model_dir(d.model, always(d)).pack_cache_warning; });
  }
  for (auto& t : loads) t.join();
  for (const auto& w : warnings) EXPECT_EQ(w, "");
  ASSERT_EQ(files_in(d.packed).size(), 1u) << "temporary files left behind";
  // A writer killed mid-write an hour ago left its temporary file: the next write removes it.
  const auto stale = fs::path(d.packed) / (files_in(d.packed)[0].filename().string() + ".tmp.1.1");
  std::ofstream(stale) << "half a file";
  fs::last_write_time(stale, fs::file_time_type::clock::now() - std::chrono::hours(2));
  fs::remove(files_in(d.packed)[0] == stale ? files_in(d.packed)[1] : files_in(d.packed)[0]);
  EXPECT_EQ(load_model_dir(d.model, always(d)).pack_cache_warning, "");
  ASSERT_EQ(files_in(d.packed).size(), 1u) << "the stale temporary file stays";
  const auto b = load_model_dir(d.model, always(d));
  EXPECT_TRUE(b.pack_cache_hit);
  EXPECT_EQ(b.pack_cache_warning, "");
}

// A cache that cannot be written (its folder is a file) is a warning; the model loads.
TEST(PackCache, AnUnwritableCacheIsAWarningNotAnError) {
  if (!adtree::io::have_sha256()) GTEST_SKIP() << "built without libcrypto";
  const auto d = fresh("unwritable");
  fs::create_directories(d.cache_root + "/adtree-studio");
  std::ofstream(d.packed) << "a file where the folder goes";
  const auto b = load_model_dir(d.model, always(d));
  EXPECT_FALSE(b.pack_cache_hit);
  EXPECT_NE(b.pack_cache_warning.find("the packed weights were not cached"), std::string::npos)
      << b.pack_cache_warning;
  EXPECT_TRUE(b.gpt->lean_ready());
}

// Auto leaves a small model alone (it packs in milliseconds), Off writes nothing either.
TEST(PackCache, AutoCachesOnlyLargeModelsAndOffNone) {
  if (!adtree::io::have_sha256()) GTEST_SKIP() << "built without libcrypto";
  const auto d = fresh("auto");
  auto o = always(d);
  o.pack_cache = LoadOptions::PackCacheUse::Auto;
  load_model_dir(d.model, o);
  o.pack_cache = LoadOptions::PackCacheUse::Off;
  load_model_dir(d.model, o);
  EXPECT_TRUE(files_in(d.packed).empty());
}

// The folder is kept to its byte budget by dropping the files used longest ago; the one just
// written stays even when it alone is over.
TEST(PackCache, TheFolderKeepsTheFilesUsedLast) {
  const fs::path root = fs::path(::testing::TempDir()) / "adtree_pack_cache_prune";
  fs::remove_all(root);
  const auto w = at::randn({40, 24});
  const std::string h1 = "sha256:" + std::string(64, '1'), h2 = "sha256:" + std::string(64, '2');
  {
    PackCache c(root.string(), h1, "fp32");
    EXPECT_FALSE(c.hit());
    c.pack("a", {w});
    EXPECT_EQ(c.save(), "");
  }
  const auto one = fs::file_size(PackCache(root.string(), h1, "fp32").path());
  fs::last_write_time(PackCache(root.string(), h1, "fp32").path(),
                      fs::file_time_type::clock::now() - std::chrono::hours(1));
  {
    PackCache c(root.string(), h2, "fp32");
    c.pack("a", {w});
    EXPECT_EQ(c.save(one + one / 2), "");
  }
  const auto left = files_in(root.string());
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0], fs::path(PackCache(root.string(), h2, "fp32").path()));
  // A hit returns the stored panels, a request of another shape is packed now.
  PackCache c(root.string(), h2, "fp32");
  ASSERT_TRUE(c.hit());
  EXPECT_TRUE(at::equal(c.pack("a", {w}).panels, pack_rows({w}).panels));
  const auto w2 = at::randn({48, 24});
  EXPECT_TRUE(at::equal(c.pack("a", {w2}).panels, pack_rows({w2}).panels));
}

// A load that skips the VQ's file checks no VQ value, so it writes no cache (a later hit would skip
// that check); loads with the two picture-decoder precisions keep each other's entries.
TEST(PackCache, OnlyCheckedLoadsWriteItAndEntriesOfOtherLoadsStay) {
  if (!adtree::io::have_sha256()) GTEST_SKIP() << "built without libcrypto";
  const auto d = fresh("partial");
  auto o = always(d);
  o.load_vq = false;
  EXPECT_FALSE(load_model_dir(d.model, o).pack_cache_hit);
  EXPECT_TRUE(files_in(d.packed).empty());

  o.load_vq = true;
  o.vq_dtype = "fp32";
  load_model_dir(d.model, o);
  o.vq_dtype = "bf16";
  EXPECT_TRUE(load_model_dir(d.model, o).pack_cache_hit);
  const auto files = files_in(d.packed);
  ASSERT_EQ(files.size(), 1u);
  const auto entries = adtree::io::SafetensorsReader(files[0].string()).metadata().at("entries");
  EXPECT_NE(entries.find("\"vq.fp32."), std::string::npos) << entries;
  EXPECT_NE(entries.find("\"vq.bf16."), std::string::npos) << entries;
}
