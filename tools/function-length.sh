#!/usr/bin/env bash
# Checks that no function in the named folders is longer than MAX lines (issue 53: the gate and
# the comparison's plan read as one small function per check family). A function is a brace
# block whose header (the text since the previous `;`, `{` or `}`) holds a `)` and is not a
# control statement, opened outside any other function; its length runs from the header's first
# line to the closing brace. Lambdas and local blocks count in the function that holds them.
# Comments, string and character literals are blanked first, so their braces do not count.
#
# usage: tools/function-length.sh [-q] [--max N] SOURCE_ROOT FOLDER...   (default N: 80)
# stdout: every function over N lines as "file:line: NAME: L lines (max N)", then "ok" or not;
#         the longest function of each folder (-q: only the violations).
# exit:   0 none over N; 1 some; 2 usage error
set -euo pipefail

quiet=0
max=80
while [ $# -gt 0 ]; do
  case "$1" in
    -q) quiet=1; shift ;;
    --max) max="${2:?--max needs a number}"; shift 2 ;;
    -*) echo "function-length.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
if [ $# -lt 2 ]; then
  echo "usage: tools/function-length.sh [-q] [--max N] SOURCE_ROOT FOLDER..." >&2
  exit 2
fi
root="$1"
shift

exec python3 - "$quiet" "$max" "$root" "$@" <<'PY'
import os
import re
import sys

quiet, limit, root, folders = sys.argv[1] == "1", int(sys.argv[2]), sys.argv[3], sys.argv[4:]
CONTROL = re.compile(r"^\s*(?:\}\s*)?(?:if|for|while|switch|catch|else|do|try)\b")
SCOPE = re.compile(r"\b(?:namespace|struct|class|union|enum)\b[^()]*$|extern\s*$")


def blank(text):
    """Comments and literals become spaces (newlines kept, so line numbers hold)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "R" and text.startswith('R"', i):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append('""' + re.sub(r"[^\n]", " ", text[i + 2:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (j - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path):
    text = blank(open(path, encoding="utf-8", errors="replace").read())
    stack = []  # one entry per open brace: (kind, start line, name)
    header_start = 0
    found = []
    for i, c in enumerate(text):
        if c not in "{};":
            continue
        if c == ";":
            if not any(k == "fn" for k, _, _ in stack):
                header_start = i + 1
            continue
        if c == "{":
            in_fn = any(k == "fn" for k, _, _ in stack)
            header = text[header_start:i]
            kind = "block"
            if not in_fn:
                h = header.strip()
                if ")" in h and not CONTROL.match(h) and not h.endswith("=") and not SCOPE.search(h):
                    kind = "fn"
            first = header_start + (len(header) - len(header.lstrip()))
            line = text.count("\n", 0, first) + 1
            name = re.findall(r"([~\w:]+)\s*\(", header)
            stack.append((kind, line, name[0] if name else "?"))
            if not in_fn:
                header_start = i + 1
        else:
            if not stack:
                continue
            kind, line, name = stack.pop()
            if kind == "fn":
                found.append((line, text.count("\n", 0, i) + 1 - line + 1, name))
            if not any(k == "fn" for k, _, _ in stack):
                header_start = i + 1
    return found


bad = 0
for folder in folders:
    longest = (0, "", 0, "")
    base = os.path.join(root, folder)
    for dirpath, _, files in sorted(os.walk(base)):
        for f in sorted(files):
            if not f.endswith((".cpp", ".h")):
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, root)
            for line, length, name in functions(path):
                if length > longest[0]:
                    longest = (length, rel, line, name)
                if length > limit:
                    bad += 1
                    print(f"{rel}:{line}: {name}: {length} lines (max {limit})")
    if not quiet and longest[0]:
        print(f"{folder}: longest {longest[3]} at {longest[1]}:{longest[2]}, {longest[0]} lines")
if not quiet:
    print("ok" if bad == 0 else f"{bad} function(s) over {limit} lines")
sys.exit(1 if bad else 0)
PY
