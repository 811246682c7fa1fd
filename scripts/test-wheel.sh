#!/usr/bin/env bash
# The wheel as a user gets it: builds the release wheel (scripts/build-wheel.sh, `maturin build
# --release`), fails unless `auditwheel show` finds it manylinux-compliant under the tag it
# claims, installs it with the test dependencies into a new virtualenv that sees no other
# site-packages, with no Rust toolchain (cargo, rustc, rustup, maturin) on PATH, and runs the
# test suite from outside the source tree against that install.
#
#   bash scripts/test-wheel.sh [pytest args...]
#
# With no arguments pytest runs the whole of tests/; test paths given as arguments are taken
# from the directory the suite runs in (a temporary one), so give them as absolute paths.
# PYTHON picks the interpreter (default python3). Run after scripts/test.sh with the same
# PYTHON, the build only packs the wheel again (cargo's work is reused). The test dependencies
# (torch and its CUDA libraries are some 4 GB) are installed by uv, whose cache keeps the files
# it downloaded and links them into the next virtualenv (pip caches nothing from an index that
# sends no caching headers, as here, and would download them every run); pip then installs the
# ferrotok wheel over uv's copy, as users install it.
#
# Data: as scripts/test.sh ($FERROTOK_DATA_DIR / $FERROTOK_CORPUS_DIR, else ../shared/...).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
PY=${PYTHON:-python3}

if [ -z "${FERROTOK_DATA_DIR:-}" ] && [ -d ../shared/encodings ]; then
  FERROTOK_DATA_DIR=$(cd ../shared/encodings && pwd)
  export FERROTOK_DATA_DIR
fi
if [ -z "${FERROTOK_CORPUS_DIR:-}" ] && [ -d ../shared/corpus ]; then
  FERROTOK_CORPUS_DIR=$(cd ../shared/corpus && pwd)
  export FERROTOK_CORPUS_DIR
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
started=$SECONDS

# The tools of this script, in a virtualenv of their own: maturin too, so that a PYTHON
# without maturin (a fresh virtualenv, as scripts/test-pythons.sh passes) still builds with the
# version pyproject asks for; build-wheel.sh prefers PYTHON's own maturin, then PATH's.
"$PY" -m venv "$work/tools"
"$work/tools/bin/pip" install -q "auditwheel>=6,<7" "uv>=0.5" "maturin>=1.9,<2"

echo "== building the release wheel ($("$PY" -V 2>&1))"
wheel=$(PATH="$PATH:$work/tools/bin" bash scripts/build-wheel.sh "$PY" "$work/dist")
echo "built $(basename "$wheel")"

echo "== auditwheel show"
"$work/tools/bin/auditwheel" show "$wheel" | tee "$work/auditwheel.txt"
# Compliant means: auditwheel finds a manylinux policy the wheel satisfies (a wheel that loads
# a library outside the policies' whitelist is reported as plain linux_*), and that policy's
# glibc is no newer than the oldest glibc the wheel's own tags claim.
"$work/tools/bin/python" - "$wheel" "$work/auditwheel.txt" <<'EOF'
import re
import sys
from pathlib import Path

wheel, report = Path(sys.argv[1]).name, Path(sys.argv[2]).read_text()
text = " ".join(report.split())
found = re.search(r'consistent with the following platform tag: "([^"]+)"', text)
if found is None:
    sys.exit(f"auditwheel show gave no platform tag for {wheel}")
consistent = found.group(1)
need = re.fullmatch(r"manylinux_(\d+)_(\d+)_\w+", consistent)
if need is None:
    sys.exit(f"{wheel} is not manylinux-compliant: auditwheel says {consistent}")
# name-version-python-abi-platform.whl; the platform part may hold several tags joined by '.'.
platforms = wheel[: -len(".whl")].split("-")[-1].split(".")
legacy = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}
claimed = []
for tag in platforms:
    m = re.fullmatch(r"manylinux_(\d+)_(\d+)_\w+", tag)
    if m:
        claimed.append((int(m.group(1)), int(m.group(2))))
    elif tag.split("_")[0] in legacy:
        claimed.append(legacy[tag.split("_")[0]])
    else:
        sys.exit(f"{wheel} carries a platform tag that is not manylinux: {tag}")
required = (int(need.group(1)), int(need.group(2)))
if min(claimed) < required:
    sys.exit(f"{wheel} claims glibc {min(claimed)} but needs {required} ({consistent})")
print(f"ok: {wheel} is manylinux-compliant (needs glibc {required[0]}.{required[1]})")
EOF

echo "== a clean virtualenv without Rust: installing the wheel and the test dependencies"
"$PY" -m venv "$work/venv"
venv=$work/venv
grep -qx 'include-system-site-packages = false' "$venv/pyvenv.cfg"
# PATH without any directory that holds a Rust tool or maturin, the venv's bin/ first.
clean_path=$venv/bin
IFS=: read -r -a dirs <<<"$PATH"
for dir in "${dirs[@]}"; do
  if [ -z "$dir" ] || [ "$dir" = "$venv/bin" ]; then
    continue
  fi
  for tool in cargo rustc rustup maturin; do
    [ -e "$dir/$tool" ] && continue 2
  done
  clean_path=$clean_path:$dir
done
in_venv() {
  env -u CARGO -u CARGO_HOME -u RUSTUP_HOME -u RUSTC -u PYTHONPATH -u PYTHONHOME \
    -u VIRTUAL_ENV PATH="$clean_path" "$@"
}
for tool in cargo rustc rustup maturin; do
  if in_venv bash -c "command -v $tool" >/dev/null 2>&1; then
    echo "$tool is still on PATH: $(in_venv bash -c "command -v $tool")" >&2
    exit 1
  fi
done
# The extras pyproject declares (test: the suite's dependencies; nn: torch). --only-binary: no
# package may be built here (there is no Rust to build one with). uv reads no pip.conf: it is
# given pip's certificate bundle when one is set.
uv_cert=()
if [ -n "${PIP_CERT:-}" ]; then
  uv_cert=(--cert "$PIP_CERT")
fi
in_venv "$work/tools/bin/uv" pip install -q "${uv_cert[@]}" --python "$venv/bin/python" \
  --only-binary :all: "${wheel}[test,nn]"
in_venv "$venv/bin/python" -m pip install -q --force-reinstall --no-deps "$wheel"
in_venv "$venv/bin/python" -m pip check
installed_at=$(cd "$work" && in_venv "$venv/bin/python" -c 'import ferrotok; print(ferrotok.__file__)')
case $installed_at in
  "$venv"/*) echo "ferrotok imports from $installed_at" ;;
  *)
    echo "ferrotok imports from $installed_at, not from the virtualenv" >&2
    exit 1
    ;;
esac
echo "install took $((SECONDS - started)) s since the start"

echo "== pytest against the installed wheel"
cd "$work"
[ $# -gt 0 ] || set -- "$root/tests"
in_venv "$venv/bin/python" -m pytest -q -p no:cacheprovider --rootdir "$root" \
  -c "$root/pyproject.toml" "$@"
echo "test-wheel.sh took $((SECONDS - started)) s"
