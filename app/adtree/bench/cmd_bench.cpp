// adtree bench: decoding speed on this machine, written as JSON plus a readable table.
// Measures whole generations (tokens/s, ms per step), the cost of one target forward by query-block
// size q, the memory-bandwidth floor of a step (weight bytes / measured bandwidth) and peak RSS.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include <c10/core/InferenceMode.h>

#include "bench_breakdown.h"
#include "bench_dtype.h"
#include "bench_forward.h"
#include "bench_runs.h"
#include "commands.h"
#include "decode/run.h"
#include "decode/settings/setting.h"
#include "decode/tree/step_cost.h"
#include "io/file_write.h"
#include "model/continuous/continuous_dir.h"
#include "model/llamagen/drafter.h"
#include "model/mar/mar_dir.h"
#include "model/prompt_condition.h"
#include "model/random_model.h"
#include "util/clock.h"
#include "util/device_sync.h"
#include "util/error.h"
#include "util/threads.h"
#include "util/worker_pool.h"

namespace adtree::cli {

namespace {

// Sustained read bandwidth of one pass over a buffer far larger than the caches (GB/s).
double measure_bandwidth_gbs() {
  c10::InferenceMode guard;
  auto buf = at::ones({64 * 1024 * 1024}, at::kFloat);  // 256 MiB
  std::vector<double> gbs;
  for (int i = 0; i < 5; ++i) {
    auto t0 = Clock::now();
    auto s = buf.sum().item<float>();
    const double sec = std::chrono::duration<double>(Clock::now() - t0).count();
    if (s <= 0) throw Error("bandwidth probe failed");
    gbs.push_back(double(buf.numel() * 4) / sec / 1e9);
  }
  return median(gbs);
}

// The same read bandwidth with `threads` threads each summing its share of the buffer (plain
// loops, eight accumulators so the loads are not serialised): what a second core adds.
double measure_bandwidth_gbs_threads(int threads) {
  std::vector<float> buf(size_t(64) * 1024 * 1024, 1.0f);  // 256 MiB
  std::vector<double> gbs;
  for (int rep = 0; rep < 5; ++rep) {
    std::vector<double> sums(size_t(threads), 0.0);
    auto t0 = Clock::now();
    std::vector<std::thread> pool;
    const size_t part = buf.size() / size_t(threads);
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        const float* p = buf.data() + size_t(t) * part;
        float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        for (size_t i = 0; i + 8 <= part; i += 8) {
          for (int k = 0; k < 8; ++k) acc[k] += p[i + size_t(k)];
        }
        double s = 0;
        for (float a : acc) s += a;
        sums[size_t(t)] = s;
      });
    }
    for (auto& th : pool) th.join();
    const double sec = std::chrono::duration<double>(Clock::now() - t0).count();
    double total = 0;
    for (double v : sums) total += v;
    if (total <= 0) throw Error("bandwidth probe failed");
    gbs.push_back(double(part * size_t(threads) * 4) / sec / 1e9);
  }
  return median(gbs);
}

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_maxrss) / 1024.0;
}

void declare_bench_options(Args& a) {
  add_model_options(a);
  a.option("config", "NAME", "bench a random model of this size (tiny, small, ...) instead")
      .option("prompts", "LIST", "semicolon-separated prompts (default: words of the model)")
      .option("seeds", "N", "seeds per prompt (0 .. N-1)", "2")
      .option("blocks", "LIST", "query-block sizes to time one forward for", "1,2,4,8,16,32,64")
      .option("reps", "N", "repetitions per block size (median reported)", "20")
      .option("rounds", "N",
              "times every picture is made by every method (speed-ups: medians of paired ratios)",
              "1")
      .option("json", "FILE", "write the full results as JSON")
      .option("cost-curve-out", "FILE",
              "write this device's step cost curve (what ADT's cost rule plans with) as JSON");
  add_method_options(a, /*list=*/true);
  add_sampling_options(a);
  add_dtype_kl_option(a);
}

struct BenchModel {
  model::ModelBundle m;
  std::string label;  // the directory, or "random <config>"
};

