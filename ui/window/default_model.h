// Which model the app opens at start: $ADTREE_MODEL, else the shipped emoji model (source
// tree or installed), else a random tiny model kept under the XDG data directory, created on first
// use so the app works out of the box (and says clearly that its pictures are noise).
#pragma once
#include <QString>

namespace adtree::ui {

struct DefaultModel {
  QString dir;
  QString createRandom;  // GPT size to create in `dir` if it has no model yet ("" = never)
  QString source;        // where the choice came from, for the status bar
};

DefaultModel findDefaultModel();
// <XDG data dir>/adtree-studio/models/random-tiny
QString randomModelDir();

}  // namespace adtree::ui
