#!/usr/bin/env bash
# Opens an HTML report in headless Chromium and fails on any console error, uncaught exception or
# failed resource load; saves a full-page screenshot. Drives the browser over the DevTools
# protocol (check_html.py, Python standard library only).
#
#   tests/browser/check-html.sh HTML_FILE SCREENSHOT_PNG
#
# Exit: 0 clean, 1 the page reported errors (printed as "page error: ..."), 2 could not check.
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 HTML_FILE SCREENSHOT_PNG" >&2
  exit 2
fi
exec python3 "$(dirname "${BASH_SOURCE[0]}")/check_html.py" "$1" "$2"
