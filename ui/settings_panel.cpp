#include "ui/settings_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>
#include <nlohmann/json.hpp>

#include "decode/method.h"
#include "ui/collapsible_section.h"
#include "ui/method_names.h"

namespace adtree::ui {

namespace {
bool is_tree(const QString& m) {
  return is_tree_method(m);
}
bool is_jacobi(const QString& m) {
  for (const auto& i : decode::method_table()) {
    if (m == i.key) return i.family == decode::Family::Jacobi;
  }
  return false;
}
}  // namespace

SettingsPanel::SettingsPanel(QWidget* parent) : QWidget(parent) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(6, 6, 6, 6);
  v->setSpacing(6);

  sampling_ = new CollapsibleSection(tr("Sampling"), this);
  auto* f = sampling_->form();
  cfg_ = addReal(f, tr("CFG scale"), 1, 30, 0.5, 2,
                 tr("Classifier-free guidance s: logits = u + s (c - u), mixing the prompt's "
                    "logits c with the unconditional ones u.\nHigher follows the prompt more "
                    "closely, at some loss of variety. 1 = off (half the compute)."));
  cfg_interval_ = addInt(f, tr("CFG until token"), -1, 1 << 20,
                         tr("Use guidance only for image tokens before this index, then the "
                            "prompt's logits alone (saves compute late in the image).\n'always' "
                            "= guide every token."),
                         tr("always"));
  temperature_ = addReal(f, tr("Temperature"), 0, 5, 0.1, 2,
                         tr("Divides the logits before sampling: < 1 sharper and safer, > 1 more "
                            "random.\n'greedy' (0) always takes the most likely token: "
                            "deterministic, and speculative methods must then reproduce AR token "
                            "for token."),
                         tr("greedy"));
  top_k_ = addInt(f, tr("Top-k"), 0, 1 << 20,
                  tr("Sample only among the k most likely tokens (ties with the k-th kept).\n"
                     "'all' = the whole codebook."),
                  tr("all"));
  top_p_ = addReal(f, tr("Top-p"), 0.01, 1, 0.05, 2,
                   tr("Nucleus sampling: keep the most likely tokens until their probability "
                      "mass reaches p.\n1 = off."));
  verify_ =
      addChoice(f, tr("Verification"), {"auto", "coupled", "sampled", "deterministic", "maximal"},
                tr("How drafts are picked and checked when sampling (greedy has one rule).\n"
                   "coupled: every cell has fixed Gumbel noise; AR takes argmax log p + g, "
                   "drafts guess that token and are accepted when they equal it, so every "
                   "method makes AR's picture for the same seed.\nsampled: children drawn "
                   "from the draft q, recursive rejection (SJD: independent re-draws).\n"
                   "deterministic: the draft's top-k children, accepted with p(child) "
                   "(trees).\nmaximal: Jacobi drafts re-drawn by a maximal coupling "
                   "(MC-SJD).\nauto: coupled, or sampled with LANTERN / path relax."));

  static_ = new CollapsibleSection(tr("Static tree (EAGLE-1)"), this);
  static_preset_ = addChoice(static_->form(), tr("Tree"), {"eagle25", "eagle57"},
                             tr("The fixed draft tree: a list of paths, each node the r-th best "
                                "child of its parent.\neagle25: 25 nodes, depth 5; eagle57: 57 "
                                "nodes, depth 5."));

  dynamic_ = new CollapsibleSection(tr("Dynamic tree (EAGLE-2)"), this);
  f = dynamic_->form();
  dyn_depth_ = addInt(f, tr("Depth D"), 1, 32,
                      tr("Expansion rounds of the draft tree (the tree has D + 1 draft levels).\n"
                         "Deeper trees can commit more tokens per step when drafts are good."));
  dyn_width_ = addInt(f, tr("Width K"), 1, 1 << 16,
                      tr("Children expanded per node and nodes kept per level (top-K by "
                         "cumulative draft probability)."));

  budget_ = new CollapsibleSection(tr("Verification budget"), this);
  budget_n_ =
      addInt(budget_->form(), tr("Budget N"), 0, 4096,
             tr("Draft tokens the target verifies in one forward: the N best nodes of the "
                "tree by draft score.\nLarger N accepts more but each step costs more (on a "
                "CPU, FLOPs grow with N).\n'auto' times candidate N when the model loads "
                "and picks the fastest."),
             tr("auto"));

