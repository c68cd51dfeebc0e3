// adtree sweep: ablation grids over decoding settings (research bench, docs/adt-tree.md), one JSONL
// row per (setting, prompt, seed); `--shard i/n` splits a sweep across machines and
// `adtree sweep merge` joins the shards (docs/cluster.md runs them as Slurm / Kubernetes arrays).
#include <fstream>
#include <iostream>
#include <sstream>

#include "commands.h"
#include "io/file_write.h"
#include "research/sweep.h"
#include "util/error.h"

namespace adtree::cli {

namespace {

std::vector<std::string> words(const Args& a, const std::string& name) {
  return a.given(name) ? split_list(a.str(name), ',') : std::vector<std::string>{};
}

int cmd_merge(int argc, char** argv) {
  Args a("sweep merge", "Join sweep shards into one JSONL file and summarise it per setting.");
  a.option("inputs", "LIST", "comma-separated shard files (JSONL rows of adtree sweep)")
      .option("out", "FILE", "merged rows (JSONL, one per setting, prompt and seed)")
      .option("summary", "FILE", "per-setting summary as a Markdown table")
      .option("json", "FILE", "per-setting summary as JSON");
  if (!a.parse(argc, argv)) return 0;
  const auto inputs = words(a, "inputs");
  if (inputs.empty()) throw Error("give the shard files with --inputs A.jsonl,B.jsonl,...");
  std::vector<std::vector<nlohmann::json>> shards;
  size_t total = 0;
  for (const auto& f : inputs) {
    shards.push_back(research::read_jsonl(f));
    total += shards.back().size();
  }
  const auto rows = research::merge_rows(shards);
  if (a.given("out")) {
    std::string text;
    for (const auto& r : rows) text += r.dump() + "\n";
    io::write_file(a.str("out"), text, "the merged rows");
  }
  const auto summary = research::summarize(rows);
  const std::string table = research::markdown_table(summary);
  if (a.given("summary")) io::write_file(a.str("summary"), table, "the summary table");
  if (a.given("json")) {
    io::write_file(a.str("json"), nlohmann::json(summary).dump(1) + "\n", "the summary");
  }
  std::cout << inputs.size() << " shard(s), " << total << " rows read, " << rows.size()
            << " after merging\n"
            << table;
  return 0;
}

}  // namespace

namespace {

void declare_sweep_options(Args& a) {
  add_model_options(a);
  add_method_options(a, /*list=*/true);
  add_sampling_options(a);
  a.option("prompts", "LIST",
           "semicolon-separated prompts (default: 4 prompts of the shipped model)")
      .option("seeds", "N", "seeds 0 .. N-1 per prompt", "2");
  // An axis for every setting the table gives one (decode/settings/setting.h).
  for (const auto& s : decode::settings_table()) {
    if (s.sweep_flag.empty()) continue;
    const auto who = s.readers_text().empty() ? std::string() : " (" + s.readers_text() + ")";
    a.option(s.sweep_flag, "LIST", "axis" + who + ": values of --" + s.flag);
  }
  a.flag("match-drafted", "after every adt row, EAGLE-2 with N = ADT-Tree's mean drafted tokens")
      .option("shard", "I/N", "run only units i, i+n, i+2n, ... of the sweep (0-based)", "0/1")
      .option("out", "FILE", "JSONL rows (appended; with --resume, rows already there are skipped)")
      .flag("resume", "skip the (setting, prompt, seed) rows already in --out")
      .flag("dry-run", "list the settings and units, run nothing")
      .option("summary", "FILE", "also write this run's per-setting summary (Markdown)");
}

// The grid's axes, each value typed and range-checked, so a typo fails before any run.
research::SweepGrid read_grid(const Args& a) {
  research::SweepGrid g;
  g.methods = split_list(a.str("method"), ',');
  g.base = method_from(a, g.methods.empty() ? "adt" : g.methods.front());
  for (const auto& s : decode::settings_table()) {
    if (s.sweep_flag.empty() || !a.given(s.sweep_flag)) continue;
    auto& values = g.axes[s.key];
    try {
      for (const auto& word : split_list(a.str(s.sweep_flag), ',')) {
        values.push_back(s.parse(word));
        s.check(values.back(), {});
      }
    } catch (const Error& e) {
      throw Error("--" + s.sweep_flag + ": " + e.what());
    }
  }
  return g;
}

research::SweepOptions read_options(const Args& a) {
  research::SweepOptions o;
  o.prompts = a.given("prompts") ? split_list(a.str("prompts"), ';')
                                 : std::vector<std::string>{"grinning face noto", "red apple noto",
                                                            "rocket twemoji", "blue heart twemoji"};
  o.seeds = a.integer("seeds");
  o.shard = research::Shard::parse(a.str("shard"));
  o.match_drafted = a.flag_set("match-drafted");
  if (a.flag_set("resume")) {
    std::ifstream probe(a.str("out"));
    if (probe) {
      for (const auto& r : research::read_jsonl(a.str("out")))
        o.skip_keys.push_back(research::row_key(r));
      std::cout << o.skip_keys.size() << " row(s) already in " << a.str("out") << ": skipped\n";
    }
  }
  return o;
}

void print_plan(const std::vector<research::SweepPoint>& points, const research::SweepOptions& o,
                const std::string& shard) {
  const int64_t units = int64_t(points.size() * o.prompts.size()) * o.seeds;
  int64_t mine = 0;
  for (int64_t u = 0; u < units; ++u) mine += o.shard.owns(u) ? 1 : 0;
  std::cout << points.size() << " setting(s) x " << o.prompts.size() << " prompt(s) x " << o.seeds
            << " seed(s) = " << units << " units; shard " << shard << " runs " << mine << "\n";
}

// Appended row by row and flushed: a sweep killed by a scheduler keeps what it finished, and
// --resume picks up from there.
std::vector<nlohmann::json> run_and_write(const model::ModelBundle& m,
                                          const std::vector<research::SweepPoint>& points,
                                          const research::SweepOptions& o, const std::string& path,
                                          bool append) {
  std::ofstream out(path, append ? std::ios::app : std::ios::trunc);
  if (!out) throw Error("cannot write " + path);
  std::vector<nlohmann::json> rows;
  research::run_sweep(
      m, points, o,
      [&](const nlohmann::json& r) {
        out << r.dump() << "\n";
        out.flush();
        if (!out) throw Error("writing " + path + " failed (disk full?)");
        rows.push_back(r);
      },
      &std::cout);
  return rows;
}

}  // namespace

int cmd_sweep(int argc, char** argv) {
  if (argc >= 1 && std::string(argv[0]) == "merge") return cmd_merge(argc - 1, argv + 1);
  Args a("sweep",
         "Run a grid of decoding settings on a prompt set with fixed seeds: one JSONL row per "
         "(setting, prompt, seed) with tau, drafted tokens, forwards, time, speed-up over AR "
         "(same process) and the target's NLL of the tokens. 'adtree sweep merge --help' joins "
         "shards.");
  declare_sweep_options(a);
  if (!a.parse(argc, argv)) return 0;
  if (!a.given("out") && !a.flag_set("dry-run")) throw Error("give --out FILE.jsonl for the rows");
  auto g = read_grid(a);
  const auto o = read_options(a);
  auto m = load_model(a);
  g.sampling = sampling_from(a, m);
  const auto points = research::expand(g);
  print_plan(points, o, a.str("shard"));
  if (a.flag_set("dry-run")) {
    for (const auto& p : points) std::cout << "  " << p.label << "\n";
    return 0;
  }
  const auto rows = run_and_write(m, points, o, a.str("out"), a.flag_set("resume"));
  const auto table = research::markdown_table(research::summarize(rows));
  if (a.given("summary")) io::write_file(a.str("summary"), table, "the summary table");
  std::cout << rows.size() << " row(s) written to " << a.str("out") << "\n" << table;
  return 0;
}

}  // namespace adtree::cli
