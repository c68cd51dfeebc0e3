#include "ui/panels/method_names.h"

#include <QComboBox>
#include <QObject>

#include "decode/settings/method_table.h"

namespace adtree::ui {

QString method_label(decode::Method m) {
  using decode::Method;
  switch (m) {
    case Method::Ar:
      return QObject::tr("Autoregressive (AR)");
    case Method::Static:
      return QObject::tr("Static tree (EAGLE-1)");
    case Method::Dynamic:
      return QObject::tr("Dynamic tree (EAGLE-2)");
    case Method::Adt:
      return QObject::tr("ADT-Tree");
    case Method::Sjd:
      return QObject::tr("SJD (Jacobi)");
    case Method::PathSpec:
      return QObject::tr("PathSpec (Jacobi)");
    case Method::SjdPac:
      return QObject::tr("SJD-PAC (Jacobi)");
    case Method::Pjd:
      return QObject::tr("PJD (parallel rows, lossy)");
  }
  return QString::fromStdString(decode::to_string(m));
}

QString method_label(const QString& key) {
  try {
    return method_label(decode::method_from_string(key.toStdString()));
  } catch (const std::exception&) {
    return key;
  }
}

QString method_help(decode::Method m) {
  using decode::Method;
  switch (m) {
    case Method::Ar:
      return QObject::tr("One target forward per token: the baseline, always available.");
    case Method::Static:
      return QObject::tr("A fixed draft tree from the EAGLE head, verified in one forward.");
    case Method::Dynamic:
      return QObject::tr("EAGLE-2: the draft tree grows where the head is confident.");
    case Method::Adt:
      return QObject::tr(
          "Adjacency-adaptive dynamic draft tree: each tree's depth and width start "
          "from the neighbouring token's and adapt to how much was accepted.");
    case Method::Sjd:
      return QObject::tr("Speculative Jacobi decoding: training-free, no draft head.");
    case Method::SjdPac:
      return QObject::tr(
          "SJD with proactive drafting: a few candidates for the next cells, tried one after "
          "another in one forward, and drafts kept across steps. Training-free and lossless.");
    case Method::Pjd:
      return QObject::tr(
          "Parallel Jacobi decoding: Jacobi windows on several image rows at once, a row starting "
          "once the row above is a few tokens ahead. Training-free; lossy, since a row below "
          "commits before the rows above are final (one row at a time is lossless).");
    case Method::PathSpec:
      return QObject::tr(
          "Several Jacobi chains in parallel; the longest accepted one wins. Lossless with "
          "coupled verification (the default); with more than one chain and another rule, or "
          "PathRelax on, it is lossy (see the Jacobi settings).");
  }
  return {};
}

void fillMethodBox(QComboBox* box, bool withHelp) {
  for (const auto& m : decode::method_table()) {
    box->addItem(method_label(m.method), QString::fromLatin1(m.key));
    if (withHelp) box->setItemData(box->count() - 1, method_help(m.method), Qt::ToolTipRole);
  }
}

decode::Method methodOf(const QComboBox* box) {
  return decode::method_from_string(box->currentData().toString().toStdString());
}

void selectMethod(QComboBox* box, decode::Method m) {
  const int i = box->findData(QString::fromStdString(decode::to_string(m)));
  if (i >= 0) box->setCurrentIndex(i);
}

MapRanges ranges_for(const decode::DecodeRequest& r) {
  MapRanges g;
  const auto& m = r.method;
  if (m.method == decode::Method::Adt) {
    g.depth_max = double(m.adt.d_max);
    g.accept_max = double(m.adt.d_max + 1);
    g.tree_d_min = double(m.adt.d_min);
    g.tree_d_max = double(m.adt.d_max);
    g.tree_k_min = double(m.adt.k_min);
    g.tree_k_max = double(m.adt.k_max);
  } else if (m.method == decode::Method::Dynamic) {
    const double d = double(m.dynamic_tree.depth + 1);
    g.depth_max = d;
    g.accept_max = d + 1;
    g.tree_d_min = g.tree_d_max = d;
    g.tree_k_min = g.tree_k_max = double(m.dynamic_tree.width);
  } else if (m.method == decode::Method::Static) {
    g.depth_max = 5;  // both presets have depth 5
    g.accept_max = 6;
  } else if (m.method == decode::Method::Pjd) {
    g.depth_max = double(m.pjd.window - 1);     // position in the row's window (0 = the row's own)
    g.accept_max = 2.0 * double(m.pjd.window);  // tokens per step over all rows: grows with rows
    g.tree_d_min = g.tree_d_max = double(m.pjd.window - 1);
    g.tree_k_min = 1;  // active rows
    g.tree_k_max = m.pjd.max_rows > 0 ? double(m.pjd.max_rows) : 4.0;
  } else if (decode::is_jacobi(m.method)) {
    // Depth = position in the window (SJD) or along the winning chain (PathSpec).
    const auto n = m.method == decode::Method::PathSpec ? m.jacobi.path_length : m.jacobi.window;
    g.depth_max = double(n);
    g.accept_max = double(n + 1);
  }
  return g;
}

}  // namespace adtree::ui
