// Loading: parse each file with TOML++, flatten to "section.key" entries that remember their
// source location, overlay `extends` chains and overrides, then validate against the schemas.
#include "harness/config/config.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <sstream>

// toml++ 3.3 asserts a parser precondition that malformed table headers such as "[[[1]]]" or
// "[\x01]" violate (fixed upstream: marzer/tomlplusplus#301); with asserts off, as in release
// builds, the parser reports them as the syntax errors they are. Keep them off in every build type
// so such a file is a ConfigError (exit code 2), not an abort.
#ifndef TOML_ASSERT
#define TOML_ASSERT(expr) static_assert(true)
#endif
#include <toml++/toml.h>

namespace lockstep::config {
namespace fs = std::filesystem;

namespace {

// "file:line:col: key: message"; without ":line:col" when there is no line (a whole file, a
// command-line flag, a default) and without "key: " when the message is about the file itself.
std::string format_error(const SourceLoc& loc, const std::string& key, const std::string& msg) {
  std::string out = loc.file;
  if (loc.line > 0) out += ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col);
  out += ": " + (key.empty() ? std::string() : key + ": ") + msg;
  // Always one line: no '\n', and no '\r' (or other control character) to break it either.
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  return out;
}

SourceLoc loc_of(const toml::source_region& r, const std::string& file) {
  return SourceLoc{file, static_cast<int>(r.begin.line), static_cast<int>(r.begin.column)};
}

std::string all_keys_hint(const std::string& key, const SectionSchema* within) {
  std::vector<std::string> cands;
  if (within) {
    for (const auto& k : within->keys) cands.push_back(k.name);
    std::string m = did_you_mean(key, cands);
    if (!m.empty()) return " (did you mean \"" + m + "\"?)";
    cands.clear();
  }
  // The key may belong to another section: suggest "section.key".
  for (const auto* s : all_sections())
    for (const auto& k : s->keys)
      if (k.name == key) return " (did you mean \"" + s->name + "." + k.name + "\"?)";
  return "";
}

// " (did you mean \"configs/baseline.toml\"?)" for a config file that does not exist, from the
// names in the folder it names (the folder as the user wrote it); "" when nothing is close.
std::string file_hint(const fs::path& file, const std::string& shown) {
  const fs::path dir = file.parent_path().empty() ? fs::path(".") : file.parent_path();
  std::error_code ec;
  std::vector<std::string> names;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    names.push_back(it->path().filename().string());
  const std::string m = did_you_mean(file.filename().string(), names);
  if (m.empty()) return "";
  return " (did you mean \"" + (fs::path(shown).parent_path() / m).string() + "\"?)";
}

std::string type_of(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table: return "table";
    case toml::node_type::array: return "array";
    case toml::node_type::string: return "string";
    case toml::node_type::integer: return "integer";
    case toml::node_type::floating_point: return "float";
    case toml::node_type::boolean: return "boolean";
    default: return "date/time";
  }
}

}  // namespace

ConfigError::ConfigError(SourceLoc loc, std::string key, const std::string& message)
    : std::runtime_error(format_error(loc, key, message)),
      loc_(std::move(loc)),
      key_(std::move(key)) {}

// Builds a Config. One instance per load; not reused.
class Loader {
 public:
  Config cfg;

  void load_file(const fs::path& file, const std::string& shown, const SourceLoc* from,
                 const std::string& from_key) {
    std::error_code ec;
    fs::path canon = fs::weakly_canonical(file, ec);
    if (ec) canon = file;
    if (std::find(stack_.begin(), stack_.end(), canon) != stack_.end()) {
      std::string chain;
      for (const auto& p : stack_) chain += p.filename().string() + " -> ";
      throw ConfigError(from ? *from : SourceLoc{shown, 1, 1}, from_key,
                        "cyclic extends: " + chain + canon.filename().string());
    }
    std::ifstream in(file, std::ios::binary);
    if (!in || fs::is_directory(file, ec)) {
      const std::string why = fs::is_directory(file, ec) ? "a folder, not a config file"
                              : fs::exists(file, ec)     ? "permission denied"
                                                         : "no such file";
      const std::string hint = why == "no such file" ? file_hint(file, shown) : "";
      if (from)
        throw ConfigError(*from, from_key, "cannot read \"" + shown + "\": " + why + hint);
      throw ConfigError(SourceLoc{shown, 0, 0}, "", why + hint);
    }
    std::stringstream ss;
    ss << in.rdbuf();
    stack_.push_back(canon);
    load_text(ss.str(), shown, file.parent_path());
    stack_.pop_back();
  }

