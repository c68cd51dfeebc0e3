#include "ui/panels/collapsible_section.h"

#include <QFormLayout>
#include <QToolButton>
#include <QVBoxLayout>

namespace adtree::ui {

CollapsibleSection::CollapsibleSection(const QString& title, QWidget* parent) : QWidget(parent) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(0, 0, 0, 0);
  v->setSpacing(2);
  header_ = new QToolButton(this);
  header_->setText(title);
  header_->setCheckable(true);
  header_->setChecked(true);
  header_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  header_->setArrowType(Qt::DownArrow);
  header_->setAutoRaise(true);
  header_->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
  QFont f = header_->font();
  f.setBold(true);
  header_->setFont(f);
  body_ = new QWidget(this);
  form_ = new QFormLayout(body_);
  form_->setContentsMargins(14, 0, 2, 6);
  form_->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  form_->setLabelAlignment(Qt::AlignRight | Qt::AlignVCenter);
  form_->setHorizontalSpacing(8);
  form_->setVerticalSpacing(4);
  v->addWidget(header_);
  v->addWidget(body_);
  connect(header_, &QToolButton::toggled, this, &CollapsibleSection::setExpanded);
}

void CollapsibleSection::setExpanded(bool expanded) {
  if (header_->isChecked() != expanded) header_->setChecked(expanded);
  header_->setArrowType(expanded ? Qt::DownArrow : Qt::RightArrow);
  body_->setVisible(expanded);
}

}  // namespace adtree::ui