BenchModel load_bench_model(const Args& a) {
  if (a.given("model") && a.given("config")) throw Error("give --model or --config, not both");
  // --model, else --config (a random model), else $ADTREE_MODEL / the shipped model, else tiny.
  std::string model_dir = a.given("model")    ? a.str("model")
                          : a.given("config") ? ""
                                              : default_model_dir();
  const std::string config = a.given("config") ? a.str("config") : "tiny";
  std::filesystem::path tmp;
  if (model_dir.empty()) {  // a random model of the named size, written to a temporary directory
    tmp = std::filesystem::temp_directory_path() / ("adtree-bench-" + std::to_string(getpid()));
    auto g = model::GptConfig::preset(config);
    model::write_random_model(tmp.string(), g, model::small_vq_config(g.vocab_size, g.grid_h), 0,
                              "random-" + config);
    model_dir = tmp.string();
  }
  model::LoadOptions opts = load_options(a);
  opts.load_vq = true;  // LANTERN's neighbour table comes from the codebook
  BenchModel bm{model::load_model_dir(model_dir, opts), ""};
  if (!tmp.empty()) std::filesystem::remove_all(tmp);
  bm.label = tmp.empty() ? model_dir : "random " + config;
  return bm;
}

// What the generations run: the pictures (prompt x seed), how often, and the forward repetitions.
struct BenchPlan {
  std::vector<std::string> prompts;
  int64_t seeds = 0, rounds = 0;
  int reps = 0;
};

BenchPlan read_bench_plan(const Args& a, const model::ModelBundle& m) {
  BenchPlan plan;
  plan.prompts = split_list(a.str("prompts"), ';');
  if (plan.prompts.empty()) {
    const auto& e = m.vocab.entries();
    for (size_t i = 0; i < std::min<size_t>(2, e.size()); ++i)
      plan.prompts.push_back(e[i + 1 < e.size() ? i + 1 : i]);
  }
  plan.seeds = a.integer("seeds"), plan.rounds = a.integer("rounds");
  if (plan.seeds < 1 || plan.rounds < 1) throw Error("--seeds and --rounds need at least 1");
  plan.reps = int(a.integer("reps"));
  return plan;
}

nlohmann::json describe_setup(const Args& a, const BenchModel& bm,
                              const decode::SamplingParams& params) {
  nlohmann::json out;
  out["machine"] = {
      {"threads", worker_threads()}, {"device", a.str("device")}, {"dtype", a.str("dtype")}};
  out["model"] = {
      {"dir", bm.label}, {"gpt", bm.m.gpt_config.to_json()}, {"params", bm.m.gpt->num_params()}};
  out["sampling"] = params.to_json();
  return out;
}

// Weight-streaming floor of one q = 1 step: every transformer matrix is read once per step.
int64_t streamed_weight_bytes(const model::ModelBundle& m) {
  int64_t weight_bytes = 0;
  for (const auto& [name, t] : m.gpt->weights()) {
    if (name.rfind("layers.", 0) == 0 || name == "output.weight") weight_bytes += t.nbytes();
  }
  return weight_bytes;
}

nlohmann::json time_forward_blocks(const Args& a, const model::ModelBundle& m, int64_t batch,
                                   int reps, const model::Condition& cond) {
  const auto& g = m.gpt_config;
  nlohmann::json blocks = nlohmann::json::array();
  for (const auto& s : split_list(a.str("blocks"), ',')) {
    const int64_t q = std::stoll(s);
    // Positions must stay inside the image: prefix + q <= image tokens, after a prefix of at
    // least one token (what every step but the first has).
    const int64_t prefix = std::min<int64_t>(128, g.image_tokens() - q);
    if (prefix < 1) continue;
    // Eager, then on fixed shapes (what the device step runs), then as a graph where built.
    const double graph_ms = fixed_forward_ms(*m.gpt, batch, q, prefix, reps, cond, true);
    auto profile = forward_parts(*m.gpt, batch, q, prefix, reps, cond);  // empty off the lean path
    blocks.push_back({{"q", q},
                      {"prefix", prefix},
                      {"ms", forward_ms(*m.gpt, batch, q, prefix, reps, cond)},
                      {"parts", profile["parts"]},
                      {"products_ms", profile["products_ms"]},
                      {"onednn_products_ms", onednn_products_ms(*m.gpt, batch * q, reps)},
                      {"fixed_ms", fixed_forward_ms(*m.gpt, batch, q, prefix, reps, cond, false)},
                      {"graph_ms", graph_ms < 0 ? nlohmann::json() : nlohmann::json(graph_ms)}});
  }
  return blocks;
}

