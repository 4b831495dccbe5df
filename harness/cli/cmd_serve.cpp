// The serving workload's commands (issue 37):
//   lockstep serve CONFIG [--set k=v]... [--windows N] [--json FILE]
//     one service under its open-loop load: the lane table on stdout, progress on stderr
//   lockstep serve-capacity CONFIG --slo-ms MS [--searches N] [--set k=v]... [--json FILE]
//     the highest Poisson rate whose P99 stays within the SLO, with its spread over searches
// and `lockstep compare` on two serving configs (compare_serving below): windows in turns,
// matched pairs, report.json + report.md in --out. Exit 0 pass, 1 a check failed, 2 bad input.
#include <algorithm>
#include <cmath>
#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <tuple>

#include "harness/cli/cli.h"
#include "harness/cli/validators.h"
#include "harness/compare/comparison_stats.h"
#include "harness/compare/envelope_noise.h"
#include "harness/compare/request.h"
#include "harness/config/config.h"
#include "harness/finish.h"
#include "harness/history/store.h"
#include "harness/serve/model/capacity.h"
#include "harness/serve/model/serve_arms.h"
#include "harness/serve/serve_json.h"
#include "harness/train/trainer.h"
#include "harness/util/exit_codes.h"
#include "harness/vocab/gate_policy.h"
#include "reports/serve_html.h"
#include "reports/serve_text.h"

