// The history store: every `lockstep run` and `lockstep compare`, in one SQLite database, so that
// trends ("when did we get slower, and which commit did it") can be reported later.
//
// One table of entries (id, kind run|compare, time, git commit/branch, config name/hash, machine,
// environment, status) with the details in `runs` (effective config TOML, summary metrics, loss
// curve, run folder) and `compares` (verdict, checks, deltas, report paths). The schema is
// versioned by PRAGMA user_version and migrated forward on open. WAL journaling, a 10 s busy
// timeout and retried BEGIN IMMEDIATE let several processes (ranks, parallel CI jobs) write at
// once without losing a row.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "harness/vocab/compare_result.h"
#include "harness/vocab/records.h"

namespace lockstep::history {

namespace sql {
class Db;
}

// The schema version this build writes (PRAGMA user_version).
constexpr int kSchemaVersion = 3;

// --history PATH if given, else $LOCKSTEP_HISTORY, else runs/history.sqlite (relative to the CWD).
std::filesystem::path resolve_path(const std::string& flag);

// Read commands on a database that does not exist (exit code 2).
struct MissingHistory : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One line of `history list`.
struct Entry {
  int64_t id = 0;
  std::string kind;      // "run" | "compare"
  std::string workload;  // "train" | "serve" (a serving run or comparison)
  std::string recorded_at, git_commit, git_branch, config_name, config_hash, host, device;
  std::string status;  // run: ok | nonfinite | failed | ...; compare: pass | fail
  // runs
  std::optional<double> final_loss, tokens_per_sec, mfu, p99_ms;
  // compares
  std::string baseline_name;
  int64_t exit_code = 0;
  std::optional<double> tokens_per_sec_pct, p99_ms_pct;
};

// One healthy run, as the trend report reads it (oldest first).
struct SeriesPoint {
  int64_t id = 0;
  std::string recorded_at, git_commit, git_branch, config_name, config_hash, host, device;
  std::string workload = "train";  // "serve": p99_ms is request latency, final_loss is NaN
  double tokens_per_sec = 0, p99_ms = 0, final_loss = 0;
  std::optional<double> mfu;
};

// The latest recorded loss curve of a config on a machine (`compare --against-history`).
struct ReferenceCurve {
  int64_t id = 0;
  std::string git_commit, recorded_at, run_dir;
  std::vector<double> curve;  // index 0 = step 1
};

// A serving run (`lockstep serve`), kept as a runs row with workload "serve": requests in place
// of steps, request latency (all lanes) in place of step latency, no loss, no MFU.
struct ServeRunRecord {
  std::map<std::string, std::string> env;  // describe_environment(): commit, host, device, ...
  std::string name, config_hash, config_toml, out_dir, status = "ok";
  int64_t requests = 0;
  std::optional<double> tokens_per_sec, p50_ms, p99_ms;
  nlohmann::ordered_json summary;  // the arm's JSON (figures per lane, load, tail)
};

// A serving comparison, kept as a compares row with mode "serve": tokens_per_sec_pct holds the
// service speed's change (the `throughput` check), p99_ms_pct the request P99's.
struct ServeCompareRecord {
  std::map<std::string, std::string> env;
  std::string baseline_name, baseline_hash, variant_name, variant_hash, out_dir;
  bool passed = false;
  int64_t exit_code = 0;
  std::optional<double> throughput_pct, p99_pct;
  nlohmann::json checks = nlohmann::json::array();  // [{name, passed, detail}]
  nlohmann::ordered_json result;                    // report.json
  std::vector<std::string> reports;
};

struct RecordOptions {
  std::string recorded_at;  // ISO 8601 UTC; empty = now
};

class Store {
 public:
  // create: make the file (and its folder) if missing, else throw MissingHistory. Migrates an
  // older schema; throws sql::Error for a newer one or an unreadable file.
  static Store open(const std::filesystem::path& path, bool create);
  Store(Store&&) noexcept;
  Store& operator=(Store&&) noexcept;
  ~Store();

  const std::filesystem::path& path() const { return path_; }
  int schema_version() const;

  int64_t record_run(const RunSummary& s, const std::string& config_toml,
                     const std::vector<double>& loss_curve, const std::string& run_dir,
                     const RecordOptions& opt = {});
  int64_t record_compare(const compare::CompareResult& r,
                         const std::vector<std::string>& report_paths,
                         const RecordOptions& opt = {});
  int64_t record_serve_run(const ServeRunRecord& r, const RecordOptions& opt = {});
  int64_t record_serve_compare(const ServeCompareRecord& r, const RecordOptions& opt = {});

  std::vector<Entry> list(int64_t limit = 0) const;  // newest first; 0 = all
  int64_t count() const;
  // Everything recorded for one entry (parsed JSON columns inline); nullopt if there is none.
  std::optional<nlohmann::ordered_json> show(int64_t id) const;
  nlohmann::ordered_json export_json() const;  // array of show() objects, oldest first
  std::string export_csv() const;              // one flat line per entry, RFC 4180 quoting
  int64_t prune(int64_t keep);                 // keeps the newest `keep` entries; returns deleted

  // Healthy runs (status ok), oldest first; config_name "" = all configs.
  std::vector<SeriesPoint> series(const std::string& config_name = "") const;
  std::optional<ReferenceCurve> latest_loss_curve(const std::string& config_hash,
                                                  const std::string& host) const;

 private:
  Store(std::filesystem::path path, std::unique_ptr<sql::Db> db);
  std::filesystem::path path_;
  std::unique_ptr<sql::Db> db_;
};

// Records a finished run; never throws. Returns "" or a one-line reason it was not recorded.
std::string try_record_run(const std::filesystem::path& db, const RunSummary& s,
                           const std::string& config_toml, const std::vector<double>& loss_curve,
                           const std::string& run_dir);
// Records a comparison; never throws. Returns "" or a one-line reason.
std::string try_record_compare(const std::filesystem::path& db, const compare::CompareResult& r,
                               const std::vector<std::string>& report_paths);

// The same for serving runs and comparisons; never throw.
std::string try_record_serve_run(const std::filesystem::path& db, const ServeRunRecord& r);
std::string try_record_serve_compare(const std::filesystem::path& db, const ServeCompareRecord& r);

}  // namespace lockstep::history
