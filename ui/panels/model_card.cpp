#include "ui/panels/model_card.h"

#include <QMessageBox>
#include <QObject>

#include "ui/views/formatting.h"

namespace adtree::ui {

QString modelCardHtml(const engine::ModelInfo& m) {
  auto q = [](const std::string& s) { return QString::fromStdString(s).toHtmlEscaped(); };
  QString html = QStringLiteral("<h3>%1</h3><p>%2</p><table>").arg(q(m.name), q(m.description));
  auto row = [&](const QString& k, const QString& v) {
    html += QStringLiteral("<tr><td><b>%1</b>&nbsp;&nbsp;</td><td>%2</td></tr>").arg(k, v);
  };
  row(QObject::tr("Directory"), q(m.dir));
  row(QObject::tr("Kind"), q(m.kind));
  row(QObject::tr("Token grid"), QStringLiteral("%1 × %2").arg(m.grid_w).arg(m.grid_h));
  row(QObject::tr("Image"), QStringLiteral("%1 × %2 px").arg(m.image_w).arg(m.image_h));
  if (m.token_kind == "vectors") {
    row(QObject::tr("Tokens"),
        QObject::tr("vectors of %1 numbers (continuous family: a diffusion head samples each)")
            .arg(m.token_dim));
  } else {
    row(QObject::tr("Codebook"), QString::number(m.codebook_size));
  }
  row(QObject::tr("Transformer"),
      q(m.gpt_shape) + ", " + formatParams(m.gpt_params) + QObject::tr(" parameters"));
  if (m.token_kind == "vectors") {
    row(QObject::tr("Draft model"),
        m.has_drafter ? QObject::tr("yes (CSpD)") : QObject::tr("no (AR only)"));
  } else {
    row(QObject::tr("Draft head"),
        m.has_drafter ? QObject::tr("yes") : QObject::tr("no (AR and Jacobi methods only)"));
  }
  row(QObject::tr("Vocabulary"),
      m.prompt_is_file && !m.text_encoder.empty()
          ? QObject::tr("typed captions, encoded by T5 (%1), or caption-embedding files")
                .arg(q(m.text_encoder))
      : m.prompt_is_file
          ? QObject::tr("none: prompts are caption-embedding files")
          : QString::number(m.vocabulary_size) +
                (m.vocabulary_is_classes ? QObject::tr(" classes") : QObject::tr(" words")));
  row(QObject::tr("Licence"), q(m.license));
  row(QObject::tr("Device"), q(m.device) + " · " + q(m.dtype));
  // The hash pictures carry in their settings: which weights made them.
  if (!m.hash.empty()) row(QObject::tr("Files (SHA-256)"), "<tt>" + q(m.hash.substr(7)) + "</tt>");
  html += "</table>";
  return html;
}

void showModelCard(QWidget* parent, const engine::ModelInfo& m) {
  auto* box = new QMessageBox(QMessageBox::Information, QObject::tr("Model card"), modelCardHtml(m),
                              QMessageBox::Ok, parent);
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->open();
}

}  // namespace adtree::ui
