// TreeView: one decoding step's draft tree (GUI.md "Beyond a single run", replay), drawn from the
// step's plain StepTrace: depth grows downwards, siblings sit side by side by draft rank, the
// accepted path and the bonus token stand out, and what ADT-Tree decided for the step is spelled
// out above. The scene is a figure (white, fixed colours), so what is exported as PNG or SVG is
// what is shown.
#pragma once
#include <QGraphicsView>
#include <QString>
#include <QVector>

#include "decode/stats/trace.h"

class QGraphicsScene;
class QGraphicsPathItem;
class QGraphicsSimpleTextItem;

namespace adtree::ui {

class TreeView : public QGraphicsView {
  Q_OBJECT

 public:
  explicit TreeView(QWidget* parent = nullptr);

  // Draws step `t`; gridW (tokens per row) names cells as (row, col). Fits the tree to the view.
  void setTrace(const decode::StepTrace& t, int gridW);
  // Back to the empty "no step selected" scene.
  void clear();
  void showMessage(const QString& text);  // no tree: the text in its place

  // For tests and the window. Node items are the trace nodes drawn, root included, the bonus token
  // not; accepted ones include the root (it is the last committed token), rejected are the rest.
  int nodeItems() const;
  int acceptedItems() const;
  int rejectedItems() const;
  bool hasBonusItem() const { return bonus_ != nullptr; }
  // The text above the tree (or the AR step's sentence), lines separated by '\n'.
  QString caption() const { return caption_; }
  // Tooltip of trace node `nodeIndex`; empty when that node is not drawn.
  QString nodeToolTip(int nodeIndex) const;

  // Renders the whole scene on white. False when the file cannot be written (never throws).
  bool savePng(const QString& path, int scale = 2);
  bool saveSvg(const QString& path);

 Q_SIGNALS:
  // A node (or the bonus) whose cell is known was clicked without dragging: the cell it proposed a
  // token for (root + depth), so the window can show that cell's distribution.
  void cellActivated(int cell);

 protected:
  void wheelEvent(QWheelEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;

 private:
  void resetScene();
  void buildTree(const decode::StepTrace& t, int gridW);
  void buildArStep(const decode::StepTrace& t);
  QGraphicsSimpleTextItem* addCaption(const QString& text, double bottom, double left);
  QRectF exportRect() const;  // the scene plus the caption drawn into exports
  void finishScene();
  void fitScene();

  QGraphicsScene* scene_ = nullptr;
  QVector<QGraphicsPathItem*> nodes_;  // by trace node index; nullptr where not drawn
  QGraphicsPathItem* bonus_ = nullptr;
  QString caption_;
  QGraphicsSimpleTextItem* export_caption_ = nullptr;  // a tree's caption: hidden on screen
  QPointF focus_;  // where a scrolled view is centred: the accepted path's end
  bool has_focus_ = false;
  int accepted_ = 0;
  bool user_zoomed_ = false;  // Ctrl+wheel used since the last setTrace: resizing keeps the zoom
  QPoint press_pos_;
};

}  // namespace adtree::ui
