#include "ui/panels/relax_box.h"

namespace adtree::ui {

QComboBox* makeRelaxBox(QWidget* parent) {
  auto* box = new QComboBox(parent);
  auto add = [box](const QString& label, const char* key, const QString& tip) {
    box->addItem(label, QString::fromLatin1(key));
    box->setItemData(box->count() - 1, tip, Qt::ToolTipRole);
  };
  add(QComboBox::tr("Lossless"), "lossless",
      QComboBox::tr("Every method draws exactly what plain sampling would."));
  add(QComboBox::tr("LANTERN (lossy)"), "lantern",
      QComboBox::tr("Accept a draft token when it is close in the VQ codebook to what the model "
                    "would pick.\nSettings in the LANTERN section."));
  add(QComboBox::tr("CASCADE (lossy)"), "cascade",
      QComboBox::tr("Accept a draft token when the target barely changes its mind after it, or "
                    "when an interchangeable draft of the same level carries the target's "
                    "mass.\nSettings in the CASCADE section."));
  box->setToolTip(
      QComboBox::tr("How draft tokens are accepted. The relaxed rules are faster with draft "
                    "trees but lossy: the image differs from plain sampling.\nOnly for "
                    "draft-tree methods."));
  return box;
}

decode::Acceptance relaxOf(const QComboBox* box) {
  if (!box->isEnabled()) return decode::Acceptance::Lossless;
  return decode::acceptance_from_string(box->currentData().toString().toStdString());
}

void setRelax(QComboBox* box, decode::Acceptance a) {
  setRelaxKey(box, QString::fromStdString(decode::to_string(a)));
}

void setRelaxKey(QComboBox* box, const QString& key) {
  const int i = box->findData(key);
  box->setCurrentIndex(i < 0 ? 0 : i);
}

}  // namespace adtree::ui
