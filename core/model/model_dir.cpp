#include "model/model_dir.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <cstdlib>
#include <filesystem>

#include "io/file_hash.h"
#include "io/mapped_pages.h"
#include "io/safetensors_shards.h"
#include "model/cpu/pack_cache.h"
#include "util/error.h"
#include "util/resource_paths.h"

namespace adtree::model {

namespace {
// Tensors of a part's file or shards (views of their memory mapping: a converted 3 GB checkpoint
// is not copied), or one problem line when they are unreadable.
TensorMap read_all(const std::string& path, std::vector<std::string>& problems) {
  try {
    return io::map_safetensors_set(path);
  } catch (const Error& e) {
    problems.push_back(e.what());
    return {};
  }
}
void add_problems(const std::string& file, const std::vector<std::string>& found,
                  std::vector<std::string>& problems) {
  for (const auto& f : found) problems.push_back(file + ": " + f);
}
}  // namespace

namespace {
// What the CPU path reads after a load is its own copies: the packed panels of the GPT's and the
// head's matrices, the picture decoder's weights; the value check touched every page of the files.
// Handing those pages back (io/mapped_pages.h) keeps resident memory near what inference reads.
// Nothing here has written to them, and a later read (the reference path, the encoder in
// training) faults them back in.
// The value check reads every page once; the parts are read again as they are built, one at a
// time, so the load's peak stays near the weights instead of the files plus their copies.
void release_all(const TensorMap& w) {
  for (const auto& [name, t] : w) io::release_mapped_pages(t);
}

// The pages of mapped files whose contents the lean path or the fast picture decoder have copied
// (packed panels, channels-last or bf16 weights): the kernel may drop them, and they fault back in
// if the reference path reads them.
void release_copied_gpt(const ModelBundle& b, const TensorMap& gpt) {
  if (!b.gpt->lean_ready()) return;
  for (const auto& [name, t] : gpt) {
    if (name != "tok_embeddings.weight") io::release_mapped_pages(t);
  }
  for (const auto& [name, t] : b.drafter_weights) io::release_mapped_pages(t);
}

void release_copied_vq(const ModelBundle& b, const TensorMap& vq) {
  if (!b.vq_decoder) return;
  for (const auto& [name, t] : vq) {
    if (name != "quantize.embedding.weight") io::release_mapped_pages(t);
  }
}
}  // namespace

namespace {
// The files of a model directory.
struct Paths {
  explicit Paths(const std::string& dir)
      : model(dir + "/model.json"),
        gpt(dir + "/gpt.safetensors"),
        vq(dir + "/vq.safetensors"),
        drafter(dir + "/drafter.safetensors"),
        parallel(dir + "/parallel_head.safetensors"),
        text(dir + "/text.json") {}
  std::string model, gpt, vq, drafter, parallel, text;
};

// model.json against itself: the GPT's, the VQ's and the manifest's sizes and kinds agree.
void check_manifest(const ModelBundle& b, const std::string& mpath,
                    std::vector<std::string>& problems) {
  const auto& m = b.manifest;
  const auto& g = b.gpt_config;
  if (g.vocab_size != m.codebook_size) {
    problems.push_back(mpath + ": gpt.vocab_size " + std::to_string(g.vocab_size) +
                       " differs from codebook_size " + std::to_string(m.codebook_size));
  }
  if (b.vq_config.codebook_size != m.codebook_size) {
    problems.push_back(mpath + ": vq.codebook_size " + std::to_string(b.vq_config.codebook_size) +
                       " differs from codebook_size " + std::to_string(m.codebook_size));
  }
  if (g.grid_h != m.grid_h || g.grid_w != m.grid_w) {
    problems.push_back(mpath + ": gpt grid differs from the manifest grid");
  }
  if ((m.kind == "c2i") != (g.cond == CondKind::Class)) {
    problems.push_back(mpath + ": kind '" + m.kind + "' does not match gpt.cond '" +
                       to_string(g.cond) + "'");
  }
  if (m.kind == "t2i-words" && g.num_words == 0) {
    problems.push_back(mpath + ": a t2i-words model needs gpt.num_words > 0");
  }
}

// The model's identity (io/file_hash.h): the VQ's file counts even when a load skips it, since it
// decides what the tokens look like. A sharded part counts as its index and shards; a single file
// (or a missing drafter) as before, so the hash of a model that did not change stays the same.
// Empty when a file cannot be read (the load reports that file).
std::string model_hash(const Paths& p, const LoadOptions& opts) {
  std::vector<std::string> files{p.model};
  for (const auto& part : {p.gpt, p.vq, p.drafter, p.parallel}) {
    auto set = io::safetensors_set_files(part);
    if (set.empty()) set = {part};
    files.insert(files.end(), set.begin(), set.end());
  }
  files.push_back(p.text);
  try {
    return io::sha256_files_cached(files, [&opts](double f) {
      if (opts.progress) opts.progress("hashing the weights", 0.4 * f);
    });
  } catch (const Error&) {
    return {};
  }
}

// The packed-panel cache this load uses, or null: CPU inference in fp32 or bf16, a model hash, and
// the policy (LoadOptions::pack_cache, $ADTREE_PACK_CACHE) allowing a model of this size.
std::unique_ptr<PackCache> open_pack_cache(const ModelBundle& b, const LoadOptions& opts,
                                           at::Device device, at::ScalarType dtype) {
  using Use = LoadOptions::PackCacheUse;
  Use use = opts.pack_cache;
  if (const char* env = std::getenv("ADTREE_PACK_CACHE"); env && use == Use::Auto) {
    const std::string v = env;
    use = v == "off" || v == "0" ? Use::Off : v == "always" ? Use::Always : Use::Auto;
  }
  if (use == Use::Off || !device.is_cpu() || b.hash.empty()) return nullptr;
  if (dtype != at::kFloat && dtype != at::kBFloat16) return nullptr;
  const auto& g = b.gpt_config;
  const int64_t matrices =
      g.n_layer * (4 * g.dim * g.dim + 3 * g.ffn_hidden() * g.dim) + g.vocab_size * g.dim;
  const int64_t bytes = matrices * (dtype == at::kFloat ? 4 : 2);
  if (use == Use::Auto && bytes <= (int64_t(64) << 20)) return nullptr;
  const std::string root =
      opts.cache_root.empty() ? util::user_cache_dir() : opts.cache_root + "/adtree-studio";
  if (root.empty()) return nullptr;
  return std::make_unique<PackCache>(root + "/packed", b.hash,
                                     dtype == at::kFloat ? "fp32" : "bf16");
}

// The GPT's and the VQ's files mapped and checked against the configuration (values too unless
// `values` is false), every problem collected.
void map_weights(const ModelBundle& b, const Paths& p, const LoadOptions& opts, bool values,
                 TensorMap& gw, TensorMap& vw, std::vector<std::string>& problems) {
  const auto& g = b.gpt_config;
  gw = read_all(p.gpt, problems);
  if (!gw.empty()) add_problems(p.gpt, check_params(gpt_param_specs(g), gw, values), problems);
  release_all(gw);
  if (opts.load_vq) {
    vw = read_all(p.vq, problems);
    if (!vw.empty()) {
      const bool enc = vw.count("encoder.conv_in.weight") > 0;
      add_problems(p.vq, check_params(vq_param_specs(b.vq_config, enc), vw, values), problems);
      release_all(vw);
    }
  }
}

// The draft head's file, when model.json names a head or the file is there.
void map_drafter(ModelBundle& b, const Paths& p, bool values, std::vector<std::string>& problems) {
  const auto& g = b.gpt_config;
  const bool has_drafter = !io::safetensors_set_files(p.drafter).empty();
  if (b.manifest.drafter.is_null() && !has_drafter) return;
  if (!has_drafter) {
    problems.push_back(p.model + ": a drafter is configured but drafter.safetensors is missing");
    return;
  }
  b.drafter_weights = read_all(p.drafter, problems);
  if (b.drafter_weights.empty()) return;
  add_problems(p.drafter, check_params(drafter_param_specs(g), b.drafter_weights, values),
               problems);
  release_all(b.drafter_weights);
}

// The parallel head's file: both it and model.json's section, or neither.
void map_parallel_head(ModelBundle& b, const Paths& p, bool values,
                       std::vector<std::string>& problems) {
  const bool has_file = !io::safetensors_set_files(p.parallel).empty();
  const auto& section = b.manifest.parallel_head;
  if (section.is_null() && !has_file) return;
  if (section.is_null() || !has_file) {
    problems.push_back(p.model + (has_file ? ": parallel_head.safetensors is there but model.json "
                                             "has no parallel_head section"
                                           : ": a parallel head is configured but "
                                             "parallel_head.safetensors is missing"));
    return;
  }
  b.parallel_weights = read_all(p.parallel, problems);
  if (b.parallel_weights.empty()) return;
  const auto specs = parallel_head_param_specs(b.gpt_config, section["depths"].get<int64_t>());
  add_problems(p.parallel, check_params(specs, b.parallel_weights, values), problems);
  release_all(b.parallel_weights);
}

// text.json: the class names or words, as many as the GPT's table (t2i-embeddings models need
// none).
void load_vocabulary(ModelBundle& b, const std::string& tpath, std::vector<std::string>& problems) {
  const auto& m = b.manifest;
  const auto& g = b.gpt_config;
  try {
    b.vocab = Vocabulary::load(tpath);
    const int64_t want = m.kind == "c2i" ? g.num_classes : g.num_words;
    if (m.kind != "t2i-embeddings" && b.vocab.size() != want) {
      problems.push_back(tpath + ": " + std::to_string(b.vocab.size()) + " entries, the GPT has " +
                         std::to_string(want));
    }
  } catch (const Error& e) {
    if (m.kind != "t2i-embeddings") problems.push_back(e.what());
  }
}

// The head's RMSNorm epsilon: the target's unless model.json says otherwise (LANTERN's HF-style
// drafters were trained with 1e-6).
double drafter_norm_eps(const ModelBundle& b, const std::string& mpath,
                        std::vector<std::string>& problems) {
  const auto& d = b.manifest.drafter;
  if (!d.is_object() || !d.contains("norm_eps")) return b.gpt_config.norm_eps;
  const auto& e = d["norm_eps"];
  if (!e.is_number() || !(e.get<double>() > 0.0) || e.get<double>() > 0.1) {
    problems.push_back(mpath + ": drafter.norm_eps must be a number in (0, 0.1]");
    return b.gpt_config.norm_eps;
  }
  return e.get<double>();
}

// drafter.output: "streams" (the default) or "mixed".
bool drafter_mixed(const ModelBundle& b, const std::string& mpath,
                   std::vector<std::string>& problems) {
  const auto& d = b.manifest.drafter;
  if (!d.is_object() || !d.contains("output")) return false;
  const auto& o = d["output"];
  if (!o.is_string() || (o != "streams" && o != "mixed")) {
    problems.push_back(mpath + ": drafter.output must be \"streams\" or \"mixed\"");
    return false;
  }
  return o == "mixed";
}

// The T5 encoder of a t2i-embeddings model: the one the user names, else model.json's (relative to
// the model directory). Its width must be the GPT's caption width.
void load_text_encoder(ModelBundle& b, const LoadOptions& opts) {
  namespace fs = std::filesystem;
  std::string t5 = opts.text_encoder;
  if (t5.empty() && !b.manifest.text_encoder.empty()) {
    const fs::path named(b.manifest.text_encoder);
    t5 = (named.is_absolute() ? named : fs::path(b.dir) / named).string();
  }
  // Other kinds take words or classes: an encoder given with them is not theirs to load (the
  // studio passes the one it remembers with every model; the CLI rejects --t5 for them).
  if (t5.empty() || b.manifest.kind != "t2i-embeddings") return;
  TextEncoderOptions o;
  o.device = opts.device;
  o.dtype = opts.dtype;
  b.text_encoder = TextEncoder::load(t5, o);
  const int64_t width = b.text_encoder->config().d_model, want = b.gpt_config.cap_dim;
  if (width != want) {
    throw Error(t5 + ": the T5 encoder's d_model is " + std::to_string(width) + ", but " + b.dir +
                " reads captions of width " + std::to_string(want) +
                " (cap_dim; LlamaGen's t2i models need FLAN-T5-XL, 2048)");
  }
}

void throw_problems(const std::string& dir, const std::vector<std::string>& problems) {
  if (problems.empty()) return;
  std::string msg =
      dir + ": the model directory has " + std::to_string(problems.size()) + " problem(s):";
  for (const auto& p : problems) msg += "\n  - " + p;
  throw Error(msg);
}
}  // namespace

ModelBundle load_model_dir(const std::string& dir, const LoadOptions& opts) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir)) throw Error(dir + ": not a model directory (it does not exist)");
  const auto device = parse_device(opts.device);
  auto dtype = parse_dtype(opts.dtype);
  const VqPrecision vq_precision = vq_precision_from_string(opts.vq_dtype);
  if (device.is_cpu() && dtype == at::kHalf) {
    throw Error("fp16 is not supported on the CPU; use fp32 or bf16");
  }
  ModelBundle b;
  b.dir = dir;
  b.manifest = io::Manifest::load(dir);
  b.gpt_config = GptConfig::from_json(b.manifest.gpt);
  b.vq_config = VqConfig::from_json(b.manifest.vq);
  b.vq_config.validate();
  const Paths p(dir);
  std::vector<std::string> problems;
  check_manifest(b, p.model, problems);
  // The hash first: a packed-panel cache for it says the files' values were checked.
  b.hash = model_hash(p, opts);
  const auto stage = [&opts](const char* what, double f) {
    if (opts.progress) opts.progress(what, f);
  };
  stage("opening the packed cache", 0.4);
  auto packs = open_pack_cache(b, opts, device, dtype);
  b.pack_cache_hit = packs && packs->hit();
  stage(b.pack_cache_hit ? "mapping the weights" : "checking the weights", 0.5);
  TensorMap gw, vw;
  map_weights(b, p, opts, !b.pack_cache_hit, gw, vw, problems);
  load_vocabulary(b, p.text, problems);
  const double drafter_eps = drafter_norm_eps(b, p.model, problems);
  b.drafter_mixed = drafter_mixed(b, p.model, problems);
  map_drafter(b, p, !b.pack_cache_hit, problems);
  map_parallel_head(b, p, !b.pack_cache_hit, problems);
  throw_problems(dir, problems);
  load_text_encoder(b, opts);
  // The picture decoder first, its file's pages handed back at once: the GPT's packed panels are
  // a full copy of its matrices in fp32, and the peak of the load is whatever else is resident
  // beside them (GPT-B + VQ-16: 1.45x the weights with the decoder converted last,
  // docs/PERFORMANCE.md).
  if (opts.load_vq) {
    TensorMap moved;
    // The decoder runs in fp32 on the CPU whatever the GPT's dtype: it is run once per preview.
    for (auto& [k, t] : vw) moved.emplace(k, t.to(device, device.is_cpu() ? at::kFloat : dtype));
    b.vq = std::make_shared<const VqModel>(b.vq_config, std::move(moved));
    if (device.is_cpu()) {
      b.vq_decoder = std::make_shared<const VqDecoder>(b.vq, vq_precision, packs.get());
    }
    release_copied_vq(b, vw);
  }
  stage(b.pack_cache_hit ? "mapping the weights" : "packing the weights", 0.7);
  b.gpt = std::make_shared<const Gpt>(b.gpt_config, gw, device, dtype, true, packs.get());
  if (!b.drafter_weights.empty()) {
    b.drafter = std::make_shared<const Drafter>(*b.gpt, b.drafter_weights, /*inference=*/true,
                                                drafter_eps, packs.get());
  }
  if (!b.parallel_weights.empty()) {
    b.parallel_head = std::make_shared<const ParallelHead>(
        *b.gpt, b.parallel_weights, b.manifest.parallel_head["depths"].get<int64_t>(),
        /*inference=*/true, packs.get());
  }
  release_copied_gpt(b, gw);
  // Written only now, after every check passed: its existence vouches for the values, so not by a
  // load that skipped the VQ's file (a later hit would skip checking it).
  if (packs) b.pack_cache_warning = packs->warning();
  if (packs && opts.load_vq) {
    stage("writing the packed cache", 0.9);
    const std::string failed = packs->save();
    if (!failed.empty()) {
      b.pack_cache_warning += (b.pack_cache_warning.empty() ? "" : "; ") + failed;
    }
  }
#ifdef __GLIBC__
  malloc_trim(0);  // the conversions' temporaries, freed between the kept copies, back to the OS
#endif
  return b;
}

at::Tensor decode_picture(const ModelBundle& m, const at::Tensor& indices, int64_t h, int64_t w) {
  if (m.vq_decoder) return m.vq_decoder->decode(indices, h, w);
  if (!m.vq) throw Error("this model was loaded without its VQ decoder");
  return m.vq->decode(indices, h, w);
}

}  // namespace adtree::model
