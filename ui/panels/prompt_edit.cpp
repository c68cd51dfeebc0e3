#include "ui/panels/prompt_edit.h"

#include <QAbstractItemView>
#include <QCompleter>
#include <QKeyEvent>
#include <QRegularExpression>
#include <QSet>
#include <QStringListModel>

namespace adtree::ui {

namespace {
bool is_word_char(QChar c) {
  return c.isLetterOrNumber();
}
}  // namespace

PromptEdit::PromptEdit(QWidget* parent) : QLineEdit(parent) {
  model_ = new QStringListModel(this);
  completer_ = new QCompleter(model_, this);
  completer_->setCaseSensitivity(Qt::CaseInsensitive);
  completer_->setCompletionMode(QCompleter::PopupCompletion);
  completer_->setModelSorting(QCompleter::CaseInsensitivelySortedModel);
  completer_->setMaxVisibleItems(12);
  // The completer is driven by hand (per word), not attached with setCompleter(), which would
  // complete the whole line.
  completer_->setWidget(this);
  connect(completer_, qOverload<const QString&>(&QCompleter::activated), this,
          &PromptEdit::insertCompletion);
  connect(this, &QLineEdit::textEdited, this, &PromptEdit::updateCompletion);
  setClearButtonEnabled(true);
}

void PromptEdit::setVocabulary(const QStringList& entries, bool wholeText) {
  vocabulary_ = entries;
  whole_text_ = wholeText;
  QStringList sorted = entries;
  sorted.sort(Qt::CaseInsensitive);
  model_->setStringList(sorted);
}

std::pair<int, int> PromptEdit::currentWord() const {
  const QString t = text();
  if (whole_text_) return {0, int(t.size())};
  int start = cursorPosition(), end = cursorPosition();
  while (start > 0 && is_word_char(t[start - 1])) --start;
  while (end < t.size() && is_word_char(t[end])) ++end;
  return {start, end};
}

void PromptEdit::updateCompletion() {
  const auto [start, end] = currentWord();
  const QString prefix = text().mid(start, cursorPosition() - start).trimmed();
  if (prefix.isEmpty() || vocabulary_.isEmpty()) {
    completer_->popup()->hide();
    return;
  }
  completer_->setCompletionPrefix(prefix);
  // An exact, complete word needs no popup.
  if (completer_->completionCount() == 0 ||
      (completer_->completionCount() == 1 &&
       completer_->currentCompletion().compare(prefix, Qt::CaseInsensitive) == 0)) {
    completer_->popup()->hide();
    return;
  }
  QRect r = cursorRect();
  r.setWidth(std::max(160, completer_->popup()->sizeHintForColumn(0) + 24));
  completer_->complete(r);
}

void PromptEdit::insertCompletion(const QString& completion) {
  const auto [start, end] = currentWord();
  QString t = text();
  t.replace(start, end - start, completion);
  int cursor = start + int(completion.size());
  if (!whole_text_ && (cursor >= t.size() || t[cursor] != ' ')) {
    t.insert(cursor, ' ');  // ready for the next word
  }
  if (!whole_text_) ++cursor;
  setText(t);
  setCursorPosition(std::min(cursor, int(t.size())));
}

void PromptEdit::keyPressEvent(QKeyEvent* e) {
  if (completer_->popup()->isVisible()) {
    // Keys the popup handles itself (see Qt's custom completer example).
    switch (e->key()) {
      case Qt::Key_Enter:
      case Qt::Key_Return:
      case Qt::Key_Escape:
      case Qt::Key_Tab:
      case Qt::Key_Backtab:
        e->ignore();
        return;
      default:
        break;
    }
  }
  const bool plain_return = (e->key() == Qt::Key_Return || e->key() == Qt::Key_Enter) &&
                            !(e->modifiers() & Qt::ControlModifier);
  QLineEdit::keyPressEvent(e);
  if (plain_return) Q_EMIT submitted();
}

QStringList PromptEdit::unknownWords() const {
  if (vocabulary_.isEmpty()) return {};
  QSet<QString> known;
  for (const auto& w : vocabulary_) known.insert(w.toLower());
  QStringList unknown;
  if (whole_text_) {
    const QString t = text().trimmed().toLower();
    bool number = false;
    t.toLongLong(&number);
    if (!t.isEmpty() && !number && !known.contains(t)) unknown << text().trimmed();
    return unknown;
  }
  static const QRegularExpression split("[^\\p{L}\\p{N}]+");
  for (const auto& w : text().toLower().split(split, Qt::SkipEmptyParts)) {
    if (!known.contains(w)) unknown << w;
  }
  return unknown;
}

}  // namespace adtree::ui
