#include "ui/panels/prompt_bar.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QRandomGenerator>
#include <QSettings>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QVBoxLayout>

#include <algorithm>
#include <limits>
#include <set>

#include "decode/settings/method_table.h"
#include "ui/panels/method_names.h"
#include "ui/panels/prompt_edit.h"
#include "ui/panels/relax_box.h"

namespace adtree::ui {

namespace {
// Prompts the shipped model draws well on every seed tried (its MODEL_CARD.md, "Example prompts"),
// so that the first picture a person sees shows the subject.
const char* const kExamplePrompts[] = {"cat face noto", "santa claus noto", "red apple twemoji"};

// The first example whose words the model knows; empty for other models (random ones in tests).
QString examplePrompt(const engine::ModelInfo& info) {
  const std::set<std::string> known(info.vocabulary.begin(), info.vocabulary.end());
  for (const char* example : kExamplePrompts) {
    const auto words = QString(example).split(' ');
    if (std::all_of(words.begin(), words.end(),
                    [&](const QString& w) { return known.count(w.toStdString()) > 0; }))
      return example;
  }
  return {};
}

// Why the loaded model cannot run method m (empty: it can): the kind of its tokens (codes or
// vectors, decode::runs_on), or a draft head / draft model it lacks.
QString unavailableReason(decode::Method m, const engine::ModelInfo& info) {
  const bool vectors = info.token_kind == "vectors";
  if (!decode::runs_on(m, vectors ? decode::TokenKind::Vectors : decode::TokenKind::Codes)) {
    return vectors ? QObject::tr(
                         "Not available: this model's tokens are vectors (continuous "
                         "family); it runs AR and CSpD.")
                   : QObject::tr(
                         "Not available: CSpD runs on continuous-token models; this "
                         "model's tokens are VQ codes.");
  }
  if (decode::method_info(m).needs_drafter && !info.has_drafter) {
    return vectors ? QObject::tr(
                         "Not available: this model has no draft model "
                         "(draft.safetensors).")
                   : QObject::tr(
                         "Not available: this model has no draft head "
                         "(drafter.safetensors).");
  }
  return {};
}

QString wordsHint(const QString& example) {
  if (example.isEmpty())
    return QObject::tr(
        "Describe the image in words from the model's vocabulary (Tab/arrows pick a completion)");
  return QObject::tr(
             "Describe the image, e.g. \"%1\" (words from the model's vocabulary; "
             "Tab/arrows pick a completion)")
      .arg(example);
}

// Row 1's widgets, created in the bar's focus order: the prompt, the embedding-file picker, the
// two big buttons.

PromptEdit* makePromptEdit(QWidget* parent) {
  auto* prompt = new PromptEdit(parent);
  prompt->setObjectName("promptEdit");
  prompt->setPlaceholderText(wordsHint({}));
  prompt->setToolTip(
      PromptBar::tr("The prompt: words the model knows (completion lists them as you type) "
                    "or, for class models, one class name.\nReturn or Ctrl+Return generates."));
  QFont pf = prompt->font();
  pf.setPointSizeF(pf.pointSizeF() * 1.15);
  prompt->setFont(pf);
  prompt->setMinimumHeight(30);
  return prompt;
}

QPushButton* makeGenerateButton(QWidget* parent) {
  auto* generate = new QPushButton(PromptBar::tr("Generate"), parent);
  generate->setObjectName("generateButton");
  generate->setDefault(true);
  generate->setMinimumHeight(30);
  generate->setMinimumWidth(110);
  generate->setToolTip(
      PromptBar::tr("Generate from the prompt (Ctrl+Return); while a job runs, the new ones wait "
                    "in the queue"));
  generate->setStyleSheet(
      "QPushButton#generateButton { background: #2563eb; color: white; font-weight: bold; "
      "border-radius: 4px; padding: 4px 14px; }"
      "QPushButton#generateButton:hover { background: #1d4ed8; }"
      "QPushButton#generateButton:disabled { background: #93a4c3; color: #eef; }");
  return generate;
}

QPushButton* makeCancelButton(QWidget* parent) {
  auto* cancel = new QPushButton(PromptBar::tr("Cancel"), parent);
  cancel->setObjectName("cancelButton");
  cancel->setMinimumHeight(30);
  cancel->setToolTip(PromptBar::tr(
      "Stop the running generation (Esc); it stops within one step. Waiting jobs stay queued."));
  return cancel;
}

// Models prompted with a caption-embedding file (converted LlamaGen t2i) get a file picker; the
// chosen file's path becomes the prompt.
QPushButton* makeFileButton(QWidget* parent, PromptEdit* prompt) {
  auto* file = new QPushButton(PromptBar::tr("Embedding…"), parent);
  file->setObjectName("promptFileButton");
  file->setMinimumHeight(30);
  file->setToolTip(PromptBar::tr(
      "Choose a caption-embedding file (.safetensors from tools/t5_embed.py) as the prompt"));
  file->setVisible(false);
  QObject::connect(file, &QPushButton::clicked, parent, [parent, prompt] {
    const QString path = QFileDialog::getOpenFileName(
        parent, PromptBar::tr("Choose a caption embedding"), QDir::homePath(),
        PromptBar::tr("Caption embeddings (*.safetensors);;All files (*)"));
    if (!path.isEmpty()) prompt->setText(path);
  });
  return file;
}

// Row 2's widgets: how to decode, the seed, how many.

QComboBox* makeMethodBox(QWidget* parent) {
  auto* method = new QComboBox(parent);
  method->setObjectName("methodBox");
  method->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  fillMethodBox(method, /*withHelp=*/true);
  method->setToolTip(
      PromptBar::tr("Decoding method. All lossless methods draw from the same distribution "
                    "as AR; they differ in speed.\nTree methods need the model's draft head "
                    "(drafter.safetensors)."));
  return method;
}

QSpinBox* makeSeedBox(QWidget* parent) {
  auto* seed = new QSpinBox(parent);
  seed->setObjectName("seedBox");
  seed->setRange(0, std::numeric_limits<int>::max());
  seed->setToolTip(
      PromptBar::tr("Random seed: the same seed, settings and device give the same image."));
  seed->setMinimumWidth(110);
  return seed;
}

QCheckBox* makeRandomSeedBox(QWidget* parent) {
  auto* random_seed = new QCheckBox(PromptBar::tr("random"), parent);
  random_seed->setObjectName("randomSeedBox");
  random_seed->setToolTip(
      PromptBar::tr("Draw a new seed for every generation (it is shown in the seed box, "
                    "so a good image can be reproduced)."));
  return random_seed;
}

QSpinBox* makeCountBox(QWidget* parent) {
  auto* count = new QSpinBox(parent);
  count->setObjectName("countBox");
  count->setRange(1, 100);
  count->setToolTip(
      PromptBar::tr("Pictures per Generate click, with consecutive seeds (seed, seed + 1, …); "
                    "they run one after another from the queue"));
  return count;
}
}  // namespace

PromptBar::PromptBar(QWidget* parent) : QWidget(parent) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(0, 0, 0, 0);
  v->setSpacing(6);

