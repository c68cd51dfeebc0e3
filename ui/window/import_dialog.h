// ImportDialog: File > Import Checkpoint (or a .pt / .pth / .bin dropped on the window; issue
// "Real checkpoints without Python", part 3). It reads the checkpoint on a worker thread and shows
// what it recognised (family, size, classes or captions, the token grid and where the heads and
// the grid came from; the VQ and draft head given with it), finds the VQ beside it, asks for what
// the weights cannot say (the model name, or the heads and the grid), and shows where it will
// write. Import converts on a worker thread (model/llamagen/llamagen_convert.h) with a progress
// bar; Cancel stops it and nothing half-written is left. On success it emits imported(dir) for the
// window to open.
#pragma once
#include <QDialog>
#include <QString>

#include <atomic>
#include <memory>

class QComboBox;
class QDialogButtonBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTimer;

namespace adtree::ui {

class ImportDialog : public QDialog {
  Q_OBJECT

 public:
  ImportDialog(const QString& checkpoint, QWidget* parent = nullptr);
  ~ImportDialog() override;

  // The folder imported models go to by default: $XDG_DATA_HOME/adtree-studio/models.
  static QString defaultModelsDir();

  // For tests and scripts: the fields a user fills in.
  void setHeads(int heads);
  void setGrid(int grid);
  void setOutput(const QString& dir);
  QString recognised() const;  // the text shown under "Recognised"
  bool canImport() const;      // the checkpoint is understood and nothing is running
  void startImport();          // the Import button
  void reject() override;      // Cancel / Esc / close: stops a running import first

 Q_SIGNALS:
  void imported(const QString& dir);
  void inspected();  // a reading of the checkpoint (with the current fields) is shown

 private:
  QWidget* buildForm();
  QWidget* fileRow(QWidget* parent, QLineEdit*& edit, const QString& title, const QString& filter);
  void inspectLater();
  void inspect();
  void showInspection(int generation, bool ok, const QString& text, const QString& problem,
                      const QString& name, const QString& vq);
  void showProgress(const QString& stage, double fraction);
  void finish(bool ok, bool cancelled, const QString& message, const QString& dir);
  void updateButtons();
  bool outTaken() const;

  QString checkpoint_;
  QWidget* form_ = nullptr;
  QLabel *recognised_ = nullptr, *problem_ = nullptr, *stage_ = nullptr, *out_note_ = nullptr;
  QLineEdit *vq_ = nullptr, *drafter_ = nullptr, *name_ = nullptr, *out_ = nullptr;
  QSpinBox *heads_ = nullptr, *grid_ = nullptr;
  QComboBox* dtype_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QDialogButtonBox* buttons_ = nullptr;
  QPushButton* go_ = nullptr;
  QTimer* debounce_ = nullptr;
  bool understood_ = false, running_ = false, out_edited_ = false, closing_after_cancel_ = false;
  int generation_ = 0;  // the newest inspection; older answers are dropped
  std::shared_ptr<std::atomic<bool>> cancel_;
};

}  // namespace adtree::ui
