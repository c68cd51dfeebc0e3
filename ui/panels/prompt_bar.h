// PromptBar: the top of the window (GUI.md "Main window"): the prompt with completion, the
// caption-embedding picker, Generate and Cancel; below them the method, the acceptance rule
// (lossless, or a relaxed one for draft trees), the seed and the batch count. Pure widgets: the
// window reads them and wires the buttons.
#pragma once
#include <QWidget>

#include "decode/settings/method.h"
#include "engine/events.h"

class QCheckBox;
class QComboBox;
class QPushButton;
class QSettings;
class QSpinBox;

namespace adtree::ui {

class PromptEdit;

class PromptBar : public QWidget {
  Q_OBJECT

 public:
  explicit PromptBar(QWidget* parent = nullptr);

  PromptEdit* prompt() const { return prompt_; }
  QPushButton* generateButton() const { return generate_; }
  QPushButton* cancelButton() const { return cancel_; }

  QString methodKey() const;
  decode::Method method() const;
  void setMethod(decode::Method m);
  QString promptText() const;  // trimmed
  void setPromptText(const QString& text);
  quint64 seed() const;
  // The seed of the next Generate: with the random-seed switch on, a new one, shown in the box so
  // a good picture can be reproduced.
  quint64 nextSeed();
  int count() const;                      // pictures per Generate
  QString methodLabel() const;            // the chosen method as the box shows it
  bool setMethodKey(const QString& key);  // a key read back (a preset); false if unknown
  void focusPrompt();
  void setBusy(bool canGenerate, bool running);  // Generate and Cancel enabled accordingly
  // A seed given back (a restored picture): the random-seed switch goes off so it is kept.
  void setFixedSeed(quint64 seed);
  // The chosen acceptance rule; Lossless unless the method is a draft tree.
  decode::Acceptance acceptance() const;
  void setAcceptance(decode::Acceptance a);
  QString relaxKey() const;  // the box's choice even when disabled: lossless, lantern, cascade
  void setRelaxKey(const QString& key);  // unknown keys choose lossless
  // The prompt's placeholder, completion and the embedding picker for a loaded model; methods it
  // cannot run are disabled, with the reason in their tooltip.
  void setModel(const engine::ModelInfo& info);
  // The bar's state across sessions (run/prompt, run/seed, run/randomSeed, run/count, run/method,
  // run/relax).
  void loadSettings(const QSettings& s);
  void saveSettings(QSettings& s) const;

 Q_SIGNALS:
  void generateRequested();
  void cancelRequested();
  void methodChanged();

 private:
  PromptEdit* prompt_ = nullptr;
  QPushButton* file_ = nullptr;  // caption-embedding models only
  QPushButton* generate_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QComboBox* method_ = nullptr;
  QComboBox* relax_ = nullptr;
  QSpinBox* seed_ = nullptr;
  QCheckBox* random_seed_ = nullptr;
  QSpinBox* count_ = nullptr;
};

}  // namespace adtree::ui
