// The two checkouts of `lockstep compare CONFIG --base-ref REF`: each commit in its own temporary
// `git worktree` (detached, in a fresh folder under $TMPDIR), never the user's working tree.
// Removed on every exit: the destructor (a normal return, an exception), and SIGINT, SIGTERM and
// SIGHUP, whose handler removes them before the signal takes its default course (the process
// still dies of it, with its usual status). Removal is `git worktree remove --force` of each,
// the temporary folder removed, then `git worktree prune`, so `git worktree list` shows neither
// afterwards. One Checkouts at a time per process (the handler has one slot).
#pragma once

#include <filesystem>
#include <string>

namespace lockstep::gitref {

class Checkouts {
 public:
  // Makes the temporary folder and the two worktrees, base then head, at these commits. Throws
  // UsageError (with nothing left behind) when git cannot make them.
  Checkouts(const std::filesystem::path& repo, const std::string& base_sha,
            const std::string& head_sha);
  ~Checkouts();
  Checkouts(const Checkouts&) = delete;
  Checkouts& operator=(const Checkouts&) = delete;

  const std::filesystem::path& base() const { return base_; }
  const std::filesystem::path& head() const { return head_; }
  const std::filesystem::path& folder() const { return folder_; }

  // Removes both now (the destructor then does nothing). Safe to call twice.
  void remove();

 private:
  std::filesystem::path repo_, folder_, base_, head_;
  bool removed_ = false;
};

// The shell command that removes a Checkouts' worktrees and folder (what remove() and the signal
// handler run), from the repository, the two worktree folders and the temporary folder.
std::string removal_command(const std::filesystem::path& repo, const std::filesystem::path& base,
                            const std::filesystem::path& head, const std::filesystem::path& folder);

}  // namespace lockstep::gitref
