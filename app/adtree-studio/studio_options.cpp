#include "studio_options.h"

#include <QCoreApplication>
#include <cstring>

namespace adtree::studio {

void StudioOptions::describe(QCommandLineParser& cli) const {
  cli.setApplicationDescription(
      "Image generation with visual AR models and ADT-Tree speculative decoding.");
  cli.addHelpOption();
  cli.addVersionOption();
  cli.addPositionalArgument("model|file",
                            "model directory to open (default: $ADTREE_MODEL, the shipped "
                            "model, or a random tiny one), or a PNG whose settings to restore, "
                            "a run file to open, or a checkpoint (.pt, .pth, .bin) to import, "
                            "on the default model");
  cli.addOptions({run, method, relax, seed, benchmark, size, preview, stall, replay, inspect, dock,
                  compare, count, gallery, set, methods});
}

void set_application_identity() {
  QCoreApplication::setOrganizationName("adtree");
  QCoreApplication::setApplicationName("adtree-studio");
  QCoreApplication::setApplicationVersion("0.1.0");
}

bool asks_for_help_or_version(int argc, char** argv) {
  bool asked = false;
  for (int i = 1; i < argc; ++i) {
    for (const char* flag : {"-h", "--help", "-?", "--help-all", "-v", "--version"}) {
      asked = asked || std::strcmp(argv[i], flag) == 0;
    }
  }
  return asked;
}

}  // namespace adtree::studio