  // Row 1: the prompt and the two big buttons.
  prompt_ = makePromptEdit(this);
  generate_ = makeGenerateButton(this);
  cancel_ = makeCancelButton(this);
  file_ = makeFileButton(this, prompt_);
  auto* row1 = new QHBoxLayout;
  row1->setSpacing(6);
  row1->addWidget(prompt_, 1);
  row1->addWidget(file_);
  row1->addWidget(generate_);
  row1->addWidget(cancel_);
  v->addLayout(row1);

  // Row 2: how to decode, the seed, how many.
  auto* method_label_w = new QLabel(tr("Method"), this);
  method_ = makeMethodBox(this);
  method_label_w->setBuddy(method_);
  auto* relax_label = new QLabel(tr("&Acceptance"), this);
  relax_ = makeRelaxBox(this);
  relax_->setObjectName("relaxBox");
  relax_label->setBuddy(relax_);
  auto* seed_label = new QLabel(tr("Seed"), this);
  seed_ = makeSeedBox(this);
  seed_label->setBuddy(seed_);
  random_seed_ = makeRandomSeedBox(this);
  auto* count_label = new QLabel(tr("Count"), this);
  count_ = makeCountBox(this);
  count_label->setBuddy(count_);
  auto* row2 = new QHBoxLayout;
  row2->setSpacing(6);
  row2->addWidget(method_label_w);
  row2->addWidget(method_);
  row2->addSpacing(8);
  row2->addWidget(relax_label);
  row2->addWidget(relax_);
  row2->addSpacing(16);
  row2->addWidget(seed_label);
  row2->addWidget(seed_);
  row2->addWidget(random_seed_);
  row2->addSpacing(16);
  row2->addWidget(count_label);
  row2->addWidget(count_);
  row2->addStretch(1);
  v->addLayout(row2);

  connect(prompt_, &PromptEdit::submitted, this, &PromptBar::generateRequested);
  connect(generate_, &QPushButton::clicked, this, &PromptBar::generateRequested);
  connect(cancel_, &QPushButton::clicked, this, &PromptBar::cancelRequested);
  connect(method_, &QComboBox::currentIndexChanged, this, [this] {
    relax_->setEnabled(decode::is_tree(method()));
    Q_EMIT methodChanged();
  });
  connect(relax_, &QComboBox::currentIndexChanged, this, &PromptBar::methodChanged);
}

