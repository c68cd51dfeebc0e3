// adtree-figures: regenerates the paper's Figures 1-5 from this project's own runs.
//
//   adtree-figures --out DIR [--drafter-log FILE.jsonl] [--only 1,2,3,4,5] STATS.json [STATS.json
//   ...]
//
// Each STATS.json is what `adtree generate ... --stats F --trace` writes (docs/figures/README.md
// has the commands behind the shipped figures). Prints one line per PNG written; a figure that
// lacks its input (no drafter log, no traces) is skipped with a message unless --only asked for it.
// Bad input ends with a one-line message naming the file and status 1. No display is needed:
// without a QT_QPA_PLATFORM the offscreen platform is used.
#include <QApplication>
#include <QDir>
#include <QFileInfo>
#include <QStringList>

#include <cstdio>
#include <cstdlib>
#include <set>

#include "app/adtree-figures/figures.h"

namespace adtree::figures {
namespace {

const char* kUsage =
    "usage: adtree-figures --out DIR [--drafter-log FILE.jsonl] [--only LIST] STATS.json "
    "[STATS.json ...]\n"
    "\n"
    "Redraws the ADT-Tree paper's Figures 1-5 from this project's runs, one PNG each (1200x800):\n"
    "  fig1-drafter-accuracy.png        draft-head loss and accuracy during training "
    "(--drafter-log)\n"
    "  fig2-depth-matrix.png            acceptance-depth matrix of up to 4 runs\n"
    "  fig3-acceptance-histograms.png   acceptance lengths and top-k location, runs pooled by T\n"
    "  fig4-top1-map.png                target top-1 map beside the acceptance-length map, up to 2 "
    "runs\n"
    "  fig5-region-distributions.png    simple vs complex cells' target distributions (needs "
    "--trace)\n"
    "\n"
    "STATS.json: written by `adtree generate ... --stats STATS.json --trace` (a PNG of the same "
    "name\n"
    "next to it is shown in Fig. 4).\n"
    "  --out DIR              where the PNGs go (created if missing)\n"
    "  --drafter-log FILE     the drafter trainer's metrics.jsonl, for Fig. 1\n"
    "  --only LIST            only these figures, e.g. 2,5; a listed figure that cannot be drawn "
    "is an error\n"
    "  -h, --help             this text\n";

struct Spec {
  int number;
  const char* file;
};
const Spec kFigures[] = {{1, "fig1-drafter-accuracy.png"},
                         {2, "fig2-depth-matrix.png"},
                         {3, "fig3-acceptance-histograms.png"},
                         {4, "fig4-top1-map.png"},
                         {5, "fig5-region-distributions.png"}};

[[noreturn]] void fail(const QString& message) {
  std::fprintf(stderr, "adtree-figures: %s\n", message.toLocal8Bit().constData());
  std::exit(1);
}

int run(const QStringList& args) {
  QString out, logPath;
  QStringList statsFiles;
  std::set<int> only;
  for (int i = 1; i < args.size(); ++i) {
    const QString& a = args[i];
    auto value = [&](const QString& name) {
      if (i + 1 >= args.size()) fail(QStringLiteral("%1 needs a value (see --help)").arg(name));
      return args[++i];
    };
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--out") {
      out = value(a);
    } else if (a == "--drafter-log") {
      logPath = value(a);
    } else if (a == "--only") {
      for (const QString& part : value(a).split(',', Qt::SkipEmptyParts)) {
        QString t = part.trimmed().toLower();
        if (t.startsWith("fig")) t = t.mid(3);
        bool ok = false;
        const int n = t.toInt(&ok);
        if (!ok || n < 1 || n > 5)
          fail(QStringLiteral("--only: '%1' is not a figure number 1-5").arg(part));
        only.insert(n);
      }
    } else if (a.startsWith("-") && a != "-") {
      fail(QStringLiteral("unknown option %1 (see --help)").arg(a));
    } else {
      statsFiles << a;
    }
  }
  if (out.isEmpty()) fail(QStringLiteral("--out DIR is required (see --help)"));
  if (statsFiles.isEmpty() && logPath.isEmpty()) {
    fail(QStringLiteral("no input: give STATS.json files and/or --drafter-log (see --help)"));
  }

  std::optional<DrafterLog> log;
  std::vector<Run> runs;
  try {
    if (!logPath.isEmpty()) log = loadDrafterLog(logPath);
    for (const QString& f : statsFiles) runs.push_back(loadRun(f));
  } catch (const InputError& e) {
    fail(QString::fromStdString(e.what()));
  }
  if (!QDir().mkpath(out)) fail(QStringLiteral("%1: cannot create the output folder").arg(out));

  using Fn = bool (*)(const std::vector<Run>&, const QString&, QString*);
  const Fn fns[] = {nullptr, figure2, figure3, figure4, figure5};
  for (const Spec& s : kFigures) {
    if (!only.empty() && !only.count(s.number)) continue;
    const QString path = QDir(out).filePath(QString::fromLatin1(s.file));
    QString skip;
    bool written = false;
    try {
      written = s.number == 1 ? figure1(log, path, &skip) : fns[s.number - 1](runs, path, &skip);
    } catch (const InputError& e) {
      fail(QString::fromStdString(e.what()));
    }
    if (written) {
      std::printf("wrote %s\n", path.toLocal8Bit().constData());
      std::fflush(stdout);
    } else if (!only.empty()) {
      fail(QStringLiteral("Fig. %1 cannot be drawn: %2").arg(s.number).arg(skip));
    } else {
      std::fprintf(stderr, "adtree-figures: skipped %s: %s\n", s.file,
                   skip.toLocal8Bit().constData());
    }
  }
  return 0;
}

}  // namespace
}  // namespace adtree::figures

namespace {
// Qt's own notes go to stderr as usual, except the one every run without a session prints
// (XDG_RUNTIME_DIR unset): the figures never use that directory, and errors stay one line.
void quietHandler(QtMsgType type, const QMessageLogContext& ctx, const QString& msg) {
  if (type == QtWarningMsg && msg.startsWith(QLatin1String("QStandardPaths: XDG_RUNTIME_DIR")))
    return;
  std::fprintf(stderr, "%s\n", qFormatLogMessage(type, ctx, msg).toLocal8Bit().constData());
}
}  // namespace

int main(int argc, char** argv) {
  qInstallMessageHandler(quietHandler);
  // Nothing is ever shown: without a platform chosen by the user, draw off screen (no display
  // needed).
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  QApplication::setApplicationName("adtree-figures");
  return adtree::figures::run(QApplication::arguments());
}
