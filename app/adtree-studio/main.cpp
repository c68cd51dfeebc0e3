// adtree-studio: the desktop face of ADT-Tree Studio. Opens the default model (see
// ui/window/default_model.h) or the directory given on the command line; `--run PROMPT` and its
// options script it (scripted_run.h). `--help` and `--version` need no display.
#include <QApplication>
#include <QCoreApplication>
#include <QFileInfo>

#include "scripted_run.h"
#include "studio_options.h"
#include "ui/window/main_window.h"
#include "util/threads.h"

int main(int argc, char** argv) {
  adtree::studio::StudioOptions options;
  QCommandLineParser cli;
  if (adtree::studio::asks_for_help_or_version(argc, argv)) {
    QCoreApplication app(argc, argv);  // no GUI platform: works without a display
    adtree::studio::set_application_identity();
    options.describe(cli);
    cli.process(app);  // prints the help or the version and exits
    return 0;
  }
  // Before Qt or libtorch start threads: one BLAS thread, the measured libtorch thread count.
  adtree::configure_threads();
  adtree::ui::TimedApplication app(argc, argv);
  adtree::studio::set_application_identity();
  QApplication::setApplicationDisplayName("ADT-Tree Studio");
  options.describe(cli);
  cli.process(app);

  adtree::ui::MainWindow w(cli.value(options.preview).toDouble());
  if (cli.isSet(options.gallery)) w.setGalleryDir(cli.value(options.gallery), /*remember=*/false);
  if (cli.isSet(options.size)) {
    const auto wh = cli.value(options.size).split('x');
    if (wh.size() == 2) w.resize(wh[0].toInt(), wh[1].toInt());
  }
  w.show();
  const QString arg = cli.positionalArguments().value(0);
  if (!arg.isEmpty() && QFileInfo(arg).isDir()) {
    w.openModel(arg);
  } else {
    w.openDefaultModel();
    // A picture or a run file, as a file manager's "Open with" passes it: opened once a model
    // is there (a picture's settings need the model's methods and vocabulary).
    if (!arg.isEmpty()) {
      QObject::connect(
          &w, &adtree::ui::MainWindow::modelReady, &w, [&w, arg] { w.openDropped(arg); },
          Qt::SingleShotConnection);
    }
  }
  if (!cli.isSet(options.run)) return app.exec();
  return adtree::studio::run_scripted(app, w, cli, options);
}
