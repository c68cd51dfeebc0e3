#include "ui/window/error_dialog.h"

#include <QMessageBox>

namespace adtree::ui {

void showError(QWidget* parent, const QString& title, const QString& text, const QString& details) {
  auto* box = new QMessageBox(QMessageBox::Warning, title, text, QMessageBox::Ok, parent);
  box->setObjectName("errorDialog");
  box->setTextFormat(Qt::RichText);
  if (!details.isEmpty()) box->setInformativeText(details.toHtmlEscaped());
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->open();
}

}  // namespace adtree::ui