// A draft-head level (one row, and the dynamic tree's K frontier rows) as a share of a step.
nlohmann::json time_head_levels(const model::ModelBundle& m, int64_t batch, int reps,
                                const nlohmann::json& blocks) {
  nlohmann::json head_levels = nlohmann::json::array();
  if (m.drafter && !blocks.empty()) {
    const double step = blocks[0]["ms"].get<double>();
    for (int64_t q : {int64_t(1), decode::MethodSettings{}.dynamic_tree.width}) {
      // Positions must stay inside the image, as for the target's blocks.
      const int64_t prefix = std::min<int64_t>(128, m.gpt_config.image_tokens() - q);
      if (prefix < 1) continue;
      const double ms = head_level_ms(*m.drafter, *m.gpt, batch, q, prefix, reps);
      head_levels.push_back(
          {{"head", "eagle"}, {"q", q}, {"ms", ms}, {"share_of_step", ms / step}});
    }
  }
  if (m.parallel_head && !blocks.empty()) {
    // The parallel head's one call drafts every level of a tree: q is its depths.
    const double ms = parallel_call_ms(*m.parallel_head, reps);
    head_levels.push_back({{"head", "parallel"},
                           {"q", m.parallel_head->depths()},
                           {"ms", ms},
                           {"share_of_step", ms / blocks[0]["ms"].get<double>()}});
  }
  return head_levels;
}

void time_cost_curve(const Args& a, const model::ModelBundle& m, int64_t batch,
                     nlohmann::json& out) {
  if (m.drafter) {
    // The curve the ADT cost rule plans with on this device (timed before the runs, as they do).
    const auto costs = decode::measure_step_costs(*m.gpt, *m.drafter, batch);
    out["cost_curve"] = costs.to_json();
    if (a.given("cost-curve-out"))
      io::write_file(a.str("cost-curve-out"), costs.to_json().dump(2) + "\n", "the cost curve");
  } else if (a.given("cost-curve-out")) {
    throw Error("--cost-curve-out: this model has no draft head, so there is no curve to time");
  }
}

// AR first, as the baseline every speed-up is measured against.
std::vector<std::string> method_names(const Args& a, const model::ModelBundle& m) {
  std::vector<std::string> names{"ar"};
  for (const auto& mth : split_list(method_or_default(a, m.drafter != nullptr), ',')) {
    if (mth != "ar") names.push_back(mth);
  }
  return names;
}

std::vector<BenchMethod> bench_methods(const Args& a, const std::vector<std::string>& names,
                                       const decode::SamplingParams& params) {
  std::vector<BenchMethod> methods;
  for (const auto& method : names) {
    // An entry may name its verification rule and its draft head: "adt:sampled" is ADT-Tree with
    // q-sampled children, "adt:coupled:parallel" drafted by the parallel head; and method
    // settings of its own after '@': "adt@adt-grid-tree=off@adt-leftover=0" (ablations).
    auto overrides = split_list(method, '@');
    const auto parts = split_list(overrides.at(0), ':');
    overrides.erase(overrides.begin());
    decode::DecodeRequest req;
    req.method = method_from(a, parts.at(0));
    if (parts.size() > 1) req.method.verify = decode::verify_rule_from_string(parts[1]);
    if (parts.size() > 2) req.method.head = decode::draft_head_from_string(parts[2]);
    if (parts.size() > 3)
      throw Error("'" + method + "': give METHOD[:RULE[:HEAD]][@FLAG=VALUE...]");
    for (const auto& o : overrides) apply_method_flag(o, req);
    req.sampling = params;
    if (req.method.method == decode::Method::Ar)
      req.method.acceptance = decode::Acceptance::Lossless;
    methods.push_back({method, req});
  }
  return methods;
}

// The memory-bandwidth floor of a step: the weights streamed once at the measured bandwidth.
struct StepFloor {
  int64_t weight_bytes = 0;
  double bw = 0, floor_ms = 0, bw1 = 0, bw2 = 0, floor2_ms = 0;
  nlohmann::json to_json() const {
    return {{"weight_bytes", weight_bytes},   {"bandwidth_gbs", bw},
            {"step_floor_ms", floor_ms},      {"bandwidth_gbs_1_thread_loop", bw1},
            {"bandwidth_gbs_2_threads", bw2}, {"step_floor_ms_2_threads", floor2_ms}};
  }
};

