#include "harness/config/schema.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

namespace lockstep::config {

const char* knob_class_name(Knob k) {
  switch (k) {
    case Knob::None: return "none";
    case Knob::Workload: return "workload";
    case Knob::Exact: return "exact";
    case Knob::Approximate: return "approximate";
    case Knob::Fault: return "fault";
  }
  return "?";
}

std::optional<Knob> parse_knob_class(const std::string& s) {
  for (Knob k : {Knob::None, Knob::Workload, Knob::Exact, Knob::Approximate, Knob::Fault})
    if (s == knob_class_name(k)) return k;
  return std::nullopt;
}

const char* type_name(Type t) {
  switch (t) {
    case Type::Int: return "an integer";
    case Type::Float: return "a number";
    case Type::Bool: return "true or false";
    case Type::String: return "a string";
    case Type::StrList: return "an array of strings";
    case Type::StrTable: return "a table of strings";
    case Type::TableList: return "an array of tables";
  }
  return "?";
}

std::string format_value(const Value& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (const auto* d = std::get_if<double>(&v)) {
    if (std::isnan(*d)) return "nan";
    if (std::isinf(*d)) return *d > 0 ? "inf" : "-inf";
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, *d);  // shortest round-trip form
    std::string s(buf, r.ptr);
    if (s.find_first_of(".eE") == std::string::npos) s += ".0";
    return s;
  }
  if (const auto* t = std::get_if<StrTable>(&v)) {  // an inline table, keys in order
    if (t->empty()) return "{}";
    std::string out = "{ ";
    for (const auto& [k, e] : *t) {
      const bool bare = !k.empty() && std::all_of(k.begin(), k.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
      });
      out += (out.size() > 2 ? ", " : "") + (bare ? k : format_value(Value(k))) + " = " +
             format_value(Value(e));
    }
    return out + " }";
  }
  if (const auto* l = std::get_if<TableList>(&v)) {  // inline tables, scalars as their TOML text
    std::string out = "[";
    for (const auto& t : *l) {
      std::string one = "{ ";
      for (const auto& [k, e] : t) one += (one.size() > 2 ? ", " : "") + k + " = " + e;
      out += (out.size() > 1 ? ", " : "") + (t.empty() ? std::string("{}") : one + " }");
    }
    return out + "]";
  }
  if (const auto* l = std::get_if<StrList>(&v)) {
    std::string out = "[";
    for (const auto& e : *l) out += (out.size() > 1 ? ", " : "") + format_value(Value(e));
    return out + "]";
  }
  if (const auto* s = std::get_if<std::string>(&v)) {
    std::string out = "\"";
    for (char c : *s) {
      if (c == '"' || c == '\\')
        out += '\\', out += c;
      else if (c == '\n')
        out += "\\n";
      else if (static_cast<unsigned char>(c) < 0x20 ||
               c == 0x7f) {  // TOML forbids raw controls and DEL
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else
        out += c;
    }
    return out + "\"";
  }
  return "";
}

