#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs what the tests need, builds and installs
# ferrotok as a wheel, then runs the Rust tests, the linters and pytest.
#
# Data: the official BPE files come from $FERROTOK_DATA_DIR, else ../shared/encodings beside the
# project; the corpus from $FERROTOK_CORPUS_DIR, else ../shared/corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

if [ -z "${FERROTOK_DATA_DIR:-}" ] && [ -d ../shared/encodings ]; then
  FERROTOK_DATA_DIR=$(cd ../shared/encodings && pwd)
  export FERROTOK_DATA_DIR
fi
if [ -z "${FERROTOK_CORPUS_DIR:-}" ] && [ -d ../shared/corpus ]; then
  FERROTOK_CORPUS_DIR=$(cd ../shared/corpus && pwd)
  export FERROTOK_CORPUS_DIR
fi

echo "== installing test dependencies"
# sentencepiece >= 0.2.2: the oracle of `.model` files, whose Unigram encoding changed in 0.2.2
# (f32 sums with a reset that keeps a long text's precise); 0.2.2 is the last for Python 3.9.
"$PY" -m pip install -q "maturin>=1.9,<2" "pytest>=7" "hypothesis>=6" "numpy>=1.21" \
  "tiktoken==0.14.0" "rustbpe==0.1.0" regex ruff \
  "mypy==2.4.1; python_version >= '3.10'" "vermin==1.9.2" \
  "tokenizers>=0.22" "sentencepiece>=0.2.2" protobuf pyarrow zstandard "ray[data]" \
  "megatron-core; python_version >= '3.10'" "datatrove; python_version >= '3.10'"
# torch is several GB: install it only when it is missing.
"$PY" -c "import torch" 2>/dev/null || "$PY" -m pip install -q torch
"$PY" -c "import transformers" 2>/dev/null || "$PY" -m pip install -q transformers
# Mistral's released .model and tekken.json files (tests/test_sp_model.py and test_tekken.py
# read them as data; nothing of the package is imported, so none of its dependencies is needed).
"$PY" -m pip install -q --no-deps "mistral-common==1.13.1"

echo "== rust: fmt, clippy, tests"
cargo fmt --all -- --check
cargo clippy --all-features --all-targets -- -D warnings
cargo test --workspace --release

echo "== building and installing the wheel"
# The release build (`maturin build --release`, a manylinux wheel), as users get it from PyPI;
# scripts/test-wheel.sh builds the same way and so reuses this build.
wheel_dir=$(mktemp -d)
empty_dir=$(mktemp -d)
trap 'rm -rf "$wheel_dir" "$empty_dir"' EXIT
wheel=$(bash scripts/build-wheel.sh "$PY" "$wheel_dir")
"$PY" -m pip install -q --force-reinstall --no-deps "$wheel"

echo "== python: ruff, vermin, mypy, pytest"
"$PY" -m ruff check python tests benches
# pyproject says Python >= 3.9: nothing the package, the benchmark or the examples run may need
# a later one (vermin reads the code for what each line needs; `# novm` marks imports only
# type checkers run, and the .pyi stubs are never run).
"$PY" -c 'import sys; from vermin.main import main; sys.exit(main())' -q -t=3.9- --violations \
  --no-tips --exclude-regex '\.pyi$' python/ferrotok benches examples
# Type-check the installed package (from outside the source tree, so not python/): checks the
# annotations users see, the _core.pyi stub included, with --strict (pyproject's [tool.mypy]).
# From an empty directory: mypy looks for modules in its working directory first, and a stray
# `stat.py` in /tmp once stood in for the standard library's there. mypy 2.4 itself runs on
# Python >= 3.10.
if "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
  config="$PWD/pyproject.toml"
  (cd "$empty_dir" && "$PY" -m mypy --config-file "$config" -p ferrotok)
else
  echo "mypy not run: it needs Python >= 3.10"
fi
# Run from outside the source tree so the installed wheel (not python/) is what is tested.
"$PY" -m pytest -q "$@"
