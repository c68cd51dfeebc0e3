#include "ui/views/tree_view.h"

#include <QApplication>
#include <QBuffer>
#include <QGraphicsPathItem>
#include <QGraphicsScene>
#include <QGraphicsSimpleTextItem>
#include <QImage>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QSaveFile>
#include <QSvgGenerator>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

namespace adtree::ui {

namespace {
// Fixed colours, not the palette's: the scene is a figure on white, in a dark theme as well, so an
// export looks like the screen.
const QColor kInk(0x1f, 0x29, 0x37);
const QColor kAcceptFill(0x16, 0xa3, 0x4a), kAcceptBorder(0x14, 0x53, 0x2d);
const QColor kRootFill(0x16, 0x65, 0x34);
const QColor kRejectFill(0xe5, 0xe7, 0xeb), kRejectBorder(0x9c, 0xa3, 0xaf),
    kRejectText(0x6b, 0x72, 0x80);
const QColor kBonusFill(0xf9, 0x73, 0x16), kBonusBorder(0x9a, 0x34, 0x12);
// A free guess (no draft model proposed it) keeps its accepted / rejected fill, with a dashed blue
// border: the studio's "Drafted by" map's colour for guesses.
const QColor kGuessBorder(0x29, 0x80, 0xb9);

constexpr double kMaxFitScale = 1.5;  // fitting never blows a 3-node tree up to fill the screen
constexpr double kMinZoom = 0.05, kMaxZoom = 8;
// Shows the exported caption for the duration of one export.
struct CaptionShown {
  explicit CaptionShown(QGraphicsItem* item) : item_(item) {
    if (item_) item_->setVisible(true);
  }
  ~CaptionShown() {
    if (item_) item_->setVisible(false);
  }
  QGraphicsItem* item_;
};
constexpr double kMinReadScale = 0.8;  // below this, node labels are hard to read
constexpr double kPadX = 8, kPadY = 4, kMinBoxW = 34, kSiblingGap = 4, kLevelGap = 24, kMargin = 12;
constexpr double kCaptionGap = 14;
constexpr int kCellKey = 0;  // QGraphicsItem::data key: the cell a node proposed a token for
// Exported images stay under this many pixels a side (a 256-leaf tree is ~7000 px tall at 1x).
constexpr double kMaxExportSide = 16000;

QString num(double v) {
  return QString::number(v, 'g', 4);
}

QString cellName(int64_t cell, int gridW) {
  if (cell < 0) return QStringLiteral("unknown");
  if (gridW <= 0) return QString::number(cell);
  return QStringLiteral("(%1, %2)").arg(cell / gridW).arg(cell % gridW);
}

QString adtLine(const decode::AdtTrace& a) {
  QString s = QStringLiteral("ADT: (d, k) = (%1, %2)").arg(a.d).arg(a.k);
  if (!a.origin.empty()) s += QStringLiteral(" from %1").arg(QString::fromStdString(a.origin));
  s += QStringLiteral("; alpha = a/d = %1 %2 beta %3")
           .arg(a.alpha, 0, 'f', 2)
           .arg(a.alpha >= a.beta ? QStringLiteral(">=") : QStringLiteral("<"))
           .arg(a.beta, 0, 'f', 2);
  if (!a.rule.empty()) s += QStringLiteral(" -> %1").arg(QString::fromStdString(a.rule));
  s += QStringLiteral("; next (d, k) = (%1, %2)").arg(a.next_d).arg(a.next_k);
  return s;
}

QGraphicsPathItem* makeBox(QGraphicsScene* scene, const QString& label, double w, double h,
                           const QColor& fill, const QColor& border, const QColor& text, bool bold,
                           const QFont& base, bool guess = false) {
  QPainterPath shape;
  shape.addRoundedRect(QRectF(-w / 2, -h / 2, w, h), 6, 6);
  QPen pen(guess ? kGuessBorder : border, guess ? 2.4 : 1.2);
  if (guess) pen.setStyle(Qt::DashLine);
  auto* box = scene->addPath(shape, pen, QBrush(fill));
  box->setZValue(1);
  auto* t = new QGraphicsSimpleTextItem(label, box);
  QFont f = base;
  f.setBold(bold);
  t->setFont(f);
  t->setBrush(text);
  const QRectF r = t->boundingRect();
  t->setPos(-r.width() / 2, -r.height() / 2);
  return box;
}

// Where a step's tree puts each node, worked out from the trace and the label font before anything
// is drawn. Index n (one past the trace's nodes) is the bonus token.
struct TreeLayout {
  QVector<int> order;            // pre-order from the root: exactly the nodes drawn
  QVector<int> depth, parentOf;  // -1 where the root does not reach
  QVector<double> slot;          // across the view, in leaf slots
  QVector<QString> label;
  QVector<QSizeF> size;
  double maxW = kMinBoxW, maxH = 0;
  double slotPitch = 0, levelPitch = 0;

