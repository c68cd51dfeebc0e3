#include "ui/window/status_text.h"

#include <QObject>

#include "decode/settings/run_settings.h"
#include "ui/views/formatting.h"

namespace adtree::ui {

namespace {
// Against plain AR: ADT-Tree's cost rule may have found that no tree can pay on this machine;
// otherwise the speed-up where the run knows AR's time here.
QString versusAr(const decode::RunSettings& s, double wallMs) {
  if (!s.ran_as_ar.empty()) return QObject::tr(", ran as AR: no tree can pay on this machine");
  if (s.ar_estimate_ms > 0 && wallMs > 0) {
    return QObject::tr(", %1x the speed of AR (estimated)")
        .arg(s.ar_estimate_ms / wallMs, 0, 'f', 2);
  }
  return {};
}

// A typed prompt's encoding by T5: its cost is part of what the user waited for.
QString promptEncoding(const decode::RunSettings& s) {
  if (s.text_encoder.empty()) return {};
  return QObject::tr(", T5 prompt: %1 tokens, %2 ms%3")
      .arg(s.prompt_tokens)
      .arg(s.prompt_encode_ms, 0, 'f', 0)
      .arg(s.prompt_truncated ? QObject::tr(" (truncated)") : QString());
}
}  // namespace

QString finishedStatus(const engine::JobFinished& f, const decode::RunSettings* settings) {
  const auto& s = f.summary;
  const QString rule = settings ? QString::fromStdString(settings->verify) : QString();
  return QObject::tr("Done: %1 tokens in %2 (%3 tokens/s), τ = %4, %5 steps%6%7%8")
      .arg(s.tokens)
      .arg(formatSeconds(f.elapsed_ms / 1000.0))
      .arg(s.tokens_per_s, 0, 'f', 0)
      .arg(s.tau, 0, 'f', 2)
      .arg(s.steps)
      .arg(rule.isEmpty() ? QString() : QObject::tr(", %1 verification").arg(rule))
      .arg(settings ? versusAr(*settings, s.wall_ms) : QString())
      .arg(settings ? promptEncoding(*settings) : QString());
}

}  // namespace adtree::ui
