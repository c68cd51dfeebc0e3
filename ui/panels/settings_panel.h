// SettingsPanel: every knob of a decoding request with a tooltip that says what it does, grouped
// in collapsible sections; only the sections that matter for the chosen method are shown, and a
// row the method does not read is greyed. Every row, sampling and method settings alike, is made
// from the settings table (decode/settings/setting.h: label, range, help, the methods that read
// it). The method itself and the acceptance rule sit in the window's top bar.
#pragma once
#include <QWidget>
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "decode/sampling.h"
#include "decode/settings/method.h"
#include "decode/settings/setting.h"
#include "engine/events.h"

class QLabel;
class QComboBox;
class QCheckBox;
class QVBoxLayout;
class QSettings;

namespace adtree::ui {

class CollapsibleSection;

class SettingsPanel : public QWidget {
  Q_OBJECT

 public:
  explicit SettingsPanel(QWidget* parent = nullptr);

  // Shows the sections the method uses (LANTERN / CASCADE only with a draft tree and that rule).
  void setMethod(decode::Method method, decode::Acceptance relax);
  // A model was loaded: its sizes bound the knobs; its default sampling (model.json "sampling")
  // becomes what Reset returns to, and replaces the current sampling when applyDefaults is set.
  void setModel(const decode::SamplingParams& defaultSampling, qint64 vocabSize, qint64 imageTokens,
                bool applyDefaults);
  // The same for a loaded model: the same model as last time (model/last) keeps the user's
  // sampling; another model brings its own defaults.
  void setLoadedModel(const engine::ModelInfo& info);
  // The request the widgets describe (method, acceptance rule and seed come from the caller).
  decode::DecodeRequest request(decode::Method method, decode::Acceptance relax,
                                quint64 seed) const;
  // The same, or nothing when the settings do not form a valid request (for what can fall back on
  // defaults: the maps' colour scales before a run, the compare window's first settings).
  std::optional<decode::DecodeRequest> validRequest(decode::Method method,
                                                    decode::Acceptance relax) const;
  void setRequest(const decode::DecodeRequest& request);
  // One sampling or method entry of the settings table by its key (the CLI's flag words, e.g.
  // "adt.budget_rule" = "fixed"); a wrong key or value leaves the panel as it was and says why.
  bool applySetting(const QString& key, const QString& value, QString* why);
  void resetToDefaults();
  // Persistence through QSettings: the method settings and sampling as one JSON string.
  QString saveState() const;
  void restoreState(const QString& json);
  // The panel in a scroll area (a new parent) that scrolls only vertically, wide enough for every
  // label and field.
  QWidget* inScrollArea();
  void loadSettings(const QSettings& s);  // run/settings
  void saveSettings(QSettings& s) const;

 Q_SIGNALS:
  void changed();

 private:
  // One form row of the settings table (decode/settings/setting.h) and the section it sits in.
  struct Row {
    const decode::Setting* setting;
    QWidget* editor;
    CollapsibleSection* section;
  };
  void buildSections(QVBoxLayout* v);
  void addRow(const decode::Setting& s);
  QWidget* makeEditor(const decode::Setting& s);
  decode::SettingValue valueOf(const Row& r) const;
  void setValueOf(const Row& r, const decode::SettingValue& v);
  void fitToModel();
  void updateEnabled();

  std::map<std::string, CollapsibleSection*> sections_;
  std::vector<Row> rows_;
  // The values without a form row (a cost-curve file, the device step) pass through unchanged.
  decode::MethodSettings hidden_;
  QLabel* lossy_note_;  // the method's own settings make the run lossy

  decode::Method method_ = decode::Method::Ar;
  decode::Acceptance relax_{};             // Lossless
  decode::SamplingParams model_sampling_;  // model.json "sampling", what "Reset" returns to
  qint64 vocab_size_ = 0, image_tokens_ = 0;
  decode::TokenKind token_kind_ = decode::TokenKind::Codes;  // the loaded model's
  std::string model_kind_;                                   // its family (ModelInfo::kind)
};

}  // namespace adtree::ui
