// A comparison of one config at two git commits (`lockstep compare CONFIG --base-ref REF`,
// harness/gitref/): which commits the arms ran, and what changed between them. Plain data; the
// git work is harness/gitref's, the text is the reporters' and to_json's.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace lockstep::compare {

// How a file differs between the two commits (git diff --name-status).
enum class FileChange { Added, Modified, Deleted, Renamed, Copied, TypeChanged, Other };

struct ChangedFile {
  FileChange change = FileChange::Modified;
  std::string path;      // in the head commit (a deleted file: in the base)
  std::string old_path;  // renamed or copied: where it was in the base; else empty
};

struct GitCommit {
  std::string ref;      // as given on the command line ("origin/main", "HEAD")
  std::string sha;      // the full commit id it resolved to
  std::string subject;  // the commit message's first line
};

// Where the alignment class of a two-ref comparison came from.
enum class RefAlignmentSource { Default, Flag, HeadConfig };

struct GitRefs {
  std::string repo;    // the repository's top folder
  std::string config;  // CONFIG, relative to the repository's top folder
  GitCommit base, head;
  std::vector<ChangedFile> files;  // every file that differs, git's order (by path)
  RefAlignmentSource alignment_source = RefAlignmentSource::Default;
  std::string alignment;  // "exact" | "approximate" | "none": the class the comparison used
  std::string prepare;    // --prepare: the command run in each checkout before the arms ("": none)
};

// The word report.json and the reports use for a change ("added", "modified", ...).
const char* to_string(FileChange c);
// "default" | "--alignment" | "head config".
const char* to_string(RefAlignmentSource s);
// git's --name-status letter (A, M, D, R, C, T) as a FileChange; anything else is Other.
FileChange file_change_from_status(char letter);

// report.json's `git_refs` object (docs/report-schema.md "git_refs").
nlohmann::ordered_json to_json(const GitRefs& g);

}  // namespace lockstep::compare
