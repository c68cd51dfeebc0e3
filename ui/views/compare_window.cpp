#include "ui/views/compare_window.h"

#include <QCheckBox>
#include <QComboBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QSpinBox>
#include <QSplitter>
#include <QToolButton>
#include <QVBoxLayout>

#include "decode/settings/method_table.h"
#include "ui/panels/heatmap_panel.h"
#include "ui/panels/method_names.h"
#include "ui/panels/relax_box.h"
#include "ui/panels/settings_panel.h"
#include "ui/views/colormap.h"
#include "ui/views/image_convert.h"
#include "ui/views/image_view.h"
#include "ui/views/qcp.h"
#include "ui/window/engine_bridge.h"

namespace adtree::ui {

namespace {
const char* kSideName[2] = {"A", "B"};
// A finished run's rule, from its label ("adt+lantern", "static+cascade").
decode::Acceptance relaxOfLabel(const QString& label) {
  if (label.contains("+cascade")) return decode::Acceptance::Cascade;
  if (label.contains("+lantern")) return decode::Acceptance::Lantern;
  return decode::Acceptance::Lossless;
}
}  // namespace

CompareWindow::CompareWindow(EngineBridge* bridge, QWidget* parent)
    : QWidget(parent, Qt::Window), bridge_(bridge) {
  setObjectName("compareWindow");
  setWindowTitle(tr("Compare — ADT-Tree Studio"));
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(8, 6, 8, 6);
  v->addLayout(buildTopBar());

  auto* sides = new QSplitter(Qt::Horizontal, this);
  sides->addWidget(buildSide(0));
  sides->addWidget(buildSide(1));
  sides->setChildrenCollapsible(false);
  v->addWidget(sides, 1);

  v->addLayout(buildComparison());
  connectSignals();
  setSide(0, decode::Method::Ar, decode::Acceptance::Lossless);
  setSide(1, decode::Method::Adt, decode::Acceptance::Lossless);
  updateComparison();
  updateBusy();
  resize(1280, 860);
}

// The shared part: prompt, seed, greedy switch, run.
QHBoxLayout* CompareWindow::buildTopBar() {
  auto* top = new QHBoxLayout;
  prompt_label_ = new QLabel(this);
  prompt_label_->setTextFormat(Qt::RichText);
  seed_ = new QSpinBox(this);
  seed_->setRange(0, std::numeric_limits<int>::max());
  seed_->setToolTip(tr("Both sides use this seed."));
  greedy_ = new QCheckBox(tr("Greedy on both sides (temperature 0)"), this);
  greedy_->setObjectName("compareGreedy");
  greedy_->setToolTip(
      tr("Overrides both sides' temperature with 0. Lossless methods must then "
         "produce exactly the tokens of AR: the check below shows it."));
  greedy_->setChecked(true);
  run_button_ = new QPushButton(tr("Run both"), this);
  run_button_->setObjectName("compareRun");
  run_button_->setDefault(true);
  cancel_ = new QPushButton(tr("Cancel"), this);
  top->addWidget(prompt_label_, 1);
  top->addWidget(new QLabel(tr("Seed"), this));
  top->addWidget(seed_);
  top->addWidget(greedy_);
  top->addWidget(run_button_);
  top->addWidget(cancel_);
  return top;
}

// The comparison: speed, identity, difference map.
QHBoxLayout* CompareWindow::buildComparison() {
  auto* bottom = new QHBoxLayout;
  auto* text = new QVBoxLayout;
  speed_ = new QLabel(this);
  speed_->setObjectName("compareSpeed");
  speed_->setTextFormat(Qt::RichText);
  identity_ = new QLabel(this);
  identity_->setObjectName("compareIdentity");
  identity_->setTextFormat(Qt::RichText);
  identity_->setWordWrap(true);
  status_ = new QLabel(this);
  status_->setStyleSheet("color: #555;");
  text->addWidget(speed_);
  text->addWidget(identity_);
  text->addWidget(status_);
  text->addStretch(1);
  bottom->addLayout(text, 2);
  bottom->addWidget(buildDiffPlot());
  return bottom;
}

// The B ≠ A cell map: about square, like the grid it maps.
QCustomPlot* CompareWindow::buildDiffPlot() {
  diff_plot_ = new QCustomPlot(this);
  diff_plot_->setObjectName("compareDiff");
  diff_plot_->setMinimumSize(220, 200);
  diff_plot_->setMaximumWidth(260);
  diff_plot_->setToolTip(
      tr("Cells where B's token differs from A's (dark = same, yellow = differs)."));
  diff_plot_->plotLayout()->insertRow(0);
  diff_plot_->plotLayout()->addElement(
      0, 0,
      new QCPTextElement(diff_plot_, tr("B ≠ A per cell"), QFont(font().family(), 9, QFont::Bold)));
  diff_map_ = new QCPColorMap(diff_plot_->xAxis, diff_plot_->yAxis);
  diff_map_->setGradient(viridisGradient());
  diff_map_->setInterpolate(false);
  diff_map_->setDataRange(QCPRange(0, 1));
  diff_plot_->yAxis->setRangeReversed(true);
  diff_plot_->xAxis->setTicks(false);
  diff_plot_->yAxis->setTicks(false);
  return diff_plot_;
}

// The buttons, and this window's jobs on the bridge.
void CompareWindow::connectSignals() {
  connect(run_button_, &QPushButton::clicked, this, &CompareWindow::runBoth);
  connect(cancel_, &QPushButton::clicked, this, &CompareWindow::cancel);
  connect(bridge_, &EngineBridge::jobStarted, this, &CompareWindow::onStarted);
  connect(bridge_, &EngineBridge::stepsArrived, this, &CompareWindow::onSteps);
  connect(bridge_, &EngineBridge::previewArrived, this, &CompareWindow::onPreview);
  connect(bridge_, &EngineBridge::jobFinished, this, &CompareWindow::onFinished);
  connect(bridge_, &EngineBridge::jobFailed, this,
          [this](engine::JobId j, const QString& m) { onEnded(j, tr("failed: %1").arg(m)); });
  connect(bridge_, &EngineBridge::jobCancelled, this,
          [this](engine::JobId j, qint64) { onEnded(j, tr("cancelled")); });
}

QWidget* CompareWindow::buildSide(int side) {
  auto* w = new QWidget(this);
  auto* v = new QVBoxLayout(w);
  v->setContentsMargins(2, 2, 2, 2);
  auto* row = new QHBoxLayout;
  auto* name = new QLabel(QStringLiteral("<b>%1</b>").arg(kSideName[side]), w);
  method_[side] = new QComboBox(w);
  method_[side]->setObjectName(QStringLiteral("compareMethod%1").arg(kSideName[side]));
  fillMethodBox(method_[side], /*withHelp=*/false);
  relax_[side] = makeRelaxBox(w);
  relax_[side]->setObjectName(QStringLiteral("compareRelax%1").arg(kSideName[side]));
  auto* more = new QToolButton(w);
  more->setText(tr("Settings"));
  more->setCheckable(true);
  more->setToolTip(tr("Show this side's method and sampling settings"));
  row->addWidget(name);
  row->addWidget(method_[side], 1);
  row->addWidget(relax_[side]);
  row->addWidget(more);
  v->addLayout(row);
  settings_[side] = new SettingsPanel;
  auto* scroll = new QScrollArea(w);
  scroll->setWidget(settings_[side]);
  scroll->setWidgetResizable(true);
  scroll->setMinimumHeight(260);
  scroll->setVisible(false);
  settings_box_[side] = scroll;
  v->addWidget(scroll);
  connect(more, &QToolButton::toggled, scroll, &QWidget::setVisible);
  auto update_method = [this, side] {
    const auto m = methodOf(method_[side]);
    relax_[side]->setEnabled(decode::is_tree(m));
    settings_[side]->setMethod(m, relaxOf(relax_[side]));
  };
  connect(method_[side], &QComboBox::currentIndexChanged, this, update_method);
  connect(relax_[side], &QComboBox::currentIndexChanged, this, update_method);

  auto* split = new QSplitter(Qt::Vertical, w);
  image_[side] = new ImageView(w);
  image_[side]->setPlaceholder(tr("Press “Run both”."));
  maps_[side] = new HeatmapPanel(w);
  split->addWidget(image_[side]);
  split->addWidget(maps_[side]);
  split->setSizes({300, 300});
  v->addWidget(split, 1);
  summary_[side] = new QLabel(w);
  summary_[side]->setObjectName(QStringLiteral("compareSummary%1").arg(kSideName[side]));
  v->addWidget(summary_[side]);
  connect(image_[side], &ImageView::cellHovered, this, [this](int c) {
    for (int s = 0; s < 2; ++s) {
      image_[s]->setHighlight(c);
      maps_[s]->setHighlight(c);
      maps_[s]->setHoverText(run_[s].describeCell(c));
    }
  });
  return w;
}

void CompareWindow::setModel(const engine::ModelInfo& info) {
  model_ = info;
  for (int s = 0; s < 2; ++s) {
    settings_[s]->setModel(info.default_sampling, info.codebook_size, info.grid_h * info.grid_w,
                           true);
    image_[s]->setTokenColors(info.token_colors);
    image_[s]->setVectorColours(info.vector_colours);
    method_[s]->setEnabled(true);
  }
  updateBusy();
}

void CompareWindow::setTokenColors(const std::vector<uint8_t>& colors) {
  if (model_) model_->token_colors = colors;
  for (auto* image : image_) image->setTokenColors(colors);
}

void CompareWindow::setPrompt(const QString& prompt) {
  prompt_ = prompt;
  prompt_label_->setText(prompt.isEmpty() ? tr("<i>Type a prompt in the main window first.</i>")
                                          : tr("Prompt: <b>%1</b>").arg(prompt.toHtmlEscaped()));
  updateBusy();
}

void CompareWindow::setSeed(quint64 seed) {
  seed_->setValue(int(seed));
}

void CompareWindow::setSide(int side, decode::Method method, decode::Acceptance relax,
                            const decode::DecodeRequest* settings) {
  selectMethod(method_[side], method);
  setRelax(relax_[side], relax);
  if (settings) settings_[side]->setRequest(*settings);
  relax_[side]->setEnabled(decode::is_tree(method));
  settings_[side]->setMethod(method, relaxOf(relax_[side]));
}

void CompareWindow::startAgainstAr(decode::Method method, decode::Acceptance relax,
                                   const decode::DecodeRequest* settings) {
  setSide(0, decode::Method::Ar, decode::Acceptance::Lossless);
  setSide(1, method, settings ? relax : decode::Acceptance::Lossless, settings);
}

void CompareWindow::runBoth() {
  if (running() || !model_ || prompt_.isEmpty()) return;
  decode::DecodeRequest req[2];
  for (int s = 0; s < 2; ++s) {
    try {
      req[s] =
          settings_[s]->request(methodOf(method_[s]), relaxOf(relax_[s]), quint64(seed_->value()));
    } catch (const std::exception& e) {
      status_->setText(
          tr("Side %1: invalid settings: %2").arg(kSideName[s], QString::fromUtf8(e.what())));
      return;
    }
    if (greedy_->isChecked()) req[s].sampling.temperature = 0;
    req[s].trace.enabled = true;
    ranges_[s] = ranges_for(req[s]);
  }
  for (int s = 0; s < 2; ++s) {
    result_[s].reset();
    summary_[s]->clear();
    image_[s]->startRun(int(model_->grid_h), int(model_->grid_w), int(model_->image_h),
                        int(model_->image_w));
    run_[s].showEmpty(int(model_->grid_h), int(model_->grid_w), ranges_[s]);
    maps_[s]->refresh(run_[s]);
  }
  // One after the other on the engine's queue: each side has the machine to itself, so the times
  // compare like the bench's.
  job_[0] = bridge_->submit(prompt_, req[0]);
  job_[1] = bridge_->submit(prompt_, req[1]);
  status_->setText(tr("Running A, then B…"));
  updateComparison();
  updateBusy();
}

void CompareWindow::cancel() {
  for (auto j : job_) {
    if (j) bridge_->cancel(j);
  }
}

int CompareWindow::sideOf(engine::JobId job) const {
  if (job == 0) return -1;
  return job == job_[0] ? 0 : job == job_[1] ? 1 : -1;
}

void CompareWindow::onStarted(const engine::JobStarted& st) {
  const int s = sideOf(st.job);
  if (s < 0) return;
  run_[s].reset(st, ranges_[s]);
  image_[s]->startRun(int(st.grid_h), int(st.grid_w), int(st.image_h), int(st.image_w));
  image_[s]->setRunning(true);
  status_->setText(tr("Running %1…").arg(kSideName[s]));
}

void CompareWindow::onSteps(const std::vector<engine::JobStep>& steps) {
  if (steps.empty()) return;
  const int s = sideOf(steps.front().job);
  if (s < 0) return;
  run_[s].addSteps(steps);
  image_[s]->setCommitted(run_[s].committed(), run_[s].tokens(), run_[s].vectors());
  image_[s]->refresh();
}

void CompareWindow::onPreview(const engine::JobPreview& p) {
  const int s = sideOf(p.job);
  if (s < 0 || p.image.empty()) return;
  image_[s]->setPreview(toQImage(p.image), int(p.valid_cells), p.cells);
  image_[s]->refresh();
}

void CompareWindow::onFinished(const engine::JobFinished& f) {
  const int s = sideOf(f.job);
  if (s < 0) return;
  try {
    result_[s] = recordFromFinished(f);
  } catch (const std::exception& e) {
    onEnded(f.job, tr("could not read its statistics: %1").arg(QString::fromUtf8(e.what())));
    return;
  }
  run_[s].finish(f);
  job_[s] = 0;
  showResult(s);
  updateComparison();
  updateBusy();
  if (!running()) {
    status_->clear();
    Q_EMIT comparisonEnded();
    if (result_[0] && result_[1]) Q_EMIT comparisonFinished();
  }
}

void CompareWindow::onEnded(engine::JobId job, const QString& why) {
  const int s = sideOf(job);
  if (s < 0) return;
  job_[s] = 0;
  image_[s]->setRunning(false);
  summary_[s]->setText(tr("%1 %2").arg(kSideName[s], why));
  // A cancelled A makes B meaningless as a comparison: stop it too.
  if (job_[1 - s]) bridge_->cancel(job_[1 - s]);
  status_->setText(tr("Side %1 %2.").arg(kSideName[s], why));
  updateBusy();
  if (!running()) Q_EMIT comparisonEnded();
}

void CompareWindow::showResult(int s) {
  const auto& r = *result_[s];
  image_[s]->setRunning(false);
  if (!r.image.isNull()) image_[s]->setPreview(r.image, int(r.tokens.size()));
  image_[s]->setCommitted(run_[s].committed(), run_[s].tokens(), run_[s].vectors());
  image_[s]->refresh();
  maps_[s]->refresh(run_[s]);
  summary_[s]->setText(tr("<b>%1</b>: %2 · %3 tokens, %4 steps, %5 target forwards")
                           .arg(kSideName[s], r.summaryLine().toHtmlEscaped())
                           .arg(r.stats->summary.tokens)
                           .arg(r.stats->summary.steps)
                           .arg(r.stats->summary.target_forwards));
}

void CompareWindow::showRecords(const RunRecord& a, const RunRecord& b) {
  if (running()) return;
  const RunRecord* rec[2] = {&a, &b};
  for (int s = 0; s < 2; ++s) {
    result_[s] = *rec[s];
    const auto& r = *rec[s];
    run_[s].restore(*r.stats, r.tokens, r.elapsedMs, {}, r.vectors);
    image_[s]->startRun(r.gridH(), r.gridW(), r.image.isNull() ? r.gridH() : r.image.height(),
                        r.image.isNull() ? r.gridW() : r.image.width());
    setSide(s, r.stats->settings.method(), relaxOfLabel(r.label));
    showResult(s);
  }
  setPrompt(a.prompt);
  seed_->setValue(int(a.seed));
  updateComparison();
}

void CompareWindow::updateComparison() {
  differing_ = -1;
  diff_map_->data()->clear();
  if (!result_[0] || !result_[1]) {
    speed_->setText(tr("Run both sides to compare time, τ and tokens."));
    identity_->clear();
    diff_plot_->replot();
    return;
  }
  const auto& a = *result_[0];
  const auto& b = *result_[1];
  const double ratio = b.elapsedMs > 0 ? a.elapsedMs / b.elapsedMs : 0;
  speed_->setText(tr("Time A %1 s · B %2 s · <b>speed-up of B over A: %3×</b> · τ A %4 · τ B %5")
                      .arg(a.elapsedMs / 1000.0, 0, 'f', 2)
                      .arg(b.elapsedMs / 1000.0, 0, 'f', 2)
                      .arg(ratio, 0, 'f', 2)
                      .arg(a.stats->summary.tau, 0, 'f', 2)
                      .arg(b.stats->summary.tau, 0, 'f', 2));
  if (a.gridH() != b.gridH() || a.gridW() != b.gridW()) {
    identity_->setText(tr("The two runs have different grids: tokens cannot be compared."));
    diff_plot_->replot();
    return;
  }
  const int h = a.gridH(), w = a.gridW();
  diff_map_->data()->setSize(w, h);
  diff_map_->data()->setRange(QCPRange(0, w - 1), QCPRange(0, h - 1));
  int diff = 0, both = 0;
  for (int c = 0; c < h * w; ++c) {
    const bool have = size_t(c) < a.tokens.size() && size_t(c) < b.tokens.size();
    const bool differs = !have || a.tokens[size_t(c)] != b.tokens[size_t(c)];
    diff += differs ? 1 : 0;
    both += have ? 1 : 0;
    diff_map_->data()->setCell(c % w, c / w, differs ? 1.0 : 0.0);
  }
  differing_ = diff;
  diff_plot_->xAxis->setRange(-0.5, w - 0.5);
  diff_plot_->yAxis->setRange(-0.5, h - 0.5);
  diff_plot_->replot();
  // Token identity is owed when both runs are lossless on the same prompt and seed, and either
  // greedy, or coupled with the same sampling settings (the same Gumbel noise picks every token).
  const bool same_run = a.lossless() && b.lossless() && a.prompt == b.prompt && a.seed == b.seed;
  const bool greedy = a.greedy() && b.greedy();
  const bool coupled =
      a.coupled() && b.coupled() &&
      a.stats->settings.request.sampling.to_json() == b.stats->settings.request.sampling.to_json();
  if (same_run && (greedy || coupled)) {
    const QString how = greedy ? tr("ran greedy") : tr("sampled with the same coupled noise");
    identity_->setText(diff == 0
                           ? tr("<span style='color:#15803d; font-weight:bold'>✓ Identical tokens "
                                "(%1 / %1)</span>: both methods are lossless and %2, so they "
                                "must produce exactly the same image.")
                                 .arg(h * w)
                                 .arg(how)
                           : tr("<span style='color:#b91c1c; font-weight:bold'>✗ Tokens differ "
                                "at %1 of %2 cells</span> although both runs are lossless and "
                                "%3: this is a bug, please report it with both run files.")
                                 .arg(diff)
                                 .arg(h * w)
                                 .arg(how));
  } else {
    QString why;
    if (!a.lossless() || !b.lossless()) {
      why = tr("a relaxed (lossy) method is involved");
    } else if (!a.greedy() || !b.greedy()) {
      why =
          tr("sampling without shared-noise coupling on both sides: lossless methods then match "
             "in distribution, not token by token");
    } else {
      why = tr("the prompts or seeds differ");
    }
    identity_->setText(tr("No token-identity check (%1). <b>%2 of %3 cells differ</b>; the map "
                          "shows where.")
                           .arg(why)
                           .arg(diff)
                           .arg(h * w));
  }
}

void CompareWindow::updateBusy() {
  const bool busy = running();
  run_button_->setEnabled(!busy && model_.has_value() && !prompt_.isEmpty());
  cancel_->setEnabled(busy);
  for (int s = 0; s < 2; ++s) {
    method_[s]->setEnabled(!busy);
    settings_[s]->setEnabled(!busy);
  }
}

}  // namespace adtree::ui