  adt_ = new CollapsibleSection(tr("ADT-Tree"), this);
  f = adt_->form();
  adt_beta_ = addReal(f, tr("Beta"), 0, 1, 0.05, 2,
                      tr("Threshold on the acceptance ratio alpha = accepted / d of the last "
                         "tree.\nalpha >= beta: the next tree goes deeper and narrower (a simple "
                         "region);\nalpha < beta: shallower and wider (a complex region)."));
  adt_mode_ = addChoice(f, tr("Update"), {"bisect", "step"},
                        tr("How (d, k) move after each step.\nbisect: half-way to the bound "
                           "(fast adaptation, the paper's 'bisectional' rule);\nstep: by fixed "
                           "increments (gentler)."));
  adt_adjacency_ = addChoice(
      f, tr("Adjacency"), {"left", "left+up", "none", "random", "confidence"},
      tr("Where each tree's starting shape comes from.\nleft: the cell to "
         "the left (the paper's horizontal adjacency; the cell above at a "
         "row start);\nleft+up: the average of the left and upper "
         "neighbours;\nnone: carry the last shape (pure bisection).\nrandom, confidence: ablation "
         "baselines without adjacency (a random shape per tree; a shape "
         "from the draft's own top-1 confidence)."));
  verify_->setObjectName("verifyRule");
  connect(verify_, &QComboBox::currentIndexChanged, this, &SettingsPanel::updateEnabled);
  adt_budget_rule_ = addChoice(
      f, tr("Budget rule"), {"cost", "fixed", "shape"},
      tr("cost: each step picks the tree (d, k, N, grid candidates) that commits the most "
         "tokens per millisecond on this machine, from its timed cost curve and the "
         "acceptance the neighbourhood predicts, within the adjacency shape; down to no "
         "draft at all where no tree pays.\nfixed: every tree keeps the budget N's best "
         "nodes.\nshape: N follows the shape, min(d x k, N), so a shallow-wide tree is "
         "not cut back to the same N as a deep one."));
  adt_budget_rule_->setObjectName("adtBudgetRule");
  adt_grid_ = new QCheckBox(tr("codes above as free candidates"), adt_);
  adt_grid_->setToolTip(
      tr("Cost rule: offer free draft candidates without a draft-head call: the "
         "target's own guesses from rows it rejected, else the committed codes above "
         "the next cells (flat regions repeat codes). Used with the coupled rule and "
         "at temperature 0."));
  f->addRow(tr("Grid"), adt_grid_);
  f->labelForField(adt_grid_)->setToolTip(adt_grid_->toolTip());
  connect(adt_grid_, &QCheckBox::toggled, this, &SettingsPanel::changed);
  adt_leftover_ = addReal(f, tr("Guess worth"), 0, 1, 0.05, 2,
                          tr("Cost rule: the tokens a guess left for the next step is worth.\n"
                             "Each free candidate verified but not committed leaves the "
                             "target's guess for its cell,\nwhich the next step offers without "
                             "a draft-head call. 0: plan one step only."));
  adt_leftover_->setObjectName("adtLeftover");
  adt_d0_ = addInt(f, tr("Start depth d0"), 1, 64, tr("Draft levels of the very first tree."));
  adt_k0_ = addInt(f, tr("Start width k0"), 1, 1 << 16, tr("Width of the very first tree."));
  adt_dmin_ = addInt(f, tr("Depth min"), 1, 64, tr("Lower bound on the draft levels d."));
  adt_dmax_ = addInt(f, tr("Depth max"), 1, 64, tr("Upper bound on the draft levels d."));
  adt_kmin_ = addInt(f, tr("Width min"), 1, 1 << 16, tr("Lower bound on the width k."));
  adt_kmax_ = addInt(f, tr("Width max"), 1, 1 << 16, tr("Upper bound on the width k."));
  adt_step_d_ = addInt(f, tr("Step d"), 1, 64, tr("Depth increment of the 'step' update mode."));
  adt_step_k_ =
      addInt(f, tr("Step k"), 1, 1 << 16, tr("Width increment of the 'step' update mode."));