  void load_text(std::string_view text, const std::string& shown, const fs::path& dir) {
    if (stack_.size() > 16)
      throw ConfigError(SourceLoc{shown, 1, 1}, "extends", "extends chain deeper than 16 files");
    toml::table root;
    try {
      root = toml::parse(text, std::string_view(shown));
    } catch (const toml::parse_error& e) {
      throw ConfigError(loc_of(e.source(), shown), "<syntax>", std::string(e.description()));
    }
    // `extends` first: the base's values are the ones this file overrides.
    if (const toml::node* ext = root.get("extends")) {
      SourceLoc at = loc_of(ext->source(), shown);
      const auto* s = ext->as_string();
      if (!s) throw ConfigError(at, "extends", "expected a string (a path), got " + type_of(*ext));
      fs::path base = dir / s->get();
      std::string base_shown =
          (fs::path(shown).parent_path() / s->get()).lexically_normal().string();
      load_file(base, base_shown, &at, "extends");
    }
    for (auto&& [k, node] : root) {
      std::string section(k.str());
      SourceLoc at = loc_of(k.source(), shown);
      if (section == "extends") continue;
      const SectionSchema* schema = find_section(section);
      if (!node.is_table()) {
        throw ConfigError(
            at, section,
            "top-level key must be inside a [section]" + all_keys_hint(section, nullptr));
      }
      if (!schema) {
        std::vector<std::string> names;
        for (const auto* s : all_sections()) names.push_back(s->name);
        std::string m = did_you_mean(section, names);
        throw ConfigError(
            at, "[" + section + "]",
            "unknown section" + (m.empty() ? "" : " (did you mean \"[" + m + "]\"?)"));
      }
      for (auto&& [kk, vnode] : *node.as_table()) {
        std::string key(kk.str());
        set(*schema, key, vnode, loc_of(kk.source(), shown));
      }
    }
  }

  // `text` is "section.key=value"; `flag` names a command-line flag that stands for it
  // ("--steps 10"), which errors and `config show` then name instead of "<--set text>".
  void apply_override(const std::string& text, const std::string& flag = "") {
    const std::string shown = flag.empty() ? "<--set " + text + ">" : flag;
    const int line = flag.empty() ? 1 : 0;  // a flag has no line and column
    auto eq = text.find('=');
    if (eq == std::string::npos)
      throw ConfigError(SourceLoc{shown, line, line}, text, "expected section.key=value");
    std::string dotted = text.substr(0, eq);
    dotted.erase(0, dotted.find_first_not_of(" \t"));
    dotted.erase(dotted.find_last_not_of(" \t") + 1);
    auto dot = dotted.find('.');
    if (dot == std::string::npos)
      throw ConfigError(SourceLoc{shown, line, line}, dotted, "expected section.key=value");
    std::string section = dotted.substr(0, dot), key = dotted.substr(dot + 1);
    const SectionSchema* schema = find_section(section);
    if (!schema) {
      std::vector<std::string> names;
      for (const auto* s : all_sections()) names.push_back(s->name);
      std::string m = did_you_mean(section, names);
      throw ConfigError(SourceLoc{shown, line, line}, dotted,
                        "unknown section" + (m.empty() ? "" : " (did you mean \"[" + m + "]\"?)"));
    }
    std::string value_text = text.substr(eq + 1);
    toml::table t;
    try {
      t = toml::parse("v = " + value_text, std::string_view(shown));
    } catch (const toml::parse_error& e) {
      // Bare words are strings: --set precision.compute=bf16 (spaces around the word are not part
      // of it). For a key that is not a string, TOML's own reason is the useful one ("integer
      // out of range", not "expected an integer, got string").
      value_text.erase(0, value_text.find_first_not_of(" \t"));
      value_text.erase(value_text.find_last_not_of(" \t") + 1);
      const KeySpec* spec = schema->find(key);
      const bool numeric = !value_text.empty() && (std::isdigit(static_cast<unsigned char>(
                                                       value_text[0])) ||
                                                   value_text[0] == '+' || value_text[0] == '-');
      if (spec && spec->type != Type::String && numeric)
        throw ConfigError(SourceLoc{shown, line, line}, dotted, std::string(e.description()));
      try {
        t = toml::parse("v = \"" + value_text + "\"", std::string_view(shown));
      } catch (const toml::parse_error& e) {
        throw ConfigError(SourceLoc{shown, line, line}, dotted, std::string(e.description()));
      }
    }
    set(*schema, key, *t.get("v"), SourceLoc{shown, line, line});
  }