  QPointF centre(int v) const {
    return QPointF(slot[v] * slotPitch + maxW / 2, depth[v] * levelPitch);
  }
};

int64_t rootCellOf(const decode::StepTrace& t) {
  return t.cells.empty() ? -1 : t.cells.front().cell - 1;
}

// The node the bonus hangs from: the accepted path's end, else the deepest accepted node.
int lastAcceptedNode(const decode::StepTrace& t) {
  const auto& nodes = t.nodes;
  const int n = int(nodes.size());
  if (!t.path.empty() && t.path.back() > 0 && t.path.back() < n) return int(t.path.back());
  int last = 0;
  for (int i = 1; i < n; ++i) {
    const auto& nd = nodes[size_t(i)];
    if (nd.accepted && nd.depth > nodes[size_t(last)].depth) last = i;
  }
  return last;
}

QVector<QVector<int>> childrenByRank(const decode::StepTrace& t) {
  const auto& nodes = t.nodes;
  const int n = int(nodes.size());
  // A parent index outside the trace leaves the node unreachable, so a malformed trace draws less
  // instead of looping.
  QVector<QVector<int>> kids(n + 1);
  for (int i = 1; i < n; ++i) {
    const int64_t p = nodes[size_t(i)].parent;
    if (p >= 0 && p < n && p != i) kids[int(p)].push_back(i);
  }
  for (auto& k : kids) {
    std::stable_sort(k.begin(), k.end(),
                     [&](int a, int b) { return nodes[size_t(a)].rank < nodes[size_t(b)].rank; });
  }
  // The bonus is laid out as one more child (index n) of the last accepted node, after the drafted
  // ones: the tidy layout then keeps it clear of that node's rejected children.
  if (t.has_bonus) kids[lastAcceptedNode(t)].push_back(n);
  return kids;
}

// Pre-order from the root: leaves take consecutive slots left to right; a parent then sits midway
// between its first and last child (reverse pre-order sees children before parents).
void placeSlots(const QVector<QVector<int>>& kids, TreeLayout& l) {
  const int count = int(kids.size());
  l.depth = QVector<int>(count, -1);
  l.parentOf = QVector<int>(count, -1);
  l.slot = QVector<double>(count, 0);
  QVector<int> stack{0};
  l.depth[0] = 0;
  while (!stack.isEmpty()) {
    const int v = stack.takeLast();
    l.order.push_back(v);
    for (int j = int(kids[v].size()) - 1; j >= 0; --j) {
      const int c = kids[v][j];
      if (l.depth[c] >= 0) continue;
      l.depth[c] = l.depth[v] + 1;
      l.parentOf[c] = v;
      stack.push_back(c);
    }
  }
  int next = 0;
  for (int v : l.order) {
    if (kids[v].isEmpty()) l.slot[v] = next++;
  }
  for (auto it = l.order.crbegin(); it != l.order.crend(); ++it) {
    if (!kids[*it].isEmpty())
      l.slot[*it] = (l.slot[kids[*it].front()] + l.slot[kids[*it].back()]) / 2;
  }
}

// Labels first: the widest and tallest set the column and row pitch.
void measureBoxes(const decode::StepTrace& t, const QFont& base, TreeLayout& l) {
  const int n = int(t.nodes.size());
  QFont bold = base;
  bold.setBold(true);
  l.label = QVector<QString>(n + 1);
  l.size = QVector<QSizeF>(n + 1);
  for (int v : l.order) {
    const bool strong = v == n || t.nodes[size_t(v)].accepted;
    l.label[v] =
        v == n ? TreeView::tr("bonus %1").arg(t.bonus) : QString::number(t.nodes[size_t(v)].token);
    QGraphicsSimpleTextItem probe(l.label[v]);
    probe.setFont(strong ? bold : base);
    const QRectF r = probe.boundingRect();
    l.size[v] = QSizeF(std::max(kMinBoxW, r.width() + 2 * kPadX), r.height() + 2 * kPadY);
    l.maxW = std::max(l.maxW, l.size[v].width());
    l.maxH = std::max(l.maxH, l.size[v].height());
  }
  // Top-down: depth runs down the view, siblings side by side. Draft trees are wide and shallow
  // (tens of leaves, at most ~10 levels) and the replay dock is wide and short, so this fills it.
  l.slotPitch = l.maxW + kSiblingGap;
  l.levelPitch = l.maxH + kLevelGap;
}

TreeLayout layOutTree(const decode::StepTrace& t, const QFont& base) {
  TreeLayout l;
  placeSlots(childrenByRank(t), l);
  measureBoxes(t, base, l);
  return l;
}

// The root is the last committed token, the bonus the target's own; the rest are drafts.
QGraphicsPathItem* drawBox(QGraphicsScene* scene, const decode::StepTrace& t, const TreeLayout& l,
                           int v, const QFont& base) {
  const double w = l.size[v].width(), h = l.size[v].height();
  if (v == int(t.nodes.size()))
    return makeBox(scene, l.label[v], w, h, kBonusFill, kBonusBorder, Qt::white, true, base);
  if (v == 0)
    return makeBox(scene, l.label[v], w, h, kRootFill, kAcceptBorder, Qt::white, true, base);
  const bool guess = t.nodes[size_t(v)].guess;
  if (t.nodes[size_t(v)].accepted)
    return makeBox(scene, l.label[v], w, h, kAcceptFill, kAcceptBorder, Qt::white, true, base,
                   guess);
  return makeBox(scene, l.label[v], w, h, kRejectFill, kRejectBorder, kRejectText, false, base,
                 guess);
}

QString boxToolTip(const decode::StepTrace& t, int v, const QString& cell) {
  if (v == int(t.nodes.size())) {
    return TreeView::tr("bonus token %1, cell %2\nsampled by the target after the accepted path")
        .arg(t.bonus)
        .arg(cell);
  }
  const auto& nd = t.nodes[size_t(v)];
  if (v == 0)
    return TreeView::tr("root: the last committed token %1, cell %2").arg(nd.token).arg(cell);
  return TreeView::tr(
             "token %1, cell %2, %9\ndepth %3, rank %4 (0 = the draft's best)\ndraft q = %5\n"
             "cumulative draft score = %6\ntarget p = %7\n%8")
      .arg(nd.token)
      .arg(cell)
      .arg(nd.depth)
      .arg(nd.rank)
      .arg(num(nd.q))
      .arg(num(nd.score))
      .arg(num(nd.p))
      .arg(nd.accepted ? TreeView::tr("accepted") : TreeView::tr("rejected"))
      .arg(nd.guess ? TreeView::tr("a free guess (no draft model)")
                    : TreeView::tr("drafted by the head"));
}

// The edge from the parent's bottom to this node's top; the accepted path is bold.
void drawEdgeFromParent(QGraphicsScene* scene, const decode::StepTrace& t, const TreeLayout& l,
                        int v) {
  const int p = l.parentOf[v];
  if (p < 0) return;
  const QPointF pc = l.centre(p), c = l.centre(v);
  const QLineF line(pc.x(), pc.y() + l.size[p].height() / 2, c.x(), c.y() - l.size[v].height() / 2);
  QPen pen(kRejectBorder, 1);
  if (v == int(t.nodes.size())) {
    pen = QPen(kBonusFill, 2.5, Qt::DashLine);
  } else if (t.nodes[size_t(v)].accepted && (p == 0 || t.nodes[size_t(p)].accepted)) {
    pen = QPen(kAcceptFill, 3.5);
  }
  pen.setCapStyle(Qt::RoundCap);
  scene->addLine(line, pen)->setZValue(0);
}

QString treeCaption(const decode::StepTrace& t, int drawn, int64_t rootCell, int gridW) {
  const int64_t committed =
      t.cells.empty() ? int64_t(t.path.size()) + (t.has_bonus ? 1 : 0) : int64_t(t.cells.size());
  QString s = TreeView::tr("Step %1: %2 nodes drawn").arg(t.step).arg(drawn);
  if (t.nodes_dropped > 0) s += TreeView::tr(" (+ %1 dropped)").arg(t.nodes_dropped);
  const auto guesses = std::count_if(t.nodes.begin() + (t.nodes.empty() ? 0 : 1), t.nodes.end(),
                                     [](const decode::TraceNode& n) { return n.guess; });
  if (!t.nodes.empty()) {
    s += TreeView::tr(" (drafted by the head: %1, free guesses: %2, dashed)")
             .arg(int64_t(t.nodes.size()) - 1 - guesses)
             .arg(guesses);
  }
  s += TreeView::tr("; accepted length %1").arg(t.path.size());
  if (t.has_bonus) s += TreeView::tr(" + bonus %1").arg(t.bonus);
  s += TreeView::tr(" -> %1 tokens committed").arg(committed);
  if (rootCell >= 0) s += TreeView::tr("; root at cell %1").arg(cellName(rootCell, gridW));
  if (t.has_adt) s += QLatin1Char('\n') + adtLine(t.adt);
  return s;
}
}  // namespace

TreeView::TreeView(QWidget* parent) : QGraphicsView(parent) {
  scene_ = new QGraphicsScene(this);
  scene_->setBackgroundBrush(Qt::white);
  setScene(scene_);
  setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
  setDragMode(QGraphicsView::ScrollHandDrag);
  setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
  setResizeAnchor(QGraphicsView::AnchorViewCenter);
  setToolTip(QString());
  clear();
}

void TreeView::resetScene() {
  has_focus_ = false;
  export_caption_ = nullptr;
  scene_->clear();
  nodes_.clear();
  bonus_ = nullptr;
  accepted_ = 0;
  caption_.clear();
  user_zoomed_ = false;
}

void TreeView::clear() {
  showMessage(tr("No step selected: finish a run, then scrub with the slider above."));
}

void TreeView::showMessage(const QString& text) {
  resetScene();
  caption_ = text;
  addCaption(caption_, 0, 0);
  finishScene();
}

void TreeView::setTrace(const decode::StepTrace& t, int gridW) {
  resetScene();
  if (t.nodes.empty()) {
    buildArStep(t);
  } else {
    buildTree(t, gridW);
  }
  finishScene();
}

void TreeView::buildArStep(const decode::StepTrace& t) {
  QString token = QStringLiteral("?");
  if (!t.cells.empty()) {
    token = QString::number(t.cells.front().token);
  } else if (t.has_bonus) {
    token = QString::number(t.bonus);
  }
  caption_ =
      tr("Step %1\nAR step: no draft tree; the target sampled token %2").arg(t.step).arg(token);
  if (t.has_adt) caption_ += QLatin1Char('\n') + adtLine(t.adt);
  addCaption(caption_, 0, 0);
}

void TreeView::buildTree(const decode::StepTrace& t, int gridW) {
  const int n = int(t.nodes.size());
  const QFont base = font();
  const TreeLayout layout = layOutTree(t, base);
  const int64_t rootCell = rootCellOf(t);

  nodes_ = QVector<QGraphicsPathItem*>(n, nullptr);
  for (int v : layout.order) {
    const QPointF c = layout.centre(v);
    const int64_t cell = rootCell < 0 ? -1 : rootCell + layout.depth[v];
    QGraphicsPathItem* box = drawBox(scene_, t, layout, v, base);
    if (v == n) {
      bonus_ = box;
    } else {
      if (v == 0 || t.nodes[size_t(v)].accepted) ++accepted_;
      nodes_[v] = box;
    }
    box->setPos(c);
    box->setToolTip(boxToolTip(t, v, cellName(cell, gridW)));
    // The view opens on the end of the accepted path (the bonus, else the deepest accepted node).
    if (v == n ||
        (v > 0 && t.nodes[size_t(v)].accepted && !bonus_ && (!has_focus_ || c.y() >= focus_.y()))) {
      focus_ = c;
      has_focus_ = true;
    }
    if (cell >= 0) box->setData(kCellKey, qint64(cell));
    drawEdgeFromParent(scene_, t, layout, v);
  }

  caption_ = treeCaption(t, nodeItems(), rootCell, gridW);
  // On screen the replay panel shows the caption at a readable size; the scene keeps it, hidden,
  // for exported figures (PNG, SVG), which must explain themselves.
  export_caption_ = addCaption(caption_, scene_->itemsBoundingRect().top(), 0);
  export_caption_->setVisible(false);
}

QGraphicsSimpleTextItem* TreeView::addCaption(const QString& text, double bottom, double left) {
  auto* item = scene_->addSimpleText(text, font());
  item->setBrush(kInk);
  item->setPos(left, bottom - kCaptionGap - item->boundingRect().height());
  return item;
}

void TreeView::finishScene() {
  QRectF r;
  for (auto* item : scene_->items()) {
    if (item != export_caption_) r |= item->sceneBoundingRect();
  }
  scene_->setSceneRect(r.adjusted(-kMargin, -kMargin, kMargin, kMargin));
  fitScene();
}

QRectF TreeView::exportRect() const {
  QRectF r = scene_->sceneRect();
  if (export_caption_)
    r |= export_caption_->sceneBoundingRect().adjusted(-kMargin, -kMargin, kMargin, kMargin);
  return r;
}

void TreeView::fitScene() {
  const QRectF r = scene_->sceneRect();
  if (r.isEmpty()) return;
  const QSizeF vp = viewport()->size();
  const double fit = std::min(vp.width() / r.width(), vp.height() / r.height());
  // A wide tree (40+ leaves) fitted whole would shrink its labels below reading size: then fit
  // its height instead (up to kMinReadScale) and scroll sideways. Children are ordered by draft
  // rank, so the accepted path runs down the left: the view starts there.
  double scale = std::min(fit, kMaxFitScale);
  if (scale < kMinReadScale)
    scale = std::max(scale, std::min(kMinReadScale, vp.height() / r.height()));
  setTransform(QTransform::fromScale(scale, scale));
  if (scale > fit + 1e-9) {
    // Horizontally on the accepted path's end, kept inside the scene.
    const double half = vp.width() / (2 * scale);
    const double x =
        has_focus_ ? std::clamp(focus_.x(), r.left() + half, r.right() - half) : r.left() + half;
    centerOn(QPointF(x, r.center().y()));
  } else {
    centerOn(r.center());
  }
}

int TreeView::nodeItems() const {
  return int(nodes_.size() - std::count(nodes_.begin(), nodes_.end(), nullptr));
}
int TreeView::acceptedItems() const {
  return accepted_;
}
int TreeView::rejectedItems() const {
  return nodeItems() - accepted_;
}

QString TreeView::nodeToolTip(int nodeIndex) const {
  if (nodeIndex < 0 || nodeIndex >= nodes_.size() || !nodes_[nodeIndex]) return {};
  return nodes_[nodeIndex]->toolTip();
}

bool TreeView::savePng(const QString& path, int scale) {
  const QRectF src = exportRect();
  const CaptionShown shown(export_caption_);
  if (src.isEmpty()) return false;
  scale = std::clamp(scale, 1, 8);
  while (scale > 1 && std::max(src.width(), src.height()) * scale > kMaxExportSide) --scale;
  const QSize px(int(std::ceil(src.width() * scale)), int(std::ceil(src.height() * scale)));
  QImage img(px, QImage::Format_ARGB32_Premultiplied);
  if (img.isNull()) return false;
  img.fill(Qt::white);
  {
    QPainter p(&img);
    p.setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
    scene_->render(&p, QRectF(img.rect()), src, Qt::KeepAspectRatio);
  }
  // QSaveFile: a failed write leaves no half-written file behind.
  QSaveFile f(path);
  if (!f.open(QIODevice::WriteOnly)) return false;
  if (!img.save(&f, "PNG")) {
    f.cancelWriting();
    return false;
  }
  return f.commit();
}

bool TreeView::saveSvg(const QString& path) {
  const QRectF src = exportRect();
  const CaptionShown shown(export_caption_);
  if (src.isEmpty()) return false;
  // Rendered into memory first: QSvgGenerator only warns when its file cannot be opened, so the
  // file is written (and its errors seen) here.
  QBuffer buf;
  buf.open(QIODevice::WriteOnly);
  {
    QSvgGenerator gen;
    gen.setOutputDevice(&buf);
    gen.setSize(src.size().toSize());
    gen.setViewBox(QRectF(QPointF(0, 0), src.size()));
    gen.setTitle(tr("ADT-Tree Studio draft tree"));
    gen.setDescription(caption_);
    QPainter p;
    if (!p.begin(&gen)) return false;
    p.fillRect(QRectF(QPointF(0, 0), src.size()), Qt::white);
    scene_->render(&p, QRectF(QPointF(0, 0), src.size()), src, Qt::KeepAspectRatio);
    p.end();
  }
  QSaveFile f(path);
  if (!f.open(QIODevice::WriteOnly)) return false;
  if (f.write(buf.data()) != buf.data().size()) {
    f.cancelWriting();
    return false;
  }
  return f.commit();
}

void TreeView::wheelEvent(QWheelEvent* event) {
  if (!(event->modifiers() & Qt::ControlModifier)) {
    QGraphicsView::wheelEvent(event);
    return;
  }
  const double now = transform().m11();
  const double want =
      std::clamp(now * std::pow(1.15, event->angleDelta().y() / 120.0), kMinZoom, kMaxZoom);
  if (now > 0) scale(want / now, want / now);
  user_zoomed_ = true;
  event->accept();
}

void TreeView::resizeEvent(QResizeEvent* event) {
  QGraphicsView::resizeEvent(event);
  if (!user_zoomed_) fitScene();
}

void TreeView::mousePressEvent(QMouseEvent* event) {
  press_pos_ = event->pos();
  QGraphicsView::mousePressEvent(event);
}

void TreeView::mouseReleaseEvent(QMouseEvent* event) {
  QGraphicsView::mouseReleaseEvent(event);
  // A click, not the end of a hand drag.
  if (event->button() != Qt::LeftButton ||
      (event->pos() - press_pos_).manhattanLength() >= QApplication::startDragDistance()) {
    return;
  }
  QGraphicsItem* item = itemAt(event->pos());
  if (!item) return;
  item = item->topLevelItem();
  const QVariant cell = item->data(kCellKey);
  if (cell.isValid()) Q_EMIT cellActivated(int(cell.toLongLong()));
}

}  // namespace adtree::ui
