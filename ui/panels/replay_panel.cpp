#include "ui/panels/replay_panel.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QSlider>
#include <QStyle>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>

#include "ui/views/tree_view.h"

namespace adtree::ui {

ReplayPanel::ReplayPanel(QWidget* parent) : QWidget(parent) {
  setObjectName("replayPanel");  // one per window: scripts and tests find it by name
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(4, 4, 4, 4);
  v->setSpacing(4);
  auto* row = new QHBoxLayout;
  row->setSpacing(4);
  auto button = [&](QStyle::StandardPixmap icon, const QString& tip) {
    auto* b = new QToolButton(this);
    b->setIcon(style()->standardIcon(icon));
    b->setToolTip(tip);
    b->setAutoRaise(true);
    row->addWidget(b);
    return b;
  };
  first_ = button(QStyle::SP_MediaSkipBackward, tr("First step (Home)"));
  back_ = button(QStyle::SP_MediaSeekBackward, tr("Previous step (Alt+Left)"));
  slider_ = new QSlider(Qt::Horizontal, this);
  slider_->setObjectName("replaySlider");
  slider_->setToolTip(
      tr("Scrub through the run's steps; arrows, PageUp/PageDown, Home and End "
         "work while it has focus."));
  slider_->setPageStep(10);
  slider_->setTickPosition(QSlider::NoTicks);
  row->addWidget(slider_, 1);
  fwd_ = button(QStyle::SP_MediaSeekForward, tr("Next step (Alt+Right)"));
  last_ = button(QStyle::SP_MediaSkipForward, tr("Last step: the whole run (End)"));
  label_ = new QLabel(this);
  label_->setObjectName("replayLabel");
  label_->setMinimumWidth(260);
  row->addWidget(label_);
  v->addLayout(row);
  detail_ = new QLabel(this);
  detail_->setObjectName("replayDetail");
  detail_->setWordWrap(true);
  detail_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  v->addWidget(detail_);
  tree_ = new TreeView(this);
  tree_->setObjectName("treeView");
  v->addWidget(tree_, 1);

  connect(slider_, &QSlider::valueChanged, this, [this](int s) {
    label_->setText(stepText());
    Q_EMIT stepChanged(s);
  });
  connect(first_, &QToolButton::clicked, this, [this] { setStep(0); });
  connect(back_, &QToolButton::clicked, this, &ReplayPanel::stepBack);
  connect(fwd_, &QToolButton::clicked, this, &ReplayPanel::stepForward);
  connect(last_, &QToolButton::clicked, this, [this] { setStep(steps_ - 1); });
  clearRun(tr("Replay is available when a run has finished."));
}

void ReplayPanel::setRun(const RunState& run) {
  steps_ = run.steps();
  grid_w_ = std::max(1, run.gridW());
  const QSignalBlocker block(slider_);
  slider_->setRange(0, std::max(0, steps_ - 1));
  slider_->setValue(std::max(0, steps_ - 1));
  for (QWidget* w :
       {static_cast<QWidget*>(slider_), static_cast<QWidget*>(first_), static_cast<QWidget*>(back_),
        static_cast<QWidget*>(fwd_), static_cast<QWidget*>(last_)}) {
    w->setEnabled(steps_ > 0);
  }
  label_->setText(stepText());
}

void ReplayPanel::clearRun(const QString& why) {
  steps_ = 0;
  const QSignalBlocker block(slider_);
  slider_->setRange(0, 0);
  for (QWidget* w :
       {static_cast<QWidget*>(slider_), static_cast<QWidget*>(first_), static_cast<QWidget*>(back_),
        static_cast<QWidget*>(fwd_), static_cast<QWidget*>(last_)}) {
    w->setEnabled(false);
  }
  label_->setText(why);
  tree_->clear();
  detail_->clear();
}

void ReplayPanel::setStep(int step) {
  if (steps_ <= 0) return;
  slider_->setValue(std::clamp(step, 0, steps_ - 1));
}

int ReplayPanel::step() const {
  return steps_ > 0 ? slider_->value() : -1;
}

void ReplayPanel::stepBack() {
  setStep(step() - 1);
}
void ReplayPanel::stepForward() {
  setStep(step() + 1);
}

QString ReplayPanel::stepText() const {
  if (steps_ <= 0) return {};
  const int s = slider_->value();
  return tr("Step %1 of %2%3")
      .arg(s)
      .arg(steps_ - 1)
      .arg(s == steps_ - 1 ? tr(" (end)") : QString());
}

void ReplayPanel::showTrace(const decode::StepTrace* trace, const decode::StepRecord* record) {
  if (!trace) {
    tree_->clear();
    if (!record) {
      detail_->clear();
    } else if (!record->cells.empty()) {
      // Steps that commit on several rows (PJD) verify row windows, not a tree.
      QStringList rows;
      for (auto c : record->cells) {
        const QString row = QString::number(c / std::max(1, grid_w_));
        if (!rows.contains(row)) rows << row;
      }
      detail_->setText(tr("Step %1 committed %2 token(s) on %3 %4.")
                           .arg(record->step)
                           .arg(record->committed)
                           .arg(rows.size() == 1 ? tr("row") : tr("rows"))
                           .arg(rows.join(", ")));
      // A MAR step (its method "ar" or "cspd") fills cells of its random order; PJD's rows are
      // verified windows.
      const bool mar = record->method == "ar" || record->method == "cspd";
      tree_->showMessage(mar ? tr("MAR makes a step's tokens at once, in a random order: "
                                  "no tree to draw.")
                             : tr("This method verifies windows on several image rows, not a "
                                  "draft tree: there is no tree to draw."));
    } else {
      detail_->setText(tr("Step %1 committed %2 token(s). No trace was recorded for this run "
                          "(Run ▸ Record Step Traces), so its tree cannot be drawn.")
                           .arg(record->step)
                           .arg(record->committed));
    }
    return;
  }
  tree_->setTrace(*trace, grid_w_);
  detail_->setText(tree_->caption());
}

}  // namespace adtree::ui
