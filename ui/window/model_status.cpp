#include "ui/window/model_status.h"

#include <QDir>
#include <QLabel>
#include <QStatusBar>

#include "ui/views/formatting.h"

namespace adtree::ui {

ModelStatus::ModelStatus(QWidget* bannerParent, QStatusBar* bar) : QObject(bar) {
  banner_ = new QLabel(bannerParent);
  banner_->setObjectName("randomModelBanner");
  banner_->setWordWrap(true);
  banner_->setTextFormat(Qt::RichText);
  banner_->setStyleSheet(
      "QLabel#randomModelBanner { background: #fff4ce; color: #5c4400; "
      "border: 1px solid #e0c060; border-radius: 4px; padding: 5px 8px; }");
  banner_->setVisible(false);
  model_ = new QLabel(bar);
  device_ = new QLabel(bar);
  bar->addPermanentWidget(model_);
  bar->addPermanentWidget(device_);
}

void ModelStatus::show(const engine::ModelInfo& info) {
  const QString name = QString::fromStdString(info.name).toHtmlEscaped();
  banner_->setVisible(info.random_weights);
  if (info.random_weights) {
    banner_->setText(tr("<b>Random model “%1”</b>: its weights are random numbers, so it draws "
                        "noise (the pipeline and the statistics are real). Open a trained model "
                        "with <i>File ▸ Open Model</i>.")
                         .arg(name));
  }
  model_->setText(tr("Model: <b>%1</b> · %2×%3 tokens · %4 params")
                      .arg(name)
                      .arg(info.grid_w)
                      .arg(info.grid_h)
                      .arg(formatParams(info.gpt_params)));
  model_->setToolTip(QDir::toNativeSeparators(QString::fromStdString(info.dir)));
  device_->setText(QStringLiteral("%1 · %2").arg(QString::fromStdString(info.device).toUpper(),
                                                 QString::fromStdString(info.dtype)));
}

}  // namespace adtree::ui
