// Loading (statistics files, the drafter log) and the shared look of every figure.
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QFont>
#include <QFontMetrics>

#include <cmath>
#include <map>

#include "app/adtree-figures/figures.h"
#include "ui/panels/method_names.h"
#include "ui/views/colormap.h"
#include "ui/views/qcp.h"
#include "util/error.h"

namespace adtree::figures {

const QColor kBlue(0x3b, 0x82, 0xf6), kOrange(0xf5, 0x9e, 0x0b), kGreen(0x10, 0xb9, 0x81),
    kPurple(0x8b, 0x5c, 0xf6), kGrey(0x6b, 0x72, 0x80);

QColor seriesColor(int i) {
  static const QColor colors[] = {kBlue, kOrange, kGreen, kPurple, QColor(0xef, 0x44, 0x44), kGrey};
  return colors[size_t(i) % (sizeof(colors) / sizeof(colors[0]))];
}

QString num(double v, int decimals) {
  return QString::number(v, 'f', decimals);
}

QString cellName(int64_t cell, int64_t w) {
  if (w <= 0) return QString::number(cell);
  return QStringLiteral("(%1, %2)").arg(cell / w).arg(cell % w);
}

namespace {

QByteArray readAll(const QString& path) {
  QFile f(path);
  if (!QFileInfo(path).isFile()) throw InputError(QStringLiteral("%1: no such file").arg(path));
  if (!f.open(QIODevice::ReadOnly)) {
    throw InputError(QStringLiteral("%1: cannot be read (%2)").arg(path, f.errorString()));
  }
  return f.readAll();
}

QFont baseFont(int pt = 10, bool bold = false) {
  QFont f(QStringLiteral("DejaVu Sans"), pt);
  f.setBold(bold);
  return f;
}

}  // namespace

// ---- runs ----

QString Run::temperatureText() const {
  if (!temperature) return QStringLiteral("T = ?");
  return QStringLiteral("T = %1").arg(*temperature, 0, 'g', 3);
}

QString Run::label() const {
  // The statistics' label says more than the key when it differs ("adt+lantern", "pathspec
  // (lossy)").
  const QString name = (methodLabel.isEmpty() || methodLabel == methodKey)
                           ? ui::method_label(methodKey)
                           : methodLabel;
  return QStringLiteral("%1 · %2").arg(name, temperatureText());
}

Run loadRun(const QString& path) {
  const QByteArray bytes = readAll(path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(bytes.constBegin(), bytes.constEnd());
  } catch (const std::exception& e) {
    throw InputError(
        QStringLiteral("%1: not a statistics file (not JSON: %2)").arg(path, e.what()));
  }
  Run r;
  r.path = path;
  try {
    r.stats = decode::RunStats::from_json(j);
    if (j.contains("tokens")) decode::validate_run(r.stats, decode::run_tokens_from_json(j));
  } catch (const std::exception& e) {
    throw InputError(QStringLiteral("%1: %2").arg(path, e.what()));
  }
  if (r.stats.steps.empty()) throw InputError(QStringLiteral("%1: the run has no steps").arg(path));
  r.methodLabel = QString::fromStdString(r.stats.method);
  r.methodKey = r.methodLabel;
  const auto& s = r.stats.settings;
  r.methodKey = QString::fromStdString(decode::to_string(s.method()));
  r.prompt = QString::fromStdString(s.prompt);
  r.temperature = s.request.sampling.temperature;
  const QFileInfo info(path);
  const QString png = info.dir().filePath(info.completeBaseName() + QStringLiteral(".png"));
  if (QFileInfo(png).isFile()) r.imagePath = png;
  return r;
}

// ---- the drafter log ----

DrafterLog loadDrafterLog(const QString& path) {
  const QByteArray bytes = readAll(path);
  DrafterLog log;
  log.path = path;
  std::map<int, double> loss;
  std::map<int, EvalPoint> evals;
  int lineNo = 0;
  for (const QByteArray& raw : bytes.split('\n')) {
    ++lineNo;
    const QByteArray line = raw.trimmed();
    if (line.isEmpty()) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line.constBegin(), line.constEnd());
    } catch (const std::exception&) {
      throw InputError(QStringLiteral("%1:%2: not a drafter training log (the line is not JSON)")
                           .arg(path)
                           .arg(lineNo));
    }
    if (!j.is_object() || !j.contains("step") || !j["step"].is_number()) continue;
    const int step = j["step"].get<int>();
    if (j.value("event", "") == "resume") {
      // The resumed run restarts from its checkpoint: what was logged after it is superseded.
      loss.erase(loss.upper_bound(step), loss.end());
      evals.erase(evals.upper_bound(step), evals.end());
      continue;
    }
    if (j.contains("loss") && j["loss"].is_number()) loss[step] = j["loss"].get<double>();
    if (j.contains("eval") && j["eval"].is_object()) {
      EvalPoint e;
      e.step = step;
      const auto& ev = j["eval"];
      auto read = [](const nlohmann::json& o, double& t1, double& t3, double& acc) {
        t1 = o.value("top1", std::nan(""));
        t3 = o.value("top3", std::nan(""));
        acc = o.value("accept_t1", std::nan(""));
      };
      if (ev.contains("validation") && ev["validation"].is_object()) {
        e.hasValidation = true;
        read(ev["validation"], e.valTop1, e.valTop3, e.valAccept);
      }
      if (ev.contains("self_samples_heldout") && ev["self_samples_heldout"].is_object()) {
        e.hasSelf = true;
        read(ev["self_samples_heldout"], e.selfTop1, e.selfTop3, e.selfAccept);
      }
      if (e.hasValidation || e.hasSelf) evals[step] = e;
    }
  }
  if (loss.empty() && evals.empty()) {
    throw InputError(
        QStringLiteral("%1: not a drafter training log (no lines with \"step\" and \"loss\" or "
                       "\"eval\")")
            .arg(path));
  }
  for (const auto& [s, v] : loss) log.loss.emplace_back(s, v);
  for (const auto& [s, e] : evals) log.evals.push_back(e);
  return log;
}

