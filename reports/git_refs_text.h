// The words every comparison report uses for `compare --base-ref` (CompareResult::git_refs): the
// two commits and the files that differ between them.
#pragma once

#include <string>

#include "harness/vocab/git_refs.h"

namespace lockstep::reports::git_text {

// "origin/main 1a2b3c4d5e "Fuse the MLP"" (the ref, the short sha, the subject).
std::string commit(const compare::GitCommit& c);
// "modified train.py", "renamed old.py -> new.py".
std::string file(const compare::ChangedFile& f);
// "exact (default)", "approximate (--alignment)", "approximate (the head config's [gate])".
std::string alignment(const compare::GitRefs& g);
// What an empty config diff means here.
inline const char* kSameConfig = "none: CONFIG is the same at both commits";

}  // namespace lockstep::reports::git_text