  lantern_ = new CollapsibleSection(tr("LANTERN (relaxed acceptance)"), this);
  f = lantern_->form();
  auto* note = new QLabel(tr("Lossy: accepts a draft if it is close in the VQ codebook to what the "
                             "target would take. Faster, slightly different images."),
                          lantern_);
  note->setWordWrap(true);
  note->setStyleSheet("color: palette(placeholder-text);");
  f->addRow(note);
  lantern_mode_ = addChoice(f, tr("Mode"), {"delta", "lambda"},
                            tr("delta (LANTERN): give a draft the probability of its nearest "
                               "codes up to a total-variation budget delta.\nlambda (LANTERN++): "
                               "up to (lambda - 1) times the draft's own probability."));
  lantern_k_ = addInt(f, tr("Neighbours k"), 1, 1 << 16,
                      tr("Nearest codes (by codebook L2 distance) considered per draft token."));
  lantern_delta_ = addReal(f, tr("Delta"), 0, 1, 0.01, 3,
                           tr("Total-variation budget (delta mode): how much probability from "
                              "neighbouring codes may count for the draft. 0 = lossless."));
  lantern_lambda_ = addReal(f, tr("Lambda"), 1.01, 50, 0.25, 2,
                            tr("Ratio (lambda mode): neighbours may add up to (lambda - 1) p(x). "
                               "Closer to 1 = closer to lossless."));

  cascade_ = new CollapsibleSection(tr("CASCADE (relaxed acceptance)"), this);
  f = cascade_->form();
  auto* cnote = new QLabel(tr("Lossy: a draft earns a bonus when the target barely changes its "
                              "mind after it, or when drafts of its level that the draft head "
                              "sees alike carry the target's mass. Thresholds above 1 switch a "
                              "signal off."),
                           cascade_);
  cnote->setWordWrap(true);
  cnote->setStyleSheet("color: palette(placeholder-text);");
  f->addRow(cnote);
  cascade_tau_c_ = addReal(f, tr("Convergence cos"), -1, 2, 0.05, 3,
                           tr("tau_c: a draft whose target logits have at least this cosine with "
                              "its parent's earns that cosine as a bonus (above 1 = off)."));
  cascade_kappa_ = addReal(f, tr("Uncertainty gate"), 0, 100, 0.5, 2,
                           tr("kappa: the convergence bonus applies only while the target is "
                              "uncertain, KL(p || softmax(z / |z|)) below this."));
  cascade_tau_s_ = addReal(f, tr("Interchangeable cos"), -1, 2, 0.05, 3,
                           tr("tau_s: drafts of one level whose draft-head rows have at least this "
                              "cosine lend each other their tokens' target mass (above 1 = off)."));
  cascade_scope_ = addChoice(f, tr("Interchangeable"), {"level", "siblings"},
                             tr("level: any draft of the same depth; siblings: only drafts under "
                                "the same parent."));

