#include "harness/history/store.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>

#include "harness/compare/result_json.h"
#include "harness/history/schema.h"
#include "harness/history/sqlite.h"
#include "harness/runs/run_json.h"

namespace lockstep::history {
namespace fs = std::filesystem;

namespace {

constexpr int kBusyTimeoutMs = 10000;

std::string now_utc() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03dZ", buf, static_cast<int>(ms));
  return out;
}

std::string get(const std::map<std::string, std::string>& env, const std::string& key) {
  auto it = env.find(key);
  return it == env.end() ? "" : it->second;
}

// The code under test: the run's environment, else $LOCKSTEP_GIT_*, else "unknown".
std::string commit_of(const std::map<std::string, std::string>& env) {
  std::string c = get(env, "git_commit");
  if (c.empty() || c == "unknown") {
    const char* e = std::getenv("LOCKSTEP_GIT_COMMIT");
    if (e && *e) c = e;
  }
  return c.empty() ? "unknown" : c;
}
std::string branch_of(const std::map<std::string, std::string>& env) {
  std::string b = get(env, "git_branch");
  if (b.empty()) {
    const char* e = std::getenv("LOCKSTEP_GIT_BRANCH");
    if (e && *e) b = e;
  }
  return b;
}
std::string host_of(const std::map<std::string, std::string>& env) {
  std::string h = get(env, "host");
  if (h.empty()) {
    char buf[256] = {0};
    ::gethostname(buf, sizeof buf - 1);
    h = buf;
  }
  return h;
}

// The device part of the machine key: "cpu", or "cuda (NVIDIA H100 80GB HBM3)": two GPU models
// in one host are two machines for the trends.
std::string device_of(const std::map<std::string, std::string>& env) {
  const std::string gpu = get(env, "gpu");
  return gpu.empty() ? get(env, "device") : get(env, "device") + " (" + gpu + ")";
}

std::optional<int64_t> integer_of(const std::string& s) {
  try {
    size_t used = 0;
    int64_t v = std::stoll(s, &used);
    if (used == s.size()) return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

std::string env_json(const std::map<std::string, std::string>& env) {
  return nlohmann::json(env).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string curve_json(const std::vector<double>& curve) {
  nlohmann::json a = nlohmann::json::array();
  for (double x : curve) a.push_back(runs::num(x));
  return a.dump();
}

// Inserts the shared entries row; returns its id. Must run inside a write transaction.
int64_t insert_entry(sql::Db& db, const std::string& kind, const std::string& recorded_at,
                     const std::map<std::string, std::string>& env, const std::string& name,
                     const std::string& hash, const std::string& status) {
  sql::Stmt st(
      db,
      "INSERT INTO entries(kind, recorded_at, git_commit, git_branch, config_name, config_hash, "
      "host, device,"
      " libtorch, threads, world_size, environment, status) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)");
  st.bind(1, kind)
      .bind(2, recorded_at.empty() ? now_utc() : recorded_at)
      .bind(3, commit_of(env))
      .bind(4, branch_of(env));
  st.bind(5, name)
      .bind(6, hash)
      .bind(7, host_of(env))
      .bind(8, device_of(env))
      .bind(9, get(env, "libtorch"));
  for (int i : {10, 11}) {
    auto v = integer_of(get(env, i == 10 ? "threads" : "world_size"));
    if (v)
      st.bind(i, *v);
    else
      st.bind_null(i);
  }
  st.bind(12, env_json(env)).bind(13, status);
  st.run();
  return db.last_insert_id();
}

std::optional<double> delta_value(const compare::Delta& d) {
  if (!d.known || !std::isfinite(d.point)) return std::nullopt;
  return d.point;
}

}  // namespace

fs::path resolve_path(const std::string& flag) {
  if (!flag.empty()) return flag;
  const char* env = std::getenv("LOCKSTEP_HISTORY");
  if (env && *env) return env;
  return fs::path("runs") / "history.sqlite";
}

Store::Store(fs::path path, std::unique_ptr<sql::Db> db)
    : path_(std::move(path)), db_(std::move(db)) {}
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;
Store::~Store() = default;

Store Store::open(const fs::path& path, bool create) {
  if (!create && !fs::exists(path))
    throw MissingHistory(
        path.string() +
        ": no history database (record a run first, or choose one with --history PATH)");
  if (create && path.has_parent_path()) fs::create_directories(path.parent_path());
  auto db = std::make_unique<sql::Db>(path.string(), create, kBusyTimeoutMs);
  db->exec("PRAGMA journal_mode=WAL");  // persistent; concurrent readers and one writer
  db->exec("PRAGMA synchronous=NORMAL");
  db->exec("PRAGMA foreign_keys=ON");
  migrate(*db);
  return Store(path, std::move(db));
}

int Store::schema_version() const {
  return user_version(*db_);
}

int64_t Store::record_run(const RunSummary& s, const std::string& config_toml,
                          const std::vector<double>& loss_curve, const std::string& run_dir,
                          const RecordOptions& opt) {
  int64_t id = 0;
  db_->write_transaction([&] {
    id = insert_entry(*db_, "run", opt.recorded_at, s.env, s.name, s.config_hash, to_string(s.status));
    sql::Stmt st(
        *db_,
        "INSERT INTO runs(entry_id, config_toml, steps, final_loss, tokens_per_sec, mfu, p50_ms, "
        "p99_ms,"
        " peak_memory_bytes, summary, loss_curve, run_dir) VALUES(?,?,?,?,?,?,?,?,?,?,?,?)");
    st.bind(1, id)
        .bind(2, config_toml)
        .bind(3, s.steps)
        .bind(4, s.final_loss)
        .bind(5, s.tokens_per_sec)
        .bind(6, s.mfu);
    st.bind(7, s.step_ms.p50).bind(8, s.step_ms.p99).bind(9, s.peak_memory_bytes);
    st.bind(10, runs::to_json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    st.bind(11, curve_json(loss_curve)).bind(12, run_dir);
    st.run();
  });
  return id;
}

int64_t Store::record_compare(const compare::CompareResult& r,
                              const std::vector<std::string>& report_paths,
                              const RecordOptions& opt) {
  int64_t id = 0;
  nlohmann::json checks = nlohmann::json::array();
  for (const auto& c : r.checks)
    checks.push_back({{"name", c.name}, {"passed", c.passed}, {"detail", c.detail}});
  const auto replace = nlohmann::json::error_handler_t::replace;
  db_->write_transaction([&] {
    id = insert_entry(*db_, "compare", opt.recorded_at, r.env, r.variant.name,
                      r.variant.alignment_run.config_hash, compare::to_string(r.verdict));
    sql::Stmt st(*db_,
                 "INSERT INTO compares(entry_id, baseline_name, baseline_hash, variant_name, "
                 "variant_hash, mode, exit_code,"
                 " tokens_per_sec_pct, mfu_pts, p99_ms_pct, checks, result, reports, out_dir, "
                 "loss_reference)"
                 " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    st.bind(1, id)
        .bind(2, r.baseline.name)
        .bind(3, r.baseline.alignment_run.config_hash)
        .bind(4, r.variant.name);
    st.bind(5, r.variant.alignment_run.config_hash)
        .bind(6, compare::to_string(r.mode))
        .bind(7, static_cast<int64_t>(r.exit_code));
    st.bind(8, delta_value(r.delta.tokens_per_sec_pct))
        .bind(9, delta_value(r.delta.mfu_pts))
        .bind(10, delta_value(r.delta.p99_ms_pct));
    st.bind(11, checks.dump(-1, ' ', false, replace))
        .bind(12, compare::to_json(r).dump(-1, ' ', false, replace));
    st.bind(13, nlohmann::json(report_paths).dump(-1, ' ', false, replace)).bind(14, r.out_dir);
    st.bind(15, r.loss_reference.empty() ? std::string("baseline run") : r.loss_reference);
    st.run();
  });
  return id;
}

int64_t Store::record_serve_run(const ServeRunRecord& r, const RecordOptions& opt) {
  int64_t id = 0;
  const auto replace = nlohmann::json::error_handler_t::replace;
  db_->write_transaction([&] {
    id = insert_entry(*db_, "run", opt.recorded_at, r.env, r.name, r.config_hash, r.status);
    sql::Stmt st(*db_,
                 "INSERT INTO runs(entry_id, config_toml, steps, final_loss, tokens_per_sec, mfu, "
                 "p50_ms, p99_ms, peak_memory_bytes, summary, loss_curve, run_dir, workload)"
                 " VALUES(?,?,?,NULL,?,NULL,?,?,NULL,?,'[]',?,'serve')");
    st.bind(1, id).bind(2, r.config_toml).bind(3, r.requests).bind(4, r.tokens_per_sec);
    st.bind(5, r.p50_ms).bind(6, r.p99_ms).bind(7, r.summary.dump(-1, ' ', false, replace));
    st.bind(8, r.out_dir);
    st.run();
  });
  return id;
}

int64_t Store::record_serve_compare(const ServeCompareRecord& r, const RecordOptions& opt) {
  int64_t id = 0;
  const auto replace = nlohmann::json::error_handler_t::replace;
  db_->write_transaction([&] {
    id = insert_entry(*db_, "compare", opt.recorded_at, r.env, r.variant_name, r.variant_hash,
                      r.passed ? "pass" : "fail");
    sql::Stmt st(*db_,
                 "INSERT INTO compares(entry_id, baseline_name, baseline_hash, variant_name, "
                 "variant_hash, mode, exit_code, tokens_per_sec_pct, mfu_pts, p99_ms_pct, checks,"
                 " result, reports, out_dir, loss_reference)"
                 " VALUES(?,?,?,?,?,'serve',?,?,NULL,?,?,?,?,?,'baseline run')");
    st.bind(1, id).bind(2, r.baseline_name).bind(3, r.baseline_hash).bind(4, r.variant_name);
    st.bind(5, r.variant_hash).bind(6, r.exit_code).bind(7, r.throughput_pct).bind(8, r.p99_pct);
    st.bind(9, r.checks.dump(-1, ' ', false, replace))
        .bind(10, r.result.dump(-1, ' ', false, replace));
    st.bind(11, nlohmann::json(r.reports).dump(-1, ' ', false, replace)).bind(12, r.out_dir);
    st.run();
  });
  return id;
}

std::vector<Entry> Store::list(int64_t limit) const {
  sql::Stmt st(
      *db_,
      "SELECT e.id, e.kind, e.recorded_at, e.git_commit, e.git_branch, e.config_name, "
      "e.config_hash, e.host, e.device,"
      " e.status, r.final_loss, r.tokens_per_sec, r.mfu, r.p99_ms, c.baseline_name, c.exit_code,"
      " c.tokens_per_sec_pct, c.p99_ms_pct,"
      " CASE WHEN r.workload = 'serve' OR c.mode = 'serve' THEN 'serve' ELSE 'train' END"
      " FROM entries e LEFT JOIN runs r ON r.entry_id = e.id"
      " LEFT JOIN compares c ON c.entry_id = e.id ORDER BY e.recorded_at DESC, e.id DESC LIMIT ?");
  st.bind(1, limit > 0 ? limit : int64_t{-1});
  std::vector<Entry> out;
  while (st.step()) {
    Entry e;
    e.id = st.integer(0);
    e.kind = st.text(1);
    e.recorded_at = st.text(2);
    e.git_commit = st.text(3);
    e.git_branch = st.text(4);
    e.config_name = st.text(5);
    e.config_hash = st.text(6);
    e.host = st.text(7);
    e.device = st.text(8);
    e.status = st.text(9);
    e.final_loss = st.real(10);
    e.tokens_per_sec = st.real(11);
    e.mfu = st.real(12);
    e.p99_ms = st.real(13);
    e.baseline_name = st.text(14);
    e.exit_code = st.integer(15);
    e.tokens_per_sec_pct = st.real(16);
    e.p99_ms_pct = st.real(17);
    e.workload = st.text(18);
    out.push_back(std::move(e));
  }
  return out;
}

int64_t Store::count() const {
  sql::Stmt st(*db_, "SELECT count(*) FROM entries");
  return st.step() ? st.integer(0) : 0;
}

int64_t Store::prune(int64_t keep) {
  if (keep < 0) throw std::invalid_argument("prune: --keep must be >= 0");
  int64_t deleted = 0;
  db_->write_transaction([&] {
    const std::string doomed =
        "(SELECT id FROM entries ORDER BY recorded_at DESC, id DESC LIMIT -1 OFFSET " +
        std::to_string(keep) + ")";
    db_->exec("DELETE FROM runs WHERE entry_id IN " + doomed);
    db_->exec("DELETE FROM compares WHERE entry_id IN " + doomed);
    db_->exec("DELETE FROM entries WHERE id IN " + doomed);
    deleted = db_->changes();
  });
  return deleted;
}

std::vector<SeriesPoint> Store::series(const std::string& config_name) const {
  sql::Stmt st(*db_,
               "SELECT e.id, e.recorded_at, e.git_commit, e.git_branch, e.config_name, "
               "e.config_hash, e.host, e.device,"
               " r.tokens_per_sec, r.p99_ms, r.final_loss, r.mfu, r.workload FROM entries e JOIN runs r ON "
               "r.entry_id = e.id"
               " WHERE e.kind = 'run' AND e.status = 'ok' AND (?1 = '' OR e.config_name = ?1)"
               " ORDER BY e.recorded_at, e.id");
  st.bind(1, config_name);
  std::vector<SeriesPoint> out;
  while (st.step()) {
    SeriesPoint p;
    p.id = st.integer(0);
    p.recorded_at = st.text(1);
    p.git_commit = st.text(2);
    p.git_branch = st.text(3);
    p.config_name = st.text(4);
    p.config_hash = st.text(5);
    p.host = st.text(6);
    p.device = st.text(7);
    p.tokens_per_sec = st.real(8).value_or(NAN);
    p.p99_ms = st.real(9).value_or(NAN);
    p.final_loss = st.real(10).value_or(NAN);
    p.mfu = st.real(11);
    p.workload = st.text(12);
    out.push_back(std::move(p));
  }
  return out;
}

std::optional<ReferenceCurve> Store::latest_loss_curve(const std::string& config_hash,
                                                       const std::string& host) const {
  sql::Stmt st(*db_,
               "SELECT e.id, e.git_commit, e.recorded_at, r.run_dir, r.loss_curve FROM entries e "
               "JOIN runs r ON r.entry_id = e.id"
               " WHERE e.kind = 'run' AND r.workload = 'train' AND e.status = 'ok' AND"
               " e.config_hash = ? AND e.host = ?"
               " ORDER BY e.recorded_at DESC, e.id DESC LIMIT 1");
  st.bind(1, config_hash).bind(2, host);
  if (!st.step()) return std::nullopt;
  ReferenceCurve c;
  c.id = st.integer(0);
  c.git_commit = st.text(1);
  c.recorded_at = st.text(2);
  c.run_dir = st.text(3);
  for (const auto& x : nlohmann::json::parse(st.text(4))) c.curve.push_back(runs::num_or_nan(x));
  if (c.curve.empty()) return std::nullopt;
  return c;
}

namespace {

// Opens (or creates) the database and records one entry; "" or why it could not.
template <class Record>
std::string try_recording(const fs::path& db, Record&& record) {
  try {
    auto store = Store::open(db, true);
    record(store);
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

}  // namespace

std::string try_record_run(const fs::path& db, const RunSummary& s, const std::string& config_toml,
                           const std::vector<double>& loss_curve, const std::string& run_dir) {
  return try_recording(db, [&](Store& st) { st.record_run(s, config_toml, loss_curve, run_dir); });
}

std::string try_record_compare(const fs::path& db, const compare::CompareResult& r,
                               const std::vector<std::string>& report_paths) {
  return try_recording(db, [&](Store& st) { st.record_compare(r, report_paths); });
}

std::string try_record_serve_run(const fs::path& db, const ServeRunRecord& r) {
  return try_recording(db, [&](Store& st) { st.record_serve_run(r); });
}

std::string try_record_serve_compare(const fs::path& db, const ServeCompareRecord& r) {
  return try_recording(db, [&](Store& st) { st.record_serve_compare(r); });
}

}  // namespace lockstep::history
