#include "harness/diagnose/trace_check.h"

#include <map>
#include <set>
#include <string_view>

#include "harness/util/files.h"

namespace lockstep::diagnose {
using nlohmann::json;

namespace {

// The phases of the Trace Event Format spec.
bool known_phase(const std::string& ph) {
  static const std::string kPhases = "BEXiICbnestfPNODMVvRc()";
  return ph.size() == 1 && kPhases.find(ph[0]) != std::string::npos;
}

bool is_id(const json& j) {
  return j.is_number() || j.is_string();
}

const json* events_of(const json& doc, std::vector<std::string>& errors, const std::string& where) {
  if (doc.is_array()) return &doc;
  if (doc.is_object() && doc.contains("traceEvents")) {
    if (doc["traceEvents"].is_array()) return &doc["traceEvents"];
    errors.push_back(where + ": \"traceEvents\" is not an array");
    return nullptr;
  }
  errors.push_back(where +
                   ": not a trace: expected an array of events or an object with \"traceEvents\"");
  return nullptr;
}

}  // namespace

std::vector<std::string> check_trace(const json& doc, const std::string& where) {
  std::vector<std::string> errors;
  const json* events = events_of(doc, errors, where);
  if (!events) return errors;
  struct Open {
    std::string name;
    double ts;
    size_t index;
  };
  std::map<std::pair<std::string, std::string>, std::vector<Open>>
      stacks;  // (pid, tid) -> open B events
  size_t i = 0;
  for (const auto& e : *events) {
    const std::string at = where + ": event " + std::to_string(i) +
                           (e.is_object() && e.contains("name") && e["name"].is_string()
                                ? " (\"" + e["name"].get<std::string>() + "\")"
                                : "");
    auto err = [&](const std::string& what) { errors.push_back(at + ": " + what); };
    ++i;
    if (!e.is_object()) {
      err("not an object");
      continue;
    }
    if (!e.contains("ph") || !e["ph"].is_string()) {
      err("missing \"ph\"");
      continue;
    }
    const std::string ph = e["ph"].get<std::string>();
    if (!known_phase(ph)) err("unknown phase \"" + ph + "\"");
    const bool meta = ph == "M";
    if (!e.contains("name") || !e["name"].is_string()) err("missing \"name\"");
    if (!e.contains("pid") || !is_id(e["pid"])) err("missing \"pid\"");
    if (!meta && (!e.contains("tid") || !is_id(e["tid"]))) err("missing \"tid\"");
    if (!meta && (!e.contains("ts") || !e["ts"].is_number())) err("missing or non-numeric \"ts\"");
    if (meta && e.contains("ts") && !e["ts"].is_number()) err("non-numeric \"ts\"");
    if (ph == "X") {
      if (!e.contains("dur") || !e["dur"].is_number())
        err("complete event (\"X\") without a numeric \"dur\"");
      else if (e["dur"].get<double>() < 0)
        err("negative \"dur\" " + e["dur"].dump());
    }
    if (ph == "B" || ph == "E") {
      const auto key = std::make_pair(e.value("pid", json()).dump(), e.value("tid", json()).dump());
      const std::string name =
          e.contains("name") && e["name"].is_string() ? e["name"].get<std::string>() : "";
      const double ts = e.contains("ts") && e["ts"].is_number() ? e["ts"].get<double>() : 0.0;
      auto& stack = stacks[key];
      if (ph == "B") {
        stack.push_back({name, ts, i - 1});
      } else if (stack.empty()) {
        err("\"E\" without an open \"B\" on pid " + key.first + " tid " + key.second);
      } else {
        const Open b = stack.back();
        stack.pop_back();
        if (!name.empty() && name != b.name)
          err("\"E\" named \"" + name + "\" closes \"B\" \"" + b.name + "\" (event " +
              std::to_string(b.index) + "): not nested");
        if (ts < b.ts)
          err("\"E\" at ts " + json(ts).dump() + " before its \"B\" at ts " + json(b.ts).dump());
      }
    }
  }
  for (const auto& [key, stack] : stacks)
    for (const auto& b : stack)
      errors.push_back(where + ": event " + std::to_string(b.index) + " (\"" + b.name +
                       "\"): \"B\" never closed on pid " + key.first + " tid " + key.second);
  return errors;
}

std::vector<std::string> check_trace_files(const std::vector<std::filesystem::path>& files) {
  std::vector<std::string> errors;
  std::map<std::string, std::string> owner;  // pid -> file
  for (const auto& f : files) {
    const std::string where = f.string();
    json doc;
    try {
      doc = json::parse(util::read_file(f));
    } catch (const std::exception& e) {
      errors.push_back(where + ": " + e.what());
      continue;
    }
    auto errs = check_trace(doc, where);
    errors.insert(errors.end(), errs.begin(), errs.end());
    std::vector<std::string> tmp;
    const json* events = events_of(doc, tmp, where);
    if (!events) continue;
    std::set<std::string> pids;
    for (const auto& e : *events)
      if (e.is_object() && e.contains("pid") && is_id(e["pid"])) pids.insert(e["pid"].dump());
    if (pids.size() != 1) {
      std::string list;
      for (const auto& p : pids) list += (list.empty() ? "" : ", ") + p;
      errors.push_back(where + ": " + std::to_string(pids.size()) + " pids (" +
                       (list.empty() ? "none" : list) + "), expected exactly one per rank file");
      continue;
    }
    const std::string pid = *pids.begin();
    if (auto it = owner.find(pid); it != owner.end())
      errors.push_back(where + ": pid " + pid + " is also the pid of " + it->second +
                       " (one pid per rank)");
    else
      owner[pid] = where;
  }
  return errors;
}

}  // namespace lockstep::diagnose
