#!/usr/bin/env bash
# Shell scripts the project ships: `bash -n` and shellcheck (warnings and above), each file.
# First a negative control: a script with a known defect must fail, or this check proves nothing.
# usage: tests/lint-shell.sh SCRIPT...
set -euo pipefail
command -v shellcheck >/dev/null ||
  { echo "lint-shell: shellcheck is not installed (./lockstep setup installs it)" >&2; exit 1; }

bad=$(mktemp)
trap 'rm -f "$bad"' EXIT
# shellcheck disable=SC2016  # the defect is the point
printf '#!/usr/bin/env bash\nfor f in $(ls *.txt); do rm $f; done\n' > "$bad"
if shellcheck -S warning "$bad" >/dev/null 2>&1; then
  echo "lint-shell: shellcheck passed a script with unquoted expansions: the check is broken" >&2
  exit 1
fi

status=0
for script in "$@"; do
  if ! bash -n "$script"; then
    echo "FAIL bash -n: $script"
    status=1
  fi
  if ! shellcheck -S warning "$script"; then
    echo "FAIL shellcheck: $script"
    status=1
  fi
done
[ $status -eq 0 ] && echo "ok: $# script(s) pass bash -n and shellcheck"
exit $status