  void set(const SectionSchema& schema, const std::string& key, const toml::node& node,
           SourceLoc at) {
    const std::string dotted = schema.name + "." + key;
    const KeySpec* spec = schema.find(key);
    if (!spec) throw ConfigError(at, dotted, "unknown key" + all_keys_hint(key, &schema));
    Value v;
    auto wrong = [&](const std::string& got) {
      return ConfigError(at, dotted,
                         std::string("expected ") + type_name(spec->type) + ", got " + got);
    };
    switch (spec->type) {
      case Type::Int:
        // An integer key with choices also takes those words (`repeats = "auto"`): check_range
        // rejects any other string.
        if (node.is_string() && !spec->choices.empty()) {
          v = node.as_string()->get();
          break;
        }
        if (!node.is_integer()) {
          std::string words;
          for (const auto& c : spec->choices) words += " or \"" + c + "\"";
          throw ConfigError(at, dotted,
                            std::string("expected ") + type_name(spec->type) + words + ", got " +
                                type_of(node));
        }
        v = node.as_integer()->get();
        break;
      case Type::Float:
        if (node.is_integer())
          v = static_cast<double>(node.as_integer()->get());
        else if (node.is_floating_point())
          v = node.as_floating_point()->get() + 0.0;  // -0.0 -> 0.0 (hash == diff)
        else
          throw wrong(type_of(node));
        break;
      case Type::Bool:
        if (!node.is_boolean()) throw wrong(type_of(node));
        v = node.as_boolean()->get();
        break;
      case Type::String:
        if (!node.is_string()) throw wrong(type_of(node));
        v = node.as_string()->get();
        break;
      case Type::StrList: {
        const auto* arr = node.as_array();
        if (!arr) throw wrong(type_of(node));
        StrList list;
        for (size_t i = 0; i < arr->size(); ++i) {
          const auto* e = arr->get(i);
          if (!e->is_string())
            throw ConfigError(at, dotted,
                              "element " + std::to_string(i + 1) + ": expected a string, got " +
                                  type_of(*e));
          list.push_back(e->as_string()->get());
        }
        v = std::move(list);
        break;
      }
      case Type::StrTable: {
        const auto* tab = node.as_table();
        if (!tab) throw wrong(type_of(node));
        StrTable table;
        for (auto&& [k, e] : *tab) {
          if (!e.is_string())
            throw ConfigError(loc_of(k.source(), at.file), dotted + "." + std::string(k.str()),
                              "expected a string, got " + type_of(e));
          table[std::string(k.str())] = e.as_string()->get();
        }
        v = std::move(table);
        break;
      }
      case Type::TableList: {
        const auto* arr = node.as_array();
        if (!arr) throw wrong(type_of(node));
        parts.clear();
        TableList list;
        for (size_t i = 0; i < arr->size(); ++i) {
          const std::string index = "[" + std::to_string(i + 1) + "]";
          const auto* tab = arr->get(i)->as_table();
          if (!tab)
            throw ConfigError(loc_of(arr->get(i)->source(), at.file), dotted + index,
                              "expected a table, got " + type_of(*arr->get(i)));
          const SourceLoc first = loc_of(tab->source(), at.file);
          parts[index] = first.line > 0 ? first : at;
          StrTable fields;
          for (auto&& [k, e] : *tab) {
            const std::string field(k.str());
            const SourceLoc floc = loc_of(k.source(), at.file);
            Value scalar;
            if (e.is_integer()) scalar = e.as_integer()->get();
            else if (e.is_floating_point()) scalar = e.as_floating_point()->get() + 0.0;
            else if (e.is_boolean()) scalar = e.as_boolean()->get();
            else if (e.is_string()) scalar = e.as_string()->get();
            else
              throw ConfigError(floc, dotted + index + "." + field,
                                "expected a number, string or boolean, got " + type_of(e));
            fields[field] = format_value(scalar);
            parts[index + "." + field] = floc.line > 0 ? floc : parts[index];
          }
          list.push_back(std::move(fields));
        }
        v = std::move(list);
        break;
      }
    }
    check_range(*spec, dotted, v, at);
    cfg.entries_[dotted] = Entry{std::move(v), std::move(at), false, {}, std::move(parts)};
    parts.clear();
  }

