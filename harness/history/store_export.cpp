// Store::show, export_json and export_csv: whole entries out of the history database.
#include <cmath>
#include <cstdio>

#include "harness/history/sqlite.h"
#include "harness/history/store.h"

namespace lockstep::history {
namespace {

using ojson = nlohmann::ordered_json;

ojson parsed(const std::string& text) {
  if (text.empty()) return nullptr;
  try {
    return ojson::parse(text);
  } catch (const std::exception&) {
    return text;  // keep what is there rather than lose it
  }
}

ojson real_or_null(const sql::Stmt& st, int col) {
  auto v = st.real(col);
  return v && std::isfinite(*v) ? ojson(*v) : ojson(nullptr);
}
ojson int_or_null(const sql::Stmt& st, int col) {
  return st.is_null(col) ? ojson(nullptr) : ojson(st.integer(col));
}

const char* kEntryColumns =
    "e.id, e.kind, e.recorded_at, e.git_commit, e.git_branch, e.config_name, e.config_hash, "
    "e.host, e.device,"
    " e.libtorch, e.threads, e.world_size, e.status, e.environment";

ojson entry_json(const sql::Stmt& st) {
  return {{"id", st.integer(0)},
          {"kind", st.text(1)},
          {"recorded_at", st.text(2)},
          {"git_commit", st.text(3)},
          {"git_branch", st.text(4)},
          {"config_name", st.text(5)},
          {"config_hash", st.text(6)},
          {"host", st.text(7)},
          {"device", st.text(8)},
          {"libtorch", st.text(9)},
          {"threads", int_or_null(st, 10)},
          {"world_size", int_or_null(st, 11)},
          {"status", st.text(12)},
          {"environment", parsed(st.text(13))}};
}

ojson run_details(const sql::Db& db, int64_t id) {
  sql::Stmt st(db,
               "SELECT config_toml, steps, final_loss, tokens_per_sec, mfu, p50_ms, p99_ms, "
               "peak_memory_bytes, run_dir,"
               " loss_curve, summary, workload FROM runs WHERE entry_id = ?");
  st.bind(1, id);
  if (!st.step()) return nullptr;
  return {{"workload", st.text(11)},
          {"config_toml", st.text(0)},
          {"steps", st.integer(1)},
          {"final_loss", real_or_null(st, 2)},
          {"tokens_per_sec", real_or_null(st, 3)},
          {"mfu", real_or_null(st, 4)},
          {"p50_ms", real_or_null(st, 5)},
          {"p99_ms", real_or_null(st, 6)},
          {"peak_memory_bytes", int_or_null(st, 7)},
          {"run_dir", st.text(8)},
          {"loss_curve", parsed(st.text(9))},
          {"summary", parsed(st.text(10))}};
}

ojson compare_details(const sql::Db& db, int64_t id) {
  sql::Stmt st(db,
               "SELECT baseline_name, baseline_hash, variant_name, variant_hash, mode, exit_code, "
               "tokens_per_sec_pct,"
               " mfu_pts, p99_ms_pct, loss_reference, checks, reports, out_dir, result FROM "
               "compares WHERE entry_id = ?");
  st.bind(1, id);
  if (!st.step()) return nullptr;
  return {{"baseline_name", st.text(0)},
          {"baseline_hash", st.text(1)},
          {"variant_name", st.text(2)},
          {"variant_hash", st.text(3)},
          {"mode", st.text(4)},
          {"exit_code", st.integer(5)},
          {"tokens_per_sec_pct", real_or_null(st, 6)},
          {"mfu_pts", real_or_null(st, 7)},
          {"p99_ms_pct", real_or_null(st, 8)},
          {"loss_reference", st.text(9)},
          {"checks", parsed(st.text(10))},
          {"reports", parsed(st.text(11))},
          {"out_dir", st.text(12)},
          {"result", parsed(st.text(13))}};
}

ojson full_entry(const sql::Db& db, const sql::Stmt& st) {
  ojson j = entry_json(st);
  const int64_t id = st.integer(0);
  if (st.text(1) == "run")
    j["run"] = run_details(db, id);
  else
    j["compare"] = compare_details(db, id);
  return j;
}

std::string csv_cell(const sql::Stmt& st, int col) {
  if (st.is_null(col)) return "";
  std::string s;
  if (st.is_float(
          col)) {  // all 17 digits: the CSV round-trips the stored double (check the type first:
    char buf[40];  // sqlite3_column_type is undefined after a conversion)
    std::snprintf(buf, sizeof buf, "%.17g", *st.real(col));
    s = buf;
  } else {
    s = st.text(col);
  }
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

std::optional<nlohmann::ordered_json> Store::show(int64_t id) const {
  sql::Stmt st(*db_, std::string("SELECT ") + kEntryColumns + " FROM entries e WHERE e.id = ?");
  st.bind(1, id);
  if (!st.step()) return std::nullopt;
  return full_entry(*db_, st);
}

nlohmann::ordered_json Store::export_json() const {
  sql::Stmt st(*db_, std::string("SELECT ") + kEntryColumns +
                         " FROM entries e ORDER BY e.recorded_at, e.id");
  ojson all = ojson::array();
  while (st.step()) all.push_back(full_entry(*db_, st));
  return all;
}

std::string Store::export_csv() const {
  sql::Stmt st(*db_,
               "SELECT e.id, e.kind, e.recorded_at, e.git_commit, e.git_branch, e.config_name, "
               "e.config_hash, e.host,"
               " e.device, e.libtorch, e.threads, e.world_size, e.status, r.steps, r.final_loss, "
               "r.tokens_per_sec, r.mfu,"
               " r.p50_ms, r.p99_ms, r.peak_memory_bytes, r.run_dir, r.workload, c.baseline_name, "
               "c.variant_name, c.mode, c.exit_code,"
               " c.tokens_per_sec_pct, c.mfu_pts, c.p99_ms_pct, c.loss_reference, c.out_dir"
               " FROM entries e LEFT JOIN runs r ON r.entry_id = e.id LEFT JOIN compares c ON "
               "c.entry_id = e.id"
               " ORDER BY e.recorded_at, e.id");
  std::string out;
  for (int i = 0; i < st.columns(); ++i) out += (i ? "," : "") + st.column_name(i);
  out += "\n";
  while (st.step()) {
    for (int i = 0; i < st.columns(); ++i) out += (i ? "," : "") + csv_cell(st, i);
    out += "\n";
  }
  return out;
}

}  // namespace lockstep::history
