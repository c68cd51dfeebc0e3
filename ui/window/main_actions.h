// MainActions: the main window's menu bar and every command with a shortcut (STYLE.md), after
// KDE's action collections: one object owns the actions, their texts, shortcuts and tooltips, the
// menus that keep their own state (devices, recent models, presets, gallery options) and the two
// switches (step traces, settings in exported PNGs). Each command calls the window's public
// commands (window_commands.h), the same ones tests and scripts call, so a menu adds no behaviour
// of its own; it sees those commands, not the window, which includes it.
#pragma once
#include <QList>
#include <QObject>

#include <functional>

class QAction;
class QMenu;
class QMainWindow;
class QMenuBar;
class QSettings;

namespace adtree::ui {

class DeviceMenu;
class TextEncoderMenu;
class WindowCommands;
class Exports;
class GalleryMenu;
class PromptBar;
class RecentModels;
class ShippedModels;
class ReplayPanel;
class RunLibrary;
class RunView;
class SettingsPanel;

class MainActions : public QObject {
  Q_OBJECT

 public:
  struct Parts {
    QMainWindow* window = nullptr;       // the menus' bar, parent and dialogs
    WindowCommands* commands = nullptr;  // what the menus ask of it
    Exports* exports = nullptr;
    RunView* view = nullptr;
    ReplayPanel* replay = nullptr;
    PromptBar* bar = nullptr;
    SettingsPanel* settings = nullptr;
    RunLibrary* library = nullptr;
    QList<QAction*> dockToggles;  // the View menu's show/hide entries
    std::function<void(const QString& message, int timeoutMs)> status;
  };
  // Fills the window's menu bar.
  explicit MainActions(const Parts& parts);

  // What the window's state allows: a model loaded and idle, a run going, a finished run shown,
  // a picture on screen, step traces in the shown run.
  struct State {
    bool canGenerate = false, running = false, shown = false, picture = false, traces = false;
  };
  void setState(const State& s);

  bool traceOn() const;        // Run > Record Step Traces
  bool pngSettingsOn() const;  // Edit > Write Settings into Exported PNGs
  DeviceMenu* devices() const { return devices_; }
  TextEncoderMenu* textEncoder() const { return text_encoder_; }
  RecentModels* recent() const { return recent_; }
  RecentModels* recentImports() const { return recent_imports_; }

  // run/trace, export/pngSettings, the device menu; refreshes the gallery and recent menus (after
  // the library has read its own settings).
  void loadSettings(const QSettings& s);
  void saveSettings(QSettings& s) const;

 private:
  void fileMenu(QMenuBar* bar);
  void exportMenu(QMenu* file);
  void editMenu(QMenuBar* bar);
  void runMenu(QMenuBar* bar);
  void modelMenu(QMenuBar* bar);
  void viewMenu(QMenuBar* bar);
  void helpMenu(QMenuBar* bar);

  Parts parts_;
  QAction *generate_ = nullptr, *cancel_ = nullptr;
  QAction *save_image_ = nullptr, *copy_image_ = nullptr, *png_settings_ = nullptr;
  QAction *save_stats_ = nullptr, *save_csv_ = nullptr, *save_maps_ = nullptr,
          *save_tree_ = nullptr;
  QAction *save_run_ = nullptr, *trace_ = nullptr, *step_back_ = nullptr, *step_forward_ = nullptr;
  DeviceMenu* devices_ = nullptr;
  TextEncoderMenu* text_encoder_ = nullptr;
  ShippedModels* shipped_ = nullptr;
  RecentModels* recent_ = nullptr;
  RecentModels* recent_imports_ = nullptr;
  GalleryMenu* gallery_menu_ = nullptr;
};

}  // namespace adtree::ui
