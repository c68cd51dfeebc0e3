#include "ui/panels/settings_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>
#include <cmath>
#include <nlohmann/json.hpp>

#include "ui/panels/collapsible_section.h"

namespace adtree::ui {

namespace {
constexpr int kWidgetTop = 1 << 20;  // a spin box's top where the setting has no finite one

QString tip_of(const decode::Setting& s) {
  QString tip = QString::fromStdString(s.help_text);
  if (!tip.isEmpty()) tip[0] = tip[0].toUpper();
  return tip;
}

QLabel* note_label(const QString& text, bool warning, QWidget* parent) {
  auto* note = new QLabel(text, parent);
  note->setWordWrap(true);
  note->setStyleSheet(warning ? "color: #b35900;" : "color: palette(placeholder-text);");
  return note;
}
}  // namespace

SettingsPanel::SettingsPanel(QWidget* parent) : QWidget(parent) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(6, 6, 6, 6);
  v->setSpacing(6);
  buildSections(v);
  buildSamplingRows(sections_.at("sampling")->form());
  for (const auto& s : decode::method_settings_table()) {
    if (!s.section.empty()) addRow(s);
  }
  // Shown only while the settings make PathSpec lossy, in the words of the CLI's help.
  jac_lossy_ = note_label(tr("Lossy: with more than one path and no shared-noise coupling, taking "
                             "the longest accepted chain biases the samples; PathRelax changes the "
                             "target distribution."),
                          true, this);
  jac_lossy_->setObjectName("pathspecLossyNote");
  sections_.at("jacobi")->form()->addRow(jac_lossy_);

  auto* reset = new QPushButton(tr("Reset to defaults"), this);
  reset->setToolTip(tr("The model's default sampling and the project's default tree settings."));
  connect(reset, &QPushButton::clicked, this, &SettingsPanel::resetToDefaults);
  v->addWidget(reset);
  v->addStretch(1);
  resetToDefaults();
  setMethod(decode::Method::Ar, decode::Acceptance::Lossless);
}

void SettingsPanel::buildSections(QVBoxLayout* v) {
  for (const auto& sec : decode::method_setting_sections()) {
    auto* section = new CollapsibleSection(tr(sec.title.c_str()), this);
    section->setObjectName(QString::fromStdString(sec.id) + "Section");
    if (!sec.note.empty())
      section->form()->addRow(note_label(tr(sec.note.c_str()), sec.warning, section));
    sections_[sec.id] = section;
    v->addWidget(section);
  }
}

void SettingsPanel::buildSamplingRows(QFormLayout* f) {
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
}

// A row for one entry of the settings table: its editor named by the entry's key ("adt.beta"),
// its range, step and help from the entry.
void SettingsPanel::addRow(const decode::Setting& s) {
  auto* section = sections_.at(s.section);
  QWidget* editor = makeEditor(s);
  editor->setObjectName(QString::fromStdString(s.key));
  editor->setToolTip(tip_of(s));
  section->form()->addRow(tr(s.label.c_str()), editor);
  section->form()->labelForField(editor)->setToolTip(editor->toolTip());
  rows_.push_back({&s, editor, section});
}

QWidget* SettingsPanel::makeEditor(const decode::Setting& s) {
  using decode::SettingType;
  std::string special = s.special;
  for (const auto& [word, value] : s.named) {
    if (value == s.lo && special.empty()) special = word;
  }
  const double top = std::isfinite(s.hi) ? s.hi : s.top > 0 ? s.top : kWidgetTop;
  if (s.type == SettingType::Int) {
    auto* w = new QSpinBox(this);
    w->setRange(int(s.lo), int(std::min<double>(top, kWidgetTop)));
    w->setSpecialValueText(QString::fromStdString(special));
    w->setAccelerated(true);
    connect(w, &QSpinBox::valueChanged, this, &SettingsPanel::updateEnabled);
    return w;
  }
  if (s.type == SettingType::Real) {
    auto* w = new QDoubleSpinBox(this);
    w->setDecimals(s.decimals);
    // An open lower bound (LANTERN's lambda > 1) starts one display step above it.
    w->setRange(s.lo_open ? s.lo + std::pow(10.0, -s.decimals) : s.lo, top);
    w->setSingleStep(s.step);
    w->setSpecialValueText(QString::fromStdString(special));
    connect(w, &QDoubleSpinBox::valueChanged, this, &SettingsPanel::updateEnabled);
    return w;
  }
  if (s.type == SettingType::Bool) {
    auto* w = new QCheckBox(tr(s.check_label.c_str()), this);
    connect(w, &QCheckBox::toggled, this, &SettingsPanel::updateEnabled);
    return w;
  }
  if (s.type == SettingType::Text) {  // a file name (none has a row yet)
    auto* w = new QLineEdit(this);
    connect(w, &QLineEdit::editingFinished, this, &SettingsPanel::updateEnabled);
    return w;
  }
  auto* w = new QComboBox(this);
  for (const auto& c : s.choices) w->addItem(QString::fromStdString(c));
  connect(w, &QComboBox::currentIndexChanged, this, &SettingsPanel::updateEnabled);
  return w;
}

decode::SettingValue SettingsPanel::valueOf(const Row& r) const {
  using decode::SettingType;
  switch (r.setting->type) {
    case SettingType::Int:
      return int64_t(static_cast<QSpinBox*>(r.editor)->value());
    case SettingType::Real:
      return static_cast<QDoubleSpinBox*>(r.editor)->value();
    case SettingType::Bool:
      return static_cast<QCheckBox*>(r.editor)->isChecked();
    case SettingType::Text:
      return static_cast<QLineEdit*>(r.editor)->text().toStdString();
    case SettingType::Choice:
      break;
  }
  return static_cast<QComboBox*>(r.editor)->currentText().toStdString();
}