  jacobi_ = new CollapsibleSection(tr("Jacobi (SJD, PathSpec, SJD-PAC)"), this);
  f = jacobi_->form();
  jac_window_ = addInt(f, tr("Window L"), 1, 4096,
                       tr("Draft tokens guessed ahead and refined in parallel each step "
                          "(training-free, no draft head)."));
  jac_spatial_ = new QCheckBox(tr("initialise from the left token"), jacobi_);
  jac_spatial_->setToolTip(
      tr("Start each new draft from the token to its left (images repeat "
         "locally) instead of a random code."));
  f->addRow(tr("Spatial init"), jac_spatial_);
  f->labelForField(jac_spatial_)->setToolTip(jac_spatial_->toolTip());
  connect(jac_spatial_, &QCheckBox::toggled, this, &SettingsPanel::changed);
  jac_paths_ = addInt(f, tr("Paths K"), 1, 64,
                      tr("PathSpec: parallel Jacobi chains sharing the root; the one with the "
                         "longest accepted prefix wins."));
  jac_path_length_ = addInt(f, tr("Path length N"), 1, 4096,
                            tr("PathSpec: draft tokens along each chain (the paper's 2 x 12 "
                               "default: 2 paths of 12)."));
  jac_relax_ = addReal(f, tr("Path relax"), 0, 10, 0.05, 2,
                       tr("PathRelax lambda (lossy): adds lambda times the mean probability other "
                          "paths give a token. 0 = off, lossless."));
  jac_pac_width_ = addInt(f, tr("PAC width K"), 1, 16,
                          tr("SJD-PAC: candidates tried for each of the first window cells (the "
                             "draft and K - 1 more from the same distribution)."));
  jac_pac_levels_ = addInt(f, tr("PAC levels"), 0, 3,
                           tr("SJD-PAC: how many window cells after the root get K candidates "
                              "(a K-ary tree); 0 = SJD with kept drafts."));
  jac_pac_width_->setObjectName("jacobiPacWidth");
  jac_pac_levels_->setObjectName("jacobiPacLevels");
  jac_start_margin_ = addInt(f, tr("Start margin"), 0, 1 << 16,
                             tr("Plain AR (no drafts) for the first M image tokens, where the "
                                "picture has no context to guess from yet."));
  jac_stop_margin_ =
      addInt(f, tr("Stop margin"), 0, 1 << 16, tr("Plain AR for the last M image tokens."));
  // Shown only while the settings make PathSpec lossy, in the words of the CLI's help.
  jac_lossy_ = new QLabel(tr("Lossy: with more than one path and no shared-noise coupling, taking "
                             "the longest accepted chain biases the samples; PathRelax changes the "
                             "target distribution."),
                          jacobi_);
  jac_lossy_->setObjectName("pathspecLossyNote");
  jac_paths_->setObjectName("jacobiPaths");
  jac_path_length_->setObjectName("jacobiPathLength");
  jac_relax_->setObjectName("jacobiPathRelax");
  jac_lossy_->setWordWrap(true);
  jac_lossy_->setStyleSheet("color: #b35900;");
  f->addRow(jac_lossy_);
  connect(jac_paths_, QOverload<int>::of(&QSpinBox::valueChanged), this,
          &SettingsPanel::updateEnabled);
  connect(jac_relax_, QOverload<double>::of(&QDoubleSpinBox::valueChanged), this,
          &SettingsPanel::updateEnabled);

  buildPjdSection();
  for (auto* s : {sampling_, static_, dynamic_, budget_, adt_, lantern_, cascade_, jacobi_, pjd_})
    v->addWidget(s);
  auto* reset = new QPushButton(tr("Reset to defaults"), this);
  reset->setToolTip(tr("The model's default sampling and the project's default tree settings."));
  connect(reset, &QPushButton::clicked, this, &SettingsPanel::resetToDefaults);
  v->addWidget(reset);
  v->addStretch(1);

  connect(adt_mode_, &QComboBox::currentIndexChanged, this, &SettingsPanel::updateEnabled);
  connect(lantern_mode_, &QComboBox::currentIndexChanged, this, &SettingsPanel::updateEnabled);
  resetToDefaults();
  setMethod("ar", decode::Acceptance::Lossless);
}

QSpinBox* SettingsPanel::addInt(QFormLayout* f, const QString& label, int lo, int hi,
                                const QString& tip, const QString& special) {
  auto* w = new QSpinBox(this);
  w->setRange(lo, hi);
  w->setToolTip(tip);
  if (!special.isEmpty()) w->setSpecialValueText(special);
  w->setAccelerated(true);
  f->addRow(label, w);
  f->labelForField(w)->setToolTip(tip);
  connect(w, &QSpinBox::valueChanged, this, &SettingsPanel::changed);
  return w;
}

QDoubleSpinBox* SettingsPanel::addReal(QFormLayout* f, const QString& label, double lo, double hi,
                                       double step, int decimals, const QString& tip,
                                       const QString& special) {
  auto* w = new QDoubleSpinBox(this);
  w->setRange(lo, hi);
  w->setSingleStep(step);
  w->setDecimals(decimals);
  w->setToolTip(tip);
  if (!special.isEmpty()) w->setSpecialValueText(special);
  f->addRow(label, w);
  f->labelForField(w)->setToolTip(tip);
  connect(w, &QDoubleSpinBox::valueChanged, this, &SettingsPanel::changed);
  return w;
}

