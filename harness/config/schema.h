// Config schema: each component declares the keys of the section it owns (name, type, default,
// range or choices, one line of documentation) and, optionally, a finalize step that resolves
// derived defaults and checks cross-key rules. The loader validates every file against these
// declarations, so a component never sees a key it did not declare or a value out of range.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace lockstep::config {

class Config;

// A config value: a scalar, a list of strings, a table of strings (`env = { KEY = "v" }`), or an
// array of tables of scalars (`[[serve.lanes]]`), each scalar kept as its TOML text ("64", "2.5",
// "\"fast\"") for the owning component to read with its own types and rules.
// monostate = "no value" (a key with no default that was not set).
using StrList = std::vector<std::string>;
using StrTable = std::map<std::string, std::string>;
using TableList = std::vector<StrTable>;
using Value =
    std::variant<std::monostate, int64_t, double, bool, std::string, StrList, StrTable, TableList>;

enum class Type { Int, Float, Bool, String, StrList, StrTable, TableList };

const char* type_name(Type t);
// TOML-formatted value: strings quoted, floats always with a '.' or exponent.
std::string format_value(const Value& v);

// What changing a key means for an A/B comparison (see harness/compare).
enum class Knob {
  None,         // bookkeeping (names, output, gate policy): not part of the math or the speed
  Workload,     // changes the computation itself: losses are not expected to align
  Exact,        // an optimization that must keep the math bit-for-bit or to ~1e-6
  Approximate,  // an optimization that changes rounding (bf16, fp16): judged against the noise envelope
  Fault,        // an injected fault (tests and demos)
};
// The knob class as report.json writes it ("none", "workload", "exact", "approximate", "fault"),
// and back ([gate] alignment names one); nullopt for any other word.
const char* knob_class_name(Knob k);
std::optional<Knob> parse_knob_class(const std::string& s);

struct KeySpec {
  std::string name;
  Type type = Type::Int;
  Value def;  // monostate: no default (finalize or the component resolves it)
  std::optional<double> min, max;
  std::vector<std::string> choices;  // a string key's values; an integer key's words beside numbers
  std::string doc;
  Knob knob = Knob::Workload;
  // Optional: how a change of this key between two configs is judged when it depends on the
  // values (a precision on a device, the knob class an implementation declares). Unset: `knob`.
  std::function<Knob(const Config& before, const Config& after)> knob_of;
  // Optional: a check of this key's value, run after every section's finalize (so it can rely on
  // what they resolved, e.g. the plugins [plugins] loaded). Throws via Config::fail.
  std::function<void(const Config& c, const std::string& dotted)> check;
  bool optional = false;  // no default and none derived: unset means the rule is off

  static KeySpec Int(std::string name, std::optional<int64_t> def, std::string doc);
  static KeySpec Float(std::string name, std::optional<double> def, std::string doc);
  static KeySpec Bool(std::string name, bool def, std::string doc);
  static KeySpec Str(std::string name, std::optional<std::string> def, std::string doc);
  static KeySpec Strings(std::string name, StrList def, std::string doc);
  static KeySpec Table(std::string name, std::string doc);  // default: the empty table
  static KeySpec Tables(std::string name, std::string doc);  // `[[s.name]]`; default: none
  KeySpec&& range(std::optional<double> lo, std::optional<double> hi) &&;
  KeySpec&& one_of(std::vector<std::string> c) &&;
  KeySpec&& kind(Knob k) &&;
  KeySpec&& judged_by(std::function<Knob(const Config&, const Config&)> f) &&;
  KeySpec&& checked_by(std::function<void(const Config&, const std::string&)> f) &&;
  KeySpec&& unset_by_default() &&;  // `config keys` then says "unset", not "(derived)"
};

struct SectionSchema {
  std::string name;
  std::string doc;
  std::vector<KeySpec> keys;
  // Runs after defaults are filled: resolve derived values, check cross-key rules
  // (throw via Config::fail so the error points at the offending key).
  std::function<void(Config&)> finalize;

  const KeySpec* find(const std::string& key) const;
};

// Every section the loader accepts, in the order `config show` prints them. Defined above the
// components that own the sections (harness/sections.cpp), so this layer depends on none of them.
const std::vector<const SectionSchema*>& all_sections();
const SectionSchema* find_section(const std::string& name);
const KeySpec* find_key(const std::string& dotted);

// Every section and key as Markdown tables (docs/config.md's reference is this output).
std::string keys_markdown();

}  // namespace lockstep::config
