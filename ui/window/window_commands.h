// What the menus ask of the main window (main_actions.h): the window's public commands as an
// interface of their own. The window builds its menus, so it includes them; the menus see these
// commands and not the window, and the two do not include each other.
#pragma once
#include <QString>

#include <optional>

#include "engine/events.h"

namespace adtree::ui {

class WindowCommands {
 public:
  virtual ~WindowCommands() = default;

  // The loaded model (none while nothing is loaded).
  virtual const std::optional<engine::ModelInfo>& model() const = 0;
  virtual void openModel(const QString& dir, const QString& createRandom = {}) = 0;
  virtual void openDefaultModel() = 0;
  // File > Import Checkpoint: the import dialog for a checkpoint file (ask for one when empty).
  virtual void importCheckpoint(const QString& path = {}) = 0;
  // Each returns false after showing a readable error.
  virtual bool openRunFile(const QString& path) = 0;
  virtual bool copyImage() = 0;
  virtual void generate() = 0;
  virtual void cancel() = 0;
  // The compare window, created on first use, shown and raised.
  virtual void showCompareWindow() = 0;
};

}  // namespace adtree::ui
