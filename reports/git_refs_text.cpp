#include "reports/git_refs_text.h"

namespace lockstep::reports::git_text {

std::string commit(const compare::GitCommit& c) {
  return c.ref + " " + c.sha.substr(0, 10) + " \"" + c.subject + "\"";
}

std::string file(const compare::ChangedFile& f) {
  std::string s = std::string(compare::to_string(f.change)) + " ";
  return f.old_path.empty() ? s + f.path : s + f.old_path + " -> " + f.path;
}

std::string alignment(const compare::GitRefs& g) {
  switch (g.alignment_source) {
    case compare::RefAlignmentSource::Flag: return g.alignment + " (--alignment)";
    case compare::RefAlignmentSource::HeadConfig:
      return g.alignment + " (the head config's [gate] alignment)";
    case compare::RefAlignmentSource::Default: break;
  }
  return g.alignment + " (default: same math)";
}

}  // namespace lockstep::reports::git_text
