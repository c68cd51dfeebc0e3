// adtree bench-picture: the whole picture as a user waits for it (engine/picture_bench.h): model
// load (time, resident memory, page faults), then every picture the CLI's way and the studio's
// way (engine with live previews), each split into prefill, tokens, final decode and previews.
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "commands.h"
#include "engine/engine.h"
#include "engine/picture_bench.h"
#include "io/file_write.h"
#include "util/error.h"
#include "util/threads.h"

namespace adtree::cli {

namespace {

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void print_picture(const engine::PictureTiming& t) {
  std::cout << "  " << std::setw(6) << t.path << "  " << std::setw(4) << t.seed << "  "
            << std::setw(9) << t.first_step_ms << "  " << std::setw(9) << t.tokens_ms << "  "
            << std::setw(12) << t.final_decode_ms << "  " << std::setw(3) << t.previews << " / "
            << std::setw(8) << t.preview_ms << "  " << std::setw(9) << t.picture_ms << "  "
            << t.prompt << "\n";
}

// Medians per path, and the studio's picture against the CLI's.
nlohmann::json summarise(const std::vector<engine::PictureTiming>& all) {
  nlohmann::json s;
  for (const char* path : {"cli", "engine"}) {
    std::vector<double> picture, tokens, decode;
    for (const auto& t : all) {
      if (t.path != path) continue;
      picture.push_back(t.picture_ms), tokens.push_back(t.tokens_ms);
      decode.push_back(t.final_decode_ms);
    }
    if (picture.empty()) continue;
    s[path] = {{"picture_ms", median_of(picture)},
               {"tokens_ms", median_of(tokens)},
               {"final_decode_ms", median_of(decode)}};
  }
  if (s.contains("cli") && s.contains("engine")) {
    s["engine_over_cli"] =
        s["engine"]["picture_ms"].get<double>() / s["cli"]["picture_ms"].get<double>();
  }
  return s;
}

}  // namespace

int cmd_bench_picture(int argc, char** argv) {
  Args a("bench-picture",
         "Measure the whole picture as a user waits for it: model load, prefill, tokens, final "
         "VQ decode and previews, the CLI's way and through the engine (the studio's way).");
  add_model_options(a);
  a.option("prompts", "LIST", "semicolon-separated prompts (default: the model's first word)")
      .option("seeds", "N", "pictures per prompt (seeds 0 .. N-1)", "2")
      .option("previews", "MS", "engine: milliseconds between live previews (0 = none)",
              std::to_string(int(engine::EngineOptions{}.preview_interval_ms)))
      .option("ways", "LIST", "cli, engine or both", "cli,engine")
      .option("json", "FILE", "write the results as JSON");
  add_method_options(a);
  add_sampling_options(a);
  if (!a.parse(argc, argv)) return 0;
  const std::string dir = a.given("model") ? a.str("model") : default_model_dir();
  if (dir.empty()) throw Error("no model: give --model DIR");
  const std::string paths = a.str("ways");
  const bool cli_path = paths.find("cli") != std::string::npos;
  const bool engine_path = paths.find("engine") != std::string::npos;
  if (!cli_path && !engine_path) throw Error("--ways must name cli, engine or both");
  const int64_t seeds = a.integer("seeds");
  if (seeds < 1) throw Error("--seeds needs at least 1");
  const double previews = a.number("previews");
  if (!(previews >= 0)) throw Error("--previews must be >= 0 milliseconds");

  const model::LoadOptions where = load_options(a);
  nlohmann::json out;
  std::vector<std::pair<std::string, decode::DecodeRequest>> jobs;
  std::vector<engine::PictureTiming> pictures;
  std::cout << std::fixed << std::setprecision(1);
  {
    model::ModelBundle m;
    const auto load = engine::time_load(dir, where, &m);
    out["load"] = load.to_json();
    std::cout << "model " << dir << ", " << worker_threads() << " thread(s)\nload " << load.ms
              << " ms, resident " << load.rss_mib << " MiB (peak " << load.peak_rss_mib
              << ", weights " << load.weights_mib << " MiB), page faults " << load.minor_faults
              << " minor, " << load.major_faults << " major\n";
    decode::DecodeRequest req;
    req.method = method_from(a, a.given("method") ? a.str("method") : "ar");
    req.sampling = sampling_from(a, m);
    auto prompts = split_list(a.str("prompts"), ';');
    if (prompts.empty() && !m.vocab.entries().empty()) prompts.push_back(m.vocab.entries()[0]);
    if (prompts.empty()) throw Error("--prompts: this model has no vocabulary to pick from");
    for (const auto& p : prompts) {
      for (int64_t s = 0; s < seeds; ++s) {
        req.seed = uint64_t(s);
        jobs.emplace_back(p, req);
      }
    }
    if (cli_path) {
      for (const auto& [p, r] : jobs) pictures.push_back(engine::time_cli_picture(m, where, p, r));
    }
  }  // the CLI's copy of the model goes before the engine loads its own
  if (engine_path) {
    const auto e = engine::time_engine_pictures(dir, where, jobs, previews);
    out["engine_load_ms"] = e.load_ms;
    pictures.insert(pictures.end(), e.pictures.begin(), e.pictures.end());
  }
  std::cout << "\n    path  seed  prefill ms  tokens ms  final decode  previews (n / ms)  "
               "picture ms  prompt\n";
  for (const auto& t : pictures) print_picture(t);
  out["pictures"] = nlohmann::json::array();
  for (const auto& t : pictures) out["pictures"].push_back(t.to_json());
  out["summary"] = summarise(pictures);
  std::cout << "\nmedians: " << out["summary"].dump() << "\n";
  if (a.given("json")) io::write_file(a.str("json"), out.dump(2) + "\n", "the results");
  return 0;
}

}  // namespace adtree::cli
