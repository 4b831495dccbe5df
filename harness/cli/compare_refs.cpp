#include "harness/cli/compare_refs.h"

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <system_error>

#include "harness/cli/ref_history.h"
#include "harness/config/config.h"
#include "harness/external/external_config.h"
#include "harness/finish.h"
#include "harness/gitref/checkouts.h"
#include "harness/gitref/git.h"
#include "harness/util/exit_codes.h"

namespace lockstep::cli {
namespace fs = std::filesystem;

namespace {

void ref_progress(const std::string& s) { std::cerr << "[compare] " << s << std::endl; }

std::string sha10(const std::string& sha) { return sha.substr(0, 10); }

// The repository: --repo's, else the one holding CONFIG (when it exists here), else the CWD's.
fs::path ref_repo(const RefCompareOptions& o) {
  if (!o.repo.empty()) {
    std::error_code ec;
    if (!fs::is_directory(o.repo, ec)) throw UsageError("--repo " + o.repo + ": no such folder");
    return gitref::top_folder(o.repo);
  }
  std::error_code ec;
  if (fs::exists(o.config, ec)) {
    const fs::path dir = fs::absolute(o.config).parent_path();
    return gitref::top_folder(dir);
  }
  return gitref::top_folder(fs::current_path());
}

// CONFIG relative to the repository's top folder, '/'-separated: a path that exists here (or an
// absolute one) must lie inside the repository; any other relative path is taken from its top.
std::string ref_config_path(const std::string& config, const fs::path& repo) {
  std::error_code ec;
  const fs::path top = fs::weakly_canonical(repo, ec);
  fs::path p = config;
  if (p.is_absolute() || fs::exists(p, ec)) {
    const fs::path abs = fs::weakly_canonical(fs::absolute(p), ec);
    const fs::path rel = abs.lexically_relative(top);
    if (rel.empty() || *rel.begin() == "..")
      throw UsageError("CONFIG " + config + " is not inside the repository " + repo.string());
    return rel.generic_string();
  }
  const fs::path rel = p.lexically_normal();
  if (rel.empty() || *rel.begin() == "..")
    throw UsageError("CONFIG " + config + " is not inside the repository " + repo.string());
  return rel.generic_string();
}

// --prepare: CMD by /bin/sh in the checkout, its output on stderr. Throws on failure (exit 3:
// the code at that commit does not build).
void run_prepare(const std::string& cmd, const fs::path& checkout, const compare::GitCommit& c,
             const char* which) {
  ref_progress("--prepare in the " + std::string(which) + " checkout (" + c.ref + " " +
           sha10(c.sha) + "): " + cmd);
  const std::string line = "cd '" + checkout.string() + "' && { " + cmd + " ; } 1>&2";
  const int st = std::system(line.c_str());
  const int code = st == -1 ? 127 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  if (code != 0)
    throw std::runtime_error("--prepare failed in the " + std::string(which) + " checkout (" +
                             c.ref + " " + sha10(c.sha) + "): exit " + std::to_string(code));
}

// Loads CONFIG as checked out (an error names the ref: the plugin a config loads must be built
// in its checkout, by --prepare).
config::Config load_at_ref(const fs::path& file, const std::vector<std::string>& sets,
                                const compare::GitCommit& c, const char* flag, const fs::path& root,
                                bool prepared) {
  try {
    return config::Config::load(file, sets);
  } catch (const config::ConfigError& e) {
    std::string what = e.what();
    const std::string prefix = root.string() + "/";
    for (size_t at; (at = what.find(prefix)) != std::string::npos;)
      what.replace(at, prefix.size(), c.ref + ":");
    throw UsageError(what + " (CONFIG as checked out at " + flag + " " + c.ref + " " +
                     sha10(c.sha) +
                     (prepared ? ")" : "; a file that is built, not committed, needs --prepare CMD)"));
  }
}

}  // namespace

int compare_refs(const RefCompareOptions& o, compare::CompareRequest req,
                 const std::string& history_db, bool record) {
  if (!o.alignment.empty() && o.alignment != "exact" && o.alignment != "approximate" &&
      o.alignment != "none")
    throw UsageError("--alignment " + o.alignment + ": must be exact, approximate or none");
  // Everything that can be refused is refused before anything is made.
  const fs::path repo = ref_repo(o);
  const std::string rel = ref_config_path(o.config, repo);
  compare::GitRefs g;
  g.repo = repo.string();
  g.config = rel;
  g.prepare = o.prepare;
  g.base = gitref::resolve(repo, o.base_ref, "--base-ref");
  g.head = gitref::resolve(repo, o.head_ref, "--head-ref");
  if (o.head_ref == "HEAD") {
    const auto dirty = gitref::uncommitted_changes(repo);
    if (!dirty.empty()) {
      std::string list;
      for (size_t i = 0; i < dirty.size() && i < 3; ++i) list += (i ? ", " : "") + dirty[i];
      if (dirty.size() > 3) list += ", ...";
      throw UsageError(repo.string() + " has uncommitted changes (" + list +
                       "): --head-ref HEAD compares commits; commit or stash them, or name "
                       "--head-ref");
    }
  }
  for (const auto* c : {&g.base, &g.head})
    if (!gitref::has_file(repo, c->sha, rel))
      throw UsageError("CONFIG " + rel + " is not in " + (c == &g.base ? "--base-ref " : "--head-ref ") +
                       c->ref + " (" + sha10(c->sha) + ")");
  g.files = gitref::changed_files(repo, g.base.sha, g.head.sha);

  ref_progress("base " + g.base.ref + " " + sha10(g.base.sha) + " \"" + g.base.subject + "\"");
  ref_progress("head " + g.head.ref + " " + sha10(g.head.sha) + " \"" + g.head.subject + "\"; " +
           std::to_string(g.files.size()) + " files differ");
  gitref::Checkouts co(repo, g.base.sha, g.head.sha);
  ref_progress("checked out into " + co.folder().string());
  if (!o.prepare.empty()) {
    run_prepare(o.prepare, co.base(), g.base, "base");
    run_prepare(o.prepare, co.head(), g.head, "head");
  }
  const fs::path base_cfg = co.base() / rel, head_cfg = co.head() / rel;
  auto bsets = o.bsets, vsets = o.vsets;
  load_at_ref(base_cfg, bsets, g.base, "--base-ref", co.base(), !o.prepare.empty());
  const auto head = load_at_ref(head_cfg, vsets, g.head, "--head-ref", co.head(),
                                     !o.prepare.empty());
  // The class: --alignment, else the head's [gate] alignment, else exact (the same math is the
  // claim a pull request makes unless it says otherwise). Set on both arms: not a config change.
  if (!o.alignment.empty()) {
    g.alignment_source = compare::RefAlignmentSource::Flag;
    g.alignment = o.alignment;
  } else if (head.has_value("gate.alignment")) {
    g.alignment_source = compare::RefAlignmentSource::HeadConfig;
    g.alignment = head.str("gate.alignment");
  } else {
    g.alignment_source = compare::RefAlignmentSource::Default;
    g.alignment = "exact";
  }
  // An external arm is exact by default already; Lockstep's own trainer would take the class
  // from the keys that differ (a plugin path), so it is told.
  if (g.alignment_source == compare::RefAlignmentSource::Flag ||
      (g.alignment_source == compare::RefAlignmentSource::Default && !external::is_external(head))) {
    bsets.push_back("gate.alignment=" + g.alignment);
    vsets.push_back("gate.alignment=" + g.alignment);
  }
  req.baseline = {"baseline", base_cfg.string(), bsets};
  req.variant = {"variant", head_cfg.string(), vsets};

  // The arms' history identity: CONFIG as the working tree would run it (the checkout's folder
  // read as the repository's, the user's --set-* and --steps only, not the comparison's own
  // additions such as the probe's checkpoints), so the base's run, the head's run and a nightly
  // `lockstep run CONFIG` of the same file fall into one series for `history report`.
  auto history_sets = [&](std::vector<std::string> sets) {
    if (req.steps > 0) sets.push_back("run.steps=" + std::to_string(req.steps));
    return sets;
  };
  const std::string base_hash = config::Config::load(base_cfg, history_sets(o.bsets))
                                    .hash_relocated(co.base().string(), repo.string());
  const std::string head_hash = config::Config::load(head_cfg, history_sets(o.vsets))
                                    .hash_relocated(co.head().string(), repo.string());

  auto result = compare::run_comparison(req);
  if (result.baseline.alignment_run.steps > 0) result.baseline.alignment_run.config_hash = base_hash;
  if (result.variant.alignment_run.steps > 0) result.variant.alignment_run.config_hash = head_hash;
  co.remove();  // the arms are done: nothing left in the temporary folder is needed
  fold_checkouts(result, co.base().string(), co.head().string(), g.base.ref, g.head.ref);
  switch (g.alignment_source) {
    case compare::RefAlignmentSource::Flag:
      result.klass_source = "--alignment " + g.alignment + " (a comparison of two git refs)";
      break;
    case compare::RefAlignmentSource::Default:
      result.klass_source =
          "two git refs: exact unless declared (--alignment, or [gate] alignment in the head's "
          "config)";
      break;
    case compare::RefAlignmentSource::HeadConfig:
      break;  // the plan's own words: the variant (head) declares it
  }
  result.env["git_commit"] = g.head.sha;  // the comparison's history entry: the head's
  result.env["git_branch"] = g.head.ref;
  result.git_refs = g;
  const int code = finish_compare(result, req.out_dir, history_db, record);
  if (record) record_ref_arms(result, history_db);
  return code;
}

}  // namespace lockstep::cli
