// The studio's one error dialog: window-modal but not blocking (the event loop, and a running
// engine, carry on), rich text, the details (an engine message, a file error) below.
#pragma once
#include <QString>

class QWidget;

namespace adtree::ui {

void showError(QWidget* parent, const QString& title, const QString& text,
               const QString& details = {});

}  // namespace adtree::ui
