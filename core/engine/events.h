// What the engine tells its listener (ARCHITECTURE.md "Threading"): plain C++ structs with no
// libtorch types, so the GUI (and any other front end) can hold and copy them freely. Images are
// RGB bytes, tokens and statistics are std::vectors in the one statistics format
// (decode/stats/stats.h). A finished run's statistics travel as one immutable shared object, never
// as text: a front end reads them where it needs them and serialises them only when it writes a
// file.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "decode/sampling.h"
#include "decode/settings/method.h"
#include "decode/stats/stats.h"

namespace adtree::engine {

using JobId = uint64_t;

// Row-major RGB888, width * height * 3 bytes, no padding (what QImage::Format_RGB888 reads).
struct RgbImage {
  int width = 0, height = 0;
  std::vector<uint8_t> pixels;
  bool empty() const { return pixels.empty(); }
};

// A loaded model as a front end needs to know it (the model card, the vocabulary for completion).
struct ModelInfo {
  std::string dir, name, kind, description;
  std::string hash;                  // "sha256:..." of the model's files (empty: no libcrypto)
  std::string device, dtype;         // as loaded: "cpu" / "cuda:0", "fp32" / "bf16" / "fp16"
  int64_t grid_h = 0, grid_w = 0;    // token grid
  int64_t image_h = 0, image_w = 0;  // pixels of a decoded image
  int64_t codebook_size = 0;
  // What a token is: "codes" of a VQ codebook (the LlamaGen family) or "vectors" of token_dim
  // numbers (the continuous family, model/continuous); decode::runs_on says which methods run.
  std::string token_kind = "codes";
  int64_t token_dim = 0;
  int64_t gpt_params = 0;
  std::string gpt_shape;        // "256 x 8 (4 heads)"
  bool has_drafter = false;     // false: only AR and the Jacobi methods can run
  bool random_weights = false;  // made by 'adtree model random': it draws noise
  bool vocabulary_is_classes = false;
  // What a prompt is: words of the vocabulary, a class (name, synonym or number), or the path of a
  // caption-embedding file (t2i-embeddings models such as a converted LlamaGen t2i).
  bool prompt_is_file = false;
  // The T5 directory that encodes typed prompts for such a model (empty: files only).
  std::string text_encoder;
  int64_t vocabulary_size = 0;              // words or classes the model knows
  std::vector<std::string> vocabulary;      // completion list: words, or class names and synonyms
  decode::SamplingParams default_sampling;  // model.json "sampling" (its author's choice)
  decode::CspdSettings default_cspd;        // a continuous model's model.json "cspd"
  std::string license;                      // one line: weights / data licences
  // Approximate colour of every code (codebook_size x RGB), from VQ decodes of the codebook: lets a
  // front end paint each token the moment it is committed, before the next preview. Empty when the
  // codebook is too costly to decode at load and not cached yet: a TokenColors event follows.
  std::vector<uint8_t> token_colors;
  // A continuous model's token colours: a linear map from a vector's numbers to RGB,
  // (token_dim + 1) x 3 (model/continuous/token_colours.h). Empty for codes, and for a continuous
  // model whose model.json has none: its pending cells are painted grey.
  std::vector<float> vector_colours;
  // The lean path's packed weights came from the disk cache (model/cpu/pack_cache.h); and why they
  // could not be cached, when that failed (the model loaded all the same).
  bool packed_from_cache = false;
  std::string cache_warning;
};

// Model loading (Engine::load_model), in order: LoadProgress* then ModelLoaded or LoadFailed.
struct LoadProgress {
  std::string dir;
  std::string stage;  // a short sentence for the status bar
  double fraction = 0;
};
struct ModelLoaded {
  ModelInfo info;
  double load_ms = 0;
};
struct LoadFailed {
  std::string dir;
  std::string message;  // complete sentences naming the file and the problem
};
// The token colours of the loaded model from `dir`, built in the background after a ModelLoaded
// whose token_colors were empty (a large codebook); between jobs, never inside one.
struct TokenColors {
  std::string dir;
  std::vector<uint8_t> colors;
};

// One generation job, in order: Started, then Step/Preview interleaved, then exactly one of
// Finished, Failed or Cancelled. A job rejected before it runs (bad prompt, bad settings, cancelled
// while queued) gets only its terminal event. Nothing follows the terminal event.
struct JobStarted {
  JobId job = 0;
  std::string prompt, method;
  uint64_t seed = 0;
  int64_t grid_h = 0, grid_w = 0, total_tokens = 0;
  int64_t image_h = 0, image_w = 0;
};
struct JobStep {
  JobId job = 0;
  decode::StepRecord record;             // record.first_cell is the first new cell
  std::vector<int64_t> tokens;           // the newly committed tokens, raster order
  std::vector<decode::CellStats> cells;  // their statistics
  double elapsed_ms = 0;                 // since the job started running
  // The step's tree, verification and distributions when the request asked for traces (shared:
  // events are copied through queues, the trace is not).
  std::shared_ptr<const decode::StepTrace> trace;
  std::vector<float> vectors;  // a continuous model's tokens, token_dim numbers each (codes: none)
};
struct JobPreview {
  JobId job = 0;
  RgbImage image;  // the VQ decode of the partial grid
  int64_t valid_cells =
      0;               // cells 0 .. valid_cells-1 (raster order) are real; the rest must be masked
  bool final = false;  // the last preview of the job (the full image, or where a cancel stopped)
  double decode_ms = 0;  // the VQ decode's own time (on the preview thread unless final)
  // A model that makes its tokens in any order (MAR): the real cells, in the order they came;
  // valid_cells is then their count. Empty: the raster prefix above.
  std::vector<int64_t> cells;
};
struct JobFinished {
  JobId job = 0;
  decode::RunSummary summary;
  // Everything about the run: settings (with prompt, model, device and dtype added, as the CLI's
  // statistics file has them), steps, grids and, when recorded, traces. Never null.
  std::shared_ptr<const decode::RunStats> stats;
  std::vector<int64_t> tokens;  // codes (a continuous model's: zeros, one per token)
  RgbImage image;
  double elapsed_ms = 0;       // conditioning + decoding + final VQ decode
  double decode_cpu_ms = 0;    // the decoding thread's CPU time in the decoding loop: unlike wall
                               // time, it does not grow when other processes share the cores
  std::vector<float> vectors;  // a continuous model's tokens, token_dim numbers each
};
struct JobFailed {
  JobId job = 0;
  std::string message;
};
struct JobCancelled {
  JobId job = 0;
  int64_t tokens_done = 0;
};

using Event = std::variant<LoadProgress, ModelLoaded, LoadFailed, TokenColors, JobStarted, JobStep,
                           JobPreview, JobFinished, JobFailed, JobCancelled>;

// The job an event belongs to (0 for model-loading events).
JobId job_of(const Event& e);
// Finished, Failed or Cancelled.
bool is_terminal(const Event& e);

}  // namespace adtree::engine
