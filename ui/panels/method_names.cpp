#include "ui/panels/method_names.h"

#include <QComboBox>

#include "decode/settings/method_table.h"

namespace adtree::ui {

QString method_label(decode::Method m) {
  return QString::fromUtf8(decode::method_info(m).label);
}

QString method_label(const QString& key) {
  try {
    return method_label(decode::method_from_string(key.toStdString()));
  } catch (const std::exception&) {
    return key;
  }
}

QString method_help(decode::Method m) {
  return QString::fromUtf8(decode::method_info(m).help);
}

void fillMethodBox(QComboBox* box, bool withHelp) {
  for (const auto& m : decode::method_table()) {
    box->addItem(method_label(m.method), QString::fromLatin1(m.key));
    if (withHelp) box->setItemData(box->count() - 1, method_help(m.method), Qt::ToolTipRole);
  }
}

decode::Method methodOf(const QComboBox* box) {
  return decode::method_from_string(box->currentData().toString().toStdString());
}

void selectMethod(QComboBox* box, decode::Method m) {
  const int i = box->findData(QString::fromStdString(decode::to_string(m)));
  if (i >= 0) box->setCurrentIndex(i);
}

MapRanges ranges_for(const decode::DecodeRequest& r) {
  MapRanges g;
  static_cast<decode::MethodRanges&>(g) = decode::method_info(r.method.method).ranges(r.method);
  return g;
}

}  // namespace adtree::ui
