#!/usr/bin/env bash
# The negative control of the function_length test (issue 53): tools/function-length.sh must fail,
# naming file, line and function, on a function one line over the limit, pass one at the limit,
# and not be fooled by braces in comments and string literals or by a struct's methods.
#
# usage: function-length-violations.sh SOURCE_DIR
set -euo pipefail
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/tree/f"
fails=0

# fn NAME LINES: a function NAME whose header-to-closing-brace span is LINES lines
fn() {
  echo "int $1(int x) {"
  for ((i = 0; i < $2 - 2; ++i)); do echo "  x += $i;  // } {"; done
  echo "}"
}
# expect CASE WANT_RC PATTERN
expect() {
  local name=$1 want=$2 pattern=$3 rc=0
  "$src/tools/function-length.sh" --max 10 "$tmp/tree" f > "$tmp/out" 2>&1 || rc=$?
  if [[ $rc -ne $want ]]; then
    echo "FAIL $name: exit $rc, want $want"; cat "$tmp/out"; fails=1; return
  fi
  if [[ -n $pattern ]] && ! grep -qE -- "$pattern" "$tmp/out"; then
    echo "FAIL $name: output lacks /$pattern/:"; cat "$tmp/out"; fails=1; return
  fi
  echo "ok   $name (exit $rc)"
}

{ fn short 10; echo 'const char* s = "}}}{{{";'; fn other 3; } > "$tmp/tree/f/a.cpp"
expect "at the limit, braces in comments and strings" 0 "longest short at f/a.cpp:1, 10 lines"

{ echo "namespace n {"; fn fine 4; fn long_one 11; echo "}"; } > "$tmp/tree/f/a.cpp"
expect "one line over" 1 "^f/a.cpp:6: long_one: 11 lines \(max 10\)"

{ echo "struct S {"; echo "  void m() {"; for i in 1 2 3 4 5 6 7 8 9 10; do echo "    ;"; done
  echo "  }"; echo "};"; } > "$tmp/tree/f/a.cpp"
expect "a method counts as a function" 1 "^f/a.cpp:2: m: 12 lines"

rm "$tmp/tree/f/a.cpp"
{ echo "struct S {"; for i in $(seq 1 20); do echo "  int x$i = 0;"; done; echo "};"; } > "$tmp/tree/f/a.h"
expect "a long struct is no function" 0 "^ok$"

exit $fails
