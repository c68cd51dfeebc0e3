// adtree info: the model card, parameter counts and memory of a model directory.
#include <sys/resource.h>

#include <chrono>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "model/gpu/cuda_graph.h"

namespace adtree::cli {

namespace {
int64_t count(const model::TensorMap& m) {
  int64_t n = 0;
  for (const auto& [k, t] : m) n += t.numel();
  return n;
}
std::string mib(double bytes) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1) << bytes / (1024.0 * 1024.0) << " MiB";
  return os.str();
}
// What loading cost and what the model's parts weigh.
struct Facts {
  double load_s = 0;
  int64_t peak_rss = 0;
  int64_t gpt_n = 0, vq_n = 0, dr_n = 0;  // parameters
  int64_t elem = 0;                       // bytes per GPT weight
  double kv_bytes = 0;
};

Facts model_facts(const model::ModelBundle& m, double load_s) {
  Facts f;
  f.load_s = load_s;
  // Peak resident memory of this process so far: what loading the model cost (weights are
  // memory-mapped, so this counts the pages actually touched plus the fused inference copies).
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  f.peak_rss = int64_t(usage.ru_maxrss) * 1024;
  const auto& g = m.gpt_config;
  f.gpt_n = m.gpt->num_params();
  f.vq_n = m.vq ? count(m.vq->weights()) : 0;
  f.dr_n = count(m.drafter_weights);
  f.elem = at::elementSize(m.gpt->dtype());
  // KV cache for CFG (batch 2): 2 (k, v) x layers x seq x dim elements.
  f.kv_bytes =
      2.0 * 2 * double(g.n_layer) * double(g.seq_len() + 64) * double(g.dim) * double(f.elem);
  return f;
}

nlohmann::json info_json(const Args& a, const model::ModelBundle& m, const Facts& f) {
  const auto& g = m.gpt_config;
  return {{"name", m.manifest.name},
          {"dir", m.dir},
          {"kind", m.manifest.kind},
          {"description", m.manifest.description},
          {"grid", {g.grid_h, g.grid_w}},
          {"codebook_size", m.manifest.codebook_size},
          {"gpt", {{"config", g.to_json()}, {"params", f.gpt_n}}},
          {"vq",
           {{"config", m.vq_config.to_json()},
            {"params", f.vq_n},
            {"has_encoder", m.vq && m.vq->has_encoder()}}},
          {"drafter", {{"present", f.dr_n > 0}, {"params", f.dr_n}}},
          {"parallel_head",
           {{"present", m.parallel_head != nullptr},
            {"depths", m.parallel_head ? m.parallel_head->depths() : 0},
            {"params", count(m.parallel_weights)}}},
          {"vocabulary", m.vocab.size()},
          {"sampling", decode::SamplingParams::of_model(m.manifest.sampling).to_json()},
          {"license", m.manifest.license},
          {"provenance", m.manifest.provenance},
          {"memory_bytes",
           {{"gpt_weights", f.gpt_n * f.elem},
            {"vq_weights", f.vq_n * 4},
            {"drafter_weights", f.dr_n * f.elem},
            {"kv_cache_cfg", f.kv_bytes},
            {"gpt_packed_for_cpu", m.gpt->packed_bytes()}}},
          {"load_seconds", f.load_s},
          {"packed_from_cache", m.pack_cache_hit},
          {"peak_rss_bytes", f.peak_rss},
          {"device", a.str("device")},
          {"dtype", a.str("dtype")},
          {"cuda_graphs", model::graphs_available()}};
}

void print_card(const Args& a, const model::ModelBundle& m, const Facts& f) {
  const auto& g = m.gpt_config;
  std::cout << m.manifest.name << "  (" << m.manifest.kind << ")\n";
  if (!m.manifest.description.empty()) std::cout << "  " << m.manifest.description << "\n";
  std::cout << "  directory     " << m.dir << "\n"
            << "  grid          " << g.grid_h << " x " << g.grid_w << " tokens, codebook "
            << m.manifest.codebook_size << "\n"
            << "  GPT           " << g.n_layer << " layers x " << g.n_head << " heads x " << g.dim
            << " dim, " << f.gpt_n << " parameters, " << mib(double(f.gpt_n * f.elem))
            << (m.gpt->packed_bytes() > 0
                    ? " + " + mib(double(m.gpt->packed_bytes())) + " packed for the lean CPU path"
                    : std::string())
            << "\n"
            << "  conditioning  " << model::to_string(g.cond) << ", " << g.cond_tokens()
            << " condition token(s), "
            << (m.manifest.kind == "t2i-embeddings"
                    ? std::string("prompts are caption-embedding files")
                    : "vocabulary " + std::to_string(m.vocab.size()))
            << "\n"
            << "  VQ            "
            << (m.vq ? std::to_string(f.vq_n) + " parameters, " + mib(double(f.vq_n) * 4) +
                           (m.vq->has_encoder() ? " (encoder + decoder)" : " (decoder only)")
                     : std::string("not loaded"))
            << "\n"
            << "  drafter       " << (f.dr_n ? std::to_string(f.dr_n) + " parameters" : "none")
            << "\n"
            << "  parallel head "
            << (m.parallel_head ? std::to_string(count(m.parallel_weights)) + " parameters, " +
                                      std::to_string(m.parallel_head->depths()) + " levels a call"
                                : std::string("none"))
            << "\n"
            << "  KV cache      " << mib(f.kv_bytes) << " (CFG batch 2, " << a.str("dtype") << ")\n"
            << "  CUDA graphs   "
            << (model::graphs_available() ? "built (used for CUDA models; ADTREE_GRAPHS=0: off)"
                                          : "not in this build (or ADTREE_GRAPHS=0)")
            << "\n"
            << "  loading       " << std::fixed << std::setprecision(2) << f.load_s
            << " s, peak resident memory " << mib(double(f.peak_rss))
            << (m.pack_cache_hit ? ", packed weights from the cache" : "") << "\n"
            << "  sampling      "
            << decode::SamplingParams::of_model(m.manifest.sampling).to_json().dump() << "\n"
            << "  licence       " << m.manifest.license.dump() << "\n";
}
}  // namespace

int cmd_info(int argc, char** argv) {
  Args a("info", "Show a model directory's card: kind, grid, sizes, memory, licence.");
  add_model_options(a);
  a.flag("json", "print the facts as JSON");
  a.flag("no-vq", "do not load the VQ decoder (a directory converted from a GPT checkpoint alone)");
  if (!a.parse(argc, argv)) return 0;
  const auto t0 = std::chrono::steady_clock::now();
  auto m = load_model(a, !a.flag_set("no-vq"));
  const double load_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const Facts f = model_facts(m, load_s);
  const nlohmann::json j = info_json(a, m, f);  // built first either way, as its checks come first
  if (a.flag_set("json")) {
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  print_card(a, m, f);
  return 0;
}

}  // namespace adtree::cli