void SettingsPanel::buildPjdSection() {
  pjd_ = new CollapsibleSection(tr("PJD (parallel rows)"), this);
  auto* f = pjd_->form();
  auto* note = new QLabel(tr("Lossy with more than one row: a row below commits before the rows "
                             "above it are final. One row at a time is lossless."),
                          pjd_);
  note->setWordWrap(true);
  note->setStyleSheet("color: #b35900;");
  f->addRow(note);
  pjd_window_ = addInt(f, tr("Window"), 1, 64,
                       tr("Tokens each row feeds per step: its newest token and window - 1 "
                          "drafts for the cells after it."));
  pjd_offset_ = addInt(f, tr("Row offset"), 1, 1 << 16,
                       tr("A row starts once the row above has this many tokens."));
  pjd_rows_ = addInt(f, tr("Rows at most"), 0, 64,
                     tr("Active rows at most; 0 = as many as the offset allows, 1 = one row at a "
                        "time (lossless)."),
                     tr("no limit"));
  pjd_mask_ = new QCheckBox(tr("row-causal"), pjd_);
  pjd_mask_->setToolTip(
      tr("A row's drafts see no other row's drafts, only committed tokens (the "
         "paper's mask); off: they also see the drafts of the rows above."));
  f->addRow(tr("Mask"), pjd_mask_);
  connect(pjd_mask_, &QCheckBox::toggled, this, &SettingsPanel::changed);
  pjd_spatial_ = new QCheckBox(tr("above, else left"), pjd_);
  pjd_spatial_->setToolTip(
      tr("New guesses copy the token above (else the one to the left); off: "
         "random codes, as in the paper."));
  f->addRow(tr("Spatial init"), pjd_spatial_);
  connect(pjd_spatial_, &QCheckBox::toggled, this, &SettingsPanel::changed);
}

QComboBox* SettingsPanel::addChoice(QFormLayout* f, const QString& label, const QStringList& items,
                                    const QString& tip) {
  auto* w = new QComboBox(this);
  w->addItems(items);
  w->setToolTip(tip);
  f->addRow(label, w);
  f->labelForField(w)->setToolTip(tip);
  connect(w, &QComboBox::currentIndexChanged, this, &SettingsPanel::changed);
  return w;
}

void SettingsPanel::setMethod(const QString& method, decode::Acceptance relax) {
  method_ = method;
  relax_ = relax;
  static_->setVisible(method == "static");
  dynamic_->setVisible(method == "dynamic");
  budget_->setVisible(method == "dynamic" || method == "adt");
  adt_->setVisible(method == "adt");
  lantern_->setVisible(relax == decode::Acceptance::Lantern && is_tree(method));
  cascade_->setVisible(relax == decode::Acceptance::Cascade && is_tree(method));
  jacobi_->setVisible(is_jacobi(method) && method != "pjd");
  pjd_->setVisible(method == "pjd");
  updateEnabled();
}

void SettingsPanel::updateEnabled() {
  const bool step = adt_mode_->currentText() == "step";
  adt_step_d_->setEnabled(step);
  adt_step_k_->setEnabled(step);
  const bool delta = lantern_mode_->currentText() == "delta";
  lantern_delta_->setEnabled(delta);
  lantern_lambda_->setEnabled(!delta);
  const bool pathspec = method_ == "pathspec";
  jac_paths_->setEnabled(pathspec);
  jac_path_length_->setEnabled(pathspec);
  jac_relax_->setEnabled(pathspec);
  jac_window_->setEnabled(!pathspec);  // PathSpec drafts along its paths, not in one window
  jac_pac_width_->setEnabled(method_ == "sjd-pac");
  jac_pac_levels_->setEnabled(method_ == "sjd-pac");
  // Shared-noise coupling makes every chain commit AR's tokens: then only PathRelax is lossy.
  const auto rule = verify_->currentText();
  const bool coupled = rule == "coupled" || (rule == "auto" && jac_relax_->value() <= 0);
  jac_lossy_->setVisible(pathspec &&
                         ((jac_paths_->value() > 1 && !coupled) || jac_relax_->value() > 0));
}