QString PromptBar::methodKey() const {
  return method_->currentData().toString();
}

decode::Method PromptBar::method() const {
  return methodOf(method_);
}

void PromptBar::setMethod(decode::Method m) {
  selectMethod(method_, m);
}

QString PromptBar::promptText() const {
  return prompt_->text().trimmed();
}

void PromptBar::setPromptText(const QString& text) {
  prompt_->setText(text);
}

quint64 PromptBar::seed() const {
  return quint64(seed_->value());
}

quint64 PromptBar::nextSeed() {
  if (random_seed_->isChecked()) seed_->setValue(int(QRandomGenerator::global()->bounded(1 << 30)));
  return seed();
}

int PromptBar::count() const {
  return count_->value();
}

QString PromptBar::methodLabel() const {
  return method_->currentText();
}

bool PromptBar::setMethodKey(const QString& key) {
  const int i = method_->findData(key);
  if (i >= 0) method_->setCurrentIndex(i);
  return i >= 0;
}

void PromptBar::focusPrompt() {
  prompt_->setFocus();
}

void PromptBar::setBusy(bool canGenerate, bool running) {
  generate_->setEnabled(canGenerate);
  cancel_->setEnabled(running);
}

void PromptBar::setFixedSeed(quint64 seed) {
  random_seed_->setChecked(false);
  seed_->setValue(int(seed));
}

decode::Acceptance PromptBar::acceptance() const {
  return relaxOf(relax_);
}

void PromptBar::setAcceptance(decode::Acceptance a) {
  setRelax(relax_, a);
}

QString PromptBar::relaxKey() const {
  return relax_->currentData().toString();
}

void PromptBar::setRelaxKey(const QString& key) {
  ui::setRelaxKey(relax_, key);
}

void PromptBar::setModel(const engine::ModelInfo& info) {
  QStringList vocab;
  for (const auto& w : info.vocabulary) vocab << QString::fromStdString(w);
  prompt_->setVocabulary(vocab, info.vocabulary_is_classes);
  file_->setVisible(info.prompt_is_file);
  if (info.prompt_is_file && !info.text_encoder.empty()) {
    prompt_->setPlaceholderText(
        tr("A caption, e.g. \"a red double-decker bus on a rainy street\" (T5 encodes it), or "
           "a caption-embedding file (Embedding…)"));
  } else if (info.prompt_is_file) {
    prompt_->setPlaceholderText(
        tr("Path of a caption-embedding file (.safetensors; Embedding… picks one), or choose "
           "Model > Text Encoder to type captions"));
  } else if (info.vocabulary_is_classes) {
    prompt_->setPlaceholderText(
        tr("A class: name, synonym or number, e.g. \"golden retriever\" "
           "or 207 (Tab/arrows pick a completion)"));
  } else {
    const QString example = examplePrompt(info);
    prompt_->setPlaceholderText(wordsHint(example));
    // An empty prompt (a first start) gets the example, so Generate at once draws something
    // recognisable.
    if (prompt_->text().isEmpty()) prompt_->setText(example);
  }
  // Methods the model cannot run are shown but disabled, with the reason.
  auto* items = qobject_cast<QStandardItemModel*>(method_->model());
  for (int i = 0; i < method_->count(); ++i) {
    const auto m = decode::method_table()[size_t(i)].method;  // the box lists the table in order
    const QString why = unavailableReason(m, info);
    if (items) items->item(i)->setEnabled(why.isEmpty());
    method_->setItemData(i, why.isEmpty() ? method_help(m) : method_help(m) + "\n" + why,
                         Qt::ToolTipRole);
  }
  if (items && !items->item(method_->currentIndex())->isEnabled()) {
    selectMethod(method_, decode::Method::Ar);
  }
}

void PromptBar::loadSettings(const QSettings& s) {
  prompt_->setText(s.value("run/prompt").toString());
  seed_->setValue(s.value("run/seed", 0).toInt());
  random_seed_->setChecked(s.value("run/randomSeed", false).toBool());
  count_->setValue(s.value("run/count", 1).toInt());
  const int idx = method_->findData(s.value("run/method", "adt").toString());
  if (idx >= 0) method_->setCurrentIndex(idx);
  // Settings written before CASCADE kept a LANTERN switch.
  setRelaxKey(s.value("run/relax", s.value("run/lantern", false).toBool() ? "lantern" : "lossless")
                  .toString());
}

void PromptBar::saveSettings(QSettings& s) const {
  s.setValue("run/prompt", prompt_->text());
  s.setValue("run/seed", seed_->value());
  s.setValue("run/randomSeed", random_seed_->isChecked());
  s.setValue("run/count", count_->value());
  s.setValue("run/method", methodKey());
  s.setValue("run/relax", relaxKey());
  s.remove("run/lantern");
}

}  // namespace adtree::ui