  static void check_range(const KeySpec& spec, const std::string& dotted, const Value& v,
                          const SourceLoc& at) {
    // Bounds are doubles; show them as the key's type ("1", not "1.0" or "1e+09", for an integer
    // key).
    auto bound = [&](double b) {
      return spec.type == Type::Int ? format_value(static_cast<int64_t>(b)) : format_value(b);
    };
    double x = 0;
    if (const auto* i = std::get_if<int64_t>(&v))
      x = static_cast<double>(*i);
    else if (const auto* d = std::get_if<double>(&v))
      x = *d;
    if (std::holds_alternative<int64_t>(v) || std::holds_alternative<double>(v)) {
      if (x != x) throw ConfigError(at, dotted, "must be a number, got nan");
      if (spec.min && x < *spec.min)
        throw ConfigError(
            at, dotted,
            "out of range: " + format_value(v) + " (must be >= " + bound(*spec.min) + ")");
      if (spec.max && x > *spec.max)
        throw ConfigError(
            at, dotted,
            "out of range: " + format_value(v) + " (must be <= " + bound(*spec.max) + ")");
    }
    if (const auto* s = std::get_if<std::string>(&v); s && !spec.choices.empty()) {
      if (std::find(spec.choices.begin(), spec.choices.end(), *s) == spec.choices.end()) {
        std::string list;
        for (const auto& c : spec.choices) list += (list.empty() ? "" : "|") + c;
        std::string m = did_you_mean(*s, spec.choices);
        throw ConfigError(at, dotted,
                          "\"" + *s + "\" is not one of " + list +
                              (m.empty() ? "" : " (did you mean \"" + m + "\"?)"));
      }
    }
  }

  void finish(const std::string& top) {
    cfg.path_ = top;
    for (const auto* s : all_sections())
      for (const auto& k : s->keys) {
        const std::string dotted = s->name + "." + k.name;
        if (!cfg.entries_.count(dotted))
          cfg.entries_[dotted] = Entry{k.def, SourceLoc{top, 0, 0}, true, {}, {}};
      }
    for (const auto* s : all_sections())
      if (s->finalize) s->finalize(cfg);
    for (const auto* s : all_sections())
      for (const auto& k : s->keys)
        if (k.check) k.check(cfg, s->name + "." + k.name);
  }

 private:
  std::vector<fs::path> stack_;
  std::map<std::string, SourceLoc> parts;  // the array of tables being set: its elements' locations
};

Config Config::load(const fs::path& file, const std::vector<std::string>& overrides,
                    const std::vector<FlagOverride>& flags) {
  Loader l;
  l.load_file(file, file.string(), nullptr, "");
  for (const auto& o : overrides) l.apply_override(o);
  for (const auto& f : flags) l.apply_override(f.assignment, f.flag);
  l.finish(file.string());
  return std::move(l.cfg);
}

Config Config::parse(std::string_view text, const std::string& label,
                     const std::vector<std::string>& overrides) {
  Loader l;
  l.load_text(text, label, fs::path(label).parent_path());
  for (const auto& o : overrides) l.apply_override(o);
  l.finish(label);
  return std::move(l.cfg);
}

const Value& Config::value(const std::string& key) const {
  auto it = entries_.find(key);
  if (it == entries_.end()) throw std::logic_error("config key not in any schema: " + key);
  return it->second.value;
}