void SettingsPanel::setModel(const decode::SamplingParams& defaultSampling, qint64 vocabSize,
                             qint64 imageTokens, bool applyDefaults) {
  model_sampling_ = defaultSampling;
  vocab_size_ = vocabSize;
  image_tokens_ = imageTokens;
  const int v = int(std::min<qint64>(vocabSize, 1 << 20));
  top_k_->setMaximum(v);
  dyn_width_->setMaximum(v);
  adt_k0_->setMaximum(v);
  adt_kmin_->setMaximum(v);
  adt_kmax_->setMaximum(v);
  lantern_k_->setMaximum(std::max(1, v - 1));
  cfg_interval_->setMaximum(int(imageTokens));
  jac_window_->setMaximum(std::max(1, int(imageTokens) - 1));
  jac_path_length_->setMaximum(std::max(1, int(imageTokens) - 1));
  jac_start_margin_->setMaximum(int(imageTokens));
  jac_stop_margin_->setMaximum(int(imageTokens));
  if (!applyDefaults) return;
  // The model's sampling defaults (its author's choice) replace whatever the last model used.
  const auto& p = defaultSampling;
  QSignalBlocker b1(cfg_), b2(cfg_interval_), b3(temperature_), b4(top_k_), b5(top_p_);
  cfg_->setValue(p.cfg_scale);
  cfg_interval_->setValue(int(p.cfg_interval));
  temperature_->setValue(p.temperature);
  top_k_->setValue(int(p.top_k));
  top_p_->setValue(p.top_p);
  Q_EMIT changed();
}

decode::DecodeRequest SettingsPanel::request(const QString& method, decode::Acceptance relax,
                                             quint64 seed) const {
  decode::DecodeRequest r;
  r.seed = seed;
  auto& s = r.sampling;
  s.cfg_scale = cfg_->value();
  s.cfg_interval = cfg_interval_->value();
  s.temperature = temperature_->value();
  s.top_k = top_k_->value();
  s.top_p = top_p_->value();
  auto& m = r.method;
  m.method = decode::method_from_string(method.toStdString());
  m.static_tree.preset = static_preset_->currentText().toStdString();
  m.dynamic_tree.depth = dyn_depth_->value();
  m.dynamic_tree.width = dyn_width_->value();
  m.dynamic_tree.budget = budget_n_->value();
  auto& a = m.adt;
  a.d0 = adt_d0_->value();
  a.k0 = adt_k0_->value();
  a.d_min = adt_dmin_->value();
  a.d_max = adt_dmax_->value();
  a.k_min = adt_kmin_->value();
  a.k_max = adt_kmax_->value();
  a.beta = adt_beta_->value();
  a.mode = decode::adt_mode_from_string(adt_mode_->currentText().toStdString());
  a.step_d = adt_step_d_->value();
  a.step_k = adt_step_k_->value();
  a.adjacency = decode::adjacency_from_string(adt_adjacency_->currentText().toStdString());
  a.budget_rule = decode::adt_budget_from_string(adt_budget_rule_->currentText().toStdString());
  a.grid = adt_grid_->isChecked();
  a.leftover = adt_leftover_->value();
  m.verify = decode::verify_rule_from_string(verify_->currentText().toStdString());
  m.acceptance = is_tree(method) ? relax : decode::Acceptance::Lossless;
  m.lantern.mode = lantern_mode_->currentText() == "delta" ? decode::LanternMode::Delta
                                                           : decode::LanternMode::Lambda;
  m.lantern.k = lantern_k_->value();
  m.lantern.delta = lantern_delta_->value();
  m.lantern.lambda = lantern_lambda_->value();
  m.cascade.tau_s = cascade_tau_s_->value();
  m.cascade.tau_c = cascade_tau_c_->value();
  m.cascade.kappa = cascade_kappa_->value();
  m.cascade.siblings_only = cascade_scope_->currentText() == "siblings";
  m.jacobi.window = jac_window_->value();
  m.jacobi.spatial_init = jac_spatial_->isChecked();
  m.jacobi.paths = jac_paths_->value();
  m.jacobi.path_relax = jac_relax_->value();
  m.jacobi.path_length = jac_path_length_->value();
  m.jacobi.pac_width = jac_pac_width_->value();
  m.jacobi.pac_levels = jac_pac_levels_->value();
  m.jacobi.start_margin = jac_start_margin_->value();
  m.jacobi.stop_margin = jac_stop_margin_->value();
  m.pjd.window = pjd_window_->value();
  m.pjd.row_offset = pjd_offset_->value();
  m.pjd.max_rows = pjd_rows_->value();
  m.pjd.row_mask = pjd_mask_->isChecked();
  m.pjd.spatial_init = pjd_spatial_->isChecked();
  return r;
}

