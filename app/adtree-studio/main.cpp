// adtree-studio: the desktop face of ADT-Tree Studio. Opens the default model (see
// ui/default_model.h) or the directory given on the command line.
//
// `--run PROMPT` generates as soon as the model is loaded (demos, screenshots); with
// `--benchmark N` it does so N times, prints the GUI-thread and end-to-end timings of each run as a
// JSON line, and quits (docs/GUI.md, "Measurements").
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QCommandLineParser>
#include <QElapsedTimer>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPushButton>
#include <QSpinBox>
#include <QTimer>
#include <cstdio>

#include "ui/compare_window.h"
#include "ui/heatmap_panel.h"
#include "ui/main_window.h"
#include "ui/plot_panel.h"
#include "ui/prompt_edit.h"
#include "ui/replay_panel.h"
#include "ui/stall_meter.h"
#include "util/threads.h"

int main(int argc, char** argv) {
  // Before Qt or libtorch start threads: one BLAS thread, the measured libtorch thread count.
  adtree::configure_threads();
  adtree::ui::TimedApplication app(argc, argv);
  QApplication::setOrganizationName("adtree");
  QApplication::setApplicationName("adtree-studio");
  QApplication::setApplicationDisplayName("ADT-Tree Studio");
  QApplication::setApplicationVersion("0.1.0");

  QCommandLineParser cli;
  cli.setApplicationDescription(
      "Image generation with visual AR models and ADT-Tree speculative decoding.");
  cli.addHelpOption();
  cli.addVersionOption();
  cli.addPositionalArgument("model",
                            "model directory to open (default: $ADTREE_MODEL, the shipped "
                            "model, or a random tiny one)");
  QCommandLineOption run("run", "type PROMPT and press Generate once the model is loaded",
                         "PROMPT");
  QCommandLineOption method("method",
                            "decoding method for --run (ar, static, dynamic, adt, sjd, "
                            "pathspec)",
                            "NAME");
  QCommandLineOption seed("seed", "seed for --run", "N");
  QCommandLineOption bench("benchmark",
                           "with --run: N runs, one JSON line of timings each, then quit", "N");
  QCommandLineOption size("size", "window size WxH (screenshots)", "WxH");
  QCommandLineOption stall("stall-meter",
                           "with --benchmark: also run a 5 ms heartbeat timer and "
                           "report the longest gap between its ticks");
  QCommandLineOption preview("preview-interval",
                             "milliseconds between live previews of the "
                             "partial image (0 = none)",
                             "MS", "100");
  QCommandLineOption replay("replay-step",
                            "with --run: when it finishes, show step N in the replay "
                            "(demos, teaching, screenshots)",
                            "N");
  QCommandLineOption inspect("inspect",
                             "with --run: when it finishes, open the token distribution of "
                             "cell N (raster order)",
                             "N");
  QCommandLineOption dock("show-dock",
                          "raise this dock first: inspector, histograms or history", "NAME");
  QCommandLineOption compare("compare",
                             "with --run: also open the compare window, AR against --method, "
                             "and run both");
  QCommandLineOption methods("methods",
                             "with --run: after the first run, run the same prompt and seed "
                             "with each of these methods in turn (comma-separated), filling "
                             "the history and the histograms",
                             "LIST");
  cli.addOptions(
      {run, method, seed, bench, size, preview, stall, replay, inspect, dock, compare, methods});
  cli.process(app);

  adtree::ui::MainWindow w(cli.value(preview).toDouble());
  if (cli.isSet(size)) {
    const auto wh = cli.value(size).split('x');
    if (wh.size() == 2) w.resize(wh[0].toInt(), wh[1].toInt());
  }
  w.show();
  if (!cli.positionalArguments().isEmpty()) {
    w.openModel(cli.positionalArguments().first());
  } else {
    w.openDefaultModel();
  }
  if (!cli.isSet(run)) return app.exec();

  // Scripted runs: demos, screenshots (docs/screenshots) and the GUI measurements (docs/GUI.md).
  const bool benchmark = cli.isSet(bench);
  int runs_left = benchmark ? std::max(1, cli.value(bench).toInt()) : 1;
  adtree::ui::StallMeter meter(&app);
  QElapsedTimer clock;
  // The heartbeat wakes the GUI thread 200 times a second, itself a load: only when asked.
  const bool use_meter = cli.isSet(stall);
  auto start = [&] {
    if (use_meter) meter.start();
    app.startTiming();
    clock.start();
    w.generate();
  };
  QObject::connect(
      &w, &adtree::ui::MainWindow::modelReady, &w,
      [&] {
        w.promptEdit()->setText(cli.value(run));
        if (cli.isSet(method))
          w.methodBox()->setCurrentIndex(w.methodBox()->findData(cli.value(method)));
        if (cli.isSet(seed)) {
          w.randomSeedBox()->setChecked(false);
          w.seedBox()->setValue(cli.value(seed).toInt());
        }
        start();
      },
      Qt::SingleShotConnection);
  QObject::connect(&w, &adtree::ui::MainWindow::modelLoadFailed, &w, [&](const QString& message) {
    std::fprintf(stderr, "adtree-studio: the model could not be loaded: %s\n", qPrintable(message));
    QCoreApplication::exit(1);
  });
  QStringList queue = cli.value(methods).split(',', Qt::SkipEmptyParts);
  if (!queue.isEmpty()) {
    QObject::connect(&w, &adtree::ui::MainWindow::generationFinished, &w, [&] {
      if (queue.isEmpty()) return;
      const QString next = queue.takeFirst();
      w.methodBox()->setCurrentIndex(w.methodBox()->findData(next));
      QTimer::singleShot(200, &w, [&] { w.generate(); });
    });
  }
  if (cli.isSet(replay) || cli.isSet(inspect) || cli.isSet(dock) || cli.isSet(compare)) {
    QObject::connect(
        &w, &adtree::ui::MainWindow::generationFinished, &w,
        [&] {
          if (!queue.isEmpty()) return;  // after the last of --methods
          // The cell first: a replayed step hides the cells committed after it.
          if (cli.isSet(inspect)) w.inspectCell(cli.value(inspect).toInt());
          if (cli.isSet(replay)) w.replayPanel()->setStep(cli.value(replay).toInt());
          if (cli.isSet(dock)) w.raiseDock(cli.value(dock));
          if (cli.isSet(compare)) {
            auto* c = w.compareWindow();
            c->setSide(0, "ar", false);
            c->show();
            c->runBoth();
          }
          QObject::disconnect(&w, &adtree::ui::MainWindow::generationFinished, &w, nullptr);
        });
  }
  if (benchmark) {
    QObject::connect(&w, &adtree::ui::MainWindow::generationEnded, &w, [&](const QString& how) {
      // Measured to the end of the event-loop turn that paints the final state: end-to-end means
      // "the image is on screen", not "the engine is done".
      QTimer::singleShot(0, &w, [&, how] {
        const double total_ms = double(clock.nsecsElapsed()) / 1e6;
        if (use_meter) meter.stop();
        app.stopTiming();
        // The decoding loop's own time, as the CLI reports it, to compare the two like for like.
        const double decode_ms = QJsonDocument::fromJson(w.lastStatsJson().toUtf8())
                                     .object()["summary"]
                                     .toObject()["wall_ms"]
                                     .toDouble();
        std::printf(
            "{\"result\": \"%s\", \"gui_end_to_end_ms\": %.1f, \"engine_job_ms\": %.1f, "
            "\"decode_ms\": %.1f, \"decode_cpu_ms\": %.1f, "
            "\"max_tick_gap_ms\": %.1f, \"p99_tick_gap_ms\": %.1f, \"ticks\": %d, "
            "\"max_event_cpu_ms\": %.1f, \"max_event_wall_ms\": %.1f, \"gui_cpu_ms\": %.1f, "
            "\"slowest_event\": \"%s/%d\", \"heatmaps_replot_ms\": %.1f, "
            "\"plots_replot_ms\": %.1f}\n",
            how.toUtf8().constData(), total_ms, w.lastJobMs(), decode_ms, w.lastDecodeCpuMs(),
            meter.maxGapMs(), meter.quantileMs(0.99), meter.ticks(), app.maxEventCpuMs(),
            app.maxEventWallMs(), app.totalCpuMs(), app.slowestReceiver().toUtf8().constData(),
            app.slowestEventType(), w.heatmaps()->replotCostMs(), w.plots()->replotCostMs());
        std::fflush(stdout);
        if (--runs_left > 0) {
          QTimer::singleShot(300, &w, start);  // a pause, like a person between two clicks
        } else {
          w.close();
        }
      });
    });
  }
  return app.exec();
}
