// PromptEdit: the prompt line with completion from the model's vocabulary. Caption models complete
// the word under the cursor (a prompt is several known words); class models complete the whole
// text (a prompt is one class name).
#pragma once
#include <QLineEdit>
#include <QStringList>

class QCompleter;
class QStringListModel;

namespace adtree::ui {

class PromptEdit : public QLineEdit {
  Q_OBJECT

 public:
  explicit PromptEdit(QWidget* parent = nullptr);
  void setVocabulary(const QStringList& entries, bool wholeText);
  QCompleter* completer() const { return completer_; }
  // Words of the prompt not in the vocabulary (empty when every word is known or no vocabulary).
  QStringList unknownWords() const;

 Q_SIGNALS:
  void submitted();  // Return pressed while no completion popup is open

 protected:
  void keyPressEvent(QKeyEvent* e) override;

 private:
  void insertCompletion(const QString& completion);
  void updateCompletion();
  // [start, end) of the word around the cursor.
  std::pair<int, int> currentWord() const;

  QCompleter* completer_ = nullptr;
  QStringListModel* model_ = nullptr;
  QStringList vocabulary_;
  bool whole_text_ = false;
};

}  // namespace adtree::ui
