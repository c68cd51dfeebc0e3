// adtree generate: one image from a prompt, with its statistics.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>

#include "commands.h"
#include "decode/run.h"
#include "decode/settings/picture_settings.h"
#include "io/file_write.h"
#include "model/continuous/continuous_dir.h"
#include "model/mar/mar_dir.h"
#include "terminal_progress.h"
#include "util/error.h"
#include "util/resource_paths.h"
#include "util/threads.h"
#ifdef ADTREE_HAVE_IMAGING
#include "imaging/image_io.h"
#include "imaging/png_text.h"
#endif

namespace adtree::cli {

std::string default_model_dir() {
  if (const char* env = std::getenv("ADTREE_MODEL"); env && *env) return env;
  return util::find_shipped_model("emoji");
}

std::string model_dir_arg(const Args& a) {
  return a.given("model") ? a.str("model") : default_model_dir();
}

model::ModelBundle load_model(const Args& a, bool load_vq, const std::string& fallback_dir) {
  std::string dir = a.given("model")        ? a.str("model")
                    : !fallback_dir.empty() ? fallback_dir
                                            : default_model_dir();
  if (dir.empty()) {
    throw Error(
        "no model given and no shipped model found: pass --model DIR (make one with "
        "'adtree model random --out DIR')");
  }
  model::LoadOptions opts = load_options(a);
  opts.load_vq = load_vq;
  model::ModelBundle m;
  {
    TerminalProgress bar("loading " + std::filesystem::path(dir).filename().string(),
                         a.flag_set("quiet"));
    opts.progress = [&bar](const std::string& stage, double f) { bar.update(stage, f); };
    m = model::load_model_dir(dir, opts);
  }
  if (!opts.text_encoder.empty() && m.manifest.kind != "t2i-embeddings") {
    throw Error("--t5: " + dir + " is a " + m.manifest.kind +
                " model; a T5 text encoder is for LlamaGen t2i (t2i-embeddings) models");
  }
  if (!m.pack_cache_warning.empty())
    std::cerr << "adtree: warning: " << m.pack_cache_warning << "\n";
  return m;
}

namespace {
decode::PictureSettings settings_from_png(const std::string& path) {
#ifdef ADTREE_HAVE_IMAGING
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot read the PNG (missing or unreadable)");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::optional<std::string> text;
  try {
    text = imaging::png_text(bytes, imaging::kSettingsKeyword);
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
  if (!text) {
    throw Error(path +
                ": this PNG carries no adtree settings (written with --no-metadata, or by "
                "another program)");
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(*text);
  } catch (const nlohmann::json::exception&) {
    throw Error(path + ": its adtree settings are not valid JSON");
  }
  try {
    return decode::read_picture_settings(j);
  } catch (const Error& e) {
    throw Error(path + ": its adtree " + e.what());
  }
#else
  throw Error(path + ": this build has no image support (OpenCV was not found at build time)");
#endif
}

// One picture: decode, write the PNG (with its settings unless --no-metadata), the statistics.
void generate_one(const Args& a, const model::ModelBundle& m, const std::string& prompt,
                  const decode::DecodeRequest& req, const std::string& out,
                  const std::string& stats_path, int64_t scale) {
  const model::LoadOptions where = load_options(a);
  auto run = decode::prepare_run(m, req, prompt, where);
  const auto cond = decode::prepare_condition(m, run);
  auto res = decode::run_decode(m, cond, run);

  const auto& g = m.gpt_config;
  auto idx = at::tensor(res.tokens, at::TensorOptions().dtype(at::kLong)).unsqueeze(0);
  auto img = model::VqModel::to_bytes(
      model::decode_picture(m, idx.to(m.gpt->device()), g.grid_h, g.grid_w))[0];
#ifdef ADTREE_HAVE_IMAGING
  const std::string settings =
      a.flag_set("no-metadata")
          ? std::string()
          : decode::picture_settings(res.stats, "adtree 0.1.0", res.stats.summary.wall_ms)
                .dump(-1, ' ', /*ensure_ascii=*/true);
  imaging::write_image(out, imaging::upscale_nearest(img, int(scale)), settings);
#endif
  if (!stats_path.empty()) {
    auto j = res.stats.to_json();
    j["tokens"] = res.tokens;
    io::write_file(stats_path, j.dump(1) + "\n", "the statistics file");
  }
  if (res.stats.settings.prompt_truncated) {
    std::cerr << "adtree: warning: the prompt is longer than the model's "
              << res.stats.settings.prompt_tokens
              << " caption tokens; T5 pieces past them were dropped\n";
  }
  if (!a.flag_set("quiet")) {
    const auto& s = res.stats.summary;
    std::cout << "wrote " << std::filesystem::absolute(out).string() << " (" << img.size(1) * scale
              << "x" << img.size(0) * scale << "), seed " << req.seed << "\n"
              << s.tokens << " tokens in " << s.wall_ms << " ms (" << s.tokens_per_s
              << " tokens/s), tau " << s.tau << ", method " << res.stats.method << ", verify "
              << res.stats.settings.verify << "\n";
    if (!res.stats.settings.ran_as_ar.empty()) std::cout << res.stats.settings.ran_as_ar << "\n";
    const auto& rs = res.stats.settings;
    if (!rs.text_encoder.empty()) {
      std::cout << "prompt encoded by T5 (" << rs.text_encoder << "): " << rs.prompt_tokens
                << " tokens in " << rs.prompt_encode_ms << " ms\n";
    }
    const double ar_ms = res.stats.settings.ar_estimate_ms;
    if (ar_ms > 0 && s.wall_ms > 0)
      std::cout << ar_ms / s.wall_ms << "x the speed of AR (estimated from this machine's timed "
                << "one-token step: " << ar_ms << " ms)\n";
  }
}

// --from-png without --model: the model the PNG was made with, where it still is.
std::string model_of_png(const decode::PictureSettings& from) {
  std::string dir = from.model_dir;
  if (!dir.empty() && !std::filesystem::is_directory(dir)) {
    std::cerr << "adtree generate: the PNG's model " << dir
              << " is not here; using the default model\n";
    dir.clear();
  }
  return dir;
}

// A PNG from other weights than the ones loaded makes another picture from the same seed: say so.
void warn_if_other_weights(const decode::PictureSettings& from, const model::ModelBundle& m) {
  const std::string& was = from.model_hash;
  if (!was.empty() && !m.hash.empty() && was != m.hash) {
    std::cerr << "adtree generate: the PNG was made with other weights (" << was.substr(0, 19)
              << "...) than " << m.dir << " (" << m.hash.substr(0, 19)
              << "...): the picture will differ\n";
  }
}
}  // namespace

// With --count N the files are numbered by seed: out.png -> out-<seed>.png (the same for --stats).
std::string numbered(const std::string& path, uint64_t seed, int64_t count) {
  if (count == 1) return path;
  const std::filesystem::path p(path);
  return (p.parent_path() /
          (p.stem().string() + "-" + std::to_string(seed) + p.extension().string()))
      .string();
}

int cmd_generate(int argc, char** argv) {
  Args a("generate", "Generate images from a prompt (or class) and write them as PNG.");
  add_model_options(a);
  a.option("prompt", "TEXT",
           "caption words (t2i), class name / synonym / number (c2i), or a caption-embedding "
           ".safetensors file (t2i-embeddings)")
      .option("class", "ID", "class name or number (c2i models; same as --prompt)")
      .option("seed", "N", "random seed: same seed + settings + device = same image", "0")
      .option("count", "N",
              "make N pictures with seeds N, N+1, ...: files are named FILE-<seed>.png (and "
              "the --stats files likewise)",
              "1");
  add_method_options(a);
  add_sampling_options(a);
  a.option("out", "FILE", "output image (PNG)", "adtree.png")
      .option("scale", "N", "upscale the PNG N times with crisp pixels", "1")
      .option("stats", "FILE", "write per-step and per-cell statistics as JSON")
      .flag("trace",
            "also record every step's draft tree, verification and target distributions in the "
            "--stats file (the studio opens it with File > Open Run)")
      .flag("quiet", "print nothing but errors")
      .option("from-png", "FILE",
              "take the prompt, seed, method and sampling settings from a PNG this program or the "
              "studio wrote (--prompt and --seed, when given, still win)")
      .flag("no-metadata", "do not write the generation settings into the PNG");
  if (!a.parse(argc, argv)) return 0;
  if (a.flag_set("trace") && !a.given("stats"))
    throw Error("--trace needs --stats FILE to write to");
  const int64_t count = a.integer("count");
  if (count < 1 || count > 10000) throw Error("--count must be in 1..10000");
  const auto from =
      a.given("from-png") ? std::optional(settings_from_png(a.str("from-png"))) : std::nullopt;
  std::string prompt = a.given("class") ? a.str("class") : a.str("prompt");
  if (prompt.empty() && from) prompt = from->prompt;
  if (prompt.empty()) throw Error("give a prompt with --prompt TEXT (or --class for c2i models)");
  const int64_t scale = a.integer("scale");
  if (scale < 1 || scale > 64) throw Error("--scale must be in 1..64");
  const auto seed = from && !a.given("seed") ? from->request.seed : a.non_negative("seed");
#ifndef ADTREE_HAVE_IMAGING
  throw Error("this build has no image output (OpenCV was not found at build time)");
#endif
  if (!from && (model::is_continuous_dir(model_dir_arg(a)) || model::is_mar_dir(model_dir_arg(a))))
    return generate_continuous(a, model_dir_arg(a), prompt, seed, count, scale);

  auto m = load_model(a, true, from ? model_of_png(*from) : std::string());
  decode::DecodeRequest req;
  req.method =
      from ? from->request.method : method_from(a, method_or_default(a, m.drafter != nullptr));
  req.trace.enabled = a.flag_set("trace");
  if (from) warn_if_other_weights(*from, m);
  req.sampling = from ? from->request.sampling : sampling_from(a, m);
  for (int64_t i = 0; i < count; ++i) {
    req.seed = seed + uint64_t(i);
    generate_one(a, m, prompt, req, numbered(a.str("out"), req.seed, count),
                 a.given("stats") ? numbered(a.str("stats"), req.seed, count) : std::string(),
                 scale);
  }
  return 0;
}

}  // namespace adtree::cli