namespace lockstep::cli {
namespace fs = std::filesystem;
using nlohmann::ordered_json;

namespace {

config::Config load_serving(const std::string& path, const std::vector<std::string>& sets) {
  auto cfg = config::Config::load(path, sets);
  if (!serve::serving_enabled(cfg))
    throw UsageError(path + ": not a serving config (it declares no [[serve.lanes]]; README "
                            "\"Serving\")");
  return cfg;
}

void write_json(const std::string& file, const ordered_json& j) {
  if (file.empty()) return;
  std::ofstream out(file);
  if (!out) throw UsageError("cannot write " + file);
  out << j.dump(2) << "\n";
}

ordered_json arm_json(const serve::ArmResult& a) {
  ordered_json figures = ordered_json::array(), windows = ordered_json::array();
  for (const auto& f : a.pooled) figures.push_back(serve::to_json(f));
  std::vector<std::vector<serve::Outcome>> all;
  for (const auto& w : a.windows) {
    windows.push_back({{"p99_ms", serve::finite_or_null(w.stats.p99_ms)},
                       {"slo_attainment", w.stats.slo_attainment},
                       {"busy_tokens_per_sec", w.stats.busy_tokens_per_s},
                       {"requests", w.figures.front().offered},
                       {"max_send_lag_ms", w.window.max_send_lag_ms}});
    all.push_back(w.window.outcomes);
  }
  return ordered_json{{"label", a.label},
                      {"config", a.config_path},
                      {"config_hash", a.config_hash},
                      {"device", a.device},
                      {"precision", a.precision},
                      {"load", serve::load_json(a.cfg)},
                      {"figures", figures},
                      {"tail", serve::to_json(serve::tail_origin(a.cfg, all))},
                      {"windows", windows},
                      {"scores", a.scores}};
}

ordered_json speed_json(const serve::SpeedTurns& t) {
  auto tokens_per_s = [&t](const std::vector<double>& s) {
    std::vector<double> v(s);
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : static_cast<double>(t.real_tokens) / v[v.size() / 2];
  };
  return ordered_json{{"requests", t.requests},
                      {"real_tokens", t.real_tokens},
                      {"baseline", {{"batches", t.baseline_batches},
                                    {"padded_tokens", t.baseline_padded_tokens},
                                    {"median_tokens_per_sec", tokens_per_s(t.baseline_s)},
                                    {"seconds", t.baseline_s}}},
                      {"variant", {{"batches", t.variant_batches},
                                   {"padded_tokens", t.variant_padded_tokens},
                                   {"median_tokens_per_sec", tokens_per_s(t.variant_s)},
                                   {"seconds", t.variant_s}}}};
}

std::vector<std::vector<serve::Outcome>> outcomes_of(const serve::ArmResult& a) {
  std::vector<std::vector<serve::Outcome>> all;
  for (const auto& w : a.windows) all.push_back(w.window.outcomes);
  return all;
}

ordered_json capacity_json(const serve::Capacity& r) {
  ordered_json searches = ordered_json::array();
  for (const auto& s : r.searches) {
    ordered_json probes = ordered_json::array();
    for (const auto& p : s.probes)
      probes.push_back({{"rate_rps", p.rate_rps},
                        {"p99_ms", serve::finite_or_null(p.p99_ms)},
                        {"within", p.within},
                        {"requests", p.requests}});
    searches.push_back(
        {{"capacity_rps", s.capacity_rps}, {"above_rps", s.above_rps}, {"probes", probes}});
  }
  return ordered_json{{"slo_ms", r.slo_ms},
                      {"capacity_rps", r.median_rps},
                      {"min_rps", r.min_rps},
                      {"max_rps", r.max_rps},
                      {"searches", searches}};
}

// Every probe of every capacity search: P99 at a steady offered rate (report.html's curve).
std::vector<serve::LoadPoint> probe_points(const serve::Capacity& c) {
  std::vector<serve::LoadPoint> out;
  for (const auto& s : c.searches)
    for (const auto& p : s.probes) {
      serve::LoadPoint q;
      q.rate_rps = p.rate_rps;
      q.requests = p.requests;
      q.p99.q = 0.99;
      q.p99.ms = p.p99_ms;
      out.push_back(q);
    }
  std::sort(out.begin(), out.end(),
            [](const serve::LoadPoint& x, const serve::LoadPoint& y) { return x.rate_rps < y.rate_rps; });
  return out;
}

serve::TailOrigin tail_of(const serve::ArmResult& a) {
  return serve::tail_origin(a.cfg, outcomes_of(a));
}

reports::ServeHtmlArm html_arm(const serve::ArmResult& a, const serve::Capacity* capacity) {
  const auto all = outcomes_of(a);
  reports::ServeHtmlArm h{a.label, a.config_path, a.pooled, serve::tail_origin(a.cfg, all),
                          serve::latencies_ms(all), serve::p99_by_offered_load(a.cfg, all)};
  if (capacity) {
    h.capacity_probes = probe_points(*capacity);
    h.capacity_rps = capacity->median_rps;
  }
  return h;
}

std::map<std::string, std::string> serve_environment(const config::Config& cfg) {
  return train::describe_environment(cfg.str("run.device"), cfg.integer("run.threads"), 1);
}

std::optional<double> finite(double x) {
  return std::isfinite(x) ? std::optional<double>(x) : std::nullopt;
}

// `lockstep serve` in the history: a runs row with workload "serve" (the all-lanes figures).
history::ServeRunRecord serve_record(const config::Config& cfg, const serve::ArmResult& a,
                                     const ordered_json& arm, const std::string& json_file) {
  history::ServeRunRecord r;
  r.env = serve_environment(cfg);
  r.name = cfg.str("run.name");
  r.config_hash = a.config_hash;
  r.config_toml = cfg.to_toml();
  r.out_dir = json_file.empty() ? "" : fs::absolute(json_file).string();
  const auto& all = a.pooled.front();
  r.requests = all.offered;
  r.tokens_per_sec = finite(all.tokens_per_s);
  r.p50_ms = finite(all.p50.ms);
  r.p99_ms = finite(all.p99.ms);  // unserved requests in the P99: NULL, they are infinitely late
  r.summary = arm;
  return r;
}

// A serving comparison in the history: a compares row with mode "serve".
history::ServeCompareRecord serve_compare_record(const config::Config& a, const config::Config& b,
                                                 const serve::ServeComparison& r, bool passed,
                                                 const ordered_json& report,
                                                 const std::string& out_dir,
                                                 const std::vector<std::string>& files) {
  history::ServeCompareRecord h;
  h.env = serve_environment(b);
  h.baseline_name = a.str("run.name");
  h.baseline_hash = r.baseline.config_hash;
  h.variant_name = b.str("run.name");
  h.variant_hash = r.variant.config_hash;
  h.out_dir = fs::absolute(out_dir).string();
  h.passed = passed;
  h.exit_code = passed ? kExitPass : kExitGateFailed;
  for (const auto& c : r.checks) {
    h.checks.push_back(
        {{"name", c.name}, {"passed", c.verdict != compare::Verdict::Fail}, {"detail", c.detail}});
    if (c.name == "throughput" || c.name == "capacity") h.throughput_pct = finite(c.value_pct);
    if (c.name == "p99 latency") h.p99_pct = finite(c.value_pct);
  }
  h.result = report;
  for (const auto& f : files) h.reports.push_back(fs::absolute(f).string());
  return h;
}

}  // namespace

std::optional<int> compare_serving(const std::string& baseline, const std::string& variant,
                                   const std::vector<std::string>& bsets,
                                   const std::vector<std::string>& vsets, int64_t repeats,
                                   const std::string& policy_file, const std::string& out_dir,
                                   const std::string& history_db, bool record) {
  const auto a = config::Config::load(baseline, bsets);
  const auto b = config::Config::load(variant, vsets);
  const bool sa = serve::serving_enabled(a), sb = serve::serving_enabled(b);
  if (!sa && !sb) return std::nullopt;
  if (sa != sb)
    throw UsageError(std::string(sa ? variant : baseline) +
                     ": not a serving config, but the other one is: compare two services, or "
                     "two training runs");
  // The policy as a training comparison resolves it: --policy FILE's [gate], else the variant's
  // (which inherits the baseline's).
  const auto policy = gate::resolve_policy(policy_file, b, variant);
  const auto& p = policy.policy;
  if (repeats == compare::kAutoRepeats || (repeats == 0 && p.auto_repeats))
    throw UsageError("repeats = \"auto\" is for training comparisons: a serving comparison "
                     "takes a fixed number of window pairs (--repeats N, gate.repeats)");
  serve::GateSettings g;
  g.alpha = p.alpha;
  g.max_p99_regression_pct = p.max_p99_regression_pct;
  g.max_slowdown_pct = p.max_slowdown_pct;
  g.tolerance = p.tolerance;
  // How "same math" is judged, as for training: a declared [gate] alignment wins, else the knob
  // class of the keys that differ; an approximate change gets the noise envelope.
  const auto klass = p.alignment ? config::parse_knob_class(*p.alignment)
                                 : std::optional<config::Knob>(
                                       compare::classify_changes(config::diff(a, b)).klass);
  g.approximate = klass == config::Knob::Approximate;
  if (g.approximate) {
    std::tie(g.envelope_noise, g.envelope_noise_source) = compare::envelope_noise(p, a, b);
    g.envelope_runs = p.envelope_runs;
    g.envelope_factor = p.envelope_factor;
  }
  const int windows = static_cast<int>(repeats > 0 ? repeats : p.repeats);
  if (windows < 2) throw UsageError("a serving comparison needs at least 2 windows (--repeats)");
  auto r = serve::serve_compare(a, b, windows, g, std::cerr);
  bool passed = true;
  const bool inconclusive_fails = !p.inconclusive_passes();
  for (const auto& c : r.checks)
    if (c.verdict == compare::Verdict::Fail ||
        (c.verdict == compare::Verdict::Inconclusive && inconclusive_fails))
      passed = false;
  fs::create_directories(out_dir);
  ordered_json checks = ordered_json::array();
  for (const auto& c : r.checks) checks.push_back(serve::to_json(c));
  ordered_json j{{"kind", "serve"},
                 {"passed", passed},
                 {"exit_code", passed ? kExitPass : kExitGateFailed},
                 {"windows", windows},
                 {"policy", policy.source},
                 {"order", r.order},
                 {"checks", checks},
                 {"throughput_check", r.judged_capacity ? "capacity" : "service_speed"}};
  if (r.judged_capacity)
    j["capacity"] = {{"baseline", capacity_json(r.baseline_capacity)},
                     {"variant", capacity_json(r.variant_capacity)}};
  else
    j["service_speed"] = speed_json(r.speed);
  if (r.envelope)
    j["score_envelope"] = {{"runs", r.envelope->runs},
                           {"noise", r.envelope->noise},
                           {"noise_source", r.envelope->noise_source},
                           {"factor", r.envelope->factor},
                           {"raw", r.envelope->raw}};
  j["baseline"] = arm_json(r.baseline);
  j["variant"] = arm_json(r.variant);
  j["wall_seconds"] = r.wall_s;
  const auto json_file = fs::path(out_dir) / "report.json", md_file = fs::path(out_dir) / "report.md",
             html_file = fs::path(out_dir) / "report.html";
  write_json(json_file.string(), j);
  // Each arm's outcomes gathered once: its tail, CDF and load curve for both reports.
  const auto hb = html_arm(r.baseline, r.judged_capacity ? &r.baseline_capacity : nullptr);
  const auto hv = html_arm(r.variant, r.judged_capacity ? &r.variant_capacity : nullptr);
  const std::string md = reports::serve_compare_markdown(
      r.checks, passed, r.baseline.pooled, r.variant.pooled, hb.tail, hv.tail, windows);
  std::ofstream(md_file) << md;
  std::ofstream(html_file) << reports::serve_compare_html(
      {r.checks, passed, windows, r.baseline.cfg.slo_ms, hb, hv});
  std::cout << md;
  std::cerr << "serve: report in " << out_dir << "\n";
  if (record)
    record_in_history(history_db, "comparison", [&](const fs::path& db) {
      return history::try_record_serve_compare(
          db, serve_compare_record(a, b, r, passed, j, out_dir,
                                   {json_file.string(), md_file.string(), html_file.string()}));
    });
  return passed ? kExitPass : kExitGateFailed;
}

void add_serve_commands(CLI::App& app, Action& action) {
  struct Opts {
    std::string config, json, history;
    std::vector<std::string> sets;
    int64_t windows = 1, searches = 3;
    double slo_ms = 0;
    bool no_history = false;
  };
  auto o = std::make_shared<Opts>();
  auto* serve = app.add_subcommand(
      "serve", "Serve the reference model under open-loop load: latency percentiles per lane");
  serve->add_option("config", o->config, "a serving config (with [[serve.lanes]])")->required();
  serve->add_option("--set", o->sets, "override a config key: section.key=value (repeatable)")
      ->allow_extra_args(false);
  serve->add_option("--windows", o->windows, "windows of serve.duration_s, pooled (default 1)")
      ->check(positive_integer());
  serve->add_option("--json", o->json, "also write the figures as JSON to this file");
  serve->add_option("--history", o->history,
                    "history database to record the run in (default: $LOCKSTEP_HISTORY, else "
                    "runs/history.sqlite)");
  serve->add_flag("--no-history", o->no_history, "do not record this run in the history database");
  serve->callback([&action, o] {
    action = [o] {
      const auto cfg = load_serving(o->config, o->sets);
      const auto r = serve::serve_one(cfg, "serve", static_cast<int>(o->windows), std::cerr);
      std::cout << reports::serve_table(r.pooled, false);
      std::cout << "tail: " << tail_of(r).sentence << "\n";
      const auto arm = arm_json(r);
      write_json(o->json, arm);
      if (!o->no_history)
        record_in_history(o->history, "run", [&](const fs::path& db) {
          return history::try_record_serve_run(db, serve_record(cfg, r, arm, o->json));
        });
      return kExitPass;
    };
  });

  auto c = std::make_shared<Opts>();
  auto* cap = app.add_subcommand(
      "serve-capacity", "The highest Poisson rate whose P99 stays within the SLO (MLPerf server)");
  cap->add_option("config", c->config, "a serving config (with [[serve.lanes]])")->required();
  cap->add_option("--slo-ms", c->slo_ms, "the P99 objective, ms (default serve.slo_ms)")
      ->check(CLI::PositiveNumber);
  cap->add_option("--searches", c->searches, "independent searches (arrival seeds; default 3)")
      ->check(positive_integer());
  cap->add_option("--set", c->sets, "override a config key: section.key=value (repeatable)")
      ->allow_extra_args(false);
  cap->add_option("--json", c->json, "also write the result as JSON to this file");
  cap->callback([&action, c] {
    action = [c] {
      const auto cfg = load_serving(c->config, c->sets);
      const double slo = c->slo_ms > 0 ? c->slo_ms : cfg.number("serve.slo_ms");
      const auto r = serve::find_capacity(cfg, slo, static_cast<int>(c->searches), std::cerr);
      char line[256];
      std::snprintf(line, sizeof line,
                    "capacity at P99 <= %g ms: %.1f req/s (median of %zu searches; range %.1f .. "
                    "%.1f)\n",
                    slo, r.median_rps, r.searches.size(), r.min_rps, r.max_rps);
      std::cout << line;
      write_json(c->json, capacity_json(r));
      return kExitPass;
    };
  });
}

}  // namespace lockstep::cli