// ---- plot styling ----

void stylePlot(QCustomPlot* p, const QString& title, const QString& subtitle) {
  p->setBackground(Qt::white);
  p->setAntialiasedElements(QCP::aeAll);
  // Panels are rendered more than once at different sizes: cached (rotated) labels come back wrong.
  p->setPlottingHint(QCP::phCacheLabels, false);
  p->plotLayout()->insertRow(0);
  auto* te = new QCPTextElement(p, title, baseFont(11, true));
  te->setTextColor(Qt::black);
  te->setMargins(QMargins(4, 4, 4, subtitle.isEmpty() ? 2 : 0));
  p->plotLayout()->addElement(0, 0, te);
  if (!subtitle.isEmpty()) {
    p->plotLayout()->insertRow(1);
    auto* sub = new QCPTextElement(p, subtitle, baseFont(9));
    sub->setTextColor(QColor(0x37, 0x41, 0x51));
    sub->setMargins(QMargins(4, 0, 4, 2));
    p->plotLayout()->addElement(1, 0, sub);
  }
  p->plotLayout()->setRowSpacing(0);
  const QColor text(Qt::black), mid(0x9c, 0xa3, 0xaf);
  for (auto* ax : {p->xAxis, p->yAxis, p->xAxis2, p->yAxis2}) {
    ax->setLabelColor(text);
    ax->setTickLabelColor(text);
    ax->setLabelFont(baseFont(10));
    ax->setTickLabelFont(baseFont(9));
    ax->setBasePen(QPen(mid));
    ax->setTickPen(QPen(mid));
    ax->setSubTickPen(QPen(mid));
    ax->grid()->setPen(QPen(QColor(mid.red(), mid.green(), mid.blue(), 110), 1, Qt::DotLine));
    ax->setPadding(3);
    ax->setLabelPadding(4);
  }
  p->legend->setFont(baseFont(9));
  p->legend->setBrush(QColor(255, 255, 255, 220));
  p->legend->setBorderPen(QPen(QColor(0xd1, 0xd5, 0xdb)));
}

