// adtree-studio: the desktop face of ADT-Tree Studio. Opens the default model (see
// ui/default_model.h) or the directory given on the command line.
//
// `--benchmark PROMPT` runs one generation in the real window, prints how long the GUI thread was
// ever blocked and the end-to-end time as JSON, and exits (docs/GUI.md, "Measurements").
#include <QApplication>
#include <QCheckBox>
#include <QCommandLineParser>
#include <QComboBox>
#include <QElapsedTimer>
#include <QPushButton>
#include <QSpinBox>
#include <QTimer>
#include <cstdio>

#include "ui/heatmap_panel.h"
#include "ui/main_window.h"
#include "ui/plot_panel.h"
#include "ui/prompt_edit.h"
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
  cli.setApplicationDescription("Image generation with visual AR models and ADT-Tree speculative decoding.");
  cli.addHelpOption();
  cli.addVersionOption();
  cli.addPositionalArgument("model", "model directory to open (default: $ADTREE_MODEL, the shipped "
                                     "model, or a random tiny one)");
  QCommandLineOption bench("benchmark", "run one generation of PROMPT, print timings as JSON, quit",
                           "PROMPT");
  QCommandLineOption method("method", "decoding method for --benchmark (ar, adt, ...)", "NAME", "ar");
  QCommandLineOption seed("seed", "seed for --benchmark", "N", "1");
  QCommandLineOption size("size", "window size WxH (screenshots)", "WxH");
  cli.addOptions({bench, method, seed, size});
  cli.process(app);

  adtree::ui::MainWindow w;
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

  if (cli.isSet(bench)) {
    auto* meter = new adtree::ui::StallMeter(&app);
    auto* clock = new QElapsedTimer;
    QObject::connect(&w, &adtree::ui::MainWindow::modelReady, &w, [&] {
      w.promptEdit()->setText(cli.value(bench));
      w.methodBox()->setCurrentIndex(w.methodBox()->findData(cli.value(method)));
      w.randomSeedBox()->setChecked(false);
      w.seedBox()->setValue(cli.value(seed).toInt());
      meter->start();
      app.startTiming();
      clock->start();
      w.generate();
    }, Qt::SingleShotConnection);
    QObject::connect(&w, &adtree::ui::MainWindow::generationEnded, &w, [&](const QString& how) {
      // Let the final repaint happen before the clock stops: end-to-end means "image on screen".
      QTimer::singleShot(0, &w, [&, how] {
        const double total_ms = double(clock->nsecsElapsed()) / 1e6;
        meter->stop();
        app.stopTiming();
        std::printf("{\"result\": \"%s\", \"gui_end_to_end_ms\": %.1f, \"max_gui_stall_ms\": %.1f, "
                    "\"p99_tick_gap_ms\": %.1f, \"ticks\": %d, \"engine_job_ms\": %.1f, "
                    "\"heatmaps_replot_ms\": %.1f, \"plots_replot_ms\": %.1f, \"max_event_cpu_ms\": %.1f, "
                    "\"max_event_wall_ms\": %.1f, \"gui_cpu_ms\": %.1f, \"slowest\": \"%s/%d\"}\n",
                    how.toUtf8().constData(), total_ms, meter->maxGapMs(), meter->quantileMs(0.99),
                    meter->ticks(), w.lastJobMs(), w.heatmaps()->replotCostMs(),
                    w.plots()->replotCostMs(), app.maxEventCpuMs(), app.maxEventWallMs(),
                    app.totalCpuMs(), app.slowestReceiver().toUtf8().constData(),
                    app.slowestEventType());
        std::fflush(stdout);
        w.close();
      });
    });
    QObject::connect(&w, &adtree::ui::MainWindow::modelLoadFailed, &w, [&] {
      std::fprintf(stderr, "adtree-studio: the model could not be loaded\n");
      QCoreApplication::exit(1);
    });
  }
  return app.exec();
}
