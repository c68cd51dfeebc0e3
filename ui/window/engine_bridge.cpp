#include "ui/window/engine_bridge.h"

#include <QMetaObject>
#include <QStringList>
#include <QTimer>

#include "engine/engine.h"

namespace adtree::ui {

EngineBridge::EngineBridge(QObject* parent) : EngineBridge(engine::EngineOptions{}, parent) {}

EngineBridge::EngineBridge(const engine::EngineOptions& opts, QObject* parent) : QObject(parent) {
  engine_ = std::make_unique<engine::Engine>(
      [this](engine::Event e) { onEngineEvent(std::move(e)); }, opts);
}

EngineBridge::~EngineBridge() {
  // The worker must be gone before the members it touches (mu_, pending_) are destroyed; drains
  // still posted to this object are discarded by ~QObject.
  shutdown();
}

void EngineBridge::loadModel(const QString& dir, const QString& device, const QString& dtype,
                             const QString& createRandom, const QString& textEncoder) {
  engine::LoadRequest r;
  r.dir = dir.toStdString();
  r.device = device.toStdString();
  r.dtype = dtype.toStdString();
  r.create_random = createRandom.toStdString();
  r.text_encoder = textEncoder.toStdString();
  engine_->load_model(std::move(r));
}

engine::JobId EngineBridge::submit(const QString& prompt, const decode::DecodeRequest& request) {
  engine::GenerateJob job;
  job.prompt = prompt.toStdString();
  job.request = request;
  return engine_->submit(std::move(job));
}

void EngineBridge::cancel(engine::JobId id) {
  engine_->cancel(id);
}

void EngineBridge::shutdown() {
  engine_->shutdown();
  std::lock_guard<std::mutex> lk(mu_);
  stopped_ = true;
  pending_.clear();
}

QStringList EngineBridge::availableDevices() {
  QStringList out;
  for (const auto& d : engine::Engine::available_devices()) out << QString::fromStdString(d);
  return out;
}

void EngineBridge::onEngineEvent(engine::Event e) {
  const bool urgent = !std::holds_alternative<engine::JobStep>(e) &&
                      !std::holds_alternative<engine::JobPreview>(e) &&
                      !std::holds_alternative<engine::LoadProgress>(e);
  std::lock_guard<std::mutex> lk(mu_);
  if (stopped_) return;
  pending_.push_back(std::move(e));
  if (drainPosted_ || (throttled_ && !urgent)) return;
  drainPosted_ = true;
  QMetaObject::invokeMethod(this, &EngineBridge::drain, Qt::QueuedConnection);
}

void EngineBridge::drainAgain() {
  bool more = false;
  {
    std::lock_guard<std::mutex> lk(mu_);
    throttled_ = false;
    more = !pending_.empty() && !drainPosted_;
    if (more) drainPosted_ = true;
  }
  if (more) drain();
}

void EngineBridge::drain() {
  std::vector<engine::Event> batch;
  {
    std::lock_guard<std::mutex> lk(mu_);
    batch.swap(pending_);
    drainPosted_ = false;
    throttled_ = true;  // events arriving now wait for drainAgain instead of waking us
  }
  QTimer::singleShot(kDrainIntervalMs, this, &EngineBridge::drainAgain);
  // Only the newest preview of a job in this batch is worth decoding into a QImage; final previews
  // are always kept (they mark where a run ended).
  std::vector<bool> superseded(batch.size(), false);
  {
    std::vector<size_t> last_preview;
    for (size_t i = batch.size(); i-- > 0;) {
      const auto* p = std::get_if<engine::JobPreview>(&batch[i]);
      if (!p) continue;
      bool newer = false;
      for (size_t j : last_preview) newer = newer || engine::job_of(batch[j]) == p->job;
      if (newer && !p->final) superseded[i] = true;
      last_preview.push_back(i);
    }
  }
  std::vector<engine::JobStep> steps;
  auto flush_steps = [&] {
    if (steps.empty()) return;
    Q_EMIT stepsArrived(steps);
    steps.clear();
  };
  for (size_t i = 0; i < batch.size(); ++i) {
    auto& ev = batch[i];
    if (auto* s = std::get_if<engine::JobStep>(&ev)) {
      steps.push_back(std::move(*s));
      continue;
    }
    flush_steps();
    if (superseded[i]) continue;
    std::visit(
        [this](auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, engine::LoadProgress>) {
            Q_EMIT loadProgress(QString::fromStdString(x.dir), QString::fromStdString(x.stage),
                                x.fraction);
          } else if constexpr (std::is_same_v<T, engine::ModelLoaded>) {
            Q_EMIT modelLoaded(x);
          } else if constexpr (std::is_same_v<T, engine::LoadFailed>) {
            Q_EMIT loadFailed(QString::fromStdString(x.dir), QString::fromStdString(x.message));
          } else if constexpr (std::is_same_v<T, engine::TokenColors>) {
            Q_EMIT tokenColorsArrived(QString::fromStdString(x.dir), x.colors);
          } else if constexpr (std::is_same_v<T, engine::JobStarted>) {
            Q_EMIT jobStarted(x);
          } else if constexpr (std::is_same_v<T, engine::JobPreview>) {
            Q_EMIT previewArrived(x);
          } else if constexpr (std::is_same_v<T, engine::JobFinished>) {
            Q_EMIT jobFinished(x);
          } else if constexpr (std::is_same_v<T, engine::JobFailed>) {
            Q_EMIT jobFailed(x.job, QString::fromStdString(x.message));
          } else if constexpr (std::is_same_v<T, engine::JobCancelled>) {
            Q_EMIT jobCancelled(x.job, qint64(x.tokens_done));
          }
        },
        ev);
  }
  flush_steps();
}

}  // namespace adtree::ui
