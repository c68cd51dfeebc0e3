#include "decode/stats/trace.h"

#include <algorithm>

#include "util/error.h"
#include "util/json_int.h"

namespace adtree::decode {

nlohmann::json to_json(const StepTrace& t) {
  // Nodes as parallel arrays: a tree of 60 nodes is one short line per field, not 60 objects.
  nlohmann::json nodes = {
      {"token", nlohmann::json::array()}, {"parent", nlohmann::json::array()},
      {"depth", nlohmann::json::array()}, {"rank", nlohmann::json::array()},
      {"score", nlohmann::json::array()}, {"q", nlohmann::json::array()},
      {"p", nlohmann::json::array()},     {"accepted", nlohmann::json::array()}};
  for (const auto& n : t.nodes) {
    nodes["token"].push_back(n.token);
    nodes["parent"].push_back(n.parent);
    nodes["depth"].push_back(n.depth);
    nodes["rank"].push_back(n.rank);
    nodes["score"].push_back(n.score);
    nodes["q"].push_back(n.q);
    nodes["p"].push_back(n.p);
    nodes["accepted"].push_back(n.accepted ? 1 : 0);
    nodes["guess"].push_back(n.guess ? 1 : 0);
  }
  nlohmann::json cells = nlohmann::json::array();
  for (const auto& c : t.cells) {
    cells.push_back({{"cell", c.cell},
                     {"token", c.token},
                     {"drafted", c.drafted},
                     {"top1", c.top1},
                     {"target_rank", c.target_rank},
                     {"top_tokens", c.top_tokens},
                     {"top_probs", c.top_probs},
                     {"cand_tokens", c.cand_tokens},
                     {"cand_q", c.cand_q},
                     {"cand_p", c.cand_p}});
  }
  nlohmann::json j = {
      {"step", t.step}, {"nodes", nodes},           {"nodes_dropped", t.nodes_dropped},
      {"path", t.path}, {"has_bonus", t.has_bonus}, {"bonus", t.bonus},
      {"cells", cells}};
  if (t.has_adt) {
    j["adt"] = {{"d", t.adt.d},           {"k", t.adt.k},
                {"origin", t.adt.origin}, {"accepted", t.adt.accepted},
                {"alpha", t.adt.alpha},   {"beta", t.adt.beta},
                {"next_d", t.adt.next_d}, {"next_k", t.adt.next_k},
                {"rule", t.adt.rule}};
  }
  return j;
}

namespace {
template <typename T>
std::vector<T> vec(const nlohmann::json& j, const char* key) {
  if (!j.contains(key)) throw Error(std::string("the trace has no '") + key + "'");
  if constexpr (std::is_integral_v<T>) {
    return json_ints<T>(j.at(key), key);
  } else {
    return j.at(key).get<std::vector<T>>();
  }
}
}  // namespace

StepTrace step_trace_from_json(const nlohmann::json& j) {
  StepTrace t;
  try {
    if (!j.is_object()) throw Error("a step trace must be a JSON object");
    t.step = json_int<int64_t>(j.at("step"), "step");
    t.nodes_dropped = json_int(j, "nodes_dropped", int64_t(0));
    t.path = vec<int64_t>(j, "path");
    t.has_bonus = j.at("has_bonus").get<bool>();
    t.bonus = json_int<int64_t>(j.at("bonus"), "bonus");
    const auto& n = j.at("nodes");
    const auto token = vec<int64_t>(n, "token"), parent = vec<int64_t>(n, "parent");
    const auto depth = vec<int32_t>(n, "depth"), rank = vec<int32_t>(n, "rank");
    const auto score = vec<float>(n, "score"), q = vec<float>(n, "q"), p = vec<float>(n, "p");
    const auto acc = vec<int>(n, "accepted");
    const size_t count = token.size();
    // Traces from before the field: no node was a free guess.
    const auto guess = n.contains("guess") ? vec<int>(n, "guess") : std::vector<int>(count, 0);
    for (size_t s : {parent.size(), depth.size(), rank.size(), score.size(), q.size(), p.size(),
                     acc.size(), guess.size()}) {
      if (s != count) throw Error("the trace's node arrays differ in length");
    }
    for (size_t i = 0; i < count; ++i) {
      TraceNode nd{token[i], parent[i], depth[i],    rank[i],      score[i],
                   q[i],     p[i],      acc[i] != 0, guess[i] != 0};
      // Parents come before their children, so a reader can walk the tree in one pass.
      if (i == 0 ? nd.parent != -1 : (nd.parent < 0 || nd.parent >= int64_t(i))) {
        throw Error("trace node " + std::to_string(i) + " has an invalid parent");
      }
      t.nodes.push_back(nd);
    }
    for (auto id : t.path) {
      if (id <= 0 || id >= int64_t(count))
        throw Error("the trace's accepted path names a missing node");
    }
    for (const auto& c : j.at("cells")) {
      CellTrace ct;
      ct.cell = json_int<int64_t>(c.at("cell"), "cell");
      ct.token = json_int<int64_t>(c.at("token"), "token");
      ct.drafted = c.at("drafted").get<bool>();
      ct.top1 = c.at("top1").get<float>();
      ct.target_rank = json_int<int32_t>(c.at("target_rank"), "target_rank");
      ct.top_tokens = vec<int64_t>(c, "top_tokens");
      ct.top_probs = vec<float>(c, "top_probs");
      ct.cand_tokens = vec<int64_t>(c, "cand_tokens");
      ct.cand_q = vec<float>(c, "cand_q");
      ct.cand_p = vec<float>(c, "cand_p");
      if (ct.top_tokens.size() != ct.top_probs.size() ||
          ct.cand_tokens.size() != ct.cand_q.size() || ct.cand_tokens.size() != ct.cand_p.size()) {
        throw Error("a traced cell's token and probability lists differ in length");
      }
      t.cells.push_back(std::move(ct));
    }
    if (j.contains("adt")) {
      const auto& a = j.at("adt");
      t.has_adt = true;
      t.adt = AdtTrace{json_int<int64_t>(a.at("d"), "d"),
                       json_int<int64_t>(a.at("k"), "k"),
                       a.at("origin").get<std::string>(),
                       json_int<int64_t>(a.at("accepted"), "accepted"),
                       a.at("alpha").get<double>(),
                       a.at("beta").get<double>(),
                       json_int<int64_t>(a.at("next_d"), "next_d"),
                       json_int<int64_t>(a.at("next_k"), "next_k"),
                       a.at("rule").get<std::string>()};
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("invalid step trace: ") + e.what());
  }
  return t;
}

TopBars top_bars(const CellTrace& c) {
  TopBars b;
  b.n = int(std::min(c.top_tokens.size(), c.top_probs.size()));
  for (int i = 0; i < b.n; ++i) {
    const double p = c.top_probs[size_t(i)];
    const bool committed = c.top_tokens[size_t(i)] == c.token;
    (committed ? b.committed_x : b.other_x).push_back(i + 1);
    (committed ? b.committed_p : b.other_p).push_back(p);
    b.max_p = std::max(b.max_p, p);
    if (p > 0 && (b.min_p == 0 || p < b.min_p)) b.min_p = p;
  }
  const auto shown_end = c.top_tokens.begin() + b.n;
  for (int64_t t : c.cand_tokens) {
    const auto it = std::find(c.top_tokens.begin(), shown_end, t);
    const int at = it == shown_end ? -1 : int(it - c.top_tokens.begin());
    b.cand_bar.push_back(at);
    if (at < 0) continue;
    b.cand_x.push_back(at + 1);
    b.cand_p.push_back(c.top_probs[size_t(at)]);
  }
  return b;
}

const char* region_character(float top1) {
  return top1 >= 0.5f ? "simple" : "complex";
}

}  // namespace adtree::decode