KeySpec KeySpec::Int(std::string name, std::optional<int64_t> def, std::string doc) {
  KeySpec k;
  k.name = std::move(name), k.type = Type::Int, k.doc = std::move(doc);
  if (def) k.def = *def;
  return k;
}
KeySpec KeySpec::Float(std::string name, std::optional<double> def, std::string doc) {
  KeySpec k;
  k.name = std::move(name), k.type = Type::Float, k.doc = std::move(doc);
  if (def) k.def = *def;
  return k;
}
KeySpec KeySpec::Bool(std::string name, bool def, std::string doc) {
  KeySpec k;
  k.name = std::move(name), k.type = Type::Bool, k.doc = std::move(doc), k.def = def;
  return k;
}
KeySpec KeySpec::Str(std::string name, std::optional<std::string> def, std::string doc) {
  KeySpec k;
  k.name = std::move(name), k.type = Type::String, k.doc = std::move(doc);
  if (def) k.def = *def;
  return k;
}
KeySpec KeySpec::Strings(std::string name, StrList def, std::string doc) {
  KeySpec k;
  k.name = std::move(name), k.type = Type::StrList, k.doc = std::move(doc), k.def = std::move(def);
  return k;
}
KeySpec KeySpec::Table(std::string name, std::string doc) {
  KeySpec k;
  k.name = std::move(name), k.type = Type::StrTable, k.doc = std::move(doc), k.def = StrTable{};
  return k;
}
KeySpec KeySpec::Tables(std::string name, std::string doc) {
  KeySpec k;
  k.name = std::move(name), k.type = Type::TableList, k.doc = std::move(doc), k.def = TableList{};
  return k;
}
KeySpec&& KeySpec::range(std::optional<double> lo, std::optional<double> hi) && {
  min = lo, max = hi;
  return std::move(*this);
}
KeySpec&& KeySpec::one_of(std::vector<std::string> c) && {
  choices = std::move(c);
  return std::move(*this);
}
KeySpec&& KeySpec::kind(Knob k) && {
  knob = k;
  return std::move(*this);
}
KeySpec&& KeySpec::judged_by(std::function<Knob(const Config&, const Config&)> f) && {
  knob_of = std::move(f);
  return std::move(*this);
}
KeySpec&& KeySpec::checked_by(std::function<void(const Config&, const std::string&)> f) && {
  check = std::move(f);
  return std::move(*this);
}
KeySpec&& KeySpec::unset_by_default() && {
  optional = true;
  return std::move(*this);
}

const KeySpec* SectionSchema::find(const std::string& key) const {
  for (const auto& k : keys)
    if (k.name == key) return &k;
  return nullptr;
}

std::string keys_markdown() {
  auto type_word = [](Type t) {
    switch (t) {
      case Type::Int: return "int";
      case Type::Float: return "float";
      case Type::Bool: return "bool";
      case Type::String: return "string";
      case Type::StrList: return "strings";
      case Type::StrTable: return "table";
      case Type::TableList: return "tables";
    }
    return "?";
  };
  std::string out;
  for (const auto* s : all_sections()) {
    out += "#### `[" + s->name + "]`\n\n" + s->doc +
           "\n\n| key | type | default | allowed | meaning |\n|---|---|---|---|---|\n";
    for (const auto& k : s->keys) {
      std::string allowed;
      if (!k.choices.empty()) {
        for (const auto& c : k.choices)
          allowed += (allowed.empty() ? "" : " \\| ") + ("`" + c + "`");
      }
      if (k.min || k.max) {  // an integer key with choices: its range, or one of the words
        auto b = [&](double x) {
          return k.type == Type::Int ? std::to_string(static_cast<long long>(x)) : format_value(x);
        };
        allowed = (k.min ? b(*k.min) : std::string("")) + " .. " +
                  (k.max ? b(*k.max) : std::string("")) +
                  (allowed.empty() ? "" : " \\| " + allowed);
      }
      const std::string def = !std::holds_alternative<std::monostate>(k.def)
                                  ? "`" + format_value(k.def) + "`"
                              : k.optional ? "unset"
                                           : "(derived)";
      std::string doc;
      for (char c : k.doc) doc += c == '|' ? std::string("\\|") : std::string(1, c);
      out += "| `" + k.name + "` | " + type_word(k.type) + " | " + def + " | " + allowed + " | " +
             doc + " |\n";
    }
    out += "\n";
  }
  return out;
}

const SectionSchema* find_section(const std::string& name) {
  for (const auto* s : all_sections())
    if (s->name == name) return s;
  return nullptr;
}

const KeySpec* find_key(const std::string& dotted) {
  auto dot = dotted.find('.');
  if (dot == std::string::npos) return nullptr;
  const SectionSchema* s = find_section(dotted.substr(0, dot));
  return s ? s->find(dotted.substr(dot + 1)) : nullptr;
}

}  // namespace lockstep::config
