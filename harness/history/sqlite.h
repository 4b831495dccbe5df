// A thin RAII layer over SQLite's C API for the history store: a connection and a prepared
// statement that close themselves, errors as exceptions naming the database, and write
// transactions (BEGIN IMMEDIATE) that retry while another process holds the write lock.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>

struct sqlite3;
struct sqlite3_stmt;

namespace lockstep::history::sql {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Db {
 public:
  // Opens (create: creating the file) and sets busy_timeout_ms; throws Error naming the path.
  Db(const std::string& path, bool create, int busy_timeout_ms);
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;
  Db(Db&& o) noexcept : db_(o.db_), path_(std::move(o.path_)) { o.db_ = nullptr; }
  ~Db();

  sqlite3* handle() const { return db_; }
  const std::string& path() const { return path_; }
  // Runs statements without results; retries SQLITE_BUSY/LOCKED until the deadline.
  void exec(const std::string& sql);
  // Runs fn inside BEGIN IMMEDIATE ... COMMIT; BEGIN is retried on SQLITE_BUSY for up to
  // retry_ms (the busy handler is not always consulted); rolls back when fn throws.
  void write_transaction(const std::function<void()>& fn, int retry_ms = 30000);
  [[noreturn]] void fail(const std::string& what) const;  // throws Error with sqlite's message
  int64_t last_insert_id() const;
  int64_t changes() const;  // rows changed by the last statement

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
};

class Stmt {
 public:
  Stmt(const Db& db, const std::string& sql);
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  ~Stmt();

  // Binders are 1-based; they return *this so calls chain.
  Stmt& bind(int i, const std::string& v);
  Stmt& bind(int i, int64_t v);
  Stmt& bind(int i, double v);  // non-finite -> NULL
  Stmt& bind(int i, const std::optional<double>& v);
  Stmt& bind_null(int i);
  bool step();  // true: a row is ready; false: done
  void run();   // step until done
  void reset();
  std::string text(int col) const;            // "" for NULL
  int64_t integer(int col) const;             // 0 for NULL
  std::optional<double> real(int col) const;  // nullopt for NULL
  bool is_null(int col) const;
  bool is_float(int col) const;  // the value is stored as REAL
  int columns() const;
  std::string column_name(int col) const;

 private:
  const Db& db_;
  sqlite3_stmt* st_ = nullptr;
  bool started_ = false;  // a row has been returned since the last reset
};

}  // namespace lockstep::history::sql
