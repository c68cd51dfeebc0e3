#include "scripted_run.h"

#include <QCheckBox>
#include <QComboBox>
#include <QElapsedTimer>
#include <QSpinBox>
#include <QTimer>
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "ui/panels/heatmap_panel.h"
#include "ui/panels/plot_panel.h"
#include "ui/panels/prompt_edit.h"
#include "ui/panels/replay_panel.h"
#include "ui/panels/settings_panel.h"
#include "ui/views/compare_window.h"

namespace adtree::studio {

namespace {

// One scripted session: its state lives as long as the event loop that run_scripted() runs.
// A widget of the window by its objectName, as the GUI tests find them: a renamed widget stops the
// script with a message instead of a null pointer.
template <class T>
T* named(QObject& window, const char* name) {
  auto* w = window.findChild<T*>(name);
  if (!w) {
    std::fprintf(stderr, "adtree-studio: the window has no %s (scripted run)\n", name);
    std::exit(2);
  }
  return w;
}

class ScriptedRun {
 public:
  ScriptedRun(ui::TimedApplication& app, ui::MainWindow& w, const QCommandLineParser& cli,
              const StudioOptions& o)
      : app_(app),
        w_(w),
        cli_(cli),
        o_(o),
        meter_(&app),
        runs_left_(cli.isSet(o.benchmark) ? std::max(1, cli.value(o.benchmark).toInt()) : 1),
        use_meter_(cli.isSet(o.stall)),
        queue_(cli.value(o.methods).split(',', Qt::SkipEmptyParts)) {}

  void wire() {
    startWhenLoaded();
    followWithMethods();
    finishWithViews();
    if (cli_.isSet(o_.benchmark)) reportEachRun();
  }

 private:
  void start() {
    // The heartbeat wakes the GUI thread 200 times a second, itself a load: only when asked.
    if (use_meter_) meter_.start();
    app_.startTiming();
    clock_.start();
    w_.generate();
  }

  // Picks the box item whose data is the option's value; an unknown value ends the studio.
  bool choose(QComboBox* box, const QCommandLineOption& option) {
    if (!cli_.isSet(option)) return true;
    const int i = box->findData(cli_.value(option));
    if (i < 0) {
      std::fprintf(stderr, "adtree-studio: unknown --%s '%s'\n", qPrintable(option.names()[0]),
                   qPrintable(cli_.value(option)));
      QCoreApplication::exit(2);
      return false;
    }
    box->setCurrentIndex(i);
    return true;
  }

  // --run, --method, --relax, --seed: typed in once the model is loaded, then Generate.
  void startWhenLoaded() {
    QObject::connect(
        &w_, &ui::MainWindow::modelReady, &w_,
        [this] {
          named<ui::PromptEdit>(w_, "promptEdit")->setText(cli_.value(o_.run));
          if (!choose(named<QComboBox>(w_, "methodBox"), o_.method) ||
              !choose(named<QComboBox>(w_, "relaxBox"), o_.relax) || !applySettings())
            return;
          if (cli_.isSet(o_.seed)) {
            named<QCheckBox>(w_, "randomSeedBox")->setChecked(false);
            named<QSpinBox>(w_, "seedBox")->setValue(cli_.value(o_.seed).toInt());
          }
          named<QSpinBox>(w_, "countBox")
              ->setValue(cli_.isSet(o_.count) ? cli_.value(o_.count).toInt() : 1);
          start();
        },
        Qt::SingleShotConnection);
    QObject::connect(&w_, &ui::MainWindow::modelLoadFailed, &w_, [](const QString& message) {
      std::fprintf(stderr, "adtree-studio: the model could not be loaded: %s\n",
                   qPrintable(message));
      QCoreApplication::exit(1);
    });
  }

  // --set KEY=VALUE: into the settings panel, checked by the table's entry; a wrong key or value
  // ends the studio with the entry's own message.
  bool applySettings() {
    auto* panel = named<ui::SettingsPanel>(w_, "settingsPanel");
    for (const QString& kv : cli_.values(o_.set)) {
      const int eq = kv.indexOf('=');
      QString why = eq <= 0 ? QStringLiteral("expected KEY=VALUE") : QString();
      if (why.isEmpty()) panel->applySetting(kv.left(eq), kv.mid(eq + 1), &why);
      if (!why.isEmpty()) {
        std::fprintf(stderr, "adtree-studio: --set '%s': %s\n", qPrintable(kv), qPrintable(why));
        QCoreApplication::exit(2);
        return false;
      }
    }
    return true;
  }

