// adtree soak: many generations back to back through the engine, resident memory every N runs
// (reliability issue). Exits non-zero on a failed job, a hang, or RSS growth past --max-growth.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "commands.h"
#include "decode/settings/method_table.h"
#include "engine/soak.h"
#include "io/file_write.h"
#include "util/error.h"

namespace adtree::cli {

int cmd_soak(int argc, char** argv) {
  Args a("soak",
         "Run many generations through the engine (mixed methods and settings, some cancelled) "
         "and record resident memory: a leak or a hang check.");
  a.option("model", "DIR", "model directory (default: $ADTREE_MODEL or the shipped model)")
      .option("runs", "N", "generations to run", "1000")
      .option("every", "N", "record resident memory every N runs", "50")
      .option("warmup", "N", "runs before the memory baseline is taken", "100")
      .option("methods", "LIST", "comma-separated methods to cycle through",
              "ar,static,dynamic,adt,sjd,pathspec,sjd-pac,pjd")
      .option("cancel-share", "X", "share of jobs cancelled at a random step", "0.1")
      .option("max-growth", "X", "fail if RSS grows by more than this share after warm-up", "0.05")
      .option("seed", "S", "seed of prompts, settings and cancellations", "0")
      .option("json", "FILE", "write the report (counts, RSS curve, growth) as JSON");
  if (!a.parse(argc, argv)) return 0;
  engine::SoakOptions o;
  o.model_dir = a.given("model") ? a.str("model") : default_model_dir();
  if (o.model_dir.empty()) throw Error("no model: give --model DIR (or set $ADTREE_MODEL)");
  o.runs = a.integer("runs");
  o.every = a.integer("every");
  o.warmup = a.integer("warmup");
  o.cancel_share = a.number("cancel-share");
  o.seed = a.non_negative("seed");
  if (o.runs <= 0 || o.every <= 0 || o.warmup < 0)
    throw Error("--runs and --every must be positive");
  if (!(o.cancel_share >= 0 && o.cancel_share <= 1))
    throw Error("--cancel-share must be in [0, 1]");
  o.methods.clear();
  std::stringstream list(a.str("methods"));
  for (std::string m; std::getline(list, m, ',');) {
    if (m.empty()) continue;
    decode::method_from_string(m);  // an unknown name is an error now, not after some runs
    o.methods.push_back(m);
  }
  const double max_growth = a.number("max-growth");

  const auto r = engine::run_soak(o, &std::cout);
  const auto j = r.to_json();
  if (a.given("json")) {
    io::write_file(a.str("json"), j.dump(2) + "\n", "the report");
  }
  std::cout << r.finished << " finished, " << r.cancelled << " cancelled, " << r.failed
            << " failed; RSS growth after warm-up " << 100.0 * r.growth_after_warmup << "%\n";
  for (const auto& f : r.failures) std::cout << "  failure: " << f << "\n";
  if (r.failed > 0) return 1;
  if (r.growth_after_warmup > max_growth) {
    std::cout << "RSS grew more than " << 100.0 * max_growth << "% after warm-up\n";
    return 1;
  }
  return 0;
}

}  // namespace adtree::cli
