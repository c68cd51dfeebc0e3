#include "ui/window/device_menu.h"

#include <QAction>
#include <QActionGroup>
#include <QMenu>
#include <QSettings>

#include <utility>

#include "decode/settings/setting.h"
#include "ui/window/engine_bridge.h"

namespace adtree::ui {

DeviceMenu::DeviceMenu(QMenu* model, QObject* parent) : QObject(parent) {
  auto* dev = model->addMenu(tr("&Device"));
  device_group_ = new QActionGroup(this);
  const QStringList available = EngineBridge::availableDevices();
  for (const auto& [key, label] : {std::pair<QString, QString>{"cpu", tr("CPU")},
                                   std::pair<QString, QString>{"cuda", tr("CUDA (GPU)")}}) {
    auto* a = dev->addAction(label);
    a->setCheckable(true);
    a->setData(key);
    a->setEnabled(available.contains(key));
    if (!a->isEnabled()) a->setText(label + tr(" — not available in this build/machine"));
    device_group_->addAction(a);
  }
  device_group_->actions().first()->setChecked(true);
  // The precisions, and what each means, from the model options table (decode/settings/setting.h).
  const auto& dtype = decode::setting_in(decode::model_options_table(), "dtype");
  auto* prec = model->addMenu(tr("&Precision"));
  prec->setToolTipsVisible(true);
  dtype_group_ = new QActionGroup(this);
  for (const auto& word : dtype.choices) {
    auto* a = prec->addAction(QString::fromStdString(word));
    a->setCheckable(true);
    a->setData(QString::fromStdString(word));
    a->setToolTip(QString::fromStdString(dtype.help_text));
    dtype_group_->addAction(a);
  }
  dtype_group_->actions().first()->setChecked(true);
  connect(device_group_, &QActionGroup::triggered, this, &DeviceMenu::fromChecked);
  connect(dtype_group_, &QActionGroup::triggered, this, &DeviceMenu::fromChecked);
}

void DeviceMenu::fromChecked() {
  device_ =
      device_group_->checkedAction() ? device_group_->checkedAction()->data().toString() : "cpu";
  dtype_ =
      dtype_group_->checkedAction() ? dtype_group_->checkedAction()->data().toString() : "fp32";
  Q_EMIT changed();
}

void DeviceMenu::showLoaded(const QString& device, const QString& dtype) {
  device_ = device;
  dtype_ = dtype;
  for (auto* a : device_group_->actions()) a->setChecked(a->data().toString() == device_);
  for (auto* a : dtype_group_->actions()) a->setChecked(a->data().toString() == dtype_);
}

void DeviceMenu::loadSettings(const QSettings& s) {
  device_ = s.value("model/device", "cpu").toString();
  dtype_ = s.value("model/dtype", "fp32").toString();
  for (auto* a : device_group_->actions()) {
    if (a->data().toString() == device_ && a->isEnabled()) a->setChecked(true);
  }
  if (!EngineBridge::availableDevices().contains(device_)) device_ = "cpu";
  for (auto* a : dtype_group_->actions()) {
    if (a->data().toString() == dtype_) a->setChecked(true);
  }
}

void DeviceMenu::saveSettings(QSettings& s) const {
  s.setValue("model/device", device_);
  s.setValue("model/dtype", dtype_);
}

}  // namespace adtree::ui