void SettingsPanel::setRequest(const decode::DecodeRequest& r) {
  // One "changed" for the whole update, not one per widget.
  const QSignalBlocker block(this);
  const auto& s = r.sampling;
  cfg_->setValue(s.cfg_scale);
  cfg_interval_->setValue(int(s.cfg_interval));
  temperature_->setValue(s.temperature);
  top_k_->setValue(int(s.top_k));
  top_p_->setValue(s.top_p);
  const auto& m = r.method;
  static_preset_->setCurrentText(QString::fromStdString(m.static_tree.preset));
  dyn_depth_->setValue(int(m.dynamic_tree.depth));
  dyn_width_->setValue(int(m.dynamic_tree.width));
  budget_n_->setValue(int(m.dynamic_tree.budget));
  const auto& a = m.adt;
  adt_d0_->setValue(int(a.d0));
  adt_k0_->setValue(int(a.k0));
  adt_dmin_->setValue(int(a.d_min));
  adt_dmax_->setValue(int(a.d_max));
  adt_kmin_->setValue(int(a.k_min));
  adt_kmax_->setValue(int(a.k_max));
  adt_beta_->setValue(a.beta);
  adt_mode_->setCurrentText(QString::fromStdString(decode::to_string(a.mode)));
  adt_step_d_->setValue(int(a.step_d));
  adt_step_k_->setValue(int(a.step_k));
  adt_adjacency_->setCurrentText(QString::fromStdString(decode::to_string(a.adjacency)));
  adt_budget_rule_->setCurrentText(QString::fromStdString(decode::to_string(a.budget_rule)));
  adt_grid_->setChecked(a.grid);
  adt_leftover_->setValue(a.leftover);
  verify_->setCurrentText(QString::fromStdString(decode::to_string(m.verify)));
  lantern_mode_->setCurrentIndex(m.lantern.mode == decode::LanternMode::Delta ? 0 : 1);
  lantern_k_->setValue(int(m.lantern.k));
  lantern_delta_->setValue(m.lantern.delta);
  lantern_lambda_->setValue(m.lantern.lambda);
  cascade_tau_s_->setValue(m.cascade.tau_s);
  cascade_tau_c_->setValue(m.cascade.tau_c);
  cascade_kappa_->setValue(m.cascade.kappa);
  cascade_scope_->setCurrentIndex(m.cascade.siblings_only ? 1 : 0);
  jac_window_->setValue(int(m.jacobi.window));
  jac_spatial_->setChecked(m.jacobi.spatial_init);
  jac_paths_->setValue(int(m.jacobi.paths));
  jac_relax_->setValue(m.jacobi.path_relax);
  jac_path_length_->setValue(int(m.jacobi.path_length));
  jac_pac_width_->setValue(int(m.jacobi.pac_width));
  jac_pac_levels_->setValue(int(m.jacobi.pac_levels));
  jac_start_margin_->setValue(int(m.jacobi.start_margin));
  jac_stop_margin_->setValue(int(m.jacobi.stop_margin));
  pjd_window_->setValue(int(m.pjd.window));
  pjd_offset_->setValue(int(m.pjd.row_offset));
  pjd_rows_->setValue(int(m.pjd.max_rows));
  pjd_mask_->setChecked(m.pjd.row_mask);
  pjd_spatial_->setChecked(m.pjd.spatial_init);
  updateEnabled();
}

void SettingsPanel::resetToDefaults() {
  decode::DecodeRequest r;
  r.sampling = model_sampling_;
  setRequest(r);
  Q_EMIT changed();
}

QString SettingsPanel::saveState() const {
  const auto r = request(method_, relax_, 0);
  nlohmann::json j = {{"method_settings", r.method.to_json()}, {"sampling", r.sampling.to_json()}};
  return QString::fromStdString(j.dump());
}

void SettingsPanel::restoreState(const QString& text) {
  if (text.isEmpty()) return;
  try {
    const auto j = nlohmann::json::parse(text.toStdString());
    decode::DecodeRequest r;
    if (j.contains("method_settings"))
      r.method = decode::MethodSettings::from_json(j["method_settings"]);
    if (j.contains("sampling"))
      r.sampling = decode::SamplingParams::from_json(j["sampling"], r.sampling);
    setRequest(r);
  } catch (const std::exception&) {
    // Settings from another version that no longer parse: keep the defaults rather than fail.
  }
}

}  // namespace adtree::ui
