// DeviceMenu: the Model menu's Device and Precision choices (GUI.md "Main window"): what the next
// model load runs on, kept across sessions. A device this build or machine lacks is listed but
// disabled, so a user sees that CUDA exists and why it cannot be chosen.
#pragma once
#include <QObject>
#include <QString>

class QActionGroup;
class QMenu;
class QSettings;

namespace adtree::ui {

class DeviceMenu : public QObject {
  Q_OBJECT

 public:
  // Adds the Device and Precision submenus to `model`.
  DeviceMenu(QMenu* model, QObject* parent);

  QString device() const { return device_; }  // "cpu" or "cuda"
  QString dtype() const { return dtype_; }    // "fp32", "bf16" or "fp16"
  // Checks what is loaded: after a failed load the menus show the model still in use, not the
  // device or precision that just failed.
  void showLoaded(const QString& device, const QString& dtype);
  void loadSettings(const QSettings& s);  // model/device, model/dtype
  void saveSettings(QSettings& s) const;

 Q_SIGNALS:
  void changed();  // the user chose another device or precision

 private:
  void fromChecked();

  QActionGroup* device_group_ = nullptr;
  QActionGroup* dtype_group_ = nullptr;
  QString device_ = "cpu", dtype_ = "fp32";
};

}  // namespace adtree::ui
