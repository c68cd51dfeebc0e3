#include "model/mar/mar_convert.h"

#include <filesystem>
#include <memory>

#include "io/file_hash.h"
#include "model/class_names.h"
#include "model/mar/mar_dir.h"
#include "util/error.h"

namespace adtree::model {

namespace fs = std::filesystem;

namespace {

int64_t mar_parameters(const MarImport& m) {
  int64_t n = 0;
  for (const auto* w : {&m.backbone, &m.head})
    for (const auto& [k, t] : *w) n += t.numel();
  return n;
}

std::string describe_mar(const char* what, const MarImport& m) {
  const auto& c = m.config;
  return std::string(what) + ": encoder " + std::to_string(c.encoder_depth) + " x " +
         std::to_string(c.encoder_dim) + ", decoder " + std::to_string(c.decoder_depth) + " x " +
         std::to_string(c.decoder_dim) + ", " + std::to_string(c.encoder_heads) + " heads, head " +
         std::to_string(c.head_blocks) + " x " + std::to_string(c.head_width) + ", " +
         std::to_string(mar_parameters(m)) + " parameters (from '" + m.found_at + "')";
}

}  // namespace

MarConvertResult convert_mar(const MarConvertRequest& r) {
  if (r.mar.empty() || r.vae.empty() || r.out.empty())
    throw Error("convert --mar needs the checkpoint, --kl16 (the VAE) and --out");
  if (fs::exists(r.out) && !r.force) throw Error(r.out + ": already exists (--force replaces it)");
  MarConvertResult res;
  MarDirParts p;
  p.target = import_mar(r.mar, r.heads);
  if (!r.draft.empty()) p.draft = std::make_unique<MarImport>(import_mar(r.draft, r.draft_heads));
  p.vae = import_kl16(r.vae);
  if (p.vae.config.embed_dim != p.target.config.token_dim)
    throw Error(r.vae + ": its tokens have " + std::to_string(p.vae.config.embed_dim) +
                " numbers, the model's " + std::to_string(p.target.config.token_dim));
  p.classes = class_names(r.classes, p.target.config.num_classes, res.warnings);
  p.name = r.name.empty() ? fs::path(r.out).filename().string() : r.name;
  p.description = "MAR (LTH14/mar), converted by adtree convert --mar";
  p.dtype = r.dtype;
  auto source = [](const std::string& path) {
    return nlohmann::json{{"file", fs::path(path).filename().string()},
                          {"sha256", io::sha256_file(path)}};
  };
  p.provenance = {{"mar", source(r.mar)}, {"vae", source(r.vae)}, {"args", p.target.args}};
  if (p.draft) p.provenance["draft"] = source(r.draft);
  // Replacing: the old directory goes only once the new one is whole.
  const bool replace = r.force && fs::exists(r.out);
  const std::string dir = replace ? r.out + ".new" : r.out;
  if (replace) fs::remove_all(dir);  // a leftover of an interrupted replacement
  write_mar_dir(p, dir);
  if (replace) {
    fs::remove_all(r.out);
    fs::rename(dir, r.out);
  }
  res.summary.push_back(describe_mar("MAR", p.target));
  if (p.draft) res.summary.push_back(describe_mar("draft", *p.draft));
  res.summary.push_back("wrote " + r.out);
  return res;
}

}  // namespace adtree::model
