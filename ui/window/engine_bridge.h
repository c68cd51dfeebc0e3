// EngineBridge: the only place engine events enter Qt (STYLE.md). The engine calls its listener on
// the worker thread; the bridge queues the events and posts ONE drain to the GUI thread when the
// queue goes from empty to non-empty, then waits kDrainIntervalMs before the next drain: 500 steps
// per second cost the GUI thread (and the worker, which pays for each wake-up) ~30 wake-ups, not
// 500, and the window paints at that rate anyway (docs/GUI.md). Events that change what the user
// can do (started, finished, failed, cancelled, model loaded) skip the wait. The drain re-emits the
// events as signals on the GUI thread, in order, with consecutive steps merged into one signal and
// superseded previews dropped.
#pragma once
#include <QObject>
#include <QString>

#include <memory>
#include <mutex>
#include <vector>

#include "engine/events.h"

namespace adtree::decode {
struct DecodeRequest;
}
namespace adtree::engine {
class Engine;
struct EngineOptions;
}  // namespace adtree::engine

namespace adtree::ui {

class EngineBridge : public QObject {
  Q_OBJECT

 public:
  explicit EngineBridge(QObject* parent = nullptr);
  EngineBridge(const engine::EngineOptions& opts, QObject* parent);
  ~EngineBridge() override;  // shuts the engine down (joins the worker) before anything else

  // createRandom: a GPT size to write a random model with when `dir` has no model.json.
  // textEncoder: a T5 directory for a t2i-embeddings model's typed prompts (others ignore it).
  void loadModel(const QString& dir, const QString& device, const QString& dtype,
                 const QString& createRandom = {}, const QString& textEncoder = {});
  engine::JobId submit(const QString& prompt, const decode::DecodeRequest& request);
  void cancel(engine::JobId id);
  // Stops the engine (cancel + join, about one decoding step); the bridge emits nothing afterwards.
  void shutdown();

  static QStringList availableDevices();

 Q_SIGNALS:
  void loadProgress(const QString& dir, const QString& stage, double fraction);
  void modelLoaded(const adtree::engine::ModelLoaded& loaded);
  void loadFailed(const QString& dir, const QString& message);
  // The loaded model's token colours, built after its load (engine::TokenColors).
  void tokenColorsArrived(const QString& dir, const std::vector<uint8_t>& colors);
  void jobStarted(const adtree::engine::JobStarted& started);
  void stepsArrived(const std::vector<adtree::engine::JobStep>& steps);
  void previewArrived(const adtree::engine::JobPreview& preview);
  void jobFinished(const adtree::engine::JobFinished& finished);
  void jobFailed(adtree::engine::JobId job, const QString& message);
  void jobCancelled(adtree::engine::JobId job, qint64 tokensDone);

 private:
  void onEngineEvent(engine::Event e);  // worker thread
  void drain();                         // GUI thread
  void drainAgain();                    // GUI thread, kDrainIntervalMs after a drain

  static constexpr int kDrainIntervalMs = 30;  // the window's frame interval

  std::unique_ptr<engine::Engine> engine_;
  std::mutex mu_;
  std::vector<engine::Event> pending_;
  bool drainPosted_ = false;  // a drain is queued on the GUI thread
  bool throttled_ = false;    // a drain ran less than kDrainIntervalMs ago
  bool stopped_ = false;
};

}  // namespace adtree::ui
