#include "ui/window/import_dialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTimer>
#include <QVBoxLayout>

#include <thread>

#include "model/llamagen/llamagen_convert.h"
#include "util/error.h"

namespace adtree::ui {

namespace {

// Runs `work` on a thread of its own and hands its result to `slot` on the dialog's thread, if
// the dialog still exists then (a closed dialog's answer is dropped).
template <typename Work, typename Slot>
void inBackground(QObject* receiver, Work work, Slot slot) {
  QPointer<QObject> guard(receiver);
  std::thread([guard, work = std::move(work), slot = std::move(slot)]() mutable {
    auto result = work();
    QMetaObject::invokeMethod(
        guard.data() ? guard.data() : qApp,
        [guard, slot = std::move(slot), result = std::move(result)]() mutable {
          if (guard) slot(std::move(result));
        },
        Qt::QueuedConnection);
  }).detach();
}

model::ConvertRequest requestOf(const QString& gpt, const QLineEdit* vq, const QLineEdit* drafter,
                                const QLineEdit* name, const QSpinBox* heads,
                                const QSpinBox* grid) {
  model::ConvertRequest r;
  r.gpt = gpt.toStdString();
  r.vq = vq->text().trimmed().toStdString();
  r.drafter = drafter->text().trimmed().toStdString();
  r.model = name->text().trimmed().toStdString();
  r.n_head = heads->value();
  r.grid = grid->value();
  return r;
}

// `text` broken into lines of at most about `width` characters, at spaces.
QString wrapped(const QString& text, int width) {
  QStringList lines;
  for (const QString& para : text.split('\n')) {
    QString line;
    for (const QString& word : para.split(' ', Qt::SkipEmptyParts)) {
      if (!line.isEmpty() && line.size() + 1 + word.size() > width) {
        lines << line;
        line.clear();
      }
      line += (line.isEmpty() ? "" : " ") + word;
    }
    lines << line;
  }
  return lines.join('\n');
}

}  // namespace

QString ImportDialog::defaultModelsDir() {
  return QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation) +
         "/adtree-studio/models";
}

ImportDialog::ImportDialog(const QString& checkpoint, QWidget* parent)
    : QDialog(parent), checkpoint_(checkpoint) {
  setWindowTitle(tr("Import a Checkpoint"));
  setMinimumWidth(620);
  auto* layout = new QVBoxLayout(this);
  form_ = buildForm();
  layout->addWidget(form_);
  stage_ = new QLabel(this);
  progress_ = new QProgressBar(this);
  progress_->setRange(0, 1000);
  progress_->setTextVisible(true);
  stage_->hide();
  progress_->hide();
  layout->addWidget(stage_);
  layout->addWidget(progress_);
  buttons_ = new QDialogButtonBox(QDialogButtonBox::Cancel, this);
  go_ = buttons_->addButton(tr("&Import"), QDialogButtonBox::AcceptRole);
  go_->setDefault(true);
  connect(go_, &QPushButton::clicked, this, &ImportDialog::startImport);
  connect(buttons_, &QDialogButtonBox::rejected, this, &ImportDialog::reject);
  layout->addWidget(buttons_);
  debounce_ = new QTimer(this);
  debounce_->setSingleShot(true);
  debounce_->setInterval(400);
  connect(debounce_, &QTimer::timeout, this, &ImportDialog::inspect);
  updateButtons();
  inspect();
}

ImportDialog::~ImportDialog() {
  if (cancel_) cancel_->store(true);  // a conversion still running stops at its next stage
}

// A path field with its Browse… button: a file (with `filter`) or, without one, a folder.
QWidget* ImportDialog::fileRow(QWidget* parent, QLineEdit*& edit, const QString& title,
                               const QString& filter) {
  auto* row = new QWidget(parent);
  auto* h = new QHBoxLayout(row);
  h->setContentsMargins(0, 0, 0, 0);
  QLineEdit* e = edit = new QLineEdit(row);
  auto* browse = new QPushButton(tr("Browse…"), row);
  connect(browse, &QPushButton::clicked, this, [this, e, title, filter] {
    const QString start = e->text().isEmpty() ? QFileInfo(checkpoint_).path() : e->text();
    const QString f = filter.isEmpty() ? QFileDialog::getExistingDirectory(this, title, start)
                                       : QFileDialog::getOpenFileName(this, title, start, filter);
    if (f.isEmpty()) return;
    e->setText(f);
    Q_EMIT e->textEdited(f);
  });
  h->addWidget(e, 1);
  h->addWidget(browse);
  return row;
}