  // --methods: the same prompt and seed again with each listed method.
  void followWithMethods() {
    if (queue_.isEmpty()) return;
    QObject::connect(&w_, &ui::MainWindow::generationFinished, &w_, [this] {
      if (queue_.isEmpty()) return;
      named<QComboBox>(w_, "methodBox")
          ->setCurrentIndex(named<QComboBox>(w_, "methodBox")->findData(queue_.takeFirst()));
      QTimer::singleShot(200, &w_, [this] { w_.generate(); });
    });
  }

  // --inspect, --replay-step, --show-dock, --compare: after the last run.
  void finishWithViews() {
    if (!cli_.isSet(o_.replay) && !cli_.isSet(o_.inspect) && !cli_.isSet(o_.dock) &&
        !cli_.isSet(o_.compare))
      return;
    QObject::connect(&w_, &ui::MainWindow::generationFinished, &w_, [this] {
      if (!queue_.isEmpty()) return;  // after the last of --methods
      // The cell first: a replayed step hides the cells committed after it.
      if (cli_.isSet(o_.inspect)) w_.inspectCell(cli_.value(o_.inspect).toInt());
      if (cli_.isSet(o_.replay))
        named<ui::ReplayPanel>(w_, "replayPanel")->setStep(cli_.value(o_.replay).toInt());
      if (cli_.isSet(o_.dock)) w_.raiseDock(cli_.value(o_.dock));
      if (cli_.isSet(o_.compare)) {
        auto* c = w_.compareWindow();
        c->setSide(0, decode::Method::Ar, decode::Acceptance::Lossless);
        c->show();
        c->runBoth();
      }
      QObject::disconnect(&w_, &ui::MainWindow::generationFinished, &w_, nullptr);
    });
  }

  // --benchmark N: one JSON line of timings per run (docs/GUI.md, "Measurements"), then quit.
  void reportEachRun() {
    QObject::connect(&w_, &ui::MainWindow::generationEnded, &w_, [this](const QString& how) {
      // Measured to the end of the event-loop turn that paints the final state: end-to-end means
      // "the image is on screen", not "the engine is done".
      QTimer::singleShot(0, &w_, [this, how] {
        printTimings(how, double(clock_.nsecsElapsed()) / 1e6);
        if (--runs_left_ > 0) {
          QTimer::singleShot(300, &w_,
                             [this] { start(); });  // a pause, like a person between clicks
        } else {
          w_.close();
        }
      });
    });
  }

  void printTimings(const QString& how, double total_ms) {
    if (use_meter_) meter_.stop();
    app_.stopTiming();
    // The decoding loop's own time, as the CLI reports it, to compare the two like for like.
    const auto* shown = w_.shownRecord();
    const double decode_ms = shown ? shown->stats->summary.wall_ms : 0.0;
    std::printf(
        "{\"result\": \"%s\", \"gui_end_to_end_ms\": %.1f, \"engine_job_ms\": %.1f, "
        "\"decode_ms\": %.1f, \"decode_cpu_ms\": %.1f, "
        "\"max_tick_gap_ms\": %.1f, \"p99_tick_gap_ms\": %.1f, \"ticks\": %d, "
        "\"max_event_cpu_ms\": %.1f, \"max_event_wall_ms\": %.1f, \"gui_cpu_ms\": %.1f, "
        "\"slowest_event\": \"%s/%d\", \"heatmaps_replot_ms\": %.1f, "
        "\"plots_replot_ms\": %.1f}\n",
        how.toUtf8().constData(), total_ms, w_.lastJobMs(), decode_ms, w_.lastDecodeCpuMs(),
        meter_.maxGapMs(), meter_.quantileMs(0.99), meter_.ticks(), app_.maxEventCpuMs(),
        app_.maxEventWallMs(), app_.totalCpuMs(), app_.slowestReceiver().toUtf8().constData(),
        app_.slowestEventType(), named<ui::HeatmapPanel>(w_, "heatmapPanel")->replotCostMs(),
        named<ui::PlotPanel>(w_, "plotPanel")->replotCostMs());
    std::fflush(stdout);
  }

  ui::TimedApplication& app_;
  ui::MainWindow& w_;
  const QCommandLineParser& cli_;
  const StudioOptions& o_;
  ui::StallMeter meter_;
  QElapsedTimer clock_;
  int runs_left_;
  bool use_meter_;
  QStringList queue_;
};

}  // namespace

int run_scripted(ui::TimedApplication& app, ui::MainWindow& w, const QCommandLineParser& cli,
                 const StudioOptions& o) {
  ScriptedRun script(app, w, cli, o);
  script.wire();
  return app.exec();
}

}  // namespace adtree::studio
