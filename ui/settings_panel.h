// SettingsPanel: every knob of a decoding request (decode/method.h, decode/sampling.h) with a
// tooltip that says what it does, grouped in collapsible sections; only the sections that matter
// for the chosen method are shown. The method itself and the acceptance rule sit in the window's
// top bar.
#pragma once
#include <QWidget>
#include <nlohmann/json_fwd.hpp>

#include <cstdint>

#include "decode/sampling.h"

class QSpinBox;
class QLabel;
class QDoubleSpinBox;
class QComboBox;
class QCheckBox;
class QFormLayout;

namespace adtree::decode {
struct DecodeRequest;
enum class Acceptance;
}  // namespace adtree::decode

namespace adtree::ui {

class CollapsibleSection;

class SettingsPanel : public QWidget {
  Q_OBJECT

 public:
  explicit SettingsPanel(QWidget* parent = nullptr);

  // Shows the sections the method uses (LANTERN / CASCADE only with a draft tree and that rule).
  void setMethod(const QString& method, decode::Acceptance relax);
  // A model was loaded: its sizes bound the knobs; its default sampling (model.json "sampling")
  // becomes what Reset returns to, and replaces the current sampling when applyDefaults is set.
  void setModel(const decode::SamplingParams& defaultSampling, qint64 vocabSize, qint64 imageTokens,
                bool applyDefaults);
  // The request the widgets describe (method, acceptance rule and seed come from the caller).
  decode::DecodeRequest request(const QString& method, decode::Acceptance relax,
                                quint64 seed) const;
  void setRequest(const decode::DecodeRequest& request);
  void resetToDefaults();
  // Persistence through QSettings: the method settings and sampling as one JSON string.
  QString saveState() const;
  void restoreState(const QString& json);

 Q_SIGNALS:
  void changed();

 private:
  QSpinBox* addInt(QFormLayout* f, const QString& label, int lo, int hi, const QString& tip,
                   const QString& special = {});
  QDoubleSpinBox* addReal(QFormLayout* f, const QString& label, double lo, double hi, double step,
                          int decimals, const QString& tip, const QString& special = {});
  QComboBox* addChoice(QFormLayout* f, const QString& label, const QStringList& items,
                       const QString& tip);
  void updateEnabled();
  void buildPjdSection();

  CollapsibleSection *sampling_, *static_, *dynamic_, *budget_, *adt_, *lantern_, *cascade_,
      *jacobi_, *pjd_;
  // Sampling
  QDoubleSpinBox *cfg_, *temperature_, *top_p_;
  QSpinBox *cfg_interval_, *top_k_;
  // Trees
  QComboBox* static_preset_;
  QComboBox* verify_;
  QComboBox* adt_budget_rule_;
  QCheckBox* adt_grid_;
  QSpinBox *dyn_depth_, *dyn_width_, *budget_n_;
  QSpinBox *adt_d0_, *adt_k0_, *adt_dmin_, *adt_dmax_, *adt_kmin_, *adt_kmax_, *adt_step_d_,
      *adt_step_k_;
  QDoubleSpinBox* adt_beta_;
  QDoubleSpinBox* adt_leftover_;
  QComboBox *adt_mode_, *adt_adjacency_;
  // LANTERN
  QComboBox* lantern_mode_;
  QSpinBox* lantern_k_;
  QDoubleSpinBox *lantern_delta_, *lantern_lambda_;
  // CASCADE
  QDoubleSpinBox *cascade_tau_s_, *cascade_tau_c_, *cascade_kappa_;
  QComboBox* cascade_scope_;
  // Jacobi
  QSpinBox *jac_window_, *jac_paths_, *jac_path_length_, *jac_start_margin_, *jac_stop_margin_;
  QSpinBox *jac_pac_width_, *jac_pac_levels_;
  QLabel* jac_lossy_;
  QCheckBox* jac_spatial_;
  QDoubleSpinBox* jac_relax_;
  // PJD
  QSpinBox *pjd_window_, *pjd_offset_, *pjd_rows_;
  QCheckBox *pjd_mask_, *pjd_spatial_;

  QString method_ = "ar";
  decode::Acceptance relax_{};             // Lossless
  decode::SamplingParams model_sampling_;  // model.json "sampling", what "Reset" returns to
  qint64 vocab_size_ = 0, image_tokens_ = 0;
};

}  // namespace adtree::ui