int64_t Config::integer(const std::string& key) const {
  const Value& v = value(key);
  if (const auto* i = std::get_if<int64_t>(&v)) return *i;
  throw std::logic_error("config key has no integer value: " + key);
}
double Config::number(const std::string& key) const {
  const Value& v = value(key);
  if (const auto* d = std::get_if<double>(&v)) return *d;
  if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  throw std::logic_error("config key has no float value: " + key);
}
bool Config::flag(const std::string& key) const {
  const Value& v = value(key);
  if (const auto* b = std::get_if<bool>(&v)) return *b;
  throw std::logic_error("config key has no bool value: " + key);
}
const StrTable& Config::table(const std::string& key) const {
  const Value& v = value(key);
  if (const auto* t = std::get_if<StrTable>(&v)) return *t;
  throw std::logic_error("config key has no table value: " + key);
}
const TableList& Config::tables(const std::string& key) const {
  const Value& v = value(key);
  if (const auto* t = std::get_if<TableList>(&v)) return *t;
  throw std::logic_error("config key has no array-of-tables value: " + key);
}
const StrList& Config::strings(const std::string& key) const {
  const Value& v = value(key);
  if (const auto* l = std::get_if<StrList>(&v)) return *l;
  throw std::logic_error("config key has no string-list value: " + key);
}
const std::string& Config::str(const std::string& key) const {
  const Value& v = value(key);
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  throw std::logic_error("config key has no string value: " + key);
}
bool Config::has_value(const std::string& key) const {
  return !std::holds_alternative<std::monostate>(value(key));
}
bool Config::is_set(const std::string& key) const {
  auto it = entries_.find(key);
  return it != entries_.end() && !it->second.is_default;
}
SourceLoc Config::where(const std::string& key) const {
  auto it = entries_.find(key);
  if (it != entries_.end()) return it->second.loc;
  const auto bracket = key.find('[');
  if (bracket != std::string::npos) {  // "serve.lanes[2].max_len"
    it = entries_.find(key.substr(0, bracket));
    if (it != entries_.end()) {
      const std::string part = key.substr(bracket);
      auto p = it->second.parts.find(part);
      if (p == it->second.parts.end()) p = it->second.parts.find(part.substr(0, part.find(']') + 1));
      return p != it->second.parts.end() ? p->second : it->second.loc;
    }
  }
  return SourceLoc{path_, 0, 0};
}

void Config::resolve(const std::string& key, Value v, const std::string& origin_key) {
  Entry& e = entries_.at(key);
  e.value = std::move(v);
  e.loc = where(origin_key);
  e.is_default = !is_set(origin_key);
  if (origin_key != key) e.derived_from = origin_key;
}

void Config::fail(const std::string& key, const std::string& message) const {
  throw ConfigError(where(key), key, message);
}

std::string Config::to_toml(bool annotate) const {
  std::ostringstream out;
  bool first = true;
  for (const auto* s : all_sections()) {
    out << (first ? "" : "\n") << "[" << s->name << "]\n";
    first = false;
    for (const auto& k : s->keys) {
      const Entry& e = entries_.at(s->name + "." + k.name);
      if (std::holds_alternative<std::monostate>(e.value)) continue;
      out << k.name << " = " << format_value(e.value);
      if (annotate) {
        // A value a preset chose is the preset's, not the file's that names the preset.
        if (!e.derived_from.empty())
          out << "  # from " << e.derived_from << " = " << format_value(value(e.derived_from));
        else if (e.is_default)
          out << "  # default";
        else if (e.loc.file != path_)
          out << "  # from " << e.loc.file;
      }
      out << "\n";
    }
  }
  return out.str();
}

std::string Config::hash() const { return hash_relocated("", ""); }

std::string Config::hash_relocated(const std::string& from, const std::string& to) const {
  // FNV-1a 64: identity of the computation, not a security boundary. run.name is excluded so
  // renaming a config does not change its identity.
  std::string text;
  for (const auto& [k, e] : entries_) {
    if (k == "run.name") continue;
    std::string v = format_value(e.value);
    if (!from.empty())
      for (size_t at = 0; (at = v.find(from, at)) != std::string::npos; at += to.size())
        v.replace(at, from.size(), to);
    text += k + "=" + v + "\n";
  }
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::vector<Change> diff(const Config& a, const Config& b) {
  std::vector<Change> out;
  for (const auto* s : all_sections())
    for (const auto& k : s->keys) {
      const std::string key = s->name + "." + k.name;
      const Value& va = a.value(key);
      const Value& vb = b.value(key);
      if (va == vb) continue;
      auto show = [](const Value& v) {
        return std::holds_alternative<std::monostate>(v) ? std::string("(unset)") : format_value(v);
      };
      out.push_back(Change{key, show(va), show(vb), k.knob_of ? k.knob_of(a, b) : k.knob});
    }
  return out;
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  auto distance = [](const std::string& a, const std::string& b) {
    std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      cur[0] = i;
      for (size_t j = 1; j <= b.size(); ++j)
        cur[j] =
            std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      std::swap(prev, cur);
    }
    return prev[b.size()];
  };
  std::string best;
  size_t best_d = std::max<size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    size_t d = distance(word, c);
    if (d < best_d) best_d = d, best = c;
  }
  return best;
}

}  // namespace lockstep::config