QCPColorMap* addCellMap(QCustomPlot* p, int h, int w, const std::function<double(int, int)>& value,
                        const QString& unit, double lo, double hi, bool integer) {
  auto* map = new QCPColorMap(p->xAxis, p->yAxis);
  map->setInterpolate(false);
  map->setTightBoundary(false);
  // Integer maps: one flat colour per value, n levels over [lo - 0.5, hi + 0.5] so the colour bar
  // (n equal bands) has its bands centred on the integer ticks. QCPColorGradient::colorize
  // truncates (x - lower) * (n - 1) / range to a level, which would give the largest value the
  // colour of the one below it; so integer v is stored at the x whose truncation is level v - lo.
  const int levels = integer ? std::max(2, int(std::lround(hi - lo)) + 1) : 0;
  auto stored = [&](double v) {
    if (!integer || std::isnan(v)) return v;
    return lo - 0.5 + (v - lo + 0.5) * double(levels) / double(levels - 1);
  };
  auto* data = map->data();
  data->setSize(w, h);
  data->setRange(QCPRange(0, w - 1),
                 QCPRange(0, h - 1));  // cell centres: key = column, value = row
  for (int r = 0; r < h; ++r) {
    for (int c = 0; c < w; ++c) data->setCell(c, r, stored(value(r, c)));
  }
  p->yAxis->setRangeReversed(true);  // row 0 at the top, like the image
  p->xAxis->setRange(-0.5, w - 0.5);
  p->yAxis->setRange(-0.5, h - 0.5);
  p->xAxis->setLabel(QStringLiteral("column"));
  p->yAxis->setLabel(QStringLiteral("row"));
  for (auto* ax : {p->xAxis, p->yAxis}) {
    ax->grid()->setVisible(false);
    QSharedPointer<QCPAxisTickerFixed> t(new QCPAxisTickerFixed);
    const int n = ax == p->xAxis ? w : h;
    t->setTickStep(n <= 16 ? 2 : std::ceil(n / 8.0));
    t->setScaleStrategy(QCPAxisTickerFixed::ssNone);
    ax->setTicker(t);
    ax->setSubTicks(false);
  }

  auto* scale = new QCPColorScale(p);
  p->plotLayout()->addElement(p->plotLayout()->rowCount() - 1, 1, scale);
  scale->setType(QCPAxis::atRight);
  scale->setBarWidth(14);
  scale->axis()->setLabel(unit);
  scale->axis()->setLabelFont(baseFont(9));
  scale->axis()->setTickLabelFont(baseFont(9));
  scale->axis()->setTickLabelColor(Qt::black);
  scale->axis()->setLabelColor(Qt::black);
  scale->axis()->setBasePen(QPen(QColor(0x9c, 0xa3, 0xaf)));
  scale->axis()->setTickPen(QPen(QColor(0x9c, 0xa3, 0xaf)));
  scale->axis()->setSubTickPen(Qt::NoPen);
  map->setColorScale(scale);
  // The colour bar exactly as tall as the map.
  auto* group = new QCPMarginGroup(p);
  p->axisRect()->setMarginGroup(QCP::msTop | QCP::msBottom, group);
  scale->setMarginGroup(QCP::msTop | QCP::msBottom, group);
  auto g = ui::viridisGradient();
  if (integer) {
    g.setLevelCount(levels);
    map->setGradient(g);
    map->setDataRange(QCPRange(lo - 0.5, hi + 0.5));
    QSharedPointer<QCPAxisTickerFixed> t(new QCPAxisTickerFixed);
    const double spanV = hi - lo;
    t->setTickStep(spanV <= 10 ? 1 : std::ceil(spanV / 8));
    t->setScaleStrategy(QCPAxisTickerFixed::ssNone);
    scale->axis()->setTicker(t);
  } else {
    map->setGradient(g);
    map->setDataRange(QCPRange(lo, hi));
  }
  return map;
}

