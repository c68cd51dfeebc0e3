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

#include "decode/settings/method_table.h"
#include "decode/settings/setting.h"
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
  // Shown while the method's own settings make the run lossy, in the words of its row
  // (decode/settings/method_table.h), which the CLI's help and the run's statistics read too.
  lossy_note_ = note_label({}, true, this);
  lossy_note_->setObjectName("lossyNote");
  v->addWidget(lossy_note_);
  buildSections(v);
  for (const auto& s : decode::settings_table()) {
    if (!s.section.empty()) addRow(s);
  }

  auto* reset = new QPushButton(tr("Reset to defaults"), this);
  reset->setToolTip(tr("The model's default sampling and the project's default tree settings."));
  connect(reset, &QPushButton::clicked, this, &SettingsPanel::resetToDefaults);
  v->addWidget(reset);
  v->addStretch(1);
  resetToDefaults();
  setMethod(decode::Method::Ar, decode::Acceptance::Lossless);
}

void SettingsPanel::buildSections(QVBoxLayout* v) {
  for (const auto& sec : decode::setting_sections()) {
    auto* section = new CollapsibleSection(tr(sec.title.c_str()), this);
    section->setObjectName(QString::fromStdString(sec.id) + "Section");
    if (!sec.note.empty())
      section->form()->addRow(note_label(tr(sec.note.c_str()), sec.warning, section));
    sections_[sec.id] = section;
    v->addWidget(section);
  }
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

void SettingsPanel::setMethod(decode::Method method, decode::Acceptance relax) {
  method_ = method;
  relax_ = relax;
  updateEnabled();
}

// A row is enabled while the chosen method (and rule) reads it, and a section shown while one of
// its rows is; each change also says "changed".
void SettingsPanel::updateEnabled() {
  const auto r = request(method_, relax_, 0);
  const auto& m = r.method;
  std::map<CollapsibleSection*, bool> used;
  for (const auto& r : rows_) {
    const bool kind_reads = r.setting->read_on(token_kind_, model_kind_);
    const bool reads = r.setting->read_by(m) && kind_reads;
    r.editor->setEnabled(reads);
    QString tip = tip_of(*r.setting);
    if (!r.setting->read_on(token_kind_)) {
      tip += token_kind_ == decode::TokenKind::Vectors
                 ? tr("\n\nNot read by this model: its tokens are vectors.")
                 : tr("\n\nNot read by this model: its tokens are VQ codes.");
    } else if (!kind_reads) {
      tip += tr("\n\nNot read by this model: its tokens are vectors made in raster order.");
    }
    r.editor->setToolTip(tip);
    used[r.section] = used[r.section] || reads;
  }
  for (const auto& [section, any] : used) {
    if (section != sections_.at("sampling")) section->setVisible(any);
  }
  // LANTERN and CASCADE say so in their own sections; this is the method's own rule.
  const auto& row = decode::method_info(m.method);
  lossy_note_->setText(tr("This run is lossy %1.").arg(QString::fromUtf8(row.lossy_note)));
  lossy_note_->setVisible(!row.lossless(r));
  Q_EMIT changed();
}

void SettingsPanel::setModel(const decode::SamplingParams& defaultSampling, qint64 vocabSize,
                             qint64 imageTokens, bool applyDefaults) {
  model_sampling_ = defaultSampling;
  vocab_size_ = vocabSize;
  image_tokens_ = imageTokens;
  fitToModel();
  if (!applyDefaults) return;
  // The model's sampling defaults (its author's choice) replace whatever the last model used.
  decode::DecodeRequest r;
  r.sampling = defaultSampling;
  for (const auto& row : rows_) {
    if (row.setting->scope != decode::Scope::Sampling) continue;
    const QSignalBlocker quiet(row.editor);
    setValueOf(row, row.setting->get(r));
  }
  Q_EMIT changed();
}

void SettingsPanel::setLoadedModel(const engine::ModelInfo& info) {
  const QString dirKey = QDir(QString::fromStdString(info.dir)).absolutePath();
  QSettings qs;
  token_kind_ =
      info.token_kind == "vectors" ? decode::TokenKind::Vectors : decode::TokenKind::Codes;
  model_kind_ = info.kind;
  const bool fresh = qs.value("model/last").toString() != dirKey;
  setModel(info.default_sampling, info.codebook_size, info.grid_h * info.grid_w, fresh);
  qs.setValue("model/last", dirKey);
  if (fresh) {
    // A continuous model's CSpD defaults (model.json "cspd": its author's inner temperature).
    decode::DecodeRequest r;
    r.method.cspd = info.default_cspd;
    for (const auto& row : rows_) {
      if (row.setting->group() != "cspd") continue;
      const QSignalBlocker quiet(row.editor);
      setValueOf(row, row.setting->get(r));
    }
  }
  updateEnabled();
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
  r.sampling = model_sampling_;
  r.method = hidden_;
  for (const auto& row : rows_) {
    // A setting this model's tokens do not read keeps the model's default (checked: unchanged).
    if (row.setting->read_on(token_kind_, model_kind_)) row.setting->set(r, valueOf(row));
  }
  r.method.method = method;
  r.method.acceptance = is_tree(method) ? relax : decode::Acceptance::Lossless;
  return r;
}

void SettingsPanel::setRequest(const decode::DecodeRequest& r) {
  {
    // One "changed" for the whole update (updateEnabled's), not one per widget.
    const QSignalBlocker block(this);
    std::vector<QSignalBlocker> quiet;
    for (const auto& row : rows_) quiet.emplace_back(row.editor);
    hidden_ = r.method;
    for (const auto& row : rows_) setValueOf(row, row.setting->get(r));
  }
  updateEnabled();
}

bool SettingsPanel::applySetting(const QString& key, const QString& value, QString* why) {
  try {
    const auto& entry = decode::setting(key.toStdString());  // sampling and method entries only
    auto r = request(method_, relax_, 0);
    entry.set(r, entry.parse(value.toStdString()));
    setRequest(r);
    return true;
  } catch (const std::exception& e) {
    if (why) *why = QString::fromStdString(e.what());
    return false;
  }
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
