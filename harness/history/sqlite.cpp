#include "harness/history/sqlite.h"

#include <sqlite3.h>

#include <chrono>
#include <cmath>
#include <thread>

namespace lockstep::history::sql {
namespace {

bool busy(int rc) {
  return (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED;
}

// Sleeps a little (growing, capped) before the next try; false once the deadline has passed.
bool wait_again(std::chrono::steady_clock::time_point deadline, int attempt) {
  if (std::chrono::steady_clock::now() >= deadline) return false;
  std::this_thread::sleep_for(std::chrono::milliseconds(std::min(50, 2 + attempt * 3)));
  return true;
}

}  // namespace

Db::Db(const std::string& path, bool create, int busy_timeout_ms) : path_(path) {
  const int flags =
      SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_FULLMUTEX;
  int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    throw Error(path + ": cannot open the history database: " + msg);
  }
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, busy_timeout_ms);
}

Db::~Db() {
  if (db_) sqlite3_close_v2(db_);
}

void Db::fail(const std::string& what) const {
  throw Error(path_ + ": " + what + ": " + sqlite3_errmsg(db_));
}

int64_t Db::last_insert_id() const {
  return sqlite3_last_insert_rowid(db_);
}
int64_t Db::changes() const {
  return sqlite3_changes(db_);
}

void Db::exec(const std::string& sql) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (int attempt = 0;; ++attempt) {
    char* err = nullptr;
    int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
    std::string msg = err ? err : "";
    sqlite3_free(err);
    if (rc == SQLITE_OK) return;
    if (busy(rc) && wait_again(deadline, attempt)) continue;
    throw Error(path_ + ": " + msg + " (in: " + sql.substr(0, 60) + ")");
  }
}

void Db::write_transaction(const std::function<void()>& fn, int retry_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(retry_ms);
  for (int attempt = 0;; ++attempt) {
    int rc = sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr);
    if (rc == SQLITE_OK) break;
    if (busy(rc) && wait_again(deadline, attempt)) continue;
    fail("cannot start a write transaction");
  }
  try {
    fn();
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  for (int attempt = 0;; ++attempt) {
    int rc = sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr);
    if (rc == SQLITE_OK) return;
    if (busy(rc) && wait_again(deadline, attempt)) continue;
    std::string msg = sqlite3_errmsg(db_);
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw Error(path_ + ": cannot commit: " + msg);
  }
}

Stmt::Stmt(const Db& db, const std::string& sql) : db_(db) {
  if (sqlite3_prepare_v2(db.handle(), sql.c_str(), -1, &st_, nullptr) != SQLITE_OK)
    db.fail("bad statement (" + sql.substr(0, 60) + ")");
}

Stmt::~Stmt() {
  sqlite3_finalize(st_);
}

Stmt& Stmt::bind(int i, const std::string& v) {
  if (sqlite3_bind_text(st_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT) !=
      SQLITE_OK)
    db_.fail("bind");
  return *this;
}
Stmt& Stmt::bind(int i, int64_t v) {
  if (sqlite3_bind_int64(st_, i, v) != SQLITE_OK) db_.fail("bind");
  return *this;
}
Stmt& Stmt::bind(int i, double v) {
  if (!std::isfinite(v)) return bind_null(i);
  if (sqlite3_bind_double(st_, i, v) != SQLITE_OK) db_.fail("bind");
  return *this;
}
Stmt& Stmt::bind(int i, const std::optional<double>& v) {
  return v ? bind(i, *v) : bind_null(i);
}
Stmt& Stmt::bind_null(int i) {
  if (sqlite3_bind_null(st_, i) != SQLITE_OK) db_.fail("bind");
  return *this;
}

bool Stmt::step() {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (int attempt = 0;; ++attempt) {
    int rc = sqlite3_step(st_);
    if (rc == SQLITE_ROW) return started_ = true;
    if (rc == SQLITE_DONE) return started_ = false;
    // A statement that has returned no row yet can simply start again (a reader racing a
    // checkpoint or a schema change); one that has must not, or rows would repeat.
    if (busy(rc) && !started_ && wait_again(deadline, attempt)) {
      sqlite3_reset(st_);
      continue;
    }
    db_.fail("query failed");
  }
}

void Stmt::run() {
  while (step()) {
  }
}

void Stmt::reset() {
  started_ = false;
  sqlite3_reset(st_);
  sqlite3_clear_bindings(st_);
}

std::string Stmt::text(int col) const {
  const unsigned char* p = sqlite3_column_text(st_, col);
  return p ? std::string(reinterpret_cast<const char*>(p),
                         static_cast<size_t>(sqlite3_column_bytes(st_, col)))
           : "";
}
int64_t Stmt::integer(int col) const {
  return sqlite3_column_int64(st_, col);
}
std::optional<double> Stmt::real(int col) const {
  if (is_null(col)) return std::nullopt;
  return sqlite3_column_double(st_, col);
}
bool Stmt::is_null(int col) const {
  return sqlite3_column_type(st_, col) == SQLITE_NULL;
}
bool Stmt::is_float(int col) const {
  return sqlite3_column_type(st_, col) == SQLITE_FLOAT;
}
int Stmt::columns() const {
  return sqlite3_column_count(st_);
}
std::string Stmt::column_name(int col) const {
  return sqlite3_column_name(st_, col);
}

}  // namespace lockstep::history::sql