StepFloor measure_step_floor(int64_t weight_bytes) {
  StepFloor f;
  f.weight_bytes = weight_bytes;
  f.bw = measure_bandwidth_gbs();
  f.floor_ms = double(weight_bytes) / (f.bw * 1e9) * 1e3;
  // One thread decodes; with two, the floor a two-thread kernel could reach.
  f.bw1 = measure_bandwidth_gbs_threads(1), f.bw2 = measure_bandwidth_gbs_threads(2);
  f.floor2_ms = double(weight_bytes) / (f.bw2 * 1e9) * 1e3;
  return f;
}

// Multiply-adds of one row through every matrix of the GPT (the layers' and the output head's).
int64_t matrix_macs(const model::ModelBundle& m) {
  int64_t macs = 0;
  for (const auto& w : matrix_weights(*m.gpt)) macs += w.numel();
  return macs;
}

// Where each block's forward goes, by part (ms), and the products' arithmetic rate.
void print_block_parts(const nlohmann::json& blocks, int64_t batch, int64_t macs_per_row) {
  if (blocks.empty() || blocks[0]["parts"].empty()) return;
  std::cout << "\nwhere a block's forward goes (ms, profiled runs)\n    q";
  for (const auto& [part, ms] : blocks[0]["parts"].items()) {
    std::cout << std::setw(11) << part;
  }
  std::cout << "  products GFLOP/s  oneDNN products ms\n";
  for (const auto& b : blocks) {
    std::cout << "  " << std::setw(3) << b["q"].get<int64_t>();
    for (const auto& [part, ms] : b["parts"].items()) {
      std::cout << std::setw(11) << ms.get<double>();
    }
    const double products = b["products_ms"].get<double>();
    const double flops = 2.0 * double(macs_per_row) * double(batch * b["q"].get<int64_t>());
    const double dnnl = b["onednn_products_ms"].get<double>();
    std::cout << std::setw(12) << (products > 0 ? flops / (products * 1e6) : 0.0) << std::setw(20)
              << (dnnl < 0 ? std::string("-") : std::to_string(dnnl)) << "\n";
  }
}

// `blocks` by value: with no block timed, blocks[0] below inserts a null entry (and the table then
// throws); the results' copy stays as it was.
void print_forward_report(const nlohmann::json& out, const model::ModelBundle& m, int64_t batch,
                          const StepFloor& f, nlohmann::json blocks,
                          const nlohmann::json& head_levels) {
  const auto& g = m.gpt_config;
  std::cout << std::fixed << std::setprecision(2);
  std::cout << "model " << out["model"]["dir"].get<std::string>() << ": " << g.dim << " x "
            << g.n_layer << ", " << m.gpt->num_params() << " params, CFG batch " << batch << ", "
            << worker_threads() << " thread(s)\n";
  std::cout << "bandwidth " << f.bw << " GB/s, weights " << double(f.weight_bytes) / 1e6
            << " MB -> step floor " << f.floor_ms << " ms\n";
  std::cout << "plain loops: 1 thread " << f.bw1 << " GB/s, 2 threads " << f.bw2
            << " GB/s -> two-thread floor " << f.floor2_ms << " ms\n";
  if (!blocks.empty()) {
    std::cout << "one-token step (q = " << blocks[0]["q"].get<int64_t>() << ") "
              << blocks[0]["ms"].get<double>()
              << " ms = " << blocks[0]["ms"].get<double>() / f.floor_ms << "x the floor, "
              << blocks[0]["ms"].get<double>() / f.floor2_ms << "x the two-thread floor\n";
  }
  std::cout << "\n";
  std::cout << "forward cost by block size (prefix " << blocks[0]["prefix"] << " tokens)\n";
  std::cout << "  q      ms     x q=1   fixed ms   graph ms\n";
  const double ms1 = blocks.empty() ? 1 : blocks[0]["ms"].get<double>();
  for (const auto& b : blocks) {
    std::cout << "  " << std::setw(3) << b["q"].get<int64_t>() << "  " << std::setw(7)
              << b["ms"].get<double>() << "  " << std::setw(6) << b["ms"].get<double>() / ms1
              << "  " << std::setw(9) << b["fixed_ms"].get<double>() << "  " << std::setw(9)
              << (b["graph_ms"].is_null() ? std::string("-")
                                          : std::to_string(b["graph_ms"].get<double>()))
              << "\n";
  }
  print_block_parts(blocks, batch, matrix_macs(m));
  for (const auto& h : head_levels) {
    const bool parallel = h.value("head", "eagle") == "parallel";
    std::cout << (&h == &head_levels[0] ? "\ndraft-head level: " : "                  ")
              << std::setw(3) << h["q"].get<int64_t>()
              << (parallel ? " levels, parallel head, one call " : " rows ") << std::setw(6)
              << h["ms"].get<double>() << " ms = " << std::setw(5)
              << 100.0 * h["share_of_step"].get<double>()
              << "% of a target step (q = " << blocks[0]["q"].get<int64_t>() << ")\n";
  }
}

