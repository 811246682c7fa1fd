#!/usr/bin/env bash
# The test suite again under the oldest and the newest Python that ferrotok supports, each
# against that Python's release wheel installed as users install it (scripts/test-wheel.sh:
# manylinux check, a clean virtualenv with no Rust on PATH). CI runs this after the README's
# test command (scripts/test.sh), which already ran the Rust tests and the linters: those do
# not depend on the Python version, so they are not run again. A version this machine does
# not have (neither pyenv's nor on PATH) is reported and left out; a failure under any
# version fails the script.
#
# Why: pip gives each Python its own versions of the test dependencies (transformers 4.x on
# 3.9, 5.x later), and CPython's ints and lists change across versions under the binding.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSIONS=${FERROTOK_TEST_PYTHONS:-3.9 3.13}

find_python() {
  local version=$1 found
  found=$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}/versions/$version".*/bin/python 2>/dev/null |
    sort -V | tail -n 1)
  if [ -z "$found" ] && command -v "python$version" >/dev/null 2>&1 &&
    "python$version" -c 'pass' 2>/dev/null; then
    found=$(command -v "python$version")
  fi
  echo "$found"
}

failed=""
for version in $VERSIONS; do
  py=$(find_python "$version")
  if [ -z "$py" ]; then
    echo "== Python $version: not on this machine, left out"
    continue
  fi
  dir=$(mktemp -d)
  "$py" -m venv "$dir/venv"
  echo "== Python $version ($("$dir/venv/bin/python" -V 2>&1), $py): scripts/test-wheel.sh"
  if ! PYTHON="$dir/venv/bin/python" bash scripts/test-wheel.sh "$@"; then
    failed="$failed $version"
  fi
  rm -rf "$dir"
done
if [ -n "$failed" ]; then
  echo "== failed under Python$failed"
  exit 1
fi
