#include "harness/history/schema.h"

#include <string>
#include <vector>

#include "harness/history/store.h"

namespace lockstep::history {
namespace {

const std::vector<std::string>& migrations() {
  static const std::vector<std::string> m{
      // 1: entries, with run and compare details.
      R"sql(
CREATE TABLE entries(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  kind TEXT NOT NULL CHECK(kind IN ('run', 'compare')),
  recorded_at TEXT NOT NULL,
  git_commit TEXT NOT NULL,
  git_branch TEXT NOT NULL,
  config_name TEXT NOT NULL,
  config_hash TEXT NOT NULL,
  host TEXT NOT NULL,
  device TEXT NOT NULL,
  libtorch TEXT NOT NULL,
  threads INTEGER,
  world_size INTEGER,
  environment TEXT NOT NULL,
  status TEXT NOT NULL);
CREATE TABLE runs(
  entry_id INTEGER PRIMARY KEY REFERENCES entries(id) ON DELETE CASCADE,
  config_toml TEXT NOT NULL,
  steps INTEGER NOT NULL,
  final_loss REAL,
  tokens_per_sec REAL,
  mfu REAL,
  p50_ms REAL,
  p99_ms REAL,
  peak_memory_bytes INTEGER,
  summary TEXT NOT NULL,
  loss_curve TEXT NOT NULL,
  run_dir TEXT NOT NULL);
CREATE TABLE compares(
  entry_id INTEGER PRIMARY KEY REFERENCES entries(id) ON DELETE CASCADE,
  baseline_name TEXT NOT NULL,
  baseline_hash TEXT NOT NULL,
  variant_name TEXT NOT NULL,
  variant_hash TEXT NOT NULL,
  mode TEXT NOT NULL,
  exit_code INTEGER NOT NULL,
  tokens_per_sec_pct REAL,
  mfu_pts REAL,
  p99_ms_pct REAL,
  checks TEXT NOT NULL,
  result TEXT NOT NULL,
  reports TEXT NOT NULL,
  out_dir TEXT NOT NULL);
)sql",
      // 2: where a comparison's loss reference came from (--against-history), and indexes for
      // the trend report's series and the reference-curve lookup.
      R"sql(
ALTER TABLE compares ADD COLUMN loss_reference TEXT NOT NULL DEFAULT 'baseline run';
CREATE INDEX entries_series ON entries(kind, config_name, host, recorded_at);
CREATE INDEX entries_reference ON entries(kind, config_hash, host, recorded_at);
)sql",
      // 3: serving runs (`lockstep serve`) beside training runs: requests in place of steps,
      // request latency in place of step latency, no loss. (A serving comparison is a compares
      // row with mode 'serve'.)
      R"sql(
ALTER TABLE runs ADD COLUMN workload TEXT NOT NULL DEFAULT 'train';
)sql",
  };
  return m;
}

}  // namespace

int user_version(sql::Db& db) {
  sql::Stmt st(db, "PRAGMA user_version");
  return st.step() ? static_cast<int>(st.integer(0)) : 0;
}

void migrate(sql::Db& db, int target) {
  const int latest = static_cast<int>(migrations().size());
  static_assert(kSchemaVersion == 3,
                "add the migration to migrations() when bumping kSchemaVersion");
  if (target < 0) target = latest;
  auto newer = [&](int v) {
    if (v > latest)
      throw sql::Error(db.path() + ": history schema version " + std::to_string(v) +
                       " is newer than this lockstep (" + std::to_string(latest) +
                       "): use a newer build");
  };
  int v = user_version(db);
  newer(v);
  if (v >= target) return;
  db.write_transaction([&] {
    v = user_version(db);  // another process may have migrated meanwhile
    newer(v);
    for (; v < target; ++v) db.exec(migrations()[static_cast<size_t>(v)]);
    db.exec("PRAGMA user_version = " + std::to_string(target));
  });
}

}  // namespace lockstep::history