nlohmann::json worker_pool_json() {
  const auto& pool = WorkerPool::shared();
  return {{"threads", pool.threads()},
          {"jobs_shared", pool.jobs_shared()},
          {"chunks_by_workers", pool.chunks_by_workers()},
          {"solo_spells", pool.solo_spells()}};
}

void print_memory_report(const nlohmann::json& out) {
  const auto& pool = WorkerPool::shared();
  std::cout << "peak RSS " << out["peak_rss_mib"].get<double>() << " MiB\n";
  std::cout << "worker pool: " << pool.threads() << " threads, " << pool.jobs_shared()
            << " jobs shared, " << pool.chunks_by_workers() << " chunks run by workers, "
            << pool.solo_spells() << " spells alone (a worker's core was taken)\n";
}

}  // namespace

// "flag=value" of a method setting (its command-line flag without the dashes) onto `req`.
void apply_method_flag(const std::string& text, decode::DecodeRequest& req) {
  const auto eq = text.find('=');
  const std::string flag = text.substr(0, eq);
  for (const auto& s : decode::settings_table()) {
    if (s.scope != decode::Scope::Method || s.flag != flag || eq == std::string::npos) continue;
    s.set(req, s.parse(text.substr(eq + 1)));
    return;
  }
  throw Error("'@" + text + "': give a method setting as FLAG=VALUE, e.g. @adt-leftover=0");
}

int cmd_bench(int argc, char** argv) {
  Args a("bench", "Measure decoding speed: generations, forward cost by block size, memory.");
  declare_bench_options(a);
  if (!a.parse(argc, argv)) return 0;
  if (a.flag_set("dtype-kl")) return bench_dtype_kl(a);
  if (!a.given("config") &&
      (model::is_continuous_dir(model_dir_arg(a)) || model::is_mar_dir(model_dir_arg(a))))
    return bench_continuous(a, model_dir_arg(a));

  const BenchModel bm = load_bench_model(a);
  const auto& m = bm.m;
  auto params = sampling_from(a, m);
  const int64_t batch = params.uses_cfg() ? 2 : 1;
  const BenchPlan plan = read_bench_plan(a, m);
  nlohmann::json out = describe_setup(a, bm, params);
  const int64_t weight_bytes = streamed_weight_bytes(m);

  // The methods first: a wrong entry fails before minutes of timing.
  const std::vector<std::string> names = method_names(a, m);
  const auto methods = bench_methods(a, names, params);
  auto cond = model::condition_for_prompt(m, plan.prompts[0], params.uses_cfg());
  nlohmann::json blocks = time_forward_blocks(a, m, batch, plan.reps, cond);
  out["forward_by_block"] = blocks;
  nlohmann::json head_levels = time_head_levels(m, batch, plan.reps, blocks);
  out["head_level"] = head_levels;
  time_cost_curve(a, m, batch, out);

  // Every method on the same pictures in this one process, taken in turn per picture
  // (bench_runs.h).
  auto gens = run_generations(m, methods, plan.prompts, plan.seeds, plan.rounds);
  out["runs"] = gens.runs;
  out["peak_rss_mib"] = peak_rss_mib();  // before the bandwidth probe's 256 MiB buffer
  const StepFloor floor = measure_step_floor(weight_bytes);
  out["floor"] = floor.to_json();

  print_forward_report(out, m, batch, floor, blocks, head_levels);
  out["summary"] =
      print_summary(std::cout, gens, names, m.gpt_config.image_tokens(), floor.floor_ms);
  out["worker_pool"] = worker_pool_json();
  print_memory_report(out);
  if (a.given("json")) {
    io::write_file(a.str("json"), out.dump(2) + "\n", "the results");
  }
  return 0;
}

}  // namespace adtree::cli
