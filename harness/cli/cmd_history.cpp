// `lockstep history list|show|export|prune|report`: the recorded runs and comparisons
// (harness/history/store.h) and the regression report over them (harness/history/report.h,
// rendered by reports/history/reporters.h).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <memory>

#include "harness/cli/cli.h"
#include "harness/cli/out_dir.h"
#include "harness/cli/validators.h"
#include "harness/util/exit_codes.h"
#include "harness/history/report.h"
#include "harness/history/sqlite.h"
#include "harness/history/store.h"
#include "harness/util/files.h"
#include "reports/history/reporters.h"
#include "reports/history/wording.h"

namespace lockstep::cli {
namespace {

std::string opt_value(const std::optional<double>& v, const std::string& metric) {
  return v ? reports::history_text::format_value(metric, *v) : "n/a";
}

std::string metrics_of(const history::Entry& e) {
  auto pct = [](const std::optional<double>& v) {
    return v ? reports::history_text::format_pct(*v) : std::string("n/a");
  };
  if (e.workload == "serve")  // a serving run or comparison: requests, not steps
    return e.kind == "run" ? "serve: tokens/s " + opt_value(e.tokens_per_sec, "tokens_per_sec") +
                                 ", P99 request " + opt_value(e.p99_ms, "p99_ms")
                           : "serve vs " + e.baseline_name + ": service speed " +
                                 pct(e.tokens_per_sec_pct) + ", P99 request " +
                                 pct(e.p99_ms_pct) + " (exit " + std::to_string(e.exit_code) +
                                 ")";
  if (e.kind == "run")
    return "tokens/s " + opt_value(e.tokens_per_sec, "tokens_per_sec") + ", MFU " +
           opt_value(e.mfu, "mfu") + ", P99 " + opt_value(e.p99_ms, "p99_ms") + ", loss " +
           opt_value(e.final_loss, "final_loss");
  return "vs " + e.baseline_name + ": tokens/s " + pct(e.tokens_per_sec_pct) + ", P99 " +
         pct(e.p99_ms_pct) + " (exit " + std::to_string(e.exit_code) + ")";
}

int list(const std::string& db, int64_t limit) {
  auto store = history::Store::open(history::resolve_path(db), false);
  const auto entries = store.list(limit);
  std::printf("%-5s %-8s %-24s %-8s %-18s %-14s %-10s %s\n", "ID", "KIND", "RECORDED (UTC)",
              "COMMIT", "CONFIG", "HOST", "STATUS", "METRICS");
  for (const auto& e : entries)
    std::printf("%-5lld %-8s %-24s %-8s %-18s %-14s %-10s %s\n", static_cast<long long>(e.id),
                e.kind.c_str(), e.recorded_at.c_str(),
                reports::history_text::short_commit(e.git_commit).c_str(), e.config_name.c_str(),
                e.host.c_str(), e.status.c_str(), metrics_of(e).c_str());
  std::cout << entries.size() << " of " << store.count() << " entries in " << store.path().string()
            << "\n";
  return kExitPass;
}

int show(const std::string& db, int64_t id) {
  auto entry = history::Store::open(history::resolve_path(db), false).show(id);
  if (!entry) {
    std::cerr << "lockstep history show: no entry #" << id << "\n";
    return kExitUsage;
  }
  std::cout << entry->dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  return kExitPass;
}

int export_(const std::string& db, const std::string& format, const std::string& out) {
  auto store = history::Store::open(history::resolve_path(db), false);
  const std::string text =
      format == "csv"
          ? store.export_csv()
          : store.export_json().dump(2, ' ', false, nlohmann::json::error_handler_t::replace) +
                "\n";
  if (out.empty() || out == "-") {
    std::cout << text;
  } else {
    util::write_atomic(out, text);
    std::cerr << "exported " << store.count() << " entries to " << out << "\n";
  }
  return kExitPass;
}

int prune(const std::string& db, int64_t keep) {
  auto store = history::Store::open(history::resolve_path(db), false);
  const int64_t deleted = store.prune(keep);
  std::cout << "pruned " << deleted << " entries; " << store.count() << " kept in "
            << store.path().string() << "\n";
  return kExitPass;
}

struct ReportOpts {
  history::ReportOptions report;
  std::string out = "runs/history-report";
};

int report(const std::string& db, const ReportOpts& o) {
  check_out_dir(o.out);
  auto store = history::Store::open(history::resolve_path(db), false);
  const auto points = store.series(o.report.config);
  if (!o.report.config.empty() && points.empty()) {
    std::cerr << "lockstep history report: no healthy runs of config '" << o.report.config
              << "' in " << store.path().string() << "\n";
    return kExitUsage;
  }
  const auto r = history::build_report(points, o.report, store.path().string());
  const auto files = reports::write_history_reports(r, o.out);
  std::cout << reports::HistoryConsoleReporter().render(r);
  for (const auto& f : files) std::cout << "  " << f.string() << "\n";
  return r.exit_code;
}

// Runs a history command, turning a missing or unreadable database, or an output it cannot
// write, into exit code 2.
int guarded(const std::function<int()>& fn) {
  try {
    return fn();
  } catch (const history::MissingHistory& e) {
    std::cerr << "lockstep history: " << e.what() << "\n";
  } catch (const history::sql::Error& e) {
    std::cerr << "lockstep history: " << e.what() << "\n";
  } catch (const std::invalid_argument& e) {
    std::cerr << "lockstep history: " << e.what() << "\n";
  } catch (const std::exception& e) {
    // An --out that cannot be written (an existing file where a folder goes, no permission):
    // the history commands' exit codes are 0, 1 (report: a regression) and 2, never "a run
    // failed".
    std::cerr << "lockstep history: " << e.what() << "\n";
  }
  return kExitUsage;
}

}  // namespace

void add_history_command(CLI::App& app, Action& action) {
  auto db = std::make_shared<std::string>();
  auto* h = app.add_subcommand(
      "history", "The recorded runs and comparisons, and the regression report over them");
  h->require_subcommand(1);
  const std::string db_help =
      "history database (default: $LOCKSTEP_HISTORY, else runs/history.sqlite)";

  auto limit = std::make_shared<int64_t>(50);
  auto* l = h->add_subcommand("list", "The latest entries, newest first");
  l->add_option("--history", *db, db_help);
  l->add_option("--limit", *limit, "entries to show (0 = all; default 50)")
      ->check(non_negative_integer());
  l->callback([&action, db, limit] {
    action = [db, limit] { return guarded([&] { return list(*db, *limit); }); };
  });

  auto id = std::make_shared<int64_t>(0);
  auto* s = h->add_subcommand("show", "Everything recorded for one entry, as JSON");
  s->add_option("ID", *id, "entry id (from `history list`)")
      ->required()
      ->check(positive_integer());
  s->add_option("--history", *db, db_help);
  s->callback(
      [&action, db, id] { action = [db, id] { return guarded([&] { return show(*db, *id); }); }; });

  auto format = std::make_shared<std::string>("json");
  auto out = std::make_shared<std::string>();
  auto* e = h->add_subcommand("export", "Every entry as JSON or CSV");
  e->add_option("--format", *format, "json (everything) or csv (one flat line per entry)")
      ->check(CLI::IsMember({"json", "csv"}));
  e->add_option("--out", *out, "file to write (default: stdout)");
  e->add_option("--history", *db, db_help);
  e->callback([&action, db, format, out] {
    action = [db, format, out] { return guarded([&] { return export_(*db, *format, *out); }); };
  });

  auto keep = std::make_shared<int64_t>(0);
  auto* p = h->add_subcommand("prune", "Delete all but the newest N entries");
  p->add_option("--keep", *keep, "entries to keep")->required()->check(non_negative_integer());
  p->add_option("--history", *db, db_help);
  p->callback([&action, db, keep] {
    action = [db, keep] { return guarded([&] { return prune(*db, *keep); }); };
  });

  auto ro = std::make_shared<ReportOpts>();
  auto* r = h->add_subcommand(
      "report",
      "Trends per config and machine, change points and loss drift; exit 1 on a recent regression");
  r->add_option("--config", ro->report.config, "only this config name");
  r->add_option("--metric", ro->report.metrics, "metrics to judge (default: all)")
      ->check(CLI::IsMember({"tokens_per_sec", "mfu", "p99_ms", "final_loss"}));
  r->add_option("--window", ro->report.window,
                "exit 1 when a regression starts within the last N commits (default 5)")
      ->check(positive_integer());
  r->add_option("--min-change", ro->report.changepoint.min_change_pct,
                "smallest change to report, percent (default 2)")
      ->check(non_negative_number());
  r->add_option("--loss-tolerance", ro->report.loss_tolerance,
                "final-loss change that counts as drift (default 0: any)")
      ->check(non_negative_number());
  r->add_option("--out", ro->out, "report folder (default runs/history-report)");
  r->add_option("--history", *db, db_help);
  r->callback([&action, db, ro] {
    action = [db, ro] { return guarded([&] { return report(*db, *ro); }); };
  });
}

}  // namespace lockstep::cli
