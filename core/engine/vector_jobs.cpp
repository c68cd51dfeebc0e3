#include "engine/vector_jobs.h"

#include <c10/core/InferenceMode.h>

#include "decode/settings/method_table.h"
#include "util/clock.h"

namespace adtree::engine {

namespace {

std::vector<float> vector_floats(const at::Tensor& t) {
  const auto c = t.to(at::kFloat).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

decode::RunSettings vector_run_settings(const VectorJobModel& m, const std::string& prompt,
                                        const decode::DecodeRequest& request) {
  decode::RunSettings s;
  s.request = request;
  s.prompt = prompt;
  s.model_dir = m.dir;
  s.model_name = m.name;
  s.verify = "cspd";
  s.lossless = decode::is_lossless(request);
  return s;
}

// The tokens made so far, in place on the grid; which cells they are, in the order they came.
struct PlacedTokens {
  at::Tensor grid;  // [N, D]
  std::vector<int64_t> cells;
  RgbImage picture(const VectorJobModel& m) const {
    if (cells.empty()) return {};
    // Raster: the decoded prefix alone (zeros below it would bleed into its last rows).
    const auto t = m.raster ? grid.narrow(0, 0, int64_t(cells.size())) : grid;
    const auto bytes = m.picture(t).contiguous();
    RgbImage img;
    img.height = int(bytes.size(0));
    img.width = int(bytes.size(1));
    img.pixels.assign(bytes.data_ptr<uint8_t>(), bytes.data_ptr<uint8_t>() + bytes.numel());
    return img;
  }
  JobPreview preview(const VectorJobModel& m, JobId id, bool final) const {
    const auto p0 = Clock::now();
    JobPreview p{id, picture(m), int64_t(cells.size()), final, 0.0, {}};
    if (!m.raster) p.cells = cells;
    p.decode_ms = ms_since(p0);
    return p;
  }
};

}  // namespace

void run_vector_job(const VectorJobModel& m, JobId id, const std::string& prompt,
                    const decode::DecodeRequest& request, const std::atomic<bool>* cancel,
                    PreviewPolicy previews, const std::function<void(Event)>& emit) {
  const auto t0 = Clock::now();
  try {
    c10::InferenceMode guard;
    m.check(request);
    const int64_t n = m.grid_h * m.grid_w;
    emit(JobStarted{id, prompt, decode::to_string(request.method.method), request.seed, m.grid_h,
                    m.grid_w, n, m.grid_h * m.factor, m.grid_w * m.factor});
    PlacedTokens placed{at::zeros({n, m.token_dim}), {}};
    auto next_preview = Clock::now();
    auto on_step = [&](const decode::StepEvent& ev, const at::Tensor& tokens) {
      const auto x = tokens.reshape({-1, m.token_dim}).to(at::kFloat);
      for (int64_t i = 0; i < x.size(0); ++i) {
        const int64_t cell = ev.record.cell(size_t(i));
        placed.grid[cell].copy_(x[i]);
        placed.cells.push_back(cell);
      }
      emit(JobStep{id, ev.record, ev.tokens, ev.cells, ms_since(t0), nullptr, vector_floats(x)});
      // Previews on this thread, spaced so that decoding them costs at most a small share.
      if (!previews.enabled || Clock::now() < next_preview) return;
      auto p = placed.preview(m, id, false);
      const double cost = p.decode_ms;
      emit(std::move(p));
      next_preview = Clock::now() + std::chrono::microseconds(
                                        int64_t(1000 * std::max(previews.interval_ms, 6 * cost)));
    };
    auto res = m.run(prompt, request, on_step, cancel);
    res.stats.settings = vector_run_settings(m, prompt, request);
    res.stats.finish(ms_since(t0));
    auto fin = placed.preview(m, id, true);
    auto img = fin.image;
    const int64_t made = int64_t(placed.cells.size());
    if (previews.enabled) emit(std::move(fin));
    if (res.cancelled) {
      emit(JobCancelled{id, made});
      return;
    }
    const auto summary = res.stats.summary;
    emit(JobFinished{id, summary, std::make_shared<const decode::RunStats>(std::move(res.stats)),
                     std::vector<int64_t>(size_t(n), 0), std::move(img), ms_since(t0), 0.0,
                     vector_floats(placed.grid)});
  } catch (const std::exception& e) {
    emit(JobFailed{id, e.what()});
  } catch (...) {
    emit(JobFailed{id, "unknown error during generation"});
  }
}

}  // namespace adtree::engine
