// adtree train vq|gpt|drafter|assemble: the training pipeline of the shipped model.
// Each stage writes a run folder (checkpoint, metrics.jsonl, run.json, weights); assemble turns
// finished runs into a model directory.
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.h"
#include "decode/settings/setting.h"
#include "io/dataset.h"
#include "model/continuous/continuous_dir.h"
#include "model/model_dir.h"
#include "train/assemble.h"
#include "train/drafter_trainer.h"
#include "train/fidelity.h"
#include "train/gpt_trainer.h"
#include "train/head_on_model.h"
#include "train/mixed_precision.h"
#include "train/prompt_rows.h"
#include "train/run_files.h"
#include "train/vq_trainer.h"
#include "train_options.h"
#include "util/error.h"
#include "util/threads.h"
#ifdef ADTREE_HAVE_IMAGING
#include "imaging/emoji_dataset.h"
#include "imaging/image_io.h"
#endif

namespace adtree::cli {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

void print_train_usage() {
  std::cout
      << "Usage: adtree train <stage> [OPTIONS]\n\n"
         "Train the model's parts on a dataset file (from 'adtree data emoji'), in order:\n"
         "  vq         the VQ tokenizer (pictures -> 16x16 codes)\n"
         "  gpt        the caption-conditioned transformer over the codes (needs --vq RUN)\n"
         "  drafter    the EAGLE draft head of a trained GPT (needs --gpt RUN), or of any model\n"
         "             directory on its own samples, with no dataset (--model DIR)\n"
         "  assemble   a model directory from finished runs (--vq, --gpt, --drafter)\n"
         "  install    a finished head run's head into its model directory (--run, --model)\n"
         "  fidelity   prompt fidelity of a model: generated pictures vs nearest training ones\n"
         "  vae        the continuous family's KL VAE tokenizer (pictures -> 16x16 vectors)\n"
         "  continuous its causal transformer + diffusion head (needs --vae RUN); the draft\n"
         "             model is the same stage with a smaller --config\n"
         "  assemble-continuous  the continuous model directory (--vae, --target, --draft)\n\n"
         "Every stage checkpoints into its --out folder and continues with --resume.\n"
         "Run 'adtree train <stage> --help' for its options.\n";
}

// adtree train assemble: a model directory from finished runs.
int train_assemble(int argc, char** argv) {
  Args a("train assemble", "Write a model directory from finished vq, gpt and drafter runs.");
  a.option("vq", "DIR", "finished 'train vq' run folder")
      .option("gpt", "DIR", "finished 'train gpt' run folder")
      .option("drafter", "DIR", "finished 'train drafter' run folder (optional)")
      .option("data", "FILE", "the dataset the runs used (licences and attribution)")
      .option("out", "DIR", "model directory to write")
      .option("dtype", "TYPE", "weight storage: fp16, bf16 or fp32", "fp16")
      .option("name", "TEXT", "model name", "emoji")
      .option("description", "TEXT", "one-line description", "");
  if (!a.parse(argc - 1, argv + 1)) return 0;
  for (const char* req : {"vq", "gpt", "out", "data"}) {
    if (!a.given(req)) throw Error(std::string("give --") + req);
  }
  train::AssembleOptions o;
  o.vq_dir = a.str("vq");
  o.gpt_dir = a.str("gpt");
  o.drafter_dir = a.str("drafter");
  o.out = a.str("out");
  o.dtype = a.str("dtype");
  o.name = a.str("name");
  o.description = a.str("description");
  const auto data = io::Dataset::load(a.str("data"));
  o.dataset_info = data.info;
  o.dataset_path = a.str("data");
  train::assemble_model(o);
  std::uintmax_t bytes = 0;
  for (const auto& e : fs::directory_iterator(o.out)) {
    if (e.is_regular_file()) bytes += e.file_size();
  }
  std::cout << "wrote model directory " << fs::absolute(o.out).string() << " (" << bytes / 1024
            << " KiB, weights in " << o.dtype << "); it loads with the product's loader\n";
  return 0;
}

// adtree train fidelity: prompt fidelity of a model.
int train_fidelity(int argc, char** argv) {
  Args a("train fidelity",
         "Generate pictures for training prompts; report how often the nearest training picture "
         "(pixels, VQ codes) carries the prompt (top-1, top-5).");
  add_model_options(a);
  a.option("data", "FILE", "the dataset the model was trained on")
      .option("out", "DIR",
              "folder for fidelity.json, prompts.txt, samples.png (each picture beside its "
              "nearest training picture) and captioned.png (a continuous model's: one pair of "
              "sheets per method, named after it)")
      .option("prompts", "N", "number of distinct prompts", "48")
      .option("split", "NAME", "train (seen prompts) or validation (unseen)", "train")
      .option("seed", "S", "seed of prompt choice and sampling", "0")
      .option("method", "LIST",
              "continuous models: the methods to measure, comma-separated (ar,cspd: their "
              "fidelities and CSpD's distance from AR at the same seeds)",
              "ar,cspd")
      .option("tokens", "FILE",
              "continuous models: the training pictures' VAE tokens (a train continuous run's "
              "tokens.safetensors) for the token-space check");
  // The fidelity sampler draws with CFG and temperature only: the two flags of the table; a
  // continuous model's also with its head's and CSpD's settings.
  add_setting_option(a, "cfg_scale");
  add_setting_option(a, "temperature");
  const std::vector<std::string> continuous_only = {
      "diffusion_steps",    "head_variance",          "cspd.gamma",
      "cspd.prefill_ratio", "cspd.inner_temperature", "cspd.max_tries"};
  for (const auto& key : continuous_only) add_setting_option(a, key);
  if (!a.parse(argc - 1, argv + 1)) return 0;
  if (!a.given("out")) throw Error("give the output folder with --out DIR");
  const auto split = a.str("split");
  if (split != "train" && split != "validation") throw Error("--split must be train or validation");
  keep_allocations_on_heap();
  if (model::is_continuous_dir(model_dir_arg(a))) return continuous_fidelity_cmd(a);
  for (const auto& key : continuous_only) {
    const auto& s = decode::setting(key);
    if (a.given(s.flag)) throw Error("--" + s.flag + " is for continuous-token models");
  }
  const auto m = load_model(a);
  const auto data = load_data(a);
  train::FidelityOptions fo;
  fo.prompts = a.integer("prompts");
  const auto sampling = sampling_from(a, m);  // the model's, under the flags given
  fo.cfg = sampling.cfg_scale;
  fo.temperature = sampling.temperature;
  fo.seed = uint64_t(a.integer("seed"));
  fo.split = split;
  const auto r = train::prompt_fidelity(m, data, fo, &std::cout);
  fs::create_directories(a.str("out"));
  train::write_json_file(a.str("out") + "/fidelity.json", r.metrics);
  write_fidelity_sheets(r.images, r.nearest, r.prompts, a.str("out"), "");
  std::cout << r.metrics.dump(2) << "\nwrote " << a.str("out") << "\n";
  return 0;
}

// The options of a training stage: the run's, plus the runs it starts from.
Args stage_args(const std::string& stage) {
  Args a("train " + stage, stage == "vq"    ? "Train the VQ tokenizer."
                           : stage == "gpt" ? "Train the caption-conditioned GPT on VQ codes."
                                            : "Train the EAGLE-1 draft head of a trained GPT.");
  add_run_options(a);
  if (stage == "gpt") {
    a.option("vq", "DIR", "finished 'train vq' run folder (or a model directory)")
        .option("init-from", "DIR",
                "start from this finished 'train gpt' run's weights (a second stage)")
        .option("word-vectors", "FILE",
                "start the caption word table from pretrained vectors: GloVe text, or the "
                "wink-embeddings JSON (cap_dim must equal their dimension)");
  }
  if (stage == "drafter") {
    a.option("gpt", "DIR", "finished 'train gpt' run folder")
        .option("init-from", "DIR",
                "start from this finished 'train drafter' run's weights (a head of the same "
                "shape, e.g. for an earlier stage of the GPT)")
        .option("model", "DIR",
                "train the head of this model directory on the target's own samples: no --data, "
                "no --gpt (a class model samples every class unless --prompts is given)")
        .option("prompts", "FILE", "with --model: the prompts to sample, one a line")
        .option("validation-prompts", "FILE",
                "with --model: held-out prompts the head is measured on (default: 5% of --prompts)")
        .flag("install",
              "with --model: put the finished head into the model directory (the head it replaces "
              "is kept in the run folder)");
  }
  return a;
}

// Originals next to their reconstructions (up to 32 validation pictures, else training ones), to
// judge the tokenizer by eye.
void write_reconstructions(const io::Dataset& data, const std::string& out) {
#ifdef ADTREE_HAVE_IMAGING
  auto rows = data.indices(io::Split::Validation);
  if (rows.empty()) rows = data.indices(io::Split::Train);
  rows.resize(std::min<size_t>(rows.size(), 32));
  const auto vq = train::load_vq(out);
  const auto sheet = imaging::image_grid(train::reconstruction_pairs(vq, data, rows), 8, 2, 4);
  imaging::write_image(out + "/reconstructions.png", sheet);
  std::cout << "wrote " << out << "/reconstructions.png (original | reconstruction pairs)\n";
#else
  (void)data, (void)out;
#endif
}

// adtree train install: a finished head run's head into a model directory (what --install does).
int train_install(int argc, char** argv) {
  Args a("train install",
         "Put the head of a finished 'train drafter --model' run into a model directory: its "
         "weights in the GPT's storage dtype, model.json's section and provenance. The head it "
         "replaces is kept in the run folder.");
  a.option("run", "DIR", "finished 'train drafter --model' run folder")
      .option("model", "DIR", "the model directory (the one the head was trained for)");
  if (!a.parse(argc - 1, argv + 1)) return 0;
  if (!a.given("run") || !a.given("model")) throw Error("give --run DIR and --model DIR");
  std::cout << train::install_head(a.str("run"), a.str("model")) << "\n";
  return 0;
}

// adtree train drafter --model DIR: the head of a model directory on its own samples.
int train_head_on_model(const Args& a, int argc, char** argv) {
  for (const char* other : {"gpt", "data"}) {
    if (a.given(other)) {
      throw Error(std::string("--model trains on the model's own samples: leave out --") + other);
    }
  }
  const auto dir = a.str("model");
  train::HeadPrompts prompts;
  if (a.given("prompts")) {
    prompts.train = train::read_prompt_list(a.str("prompts"));
    prompts.train_source = a.str("prompts");
  }
  if (a.given("validation-prompts")) {
    prompts.validation = train::read_prompt_list(a.str("validation-prompts"));
    prompts.validation_source = a.str("validation-prompts");
  }
  if (a.flag_set("show-config") || prompts.train.empty()) {
    model::LoadOptions lo;
    lo.load_vq = false;
    const auto m = model::load_model_dir(dir, lo);
    if (a.flag_set("show-config")) {
      std::cout << train::head_on_model_default_config(m).dump(2) << "\n";
      return 0;
    }
    prompts.train = train::all_classes(m);  // an error naming --prompts for a caption model
    prompts.train_source = "the model's classes";
  }
  configure_threads(int(a.integer("threads")), ThreadUse::Training);
  keep_allocations_on_heap();
  auto opts = run_options(a, "drafter", argc - 1, argv + 1);
  if (a.given("init-from")) opts.init_from = a.str("init-from");
  const auto r = train::train_head_on_model(dir, prompts, opts);
  print_result("drafter", r, opts.out);
  if (r.finished && a.flag_set("install")) std::cout << train::install_head(opts.out, dir) << "\n";
  return 0;
}

// adtree train vq|gpt|drafter: one training stage into its run folder.
int train_stage(const std::string& stage, int argc, char** argv) {
  Args a = stage_args(stage);
  if (!a.parse(argc - 1, argv + 1)) return 0;
  if (stage == "drafter" && a.given("model")) return train_head_on_model(a, argc, argv);
  if (a.flag_set("show-config")) {
    const json d = stage == "vq"    ? train::vq_default_config()
                   : stage == "gpt" ? train::gpt_default_config()
                                    : train::drafter_default_config();
    std::cout << d.dump(2) << "\n";
    return 0;
  }
  configure_threads(int(a.integer("threads")), ThreadUse::Training);
  keep_allocations_on_heap();
  const auto opts = run_options(a, stage, argc - 1, argv + 1);
  const auto data = load_data(a);
  if (stage == "vq") {
    const auto r = train::train_vq(data, opts);
    if (r.finished) write_reconstructions(data, opts.out);
    print_result(stage, r, opts.out);
  } else if (stage == "gpt") {
    if (!a.given("vq")) throw Error("give the VQ run folder with --vq DIR");
    auto gopts = opts;
    if (a.given("init-from")) gopts.init_from = a.str("init-from");
    if (a.given("word-vectors")) gopts.word_vectors = a.str("word-vectors");
    print_result(stage, train::train_gpt(data, a.str("vq"), gopts), opts.out);
  } else {
    if (!a.given("gpt")) throw Error("give the GPT run folder with --gpt DIR");
    auto dopts = opts;
    if (a.given("init-from")) dopts.init_from = a.str("init-from");
    print_result(stage, train::train_drafter(data, a.str("gpt"), dopts), opts.out);
  }
  return 0;
}

}  // namespace

int cmd_train(int argc, char** argv) {
  if (argc < 1 || std::string(argv[0]) == "--help" || std::string(argv[0]) == "-h") {
    print_train_usage();
    return argc < 1 ? 2 : 0;
  }
  const std::string stage = argv[0];
  if (stage == "assemble") return train_assemble(argc, argv);
  if (stage == "install") return train_install(argc, argv);
  if (stage == "fidelity") return train_fidelity(argc, argv);
  if (stage == "vae" || stage == "continuous" || stage == "assemble-continuous")
    return cmd_train_continuous(stage, argc, argv);
  if (stage != "vq" && stage != "gpt" && stage != "drafter") {
    throw Error("unknown 'train' stage '" + stage +
                "' (known: vq, gpt, drafter, assemble, install, fidelity, vae, continuous, "
                "assemble-continuous)");
  }
  return train_stage(stage, argc, argv);
}

}  // namespace adtree::cli
