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
#
# What runs again: the whole suite but the sweeps that hold the Rust engine to each model
# family's oracle over many texts (the list below), which scripts/test.sh runs once. They call
# the binding as the files kept here do (tests/test_parity.py still sends the whole shared
# corpus through it, tests/test_hard_cases.py surrogates and long runs), so under another
# Python they test nothing new, and they are about a third of the suite's time. Give pytest
# arguments (absolute test paths) to run something else.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSIONS=${FERROTOK_TEST_PYTHONS:-3.9 3.13}
if [ $# -eq 0 ]; then
  set -- "$PWD/tests"
  for sweep in hf_combinations hf_unseen hf_core hf_unigram hf_wordpiece hf_wordlevel \
    hf_char_bpe hf_sentencepiece; do
    [ -f "tests/test_$sweep.py" ] || { echo "tests/test_$sweep.py is gone: update $0" >&2; exit 1; }
    set -- "$@" --ignore="$PWD/tests/test_$sweep.py"
  done
fi

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
