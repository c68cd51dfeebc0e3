// adtree-figures: the paper's Figures 1-5 redrawn from this project's own runs (statistics files
// written by `adtree generate --stats F --trace`) and the drafter trainer's metrics.jsonl. One PNG
// per figure; each figure is one function in its own file, the shared loading and plot styling
// live in common.cpp. Plots are QCustomPlot panels rendered off screen and composed on a white
// canvas with the figure's title.
#pragma once
#include <QColor>
#include <QImage>
#include <QPainter>
#include <QPixmap>
#include <QRect>
#include <QString>
#include <QStringList>

#include <functional>
#include <optional>
#include <stdexcept>
#include <vector>

#include "decode/stats/stats.h"

class QCustomPlot;
class QCPColorMap;
class QCPColorScale;

namespace adtree::figures {

// Bad input: the message is one complete line naming the file.
class InputError : public std::runtime_error {
 public:
  explicit InputError(const QString& what) : std::runtime_error(what.toStdString()) {}
};

// One statistics file.
struct Run {
  QString path;
  QString methodKey;                  // settings.method ("adt", "dynamic", ...)
  QString methodLabel;                // the statistics' own label ("adt", "adt+lantern", ...)
  std::optional<double> temperature;  // settings.sampling.temperature
  QString prompt;
  decode::RunStats stats;  // with traces when the run was made with --trace
  QString imagePath;       // the PNG beside the statistics file (same name, .png), if any

  bool hasTraces() const { return !stats.traces.empty(); }
  QString temperatureText() const;  // "T = 1", "T = 0", "T = ?"
  QString label() const;            // "ADT-Tree · T = 1"
};

// Reads and checks one statistics file; throws InputError.
Run loadRun(const QString& path);

// The drafter trainer's metrics.jsonl: the loss curve and the periodic evaluations. A resumed run
// ("event": "resume" at step S) replaces what the first attempt logged after S.
struct EvalPoint {
  int step = 0;
  bool hasValidation = false, hasSelf = false;
  double valTop1 = 0, valTop3 = 0, valAccept = 0;
  double selfTop1 = 0, selfTop3 = 0, selfAccept = 0;
};
struct DrafterLog {
  QString path;
  std::vector<std::pair<int, double>> loss;  // (step, loss), by step
  std::vector<EvalPoint> evals;              // by step
};
DrafterLog loadDrafterLog(const QString& path);  // throws InputError

// ---- drawing ----
constexpr int kWidth = 1200, kHeight = 800;
extern const QColor kBlue, kOrange, kGreen, kPurple, kGrey;
QColor seriesColor(int i);  // blue, orange, green, purple, ...

// A white plot with the project's axis look (histogram_panel.cpp), a bold title and an optional
// smaller subtitle line under it.
void stylePlot(QCustomPlot* p, const QString& title, const QString& subtitle = QString());
// A viridis cell map of an h x w grid (row 0 at the top), its colour scale on the right labelled
// `unit`; integer maps get one flat colour per value. NaN cells are left white.
QCPColorMap* addCellMap(QCustomPlot* p, int h, int w, const std::function<double(int, int)>& value,
                        const QString& unit, double lo, double hi, bool integer);
// Renders a panel at `size`. With square cells (maps) the plot is narrowed to the grid's aspect and
// centred, under its title lines drawn across the full width.
QPixmap renderPanel(QCustomPlot* p, QSize size, bool squareCells = false);

// The figure canvas: white, a title (and a note line) at the top, panels in a grid below.
class Canvas {
 public:
  Canvas(const QString& title, const QString& note = QString());
  QRect cell(int row, int col, int rows, int cols) const;  // a panel's rectangle
  QRect span(int row, int rows, int colFrom, int colTo, int cols) const;
  void place(const QRect& r, const QPixmap& px);
  void text(const QRect& r, const QString& s, int flags = Qt::AlignCenter, int pt = 10,
            bool bold = false);
  // Writes the PNG; throws InputError (naming the file) when it cannot.
  void save(const QString& path);

 private:
  QImage img_;
  int top_ = 0;
};

// ---- the figures: each writes `path` and returns true, or returns false with why in `skip` ----
bool figure1(const std::optional<DrafterLog>& log, const QString& path, QString* skip);
bool figure2(const std::vector<Run>& runs, const QString& path, QString* skip);
bool figure3(const std::vector<Run>& runs, const QString& path, QString* skip);
bool figure4(const std::vector<Run>& runs, const QString& path, QString* skip);
bool figure5(const std::vector<Run>& runs, const QString& path, QString* skip);

// Small helpers.
QString num(double v, int decimals = 2);
QString cellName(int64_t cell, int64_t w);  // "(row, col)"

}  // namespace adtree::figures
