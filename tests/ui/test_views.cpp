// The step views on hand-made traces, on the offscreen platform: the draft tree view (layout,
// colours by outcome, caption, tooltips, zoom, clicks, PNG / SVG export), the token distribution
// view (bars, candidates, log scale, headline) and the Figure 3 histograms (shares, run switching).
// No model and no engine: each test states the trace and checks what the widget shows.
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QGraphicsPathItem>
#include <QGraphicsScene>
#include <QImage>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QWheelEvent>

#include <limits>

#include "decode/stats/trace.h"
#include "ui/panels/heatmap_panel.h"
#include "ui/panels/histogram_panel.h"
#include "ui/runs/run_record.h"
#include "ui/views/distribution_view.h"
#include "ui/views/image_view.h"
#include "ui/views/qcp.h"
#include "ui/views/tree_view.h"

using adtree::decode::CellTrace;
using adtree::decode::StepTrace;
using adtree::decode::TraceNode;
using adtree::ui::DistributionView;
using adtree::ui::HistogramPanel;
using adtree::ui::HistogramRun;
using adtree::ui::TreeView;

namespace {

constexpr int kGridW = 8;

TraceNode node(int64_t token, int64_t parent, int depth, int rank, float q, float p,
               bool accepted) {
  TraceNode n;
  n.token = token;
  n.parent = parent;
  n.depth = depth;
  n.rank = rank;
  n.q = q;
  n.p = p;
  n.score = depth == 0 ? 0.f : -0.5f * float(depth + rank);
  n.accepted = accepted;
  return n;
}

// Root 100 with children 101 (accepted), 102, 103; 101's children 201 (accepted) and 202; the
// target then sampled bonus 300. The root sits at cell 9 = (1, 1): the step commits cells 10-12.
StepTrace smallTree() {
  StepTrace t;
  t.step = 7;
  t.nodes = {node(100, -1, 0, 0, 1.f, 1.f, true),      node(101, 0, 1, 0, 0.5f, 0.75f, true),
             node(102, 0, 1, 1, 0.25f, 0.125f, false), node(103, 0, 1, 2, 0.125f, 0.03125f, false),
             node(201, 1, 2, 0, 0.625f, 0.5f, true),   node(202, 1, 2, 1, 0.25f, 0.0625f, false)};
  t.path = {1, 4};
  t.has_bonus = true;
  t.bonus = 300;
  for (int64_t i = 0; i < 3; ++i) {
    CellTrace c;
    c.cell = 10 + i;
    c.token = i == 0 ? 101 : i == 1 ? 201 : 300;
    c.drafted = i < 2;
    t.cells.push_back(c);
  }
  return t;
}

StepTrace adtTree(double alpha) {
  StepTrace t = smallTree();
  t.has_adt = true;
  t.adt.d = 4;
  t.adt.k = 6;
  t.adt.origin = "left neighbour (1, 0)";
  t.adt.accepted = int64_t(alpha * 4);
  t.adt.alpha = alpha;
  t.adt.beta = 0.5;
  t.adt.next_d = alpha >= 0.5 ? 6 : 3;
  t.adt.next_k = alpha >= 0.5 ? 4 : 8;
  t.adt.rule = alpha >= 0.5 ? "accepted deep: grow d, shrink k" : "shallow: shrink d, widen k";
  return t;
}

// The drawn box whose tooltip starts with `start` (tokens are unique in these trees).
QGraphicsPathItem* boxFor(TreeView& v, const QString& start) {
  for (QGraphicsItem* it : v.scene()->items()) {
    auto* box = dynamic_cast<QGraphicsPathItem*>(it);
    if (box && box->toolTip().startsWith(start)) return box;
  }
  return nullptr;
}

// Sixteen tokens 500..515; the first has probability `top1`, the rest share what is left, falling.
CellTrace cell(float top1, int64_t token, bool drafted, int32_t rank) {
  CellTrace c;
  c.cell = 10;
  c.token = token;
  c.drafted = drafted;
  c.top1 = top1;
  c.target_rank = rank;
  float left = 1.f - top1;
  for (int i = 0; i < 16; ++i) {
    c.top_tokens.push_back(500 + i);
    const float p = i == 0 ? top1 : std::min(top1, left * 0.4f);
    if (i > 0) left -= p;
    c.top_probs.push_back(p);
  }
  c.cand_tokens = {500, 503, 999};  // 999: not in the target's top 16
  c.cand_q = {0.7f, 0.2f, 0.1f};
  c.cand_p = {top1, c.top_probs[3], 0.0001f};
  return c;
}

double sum(const QMap<int, double>& m) {
  double s = 0;
  for (double v : m) s += v;
  return s;
}

}  // namespace

class ViewsTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  // Integer maps give every value its own colour (a QCustomPlot level-rounding trap once gave
  // the two largest depths one colour).
  void heatmapIntegerValuesGetDistinctColours() {
    adtree::ui::RunState run;
    adtree::engine::JobStarted st;
    st.job = 1;
    st.grid_h = 1;
    st.grid_w = 9;
    adtree::ui::MapRanges ranges;
    ranges.depth_max = 8;
    run.reset(st, ranges);
    adtree::engine::JobStep step;
    step.job = 1;
    step.record.cum_tokens = 9;
    for (int j = 0; j <= 8; ++j) {
      adtree::decode::CellStats c;
      c.depth = j;
      c.accept_len = 1;
      step.cells.push_back(c);
      step.tokens.push_back(j);
    }
    run.addSteps({step});
    adtree::ui::HeatmapPanel panel;
    panel.refresh(run);
    auto* map = qobject_cast<QCPColorMap*>(panel.plot(adtree::ui::RunState::Depth)->plottable(1));
    QVERIFY(map);
    QSet<QRgb> colours;
    for (int j = 0; j <= 8; ++j) {
      const double x = map->data()->cell(j, 0);
      colours.insert(map->gradient().color(x, map->dataRange()));
    }
    QCOMPARE(colours.size(), 9);
  }

  void treeCountsAndColours() {
    TreeView v;
    v.setTrace(smallTree(), kGridW);
    QCOMPARE(v.nodeItems(), 6);
    QCOMPARE(v.acceptedItems(), 3);  // root + the path of 2
    QCOMPARE(v.rejectedItems(), 3);
    QVERIFY(v.hasBonusItem());
    auto* accepted = boxFor(v, "token 201,");
    auto* rejected = boxFor(v, "token 202,");
    auto* bonus = boxFor(v, "bonus token 300");
    QVERIFY(accepted && rejected && bonus);
    // Accepted: a strong green; rejected: light grey; bonus: orange. Three different fills.
    const QColor a = accepted->brush().color(), r = rejected->brush().color(),
                 b = bonus->brush().color();
    QVERIFY(a.green() > a.red() + 60 && a.green() > a.blue() + 60);
    QVERIFY(r.red() > 200 && std::abs(r.red() - r.green()) < 10 &&
            std::abs(r.green() - r.blue()) < 10);
    QVERIFY(b.red() > 200 && b.green() < 150 && b.blue() < 60);
    // The accepted path's edges are thick, the rejected ones thin.
    double thick = 0, thin = 100;
    for (QGraphicsItem* it : v.scene()->items()) {
      if (auto* line = dynamic_cast<QGraphicsLineItem*>(it)) {
        thick = std::max(thick, line->pen().widthF());
        thin = std::min(thin, line->pen().widthF());
      }
    }
    QVERIFY(thick >= 3);
    QVERIFY(thin <= 1);
  }

  void treeLayout() {
    TreeView v;
    v.setTrace(smallTree(), kGridW);
    auto pos = [&](const QString& s) {
      auto* b = boxFor(v, s);
      return b ? b->pos() : QPointF(-1e9, -1e9);
    };
    const QPointF root = pos("root"), c1 = pos("token 101,"), c2 = pos("token 102,"),
                  c3 = pos("token 103,"), g1 = pos("token 201,"), g2 = pos("token 202,"),
                  bonus = pos("bonus token 300");
    // Depth downwards, one row per depth.
    QVERIFY(root.y() < c1.y());
    QCOMPARE(c1.y(), c2.y());
    QCOMPARE(c2.y(), c3.y());
    QVERIFY(c1.y() < g1.y());
    QCOMPARE(g1.y(), g2.y());
    QVERIFY(bonus.y() > g1.y());  // after the last accepted node
    // Siblings by rank left to right, parents centred on their children.
    QVERIFY(c1.x() < c2.x() && c2.x() < c3.x());
    QVERIFY(g1.x() < g2.x());
    QCOMPARE(root.x(), (c1.x() + c3.x()) / 2);
    QCOMPARE(c1.x(), (g1.x() + g2.x()) / 2);
    // The bonus is the last accepted node's only child: in its column.
    QCOMPARE(bonus.x(), g1.x());
  }

  // Free guesses (the code above, a Jacobi guess) are told apart from the head's drafts: a dashed
  // blue border over the same accepted / rejected fill, their own words in the tooltip, and the
  // caption counts both.
  void treeFreeGuessesAreDashed() {
    TreeView v;
    StepTrace t = smallTree();
    t.nodes[5].guess = true;  // 202, rejected
    v.setTrace(t, kGridW);
    auto* guess = boxFor(v, "token 202,");
    auto* head = boxFor(v, "token 201,");
    QVERIFY(guess && head);
    QCOMPARE(guess->pen().style(), Qt::DashLine);
    QCOMPARE(head->pen().style(), Qt::SolidLine);
    QVERIFY(guess->pen().color().blue() > guess->pen().color().red() + 100);
    QVERIFY2(v.nodeToolTip(5).contains("a free guess"), qPrintable(v.nodeToolTip(5)));
    QVERIFY2(v.nodeToolTip(4).contains("drafted by the head"), qPrintable(v.nodeToolTip(4)));
    QVERIFY2(v.caption().contains("drafted by the head: 4, free guesses: 1"),
             qPrintable(v.caption()));
  }

  void treeCaptionAndTooltips() {
    TreeView v;
    StepTrace t = smallTree();
    t.nodes_dropped = 5;
    v.setTrace(t, kGridW);
    const QString cap = v.caption();
    QVERIFY2(cap.contains("Step 7"), qPrintable(cap));
    QVERIFY2(cap.contains("6 nodes drawn (+ 5 dropped)"), qPrintable(cap));
    QVERIFY2(cap.contains("accepted length 2"), qPrintable(cap));
    QVERIFY2(cap.contains("bonus 300"), qPrintable(cap));
    QVERIFY2(cap.contains("3 tokens committed"), qPrintable(cap));
    QVERIFY2(cap.contains("root at cell (1, 1)"), qPrintable(cap));
    QVERIFY2(!cap.contains("ADT"), qPrintable(cap));

    const QString rej = v.nodeToolTip(5);  // 202: q 0.25, p 0.0625
    QVERIFY2(rej.contains("token 202"), qPrintable(rej));
    QVERIFY2(rej.contains("cell (1, 3)"), qPrintable(rej));  // root 9 + depth 2 = 11
    QVERIFY2(rej.contains("depth 2, rank 1"), qPrintable(rej));
    QVERIFY2(rej.contains("draft q = 0.25"), qPrintable(rej));
    QVERIFY2(rej.contains("target p = 0.0625"), qPrintable(rej));
    QVERIFY2(rej.contains("cumulative draft score = -1.5"), qPrintable(rej));
    QVERIFY2(rej.contains("rejected"), qPrintable(rej));
    const QString acc = v.nodeToolTip(1);  // 101: q 0.5, p 0.75
    QVERIFY2(acc.contains("draft q = 0.5\n"), qPrintable(acc));
    QVERIFY2(acc.contains("target p = 0.75"), qPrintable(acc));
    QVERIFY2(acc.contains("accepted"), qPrintable(acc));
    QVERIFY2(v.nodeToolTip(0).contains("root"), qPrintable(v.nodeToolTip(0)));
    QVERIFY(v.nodeToolTip(6).isEmpty());
    QVERIFY(v.nodeToolTip(-1).isEmpty());

    // Without cells the root's cell is unknown, and said so.
    t.cells.clear();
    v.setTrace(t, kGridW);
    QVERIFY(v.nodeToolTip(1).contains("cell unknown"));
    QVERIFY(v.caption().contains("3 tokens committed"));  // path + bonus
  }

  void treeAdtCaption() {
    TreeView v;
    v.setTrace(adtTree(0.75), kGridW);
    QVERIFY2(v.caption().contains("ADT: (d, k) = (4, 6) from left neighbour (1, 0); alpha = a/d = "
                                  "0.75 >= beta 0.50 -> accepted deep: grow d, shrink k; next "
                                  "(d, k) = (6, 4)"),
             qPrintable(v.caption()));
    v.setTrace(adtTree(0.25), kGridW);
    QVERIFY2(v.caption().contains("alpha = a/d = 0.25 < beta 0.50 -> shallow: shrink d, widen k; "
                                  "next (d, k) = (3, 8)"),
             qPrintable(v.caption()));
  }

  void treeArStepAndClear() {
    TreeView v;
    v.setTrace(smallTree(), kGridW);
    StepTrace ar;
    ar.step = 3;
    CellTrace c;
    c.cell = 4;
    c.token = 42;
    ar.cells.push_back(c);
    v.setTrace(ar, kGridW);
    QCOMPARE(v.nodeItems(), 0);
    QCOMPARE(v.acceptedItems(), 0);
    QVERIFY(!v.hasBonusItem());
    QVERIFY2(v.caption().contains("AR step: no draft tree; the target sampled token 42"),
             qPrintable(v.caption()));
    QVERIFY(v.nodeToolTip(0).isEmpty());
    v.clear();
    QCOMPARE(v.nodeItems(), 0);
    QVERIFY(v.caption().contains("No step"));
  }

  void treeMalformedParentsDoNotHang() {
    StepTrace t = smallTree();
    t.nodes[2].parent = 3;  // 2 <-> 3: a cycle off the root
    t.nodes[3].parent = 2;
    t.nodes[5].parent = 77;  // outside the trace
    TreeView v;
    v.setTrace(t, kGridW);
    QCOMPARE(v.nodeItems(), 3);  // root, 101, 201
    QVERIFY(v.nodeToolTip(2).isEmpty());
  }

  void treeFitZoomAndClick() {
    TreeView v;
    v.resize(1600, 1200);
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    v.setTrace(smallTree(), kGridW);
    // A small tree in a big view: fitted, but never blown up past 1.5x.
    QVERIFY2(v.transform().m11() <= 1.5 + 1e-9, qPrintable(QString::number(v.transform().m11())));
    QVERIFY(v.transform().m11() > 1.0);
    v.resize(220, 160);
    QTRY_VERIFY(v.transform().m11() < 1.0);  // refitted on resize
    const double before = v.transform().m11();
    const QPointF at = v.viewport()->rect().center();
    QWheelEvent zoomIn(at, v.viewport()->mapToGlobal(at), QPoint(), QPoint(0, 120), Qt::NoButton,
                       Qt::ControlModifier, Qt::NoScrollPhase, false);
    QApplication::sendEvent(v.viewport(), &zoomIn);
    QVERIFY(std::abs(v.transform().m11() - before * 1.15) < 1e-6);
    // A resize keeps the user's zoom.
    v.resize(240, 170);
    QTest::qWait(20);
    QVERIFY(std::abs(v.transform().m11() - before * 1.15) < 1e-6);
    // setTrace fits again; a click on 201 (depth 2 under root cell 9) names cell 11.
    v.resize(800, 600);
    v.setTrace(smallTree(), kGridW);
    QSignalSpy spy(&v, &TreeView::cellActivated);
    auto* box = boxFor(v, "token 201,");
    QVERIFY(box);
    QTest::mouseClick(v.viewport(), Qt::LeftButton, {},
                      v.mapFromScene(box->sceneBoundingRect().center()));
    QCOMPARE(spy.count(), 1);
    QCOMPARE(spy.at(0).at(0).toInt(), 11);
  }

  void treeExport() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    TreeView v;
    v.setTrace(adtTree(0.75), kGridW);
    const QString png1 = dir.filePath("tree1.png"), png2 = dir.filePath("tree2.png");
    QVERIFY(v.savePng(png1, 1));
    QVERIFY(v.savePng(png2));  // scale 2
    QImage i1(png1), i2(png2);
    QVERIFY(!i1.isNull() && !i2.isNull());
    QVERIFY(i1.width() > 100 && i1.height() > 50);
    QVERIFY(std::abs(i2.width() - 2 * i1.width()) <= 2);
    QCOMPARE(QColor(i1.pixel(0, 0)), QColor(Qt::white));  // on white
    // Not blank: the green path is in the picture.
    bool green = false;
    for (int y = 0; y < i1.height() && !green; ++y) {
      for (int x = 0; x < i1.width() && !green; ++x) {
        const QColor c(i1.pixel(x, y));
        green = c.green() > 140 && c.red() < 60 && c.blue() < 100;
      }
    }
    QVERIFY(green);

    const QString svg = dir.filePath("tree.svg");
    QVERIFY(v.saveSvg(svg));
    QFile f(svg);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray text = f.readAll();
    QVERIFY(text.size() > 200);
    QVERIFY(text.contains("<svg"));
    QVERIFY(text.contains("201"));  // node labels are text

    const QString bad = dir.filePath("no/such/dir/tree");
    QVERIFY(!v.savePng(bad + ".png"));
    QVERIFY(!v.saveSvg(bad + ".svg"));
    QVERIFY(!QFile::exists(bad + ".png"));
    // An AR step exports too (its sentence).
    StepTrace ar;
    v.setTrace(ar, kGridW);
    QVERIFY(v.savePng(dir.filePath("ar.png")));
    QVERIFY(QFileInfo(dir.filePath("ar.png")).size() > 0);
  }

  void distributionSimpleCell() {
    DistributionView d;
    const CellTrace c = cell(0.83f, 500, true, 0);
    d.setCell(c, kGridW, "ADT-Tree");
    QCOMPARE(d.barCount(), 16);
    QCOMPARE(d.candidateRows(), 3);
    const QString h = d.headline();
    QVERIFY2(h.contains("Cell (1, 2)"), qPrintable(h));
    QVERIFY2(h.contains("ADT-Tree"), qPrintable(h));
    QVERIFY2(h.contains("token 500"), qPrintable(h));
    QVERIFY2(h.contains("drafted"), qPrintable(h));
    QVERIFY2(h.contains("rank 1 of the target"), qPrintable(h));
    QVERIFY2(h.contains("simple region: top-1 0.83"), qPrintable(h));
    // Candidates in the top-N get a marker on their bar (500 and 503), 999 only a table row.
    QCOMPARE(d.plot()->graph(0)->dataCount(), 2);
    auto* table = d.findChild<QTableWidget*>("candidateTable");
    QVERIFY(table);
    QCOMPARE(table->item(0, 0)->text(), QString("500"));
    QCOMPARE(table->item(0, 1)->text(), QString("0.7"));
    QCOMPARE(table->item(0, 4)->text(), QString("accepted"));
    QCOMPARE(table->item(1, 4)->text(), QString());
    QCOMPARE(table->item(1, 3)->text(), QString("4"));     // 503 is the target's 4th
    QCOMPARE(table->item(2, 3)->text(), QString("> 16"));  // 999 is not in the top 16
    QCOMPARE(table->item(2, 2)->text(), QString("0.0001"));

    // Log scale: the axis changes type, and back.
    QVERIFY(!d.logScale());
    QCOMPARE(d.plot()->yAxis->scaleType(), QCPAxis::stLinear);
    d.logScaleBox()->setChecked(true);
    QVERIFY(d.logScale());
    QCOMPARE(d.plot()->yAxis->scaleType(), QCPAxis::stLogarithmic);
    QVERIFY(d.plot()->yAxis->range().lower > 0);
    QVERIFY(d.plot()->yAxis->range().lower <= 1e-4);
    d.logScaleBox()->setChecked(false);
    QVERIFY(!d.logScale());
    QCOMPARE(d.plot()->yAxis->range().lower, 0.0);
  }

  void distributionComplexCellAndClear() {
    DistributionView d;
    d.logScaleBox()->setChecked(true);
    d.setCell(cell(0.12f, 502, false, 2), kGridW, QString());
    QVERIFY(d.logScale());  // the choice survives a new cell
    const QString h = d.headline();
    QVERIFY2(h.contains("complex region: top-1 0.12"), qPrintable(h));
    QVERIFY2(!h.contains("simple"), qPrintable(h));
    QVERIFY2(h.contains("sampled by the target"), qPrintable(h));
    QVERIFY2(h.contains("rank 3 of the target"), qPrintable(h));
    QCOMPARE(d.barCount(), 16);
    auto* table = d.findChild<QTableWidget*>("candidateTable");
    for (int r = 0; r < table->rowCount(); ++r) QVERIFY(table->item(r, 4)->text().isEmpty());

    // Fewer than N probabilities and no candidates.
    CellTrace small;
    small.cell = 3;
    small.token = 7;
    small.top1 = 0.6f;
    small.top_tokens = {7, 8};
    small.top_probs = {0.6f, 0.3f};
    d.setCell(small, kGridW, "AR");
    QCOMPARE(d.barCount(), 2);
    QCOMPARE(d.candidateRows(), 0);
    QVERIFY(d.headline().contains("Cell (0, 3)"));

    d.clear();
    QCOMPARE(d.barCount(), 0);
    QCOMPARE(d.candidateRows(), 0);
    QVERIFY(!d.headline().contains("region"));
  }

  void histogramShares() {
    HistogramPanel h;
    QCOMPARE(h.runCount(), 0);
    QCOMPARE(h.lengthBars(), 0);
    QSignalSpy spy(&h, &HistogramPanel::currentRunChanged);
    h.setRun(1, {"ADT-Tree", {1, 2, 2, 3, 3, 3, 4, 2}, {0, 0, 1, 0, 2, 0}});
    QCOMPARE(h.runCount(), 1);
    QCOMPARE(h.currentRun(), 1);
    QCOMPARE(spy.count(), 1);
    QCOMPARE(h.lengthBars(), 4);
    QCOMPARE(h.rankBars(), 3);
    const auto len = h.lengthShares();
    QCOMPARE(len.keys(), QList<int>({1, 2, 3, 4}));
    QCOMPARE(len.value(1), 1.0 / 8);
    QCOMPARE(len.value(2), 3.0 / 8);
    QCOMPARE(len.value(3), 3.0 / 8);
    QVERIFY(std::abs(sum(len) - 1) < 1e-12);
    const auto ranks = h.rankShares();
    QCOMPARE(ranks.keys(), QList<int>({1, 2, 3}));  // 0-based ranks shown 1-based
    QCOMPARE(ranks.value(1), 4.0 / 6);
    QVERIFY(std::abs(sum(ranks) - 1) < 1e-12);
    QVERIFY2(h.summary().contains("mean acceptance length 2.50"), qPrintable(h.summary()));
    QVERIFY2(h.summary().contains("6 accepted draft tokens, 66.7%"), qPrintable(h.summary()));

    // Negative values are not counted: the shares still sum to 1.
    h.setRun(3, {"odd", {-1, 2, 2}, {-4, 1}});
    QCOMPARE(h.lengthShares().value(2), 1.0);
    QCOMPARE(h.rankShares().value(2), 1.0);
    h.removeRun(3);
  }

  // A continuous model's committed vectors are painted at once in the colour map's colour
  // (model/continuous/token_colours.h), hatched until the preview; grey without a map.
  void imageViewPaintsVectorTokensInTheirColours() {
    adtree::ui::ImageView v;
    v.resize(240, 240);
    v.startRun(2, 2, 8, 8);
    const std::vector<float> map = {100, 0, 0, 0, 100, 0, 10, 20, 30};  // rows: v0, v1, constant
    v.setVectorColours(map);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    v.setCommitted(2, {0, 0, -1, -1}, {1.0f, 0.5f, 0.2f, 2.0f, nan, nan, nan, nan});
    // The share of a cell's pixels (inset from its lines) painted exactly `want`.
    auto share = [&v](int cell, QColor want) {
      const QImage shot = v.grab().toImage();
      const QRect r = v.cellRect(cell).toAlignedRect().adjusted(3, 3, -3, -3);
      int hits = 0;
      for (int y = r.top(); y <= r.bottom(); ++y)
        for (int x = r.left(); x <= r.right(); ++x) hits += shot.pixelColor(x, y) == want;
      return double(hits) / double(r.width() * r.height());
    };
    QVERIFY(share(0, QColor(110, 70, 30)) > 0.5);  // 100 * 1 + 10, 100 * 0.5 + 20, 30
    QVERIFY(share(1, QColor(30, 220, 30)) > 0.5);  // 20 + 10, 200 + 20 (clamped below 255), 30
    QCOMPARE(share(2, QColor(110, 70, 30)), 0.0);  // not committed
    v.setVectorColours({});
    QCOMPARE(share(0, QColor(110, 70, 30)), 0.0);
  }

  // A CSpD run's (b): per draft position, the share of rounds reaching it in which its draft
  // stood. The test stops at the first refusal, so a position after one is not reached.
  void histogramOfCspdRoundsIsAcceptanceByPosition() {
    auto stats = std::make_shared<adtree::decode::RunStats>();
    const std::vector<std::pair<int, int>> rounds = {{4, 4}, {4, 1}, {4, 0}, {2, 2}};
    for (const auto& [drafted, stood] : rounds) {
      adtree::decode::StepRecord st;
      st.method = "cspd";
      st.drafted = drafted;
      st.accepted_head = stood;
      st.committed = stood + 1;
      stats->steps.push_back(st);
    }
    adtree::ui::RunRecord r;
    r.stats = stats;
    const HistogramRun hr = adtree::ui::histogramOf(r);
    QCOMPARE(hr.reached, QVector<int>({4, 3, 1, 1}));
    QCOMPARE(hr.stood, QVector<int>({3, 2, 1, 1}));
    QVERIFY(hr.acceptedRanks.isEmpty());

    HistogramPanel h;
    h.setRun(1, hr);
    QVERIFY2(h.rankTitle().contains("draft position"), qPrintable(h.rankTitle()));
    const auto shares = h.rankShares();
    QCOMPARE(shares.keys(), QList<int>({1, 2, 3, 4}));
    QCOMPARE(shares.value(1), 3.0 / 4);
    QCOMPARE(shares.value(2), 2.0 / 3);
    QVERIFY2(h.summary().contains("7 of 9 judged drafts stood"), qPrintable(h.summary()));
    // A tree run shown next restores the ranks chart.
    h.setRun(2, {"ADT-Tree", {1, 2, 3}, {0, 1, 0}});
    QVERIFY2(h.rankTitle().contains("Top-k"), qPrintable(h.rankTitle()));
    QCOMPARE(h.rankShares().value(1), 2.0 / 3);
  }

  void histogramSwitchReplaceRemove() {
    HistogramPanel h;
    h.setRun(1, {"ADT-Tree", {1, 2, 2, 3, 3, 3, 4, 2}, {0, 0, 1, 0, 2, 0}});
    h.setRun(2, {"AR", {1, 1, 1}, {}});
    QCOMPARE(h.runCount(), 2);
    QCOMPARE(h.runBox()->count(), 2);
    QCOMPARE(h.currentRun(), 2);  // setRun selects it
    QCOMPARE(h.lengthBars(), 1);
    QCOMPARE(h.rankBars(), 0);
    QCOMPARE(h.lengthShares().value(1), 1.0);
    QVERIFY2(h.summary().contains("no draft token accepted"), qPrintable(h.summary()));

    // The combo switches the charts.
    h.runBox()->setCurrentIndex(h.runBox()->findText("ADT-Tree"));
    QCOMPARE(h.currentRun(), 1);
    QCOMPARE(h.lengthBars(), 4);
    QCOMPARE(h.rankBars(), 3);

    // Replacing keeps one entry per id, renames it, and shows the new data.
    h.setRun(1, {"ADT-Tree (beta 0.3)", {5, 5}, {1, 1}});
    QCOMPARE(h.runCount(), 2);
    QCOMPARE(h.runBox()->count(), 2);
    QCOMPARE(h.runBox()->currentText(), QString("ADT-Tree (beta 0.3)"));
    QCOMPARE(h.lengthShares(), (QMap<int, double>{{5, 1.0}}));
    QCOMPARE(h.rankShares(), (QMap<int, double>{{2, 1.0}}));

    // Removing the shown run shows another; removing the last empties the charts.
    h.removeRun(1);
    QCOMPARE(h.runCount(), 1);
    QCOMPARE(h.runBox()->count(), 1);
    QCOMPARE(h.currentRun(), 2);
    QCOMPARE(h.lengthBars(), 1);
    h.removeRun(42);  // unknown: nothing happens
    QCOMPARE(h.runCount(), 1);
    h.clearRuns();
    QCOMPARE(h.runCount(), 0);
    QCOMPARE(h.runBox()->count(), 0);
    QCOMPARE(h.currentRun(), -1);
    QCOMPARE(h.lengthBars(), 0);
    QCOMPARE(h.rankBars(), 0);
    QVERIFY(h.summary().contains("No run"));
  }
};

int main(int argc, char** argv) {
  // Qt wants the runtime directory to exist and be private; ctest points it into the build tree.
  const QString runtime = qEnvironmentVariable("XDG_RUNTIME_DIR");
  if (!runtime.isEmpty()) {
    QDir().mkpath(runtime);
    QFile::setPermissions(runtime, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
  }
  QApplication app(argc, argv);
  ViewsTest t;
  return QTest::qExec(&t, argc, argv);
}

#include "test_views.moc"