QWidget* ImportDialog::buildForm() {
  auto* form = new QWidget(this);
  auto* f = new QFormLayout(form);
  const QString ckpt = tr("PyTorch checkpoints (*.pt *.pth *.bin *.safetensors)");
  auto* file = new QLabel(QDir::toNativeSeparators(checkpoint_), form);
  file->setTextInteractionFlags(Qt::TextSelectableByMouse);
  f->addRow(tr("Checkpoint:"), file);
  // Not word-wrapped: a wrapped label in a form layout is given one line's height and clipped;
  // the texts come broken into lines (wrapped() below).
  recognised_ = new QLabel(tr("Reading the checkpoint…"), form);
  f->addRow(tr("Recognised:"), recognised_);
  problem_ = new QLabel(form);
  problem_->setStyleSheet("color: #b00020");
  problem_->hide();
  f->addRow(QString(), problem_);
  f->addRow(tr("VQ tokenizer:"),
            fileRow(form, vq_, tr("The VQ tokenizer (vq_ds16_c2i.pt, ...)"), ckpt));
  vq_->setPlaceholderText(tr("required: LlamaGen's vq_ds16_c2i.pt or vq_ds16_t2i.pt"));
  f->addRow(tr("Draft head:"),
            fileRow(form, drafter_, tr("An EAGLE draft head (LANTERN's pytorch_model.bin)"), ckpt));
  drafter_->setPlaceholderText(tr("optional: speculative methods with a head"));
  name_ = new QLineEdit(QFileInfo(checkpoint_).completeBaseName(), form);
  name_->setToolTip(
      tr("A LlamaGen model name (c2i_L_256, GPT-XL) tells the heads and the image "
         "size, which the weights do not"));
  f->addRow(tr("Model name:"), name_);
  heads_ = new QSpinBox(form);
  heads_->setRange(0, 128);
  heads_->setSpecialValueText(tr("from the name"));
  f->addRow(tr("Attention heads:"), heads_);
  grid_ = new QSpinBox(form);
  grid_->setRange(0, 256);
  grid_->setSpecialValueText(tr("from the name"));
  grid_->setToolTip(tr("Tokens per side of the picture (the image size / 16 for VQ-16)"));
  f->addRow(tr("Token grid:"), grid_);
  dtype_ = new QComboBox(form);
  dtype_->addItem(tr("As stored"), QString());
  dtype_->addItem(tr("bf16 (half the disk)"), QString("bf16"));
  dtype_->addItem(tr("fp16"), QString("fp16"));
  dtype_->addItem(tr("fp32"), QString("fp32"));
  f->addRow(tr("Weights:"), dtype_);
  f->addRow(tr("Save to:"), fileRow(form, out_, tr("Where to write the model directory"), {}));
  out_note_ = new QLabel(tr("That folder exists and holds files: choose another."), form);
  out_note_->setStyleSheet("color: #b00020");
  out_note_->hide();
  f->addRow(QString(), out_note_);
  connect(out_, &QLineEdit::textEdited, this, [this] {
    out_edited_ = true;
    updateButtons();
  });
  for (QLineEdit* e : {vq_, drafter_, name_}) {
    connect(e, &QLineEdit::textChanged, this, &ImportDialog::inspectLater);
  }
  for (QSpinBox* s : {heads_, grid_}) {
    connect(s, qOverload<int>(&QSpinBox::valueChanged), this, &ImportDialog::inspectLater);
  }
  return form;
}

void ImportDialog::inspectLater() {
  understood_ = false;
  updateButtons();
  debounce_->start();
}

void ImportDialog::inspect() {
  const int gen = ++generation_;
  auto r = requestOf(checkpoint_, vq_, drafter_, name_, heads_, grid_);
  const bool findVq = vq_->text().isEmpty();
  struct Result {
    bool ok = false;
    QString text, problem, name, vq;
  };
  inBackground(
      this,
      [r, findVq] {
        Result res;
        try {
          const auto s = model::describe_checkpoint(r);
          res.ok = s.role == "gpt" && s.problem.empty();
          res.text = QString::fromStdString(s.text);
          res.problem = QString::fromStdString(s.problem);
          if (s.role != "gpt" && s.problem.empty()) {
            res.problem = tr("Import starts from a GPT checkpoint (c2i_*.pt, t2i_*.pt).");
          }
          res.name = QString::fromStdString(s.model_name);
          if (findVq) res.vq = QString::fromStdString(model::companion_vq(r.gpt, s.c2i));
          // The VQ and the draft head given with it: what each is, or why it does not fit.
          for (const auto& [file, role] :
               {std::pair{r.vq, "vq"}, std::pair{r.drafter, "drafter"}}) {
            if (file.empty() || !res.ok) continue;
            model::ConvertRequest part;
            part.gpt = file;
            const auto d = model::describe_checkpoint(part);
            if (d.role != role) {
              res.ok = false;
              res.problem = QString::fromStdString(file) + ": " +
                            (d.problem.empty() ? QString::fromStdString(d.text)
                                               : QString::fromStdString(d.problem));
            } else {
              res.text += "\n" + QString::fromStdString(d.text);
            }
          }
        } catch (const std::exception& e) {
          res.ok = false;
          res.problem = QString::fromStdString(e.what());
        }
        return res;
      },
      [this, gen](Result res) {
        showInspection(gen, res.ok, res.text, res.problem, res.name, res.vq);
      });
}

