#!/usr/bin/env bash
# A report page in headless Chromium, as one ctest entry: the previous screenshot is removed, the
# optional producer command writes the page, check-html.sh opens it (failing on any console error,
# uncaught exception or failed load), and the fresh screenshot must exist next to the page.
#
#   tests/browser/render-check.sh PAGE.html [PRODUCER ARG...]
set -euo pipefail
if [ $# -lt 1 ]; then
  echo "usage: $0 PAGE.html [PRODUCER ARG...]" >&2
  exit 2
fi
page=$1
shift
png="${page%.html}.png"
rm -f "$png"
if [ $# -gt 0 ]; then "$@"; fi
"$(dirname "${BASH_SOURCE[0]}")/check-html.sh" "$page" "$png"
test -s "$png"
