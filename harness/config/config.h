// The effective configuration of one run: a TOML file plus the files it `extends`, plus
// command-line overrides, validated against the schemas the components declare (schema.h).
//
// Every value remembers where it came from, so any error is one line:
//   file:line:col: section.key: what is wrong
// and `config show` / `config diff` can say which file set what.
#pragma once

#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "harness/config/schema.h"

namespace lockstep::config {

struct SourceLoc {
  std::string file;  // as the user named it (relative paths stay relative)
  int line = 0;
  int col = 0;
};

// A config problem. what() is the one-line message; the CLI exits with code 2.
class ConfigError : public std::runtime_error {
 public:
  ConfigError(SourceLoc loc, std::string key, const std::string& message);
  const SourceLoc& loc() const { return loc_; }
  const std::string& key() const { return key_; }

 private:
  SourceLoc loc_;
  std::string key_;
};

struct Entry {
  Value value;
  SourceLoc loc;
  bool is_default = false;
  std::string derived_from;  // the key this value was resolved from (model.preset), if another
  // An array of tables: where each element's fields were written, by "[i].field" (i from 1).
  std::map<std::string, SourceLoc> parts;
};

// A command-line flag that stands for a key (`run --steps 10` for run.steps=10): errors and
// `config show` name the flag as the user typed it, not an override they never wrote.
struct FlagOverride {
  std::string flag;        // "--steps 10"
  std::string assignment;  // "run.steps=10"
};

class Config {
 public:
  // Loads FILE (resolving `extends` relative to each file), applies `overrides` (each
  // "section.key=value", value in TOML syntax), then `flags`, validates and fills defaults.
  static Config load(const std::filesystem::path& file,
                     const std::vector<std::string>& overrides = {},
                     const std::vector<FlagOverride>& flags = {});
  // The same from text already in memory (tests, fuzzing). `label` names it in errors;
  // `extends` paths resolve against label's folder.
  static Config parse(std::string_view text, const std::string& label,
                      const std::vector<std::string>& overrides = {});

  int64_t integer(const std::string& key) const;
  double number(const std::string& key) const;
  bool flag(const std::string& key) const;
  const std::string& str(const std::string& key) const;
  const StrList& strings(const std::string& key) const;
  const StrTable& table(const std::string& key) const;
  const TableList& tables(const std::string& key) const;
  bool has_value(const std::string& key) const;  // false for a key with no default, unset
  bool is_set(const std::string& key) const;     // set by a file or override (not a default)
  const Value& value(const std::string& key) const;
  // Also "section.key[i].field" for an element of an array of tables (i from 1): where that
  // field was written, else where the element or the key was.
  SourceLoc where(const std::string& key) const;

  // For finalize steps: set a derived value (keeps the location of `origin_key`).
  void resolve(const std::string& key, Value v, const std::string& origin_key);
  // Throws ConfigError located at `key`.
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;

  // Effective config as TOML, sections in schema order. annotate=true adds "# default" /
  // "# from FILE" comments (for `config show`); the plain form is what runs record and hash.
  std::string to_toml(bool annotate = false) const;
  // Stable 16-hex-digit hash of to_toml(): identifies the computation across machines.
  std::string hash() const;
  // hash() as if every value naming the folder `from` named `to` instead: a config loaded from a
  // temporary checkout hashed as the same file in the repository's working tree (compare
  // --base-ref), so both commits' runs and a run from the working tree share one history series.
  std::string hash_relocated(const std::string& from, const std::string& to) const;

  const std::string& path() const { return path_; }  // the top file, as given
  const std::map<std::string, Entry>& entries() const { return entries_; }

 private:
  std::string path_;
  std::map<std::string, Entry> entries_;
  friend class Loader;
};

// One changed key between two effective configs.
struct Change {
  std::string key;
  std::string before;  // TOML-formatted; "(unset)" when absent
  std::string after;
  Knob knob = Knob::Workload;
};
std::vector<Change> diff(const Config& a, const Config& b);

// Closest candidate by edit distance, or "" when nothing is close enough.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace lockstep::config
