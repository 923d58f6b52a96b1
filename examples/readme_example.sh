#!/bin/sh
# The C example embedded in README.md, kept honest: README.md holds the program between
# <!-- readme-example:begin --> and <!-- readme-example:end --> and what it prints between
# <!-- readme-output:begin --> and <!-- readme-output:end --> (each inside a ``` fence).
#
#   readme_example.sh code  README.md OUT.c     writes the program to OUT.c
#   readme_example.sh check README.md PROGRAM   runs PROGRAM, compares its output with README's
set -eu

block() { # block NAME FILE: the lines between NAME's markers, without the fence lines
  awk -v b="<!-- readme-$1:begin -->" -v e="<!-- readme-$1:end -->" \
    'index($0, e) { on = 0 } on && !/^```/ { print } index($0, b) { on = 1 }' "$2"
}

mode=${1:-}
readme=${2:-}
target=${3:-}
[ -n "$mode" ] && [ -f "$readme" ] && [ -n "$target" ] || {
  echo "usage: $0 code|check README.md OUT.c|PROGRAM" >&2
  exit 2
}

case $mode in
code)
  block example "$readme" >"$target"
  [ -s "$target" ] || { echo "$0: no readme-example block in $readme" >&2; exit 1; }
  ;;
check)
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  block output "$readme" >"$tmp/expected"
  [ -s "$tmp/expected" ] || { echo "$0: no readme-output block in $readme" >&2; exit 1; }
  "$target" >"$tmp/actual"
  if ! diff -u "$tmp/expected" "$tmp/actual"; then
    echo "$0: $target does not print what $readme says it prints (diff above)" >&2
    exit 1
  fi
  echo "$0: $target prints what $readme says"
  ;;
*)
  echo "$0: unknown mode $mode" >&2
  exit 2
  ;;
esac