void SettingsPanel::setValueOf(const Row& r, const decode::SettingValue& v) {
  using decode::SettingType;
  switch (r.setting->type) {
    case SettingType::Int:
      static_cast<QSpinBox*>(r.editor)->setValue(int(std::get<int64_t>(v)));
      return;
    case SettingType::Real:
      static_cast<QDoubleSpinBox*>(r.editor)->setValue(std::get<double>(v));
      return;
    case SettingType::Bool:
      static_cast<QCheckBox*>(r.editor)->setChecked(std::get<bool>(v));
      return;
    case SettingType::Text:
      static_cast<QLineEdit*>(r.editor)->setText(QString::fromStdString(std::get<std::string>(v)));
      return;
    case SettingType::Choice:
      static_cast<QComboBox*>(r.editor)->setCurrentText(
          QString::fromStdString(std::get<std::string>(v)));
      return;
  }
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

void SettingsPanel::setMethod(decode::Method method, decode::Acceptance relax) {
  method_ = method;
  relax_ = relax;
  updateEnabled();
}

// A row is enabled while the chosen method (and rule) reads it, and a section shown while one of
// its rows is; each change also says "changed".
void SettingsPanel::updateEnabled() {
  const auto m = request(method_, relax_, 0).method;
  std::map<CollapsibleSection*, bool> used;
  for (const auto& r : rows_) {
    const bool reads = r.setting->read_by(m);
    r.editor->setEnabled(reads);
    used[r.section] = used[r.section] || reads;
  }
  for (const auto& [section, any] : used) {
    if (section != sections_.at("sampling")) section->setVisible(any);
  }
  // Shared-noise coupling makes every chain commit AR's tokens: then only PathRelax is lossy.
  const auto& j = m.jacobi;
  const bool coupled = m.verify == decode::VerifyRule::Coupled ||
                       (m.verify == decode::VerifyRule::Auto && j.path_relax <= 0);
  jac_lossy_->setVisible(m.method == decode::Method::PathSpec &&
                         ((j.paths > 1 && !coupled) || j.path_relax > 0));
  Q_EMIT changed();
}

void SettingsPanel::setModel(const decode::SamplingParams& defaultSampling, qint64 vocabSize,
                             qint64 imageTokens, bool applyDefaults) {
  model_sampling_ = defaultSampling;
  vocab_size_ = vocabSize;
  image_tokens_ = imageTokens;
  fitToModel();
  top_k_->setMaximum(int(std::min<qint64>(vocabSize, kWidgetTop)));
  cfg_interval_->setMaximum(int(imageTokens));
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

void SettingsPanel::setLoadedModel(const engine::ModelInfo& info) {
  const QString dirKey = QDir(QString::fromStdString(info.dir)).absolutePath();
  QSettings qs;
  setModel(info.default_sampling, info.codebook_size, info.grid_h * info.grid_w,
           qs.value("model/last").toString() != dirKey);
  qs.setValue("model/last", dirKey);
}

// The rows' upper ends from the model's codebook and image size (the table's model bounds).
void SettingsPanel::fitToModel() {
  const decode::ModelLimits limits{vocab_size_, image_tokens_};
  for (const auto& r : rows_) {
    const double top = r.setting->upper(limits);
    if (!std::isfinite(top) || r.setting->bound == decode::Bound::None) continue;
    if (auto* w = qobject_cast<QSpinBox*>(r.editor))
      w->setMaximum(int(std::max<double>(r.setting->lo, std::min<double>(top, kWidgetTop))));
  }
}

std::optional<decode::DecodeRequest> SettingsPanel::validRequest(decode::Method method,
                                                                 decode::Acceptance relax) const {
  try {
    return request(method, relax, 0);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

decode::DecodeRequest SettingsPanel::request(decode::Method method, decode::Acceptance relax,
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
  m = hidden_;
  m.method = method;
  m.acceptance = is_tree(m.method) ? relax : decode::Acceptance::Lossless;
  for (const auto& row : rows_) row.setting->set(m, valueOf(row));
  return r;
}

void SettingsPanel::setRequest(const decode::DecodeRequest& r) {
  {
    // One "changed" for the whole update (updateEnabled's), not one per widget.
    const QSignalBlocker block(this);
    std::vector<QSignalBlocker> quiet;
    for (const auto& row : rows_) quiet.emplace_back(row.editor);
    const auto& s = r.sampling;
    cfg_->setValue(s.cfg_scale);
    cfg_interval_->setValue(int(s.cfg_interval));
    temperature_->setValue(s.temperature);
    top_k_->setValue(int(s.top_k));
    top_p_->setValue(s.top_p);
    hidden_ = r.method;
    for (const auto& row : rows_) setValueOf(row, row.setting->get(r.method));
  }
  updateEnabled();
}

void SettingsPanel::resetToDefaults() {
  decode::DecodeRequest r;
  r.sampling = model_sampling_;
  setRequest(r);
}

QString SettingsPanel::saveState() const {
  const auto r = request(method_, relax_, 0);
  nlohmann::json j = {{"method_settings", r.method.to_json()}, {"sampling", r.sampling.to_json()}};
  return QString::fromStdString(j.dump());
}

QWidget* SettingsPanel::inScrollArea() {
  auto* scroll = new QScrollArea;
  scroll->setWidget(this);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  scroll->setMinimumWidth(sizeHint().width() + scroll->verticalScrollBar()->sizeHint().width() + 4);
  return scroll;
}

void SettingsPanel::loadSettings(const QSettings& s) {
  restoreState(s.value("run/settings").toString());
}

void SettingsPanel::saveSettings(QSettings& s) const {
  s.setValue("run/settings", saveState());
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
