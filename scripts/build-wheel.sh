#!/usr/bin/env bash
# Builds ferrotok's release wheel for one Python as the release workflow does
# (`maturin build --release`: the release profile, pyproject's [tool.maturin] features, a
# manylinux tag checked by maturin's own auditwheel pass), into OUT_DIR, and prints the
# wheel's path on stdout; maturin's log goes to stderr.
#
#   bash scripts/build-wheel.sh PYTHON OUT_DIR
#
# scripts/test.sh and scripts/test-wheel.sh both build through here with the same command and
# environment, so the second build of a CI run finds cargo's work done and only packs the wheel
# (pip's maturin backend and `maturin build` configure pyo3 differently and rebuild each other's
# artifacts, which with fat LTO costs minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -ne 2 ]; then
  echo "usage: $0 PYTHON OUT_DIR" >&2
  exit 2
fi
py=$1
out=$2

# maturin is a binary: the one pip installed for PYTHON (its scripts directory, e.g. a
# virtualenv's bin/, or the user scheme's after a --user install) when there is one, else the
# one on PATH (a virtualenv made with --system-site-packages).
maturin=""
while IFS= read -r dir; do
  if [ -x "$dir/maturin" ]; then
    maturin=$dir/maturin
    break
  fi
done < <("$py" -c 'import os, sysconfig
print(sysconfig.get_path("scripts"))
print(sysconfig.get_path("scripts", os.name + "_user"))')
if [ -z "$maturin" ] && command -v maturin >/dev/null 2>&1; then
  maturin=$(command -v maturin)
fi
if [ -z "$maturin" ]; then
  echo "$0: maturin not found (pip install 'maturin>=1.9,<2')" >&2
  exit 1
fi

mkdir -p "$out"
"$maturin" build --release --interpreter "$py" --out "$out" >&2

shopt -s nullglob
wheels=("$out"/ferrotok-*.whl)
if [ ${#wheels[@]} -ne 1 ]; then
  echo "$0: expected one wheel in $out, found ${#wheels[@]}" >&2
  exit 1
fi
echo "${wheels[0]}"
