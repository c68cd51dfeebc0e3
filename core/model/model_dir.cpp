#include "model/model_dir.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <filesystem>

#include "io/file_hash.h"
#include "io/mapped_pages.h"
#include "io/safetensors_shards.h"
#include "util/error.h"

namespace adtree::model {

at::Device parse_device(const std::string& name) {
  if (name == "cpu") return at::kCPU;
  if (name.rfind("cuda", 0) == 0) {
    if (!at::hasCUDA()) {
      throw Error("device '" + name + "' requested, but this build has no CUDA support or no GPU " +
                  "is visible (use --device cpu)");
    }
    try {
      return at::Device(name);
    } catch (const std::exception&) {
      throw Error("invalid device '" + name + "'");
    }
  }
  throw Error("unknown device '" + name + "' (expected cpu, cuda or cuda:N)");
}

at::ScalarType parse_dtype(const std::string& name) {
  if (name == "fp32" || name == "float32") return at::kFloat;
  if (name == "bf16" || name == "bfloat16") return at::kBFloat16;
  if (name == "fp16" || name == "float16") return at::kHalf;
  throw Error("unknown dtype '" + name + "' (expected fp32, bf16 or fp16)");
}

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
  const auto& m = b.manifest;
  b.gpt_config = GptConfig::from_json(m.gpt);
  b.vq_config = VqConfig::from_json(m.vq);
  b.vq_config.validate();

  std::vector<std::string> problems;
  const std::string mpath = dir + "/model.json";
  auto& g = b.gpt_config;
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
  const bool class_kind = m.kind == "c2i";
  if (class_kind != (g.cond == CondKind::Class)) {
    problems.push_back(mpath + ": kind '" + m.kind + "' does not match gpt.cond '" +
                       to_string(g.cond) + "'");
  }
  if (m.kind == "t2i-words" && g.num_words == 0) {
    problems.push_back(mpath + ": a t2i-words model needs gpt.num_words > 0");
  }

  const std::string gpath = dir + "/gpt.safetensors", vpath = dir + "/vq.safetensors";
  auto gw = read_all(gpath, problems);
  if (!gw.empty()) add_problems(gpath, check_params(gpt_param_specs(g), gw), problems);
  release_all(gw);
  TensorMap vw;
  if (opts.load_vq) {
    vw = read_all(vpath, problems);
    if (!vw.empty()) {
      const bool enc = vw.count("encoder.conv_in.weight") > 0;
      add_problems(vpath, check_params(vq_param_specs(b.vq_config, enc), vw), problems);
      release_all(vw);
    }
  }
  const std::string tpath = dir + "/text.json";
  try {
    b.vocab = Vocabulary::load(tpath);
    const int64_t want = class_kind ? g.num_classes : g.num_words;
    if (m.kind != "t2i-embeddings" && b.vocab.size() != want) {
      problems.push_back(tpath + ": " + std::to_string(b.vocab.size()) + " entries, the GPT has " +
                         std::to_string(want));
    }
  } catch (const Error& e) {
    if (m.kind != "t2i-embeddings") problems.push_back(e.what());
  }
  const std::string dpath = dir + "/drafter.safetensors";
  // The head's RMSNorm epsilon: the target's unless model.json says otherwise (LANTERN's HF-style
  // drafters were trained with 1e-6).
  double drafter_norm_eps = g.norm_eps;
  if (m.drafter.is_object() && m.drafter.contains("norm_eps")) {
    const auto& e = m.drafter["norm_eps"];
    if (!e.is_number() || !(e.get<double>() > 0.0) || e.get<double>() > 0.1) {
      problems.push_back(mpath + ": drafter.norm_eps must be a number in (0, 0.1]");
    } else {
      drafter_norm_eps = e.get<double>();
    }
  }
  const bool has_drafter = !io::safetensors_set_files(dpath).empty();
  if (!m.drafter.is_null() || has_drafter) {
    if (!has_drafter) {
      problems.push_back(mpath + ": a drafter is configured but drafter.safetensors is missing");
    } else {
      b.drafter_weights = read_all(dpath, problems);
      if (!b.drafter_weights.empty()) {
        add_problems(dpath, check_params(drafter_param_specs(g), b.drafter_weights), problems);
        release_all(b.drafter_weights);
      }
    }
  }
  if (!problems.empty()) {
    std::string msg =
        dir + ": the model directory has " + std::to_string(problems.size()) + " problem(s):";
    for (const auto& p : problems) msg += "\n  - " + p;
    throw Error(msg);
  }
  // The VQ's file counts even when this load skips it: it decides what the tokens look like.
  // A sharded part counts as its index and shards; a single file (or a missing drafter) as before,
  // so the hash of a model that did not change stays the same.
  std::vector<std::string> files{mpath};
  for (const auto& part : {gpath, vpath, dpath}) {
    auto set = io::safetensors_set_files(part);
    if (set.empty()) set = {part};
    files.insert(files.end(), set.begin(), set.end());
  }
  files.push_back(tpath);
  b.hash = io::sha256_files_cached(files);
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
      b.vq_decoder = std::make_shared<const VqDecoder>(b.vq, vq_precision);
    }
    release_copied_vq(b, vw);
  }
  b.gpt = std::make_shared<const Gpt>(g, gw, device, dtype);
  if (!b.drafter_weights.empty()) {
    b.drafter = std::make_shared<const Drafter>(*b.gpt, b.drafter_weights, /*inference=*/true,
                                                drafter_norm_eps);
  }
  release_copied_gpt(b, gw);
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
