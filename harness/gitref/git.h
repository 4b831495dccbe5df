// Asking git about a repository, for `lockstep compare CONFIG --base-ref REF` (torch-free): the
// repository's top folder, what a ref names, whether the working tree has uncommitted changes,
// whether a file is in a commit, and the files that differ between two commits. Every question
// runs the `git` in PATH (never a shell) and throws UsageError, one line naming the problem,
// when git cannot answer it: bad input is exit 2 (harness/util/exit_codes.h).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "harness/vocab/git_refs.h"

namespace lockstep::gitref {

struct GitOutput {
  int code = -1;       // git's exit code (127: git could not be started)
  std::string out;     // its stdout
  std::string err;     // its stderr
};

// Runs `git -C dir ARGS...` and waits for it.
GitOutput run_git(const std::filesystem::path& dir, const std::vector<std::string>& args);

// The top folder of the repository that holds `dir`. Throws UsageError ("DIR is not in a git
// repository") when there is none.
std::filesystem::path top_folder(const std::filesystem::path& dir);

// The commit `ref` names (its full sha and subject). `flag` names the option in the error
// ("--base-ref origin/main: not a commit in /repo").
compare::GitCommit resolve(const std::filesystem::path& repo, const std::string& ref,
                           const std::string& flag);

// The tracked files with uncommitted changes (staged or not), as `git status` names them;
// untracked files do not count (a build folder, runs/, are not the code under test).
std::vector<std::string> uncommitted_changes(const std::filesystem::path& repo);

// Whether `path` (relative to the repository's top folder, '/'-separated) is a file in `sha`.
bool has_file(const std::filesystem::path& repo, const std::string& sha, const std::string& path);

// The files that differ between the two commits (renames found), in git's order.
std::vector<compare::ChangedFile> changed_files(const std::filesystem::path& repo,
                                                const std::string& base_sha,
                                                const std::string& head_sha);

// The same, from `git diff --name-status -z` output (tested on its own).
std::vector<compare::ChangedFile> parse_name_status(const std::string& z_output);

}  // namespace lockstep::gitref
