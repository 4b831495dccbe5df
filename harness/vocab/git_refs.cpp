#include "harness/vocab/git_refs.h"

namespace lockstep::compare {

const char* to_string(FileChange c) {
  switch (c) {
    case FileChange::Added: return "added";
    case FileChange::Modified: return "modified";
    case FileChange::Deleted: return "deleted";
    case FileChange::Renamed: return "renamed";
    case FileChange::Copied: return "copied";
    case FileChange::TypeChanged: return "type changed";
    case FileChange::Other: break;
  }
  return "other";
}

const char* to_string(RefAlignmentSource s) {
  switch (s) {
    case RefAlignmentSource::Flag: return "--alignment";
    case RefAlignmentSource::HeadConfig: return "head config";
    case RefAlignmentSource::Default: break;
  }
  return "default";
}

FileChange file_change_from_status(char letter) {
  switch (letter) {
    case 'A': return FileChange::Added;
    case 'M': return FileChange::Modified;
    case 'D': return FileChange::Deleted;
    case 'R': return FileChange::Renamed;
    case 'C': return FileChange::Copied;
    case 'T': return FileChange::TypeChanged;
    default: return FileChange::Other;
  }
}

namespace {
nlohmann::ordered_json commit_json(const GitCommit& c) {
  return {{"ref", c.ref}, {"sha", c.sha}, {"subject", c.subject}};
}
}  // namespace

nlohmann::ordered_json to_json(const GitRefs& g) {
  auto files = nlohmann::ordered_json::array();
  for (const auto& f : g.files)
    files.push_back({{"change", to_string(f.change)},
                     {"path", f.path},
                     {"old_path", f.old_path.empty() ? nlohmann::ordered_json(nullptr)
                                                     : nlohmann::ordered_json(f.old_path)}});
  return {{"repo", g.repo},
          {"config", g.config},
          {"base", commit_json(g.base)},
          {"head", commit_json(g.head)},
          {"files_changed", files},
          {"alignment", g.alignment},
          {"alignment_source", to_string(g.alignment_source)},
          {"prepare", g.prepare.empty() ? nlohmann::ordered_json(nullptr)
                                        : nlohmann::ordered_json(g.prepare)}};
}

}  // namespace lockstep::compare
