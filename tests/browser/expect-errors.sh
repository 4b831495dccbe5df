#!/usr/bin/env bash
# Negative control for check-html.sh: runs it on a page that is broken on purpose and passes only
# when the check exits 1 (page errors, not "could not check") and reports every expected error.
#
#   tests/browser/expect-errors.sh HTML_FILE SCREENSHOT_PNG PATTERN...
set -uo pipefail
if [ $# -lt 3 ]; then
  echo "usage: $0 HTML_FILE SCREENSHOT_PNG PATTERN..." >&2
  exit 2
fi
html=$1 png=$2
shift 2
out=$("$(dirname "${BASH_SOURCE[0]}")/check-html.sh" "$html" "$png" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -ne 1 ]; then
  echo "expect-errors: check-html.sh exited $rc, expected 1 (errors detected)" >&2
  exit 1
fi
for pattern in "$@"; do
  if ! grep -q -- "$pattern" <<<"$out"; then
    echo "expect-errors: no error matching '$pattern' was reported" >&2
    exit 1
  fi
done
echo "expect-errors: all $# expected errors detected"