QPixmap renderPanel(QCustomPlot* p, QSize size, bool squareCells) {
  QCPColorMap* map = nullptr;
  for (int i = 0; i < p->plottableCount() && !map; ++i)
    map = qobject_cast<QCPColorMap*>(p->plottable(i));
  if (!squareCells || !map) return p->toPixmap(size.width(), size.height());

  // The title rows come out of the plot and are drawn over the panel's full width: in the plot
  // they would sit in the map's column only and keep it from shrinking to the grid's aspect.
  struct Line {
    QString text;
    QFont font;
    QColor color;
  };
  std::vector<Line> lines;
  auto* layout = p->plotLayout();
  for (int row = 0; row < layout->rowCount(); ++row) {
    auto* t = qobject_cast<QCPTextElement*>(layout->element(row, 0));
    if (!t) continue;
    lines.push_back({t->text(), t->font(), t->textColor()});
    layout->remove(t);
  }
  layout->simplify();
  int headerH = 4;
  for (const Line& l : lines) {
    headerH += QFontMetrics(l.font)
                   .boundingRect(QRect(0, 0, size.width(), 1000), Qt::AlignHCenter, l.text)
                   .height() +
               2;
  }

  // Lay out at the full size, then shrink the plot by what the grid's aspect leaves over, so the
  // cells come out square and the colour scale stays beside the map.
  const double gw = map->data()->keySize(), gh = map->data()->valueSize();
  QSize s(size.width(), size.height() - headerH);
  for (int pass = 0; pass < 3; ++pass) {
    (void)p->toPixmap(s.width(), s.height());
    const QRect inner = p->axisRect()->rect();
    if (inner.width() <= 0 || inner.height() <= 0) break;
    const double w = inner.width(), h = inner.height();
    const int dw = int(std::lround(w - h * gw / gh));
    const int dh = int(std::lround(h - w * gh / gw));
    if (std::abs(dw) <= 1 || std::abs(dh) <= 1) break;
    if (dw > 0) {
      s.setWidth(s.width() - dw);
    } else {
      s.setHeight(s.height() - dh);
    }
  }
  const QPixmap plot = p->toPixmap(s.width(), s.height());
  QPixmap out(size);
  out.fill(Qt::white);
  QPainter painter(&out);
  painter.setRenderHint(QPainter::TextAntialiasing);
  int y = 4;
  for (const Line& l : lines) {
    painter.setFont(l.font);
    painter.setPen(l.color);
    const QRect r = QFontMetrics(l.font).boundingRect(QRect(0, 0, size.width(), 1000),
                                                      Qt::AlignHCenter, l.text);
    painter.drawText(QRect(0, y, size.width(), r.height()), Qt::AlignHCenter, l.text);
    y += r.height() + 2;
  }
  painter.drawPixmap((size.width() - plot.width()) / 2,
                     headerH + (size.height() - headerH - plot.height()) / 2, plot);
  return out;
}

// ---- the canvas ----

Canvas::Canvas(const QString& title, const QString& note)
    : img_(kWidth, kHeight, QImage::Format_RGB32) {
  img_.fill(Qt::white);
  QPainter painter(&img_);
  painter.setRenderHint(QPainter::TextAntialiasing);
  painter.setPen(Qt::black);
  painter.setFont(baseFont(15, true));
  const int titleH = QFontMetrics(baseFont(15, true)).height() + 14;
  painter.drawText(QRect(10, 6, kWidth - 20, titleH - 6), Qt::AlignCenter, title);
  top_ = titleH;
  if (!note.isEmpty()) {
    painter.setFont(baseFont(10));
    painter.setPen(QColor(0x37, 0x41, 0x51));
    const int noteH = QFontMetrics(baseFont(10)).height() + 4;
    painter.drawText(QRect(10, top_ - 4, kWidth - 20, noteH), Qt::AlignCenter, note);
    top_ += noteH;
  }
  top_ += 2;
}

QRect Canvas::cell(int row, int col, int rows, int cols) const {
  return span(row, rows, col, col, cols);
}

QRect Canvas::span(int row, int rows, int colFrom, int colTo, int cols) const {
  const int margin = 8;
  const int w = (kWidth - 2 * margin) / cols, h = (kHeight - top_ - margin) / rows;
  return QRect(margin + colFrom * w, top_ + row * h, (colTo - colFrom + 1) * w, h);
}

void Canvas::place(const QRect& r, const QPixmap& px) {
  QPainter painter(&img_);
  // Centred: square-cell panels come back narrower (or shorter) than their rectangle.
  painter.drawPixmap(r.x() + (r.width() - px.width()) / 2, r.y() + (r.height() - px.height()) / 2,
                     px);
}

void Canvas::text(const QRect& r, const QString& s, int flags, int pt, bool bold) {
  QPainter painter(&img_);
  painter.setRenderHint(QPainter::TextAntialiasing);
  painter.setPen(Qt::black);
  painter.setFont(baseFont(pt, bold));
  painter.drawText(r, flags, s);
}

void Canvas::save(const QString& path) {
  if (!img_.save(path, "PNG")) throw InputError(QStringLiteral("%1: cannot be written").arg(path));
}

}  // namespace adtree::figures
