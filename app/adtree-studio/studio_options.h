// The studio's command line: the options a person or a script gives adtree-studio. Kept apart
// from main() so that `--help` and `--version` can be answered before any display is opened.
#pragma once
#include <QCommandLineOption>
#include <QCommandLineParser>

namespace adtree::studio {

struct StudioOptions {
  QCommandLineOption run{"run", "type PROMPT and press Generate once the model is loaded",
                         "PROMPT"};
  QCommandLineOption method{
      "method", "decoding method for --run (ar, static, dynamic, adt, sjd, pathspec, sjd-pac)",
      "NAME"};
  QCommandLineOption relax{"relax",
                           "acceptance rule for --run's draft trees: lossless, lantern or cascade "
                           "(the Acceptance box)",
                           "RULE"};
  QCommandLineOption seed{"seed", "seed for --run", "N"};
  QCommandLineOption benchmark{"benchmark",
                               "with --run: N runs, one JSON line of timings each, then quit", "N"};
  QCommandLineOption size{"size", "window size WxH (screenshots)", "WxH"};
  QCommandLineOption stall{"stall-meter",
                           "with --benchmark: also run a 5 ms heartbeat timer and report the "
                           "longest gap between its ticks"};
  QCommandLineOption preview{"preview-interval",
                             "milliseconds between live previews of the partial image (0 = none)",
                             "MS", "100"};
  QCommandLineOption replay{"replay-step",
                            "with --run: when it finishes, show step N in the replay (demos, "
                            "teaching, screenshots)",
                            "N"};
  QCommandLineOption inspect{"inspect",
                             "with --run: when it finishes, open the token distribution of cell "
                             "N (raster order)",
                             "N"};
  QCommandLineOption dock{"show-dock",
                          "raise this dock first: inspector, histograms, history or queue", "NAME"};
  QCommandLineOption compare{"compare",
                             "with --run: also open the compare window, AR against --method, and "
                             "run both"};
  QCommandLineOption count{"count",
                           "with --run: N pictures with consecutive seeds (the Count box), "
                           "queued one after another",
                           "N"};
  QCommandLineOption gallery{"gallery",
                             "keep this session's pictures in DIR instead of the gallery folder "
                             "of the settings (not remembered)",
                             "DIR"};
  QCommandLineOption set{"set",
                         "with --run: set a sampling or method setting of the settings panel "
                         "before the run, by its key in the settings table (the CLI's flags, "
                         "e.g. adt.budget_rule=fixed); repeatable",
                         "KEY=VALUE"};
  QCommandLineOption methods{"methods",
                             "with --run: after the first run, run the same prompt and seed with "
                             "each of these methods in turn (comma-separated), filling the "
                             "history and the histograms",
                             "LIST"};

  // Adds the description, --help, --version, the model argument and every option above.
  void describe(QCommandLineParser& cli) const;
};

// Names and version the application reports (the same for the GUI and the display-free path).
void set_application_identity();

// True when the command line asks for --help, --help-all or --version: answered without a
// display (Qt's GUI platform would abort on a machine that has none).
bool asks_for_help_or_version(int argc, char** argv);

}  // namespace adtree::studio
