// adtree train vae|continuous: the continuous-token family's stages (issue "CSpD", part 2): the KL
// VAE tokenizer, then the causal transformer with its diffusion head over the VAE's tokens (the
// target, and with a smaller config the draft model). `adtree train assemble-continuous` writes the
// model directory.
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.h"
#include "decode/continuous/continuous_decode.h"
#include "decode/settings/method_table.h"
#include "io/safetensors.h"
#include "train/continuous/assemble_continuous.h"
#include "train/continuous/continuous_fidelity.h"
#include "train/continuous/continuous_trainer.h"
#include "train/continuous/vae_trainer.h"
#include "train/run_files.h"
#include "train_options.h"
#include "util/error.h"
#include "util/threads.h"

namespace adtree::cli {

namespace {

using json = nlohmann::json;

Args continuous_stage_args(const std::string& stage) {
  Args a("train " + stage,
         stage == "vae" ? "Train the continuous family's KL VAE tokenizer."
                        : "Train a causal transformer with a diffusion head over a VAE's tokens "
                          "(the continuous family's target, or its draft with a smaller config).");
  add_run_options(a);
  if (stage == "continuous") {
    a.option("vae", "DIR", "finished 'train vae' run folder")
        .option("init-from", "DIR", "start from this finished 'train continuous' run's weights");
  }
  return a;
}

// adtree train assemble-continuous: the model directory from finished runs.
int assemble(int argc, char** argv) {
  Args a("train assemble-continuous",
         "Write a continuous-family model directory from finished vae and continuous runs.");
  a.option("vae", "DIR", "finished 'train vae' run folder")
      .option("target", "DIR", "finished 'train continuous' run folder: the model that draws")
      .option("draft", "DIR", "finished 'train continuous' run folder: CSpD's draft model")
      .option("out", "DIR", "the model directory to write")
      .option("name", "NAME", "the model's name", "emoji-continuous")
      .option("description", "TEXT", "one sentence for the model card")
      .option("card", "FILE",
              "JSON object of extra model.json fields (license, data; \"sampling\" and \"cspd\" "
              "override the defaults)")
      .option("dtype", "TYPE", "storage: fp16, bf16 or fp32", "fp16")
      .flag("snapshot",
            "take an unfinished target or draft run's latest checkpoint (to measure a long run "
            "early; the step is recorded in model.json)");
  if (!a.parse(argc - 1, argv + 1)) return 0;
  train::ContinuousAssembleOptions o;
  o.vae_dir = a.str("vae");
  o.target_dir = a.str("target");
  o.draft_dir = a.given("draft") ? a.str("draft") : "";
  o.out = a.str("out");
  o.name = a.str("name");
  o.description = a.given("description") ? a.str("description") : "";
  o.dtype = a.str("dtype");
  o.snapshots = a.flag_set("snapshot");
  if (a.given("card")) o.card = train::parse_config_arg(a.str("card"));
  const auto m = train::assemble_continuous(o);
  std::cout << "wrote " << o.out << " (" << (m.contains("draft") ? "target and draft" : "target")
            << ")\n";
  return 0;
}

std::vector<std::string> methods_of(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream ss(list);
  for (std::string m; std::getline(ss, m, ',');)
    if (!m.empty()) out.push_back(m);
  return out;
}

}  // namespace

int continuous_fidelity_cmd(const Args& a) {
  const auto m = model::load_continuous_dir(model_dir_arg(a));
  const auto data = load_data(a);
  train::FidelityOptions fo;
  fo.prompts = a.integer("prompts");
  fo.seed = uint64_t(a.integer("seed"));
  fo.split = a.str("split");
  at::Tensor tokens;
  if (a.given("tokens")) tokens = io::SafetensorsReader(a.str("tokens")).tensor("tokens");
  const std::string out = a.str("out");
  std::filesystem::create_directories(out);
  json all = json::object();
  std::map<std::string, train::ContinuousFidelity> runs;
  auto measure = [&](const std::string& name, decode::Method method, bool other_seeds) {
    auto r = decode::default_continuous_request(m, method);
    apply_given_settings(a, r);
    if (other_seeds) r = train::other_seeds(r);
    const auto& f = runs[name] = train::continuous_fidelity(m, data, fo, r, tokens, &std::cout);
    all[name] = f.metrics;
    write_fidelity_sheets(f.images, f.nearest, f.prompts, out, name + "-");
  };
  for (const auto& name : methods_of(a.str("method")))
    measure(name, decode::method_from_string(name), false);
  if (runs.count("ar") && runs.count("cspd")) {
    all["cspd_vs_ar"] = train::distance_from_ar(runs["ar"], runs["cspd"]);
    measure("ar_other_seeds", decode::Method::Ar, true);
    all["ar_other_seeds_vs_ar"] = train::distance_from_ar(runs["ar"], runs["ar_other_seeds"]);
  }
  train::write_json_file(out + "/fidelity.json", all);
  std::cout << all.dump(2) << "\nwrote " << out << "\n";
  return 0;
}

int cmd_train_continuous(const std::string& stage, int argc, char** argv) {
  if (stage == "assemble-continuous") return assemble(argc, argv);
  Args a = continuous_stage_args(stage);
  if (!a.parse(argc - 1, argv + 1)) return 0;
  if (a.flag_set("show-config")) {
    const json d =
        stage == "vae" ? train::vae_default_config() : train::continuous_default_config();
    std::cout << d.dump(2) << "\n";
    return 0;
  }
  configure_threads(int(a.integer("threads")), ThreadUse::Training);
  keep_allocations_on_heap();
  auto opts = run_options(a, stage, argc - 1, argv + 1);
  const auto data = load_data(a);
  if (stage == "vae") {
    print_result(stage, train::train_vae(data, opts), opts.out);
    return 0;
  }
  if (!a.given("vae")) throw Error("give the VAE run folder with --vae DIR");
  if (a.given("init-from")) opts.init_from = a.str("init-from");
  print_result(stage, train::train_continuous(data, a.str("vae"), opts), opts.out);
  return 0;
}

}  // namespace adtree::cli