void ImportDialog::showInspection(int generation, bool ok, const QString& text,
                                  const QString& problem, const QString& name, const QString& vq) {
  if (generation != generation_) return;  // the fields changed since: a newer answer comes
  recognised_->setText(text.isEmpty() ? tr("Not recognised") : wrapped(text, 72));
  if (!vq.isEmpty() && vq_->text().isEmpty()) {
    QSignalBlocker block(vq_);
    vq_->setText(vq);
  }
  QString why = problem;
  if (why.isEmpty() && vq_->text().trimmed().isEmpty()) {
    why = tr("Give the VQ tokenizer: the studio draws the model's tokens as a picture with it.");
    ok = false;
  }
  problem_->setText(wrapped(why, 90));
  problem_->setVisible(!why.isEmpty());
  if (!out_edited_ && !name.isEmpty()) {
    QSignalBlocker block(out_);
    out_->setText(defaultModelsDir() + "/" + name);
  }
  understood_ = ok;
  adjustSize();
  updateButtons();
  Q_EMIT inspected();
}

void ImportDialog::updateButtons() {
  out_note_->setVisible(!running_ && outTaken());
  go_->setEnabled(canImport());
  if (form_) form_->setEnabled(!running_);  // the Browse… buttons too
}

// An import never replaces a folder that holds files (the CLI's --force is not offered here).
bool ImportDialog::outTaken() const {
  const QDir out(out_->text().trimmed());
  return !out_->text().trimmed().isEmpty() && out.exists() && !out.isEmpty();
}

bool ImportDialog::canImport() const {
  return understood_ && !running_ && !out_->text().trimmed().isEmpty() && !outTaken();
}

QString ImportDialog::recognised() const {
  const QString problem = QString(problem_->text()).replace('\n', ' ');  // unwrapped
  return recognised_->text() + (problem_->isVisible() ? "\n" + problem : QString());
}

void ImportDialog::setHeads(int heads) {
  heads_->setValue(heads);
}
void ImportDialog::setGrid(int grid) {
  grid_->setValue(grid);
}
void ImportDialog::setOutput(const QString& dir) {
  out_edited_ = true;
  out_->setText(dir);
  updateButtons();
}

void ImportDialog::startImport() {
  if (!canImport()) return;
  auto r = requestOf(checkpoint_, vq_, drafter_, name_, heads_, grid_);
  r.out = out_->text().trimmed().toStdString();
  r.dtype = dtype_->currentData().toString().toStdString();
  r.name = name_->text().trimmed().toStdString();
  running_ = true;
  cancel_ = std::make_shared<std::atomic<bool>>(false);
  stage_->setText(tr("Starting…"));
  stage_->show();
  progress_->setValue(0);
  progress_->show();
  updateButtons();
  QPointer<ImportDialog> self(this);
  auto cancel = cancel_;
  struct Result {
    bool ok = false, cancelled = false;
    QString message, dir;
  };
  inBackground(
      this,
      [r, cancel, self] {
        Result res;
        try {
          model::convert_llamagen(
              r,
              [self](const std::string& stage, double f) {
                const QString s = QString::fromStdString(stage);
                QMetaObject::invokeMethod(
                    qApp,
                    [self, s, f] {
                      if (self) self->showProgress(s, f);
                    },
                    Qt::QueuedConnection);
              },
              cancel.get());
          res.ok = true;
          res.dir = QString::fromStdString(r.out);
        } catch (const Cancelled&) {
          res.cancelled = true;
        } catch (const std::exception& e) {
          res.message = QString::fromStdString(e.what());
        }
        return res;
      },
      [this](Result res) { finish(res.ok, res.cancelled, res.message, res.dir); });
}

void ImportDialog::showProgress(const QString& stage, double fraction) {
  if (!running_) return;
  stage_->setText(stage.left(1).toUpper() + stage.mid(1));  // "Writing the GPT"
  progress_->setValue(int(fraction * 1000));
}

void ImportDialog::finish(bool ok, bool cancelled, const QString& message, const QString& dir) {
  running_ = false;
  cancel_.reset();
  progress_->hide();
  if (ok) {
    Q_EMIT imported(dir);
    accept();
    return;
  }
  stage_->setText(cancelled ? tr("Cancelled: nothing was written.")
                            : tr("Not imported: %1").arg(message));
  stage_->setStyleSheet(cancelled ? QString() : QString("color: #b00020"));
  stage_->show();
  if (closing_after_cancel_) {
    QDialog::reject();
    return;
  }
  updateButtons();
}

void ImportDialog::reject() {
  if (running_ && cancel_) {  // stop first; the dialog closes when the worker has cleaned up
    cancel_->store(true);
    closing_after_cancel_ = true;
    stage_->setText(tr("Cancelling…"));
    return;
  }
  QDialog::reject();
}

}  // namespace adtree::ui
