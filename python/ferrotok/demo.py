"""The whole road in one command: `python -m ferrotok.demo`.

Trains a vocabulary on a corpus every machine has (the running interpreter's standard
library sources), saves it, loads it back, and encodes a sample with it and with
cl100k_base. Needs no network: cl100k_base is used only if its file is already in
`FERROTOK_DATA_DIR` or tiktoken's cache. Leaves nothing behind (the files are saved in a
temporary directory, removed at exit, also after an error or Ctrl-C) unless `--keep DIR`.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import sysconfig
import tempfile
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .core import Encoding

SAMPLE = (
    "def fibonacci(n: int) -> list[int]:\n"
    '    """Return the first n Fibonacci numbers."""\n'
    "    a, b = 0, 1\n"
    "    out = []\n"
    "    for _ in range(n):\n"
    "        out.append(a)\n"
    "        a, b = b, a + b\n"
    "    return out\n"
)


def stdlib_files(limit_bytes: int) -> list[pathlib.Path]:
    """The standard library's `.py` files (no site-packages), in a fixed order, up to
    `limit_bytes` in total."""
    root = pathlib.Path(sysconfig.get_paths()["stdlib"])
    files = []
    total = 0
    for p in sorted(root.rglob("*.py")):
        rel = p.relative_to(root).parts
        if "site-packages" in rel or "dist-packages" in rel:
            continue
        try:
            size = p.stat().st_size
            p.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        files.append(p)
        total += size
        if total >= limit_bytes:
            break
    return files


def _cl100k_if_local() -> object | None:
    """cl100k_base if its file is available without a download, else None."""
    from .files import cache_path, data_dir_path
    from .openai_public import file_url

    url = file_url("cl100k_base.tiktoken")
    candidates = [p for p in (data_dir_path(url), cache_path(url)) if p]
    if not any(os.path.exists(c) for c in candidates):
        return None
    from .registry import get_encoding

    try:
        return get_encoding("cl100k_base")
    except (OSError, ValueError):
        return None


def _show(label: str, enc: object, text: str) -> None:
    ids = enc.encode(text)  # type: ignore[attr-defined]
    pieces = [enc.decode_single_token_bytes(i) for i in ids]  # type: ignore[attr-defined]
    shown = "|".join(repr(p.decode("utf-8", "replace"))[1:-1] for p in pieces[:24])
    more = " ..." if len(pieces) > 24 else ""
    print(f"{label:>14}: {len(ids):3d} tokens for {len(text.encode())} bytes | {shown}{more}")


def _save_and_load(enc: Encoding, out_dir: str, kept: bool) -> Encoding:
    """`enc` saved in `out_dir` and loaded back."""
    import ferrotok

    path = os.path.join(out_dir, "stdlib_demo.tiktoken")
    enc.save(path)
    loaded = ferrotok.Encoding.load(path)
    where = path if kept else f"{path} (removed at exit; --keep DIR keeps it)"
    print(f"saved: {where} (+ .json); loaded back as {loaded!r}")
    return loaded


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ferrotok.demo", description=__doc__)
    parser.add_argument("--vocab-size", type=int, default=8192)
    parser.add_argument("--mb", type=float, default=16.0, help="MB of stdlib to train on")
    parser.add_argument("--keep", metavar="DIR", help="save the encoding here, not a temp dir")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)

    import ferrotok

    files = stdlib_files(int(args.mb * 1e6))
    nbytes = sum(f.stat().st_size for f in files)
    print(f"corpus: {len(files)} files, {nbytes / 1e6:.1f} MB of {sysconfig.get_paths()['stdlib']}")
    t0 = time.monotonic()
    enc = ferrotok.train(
        files,
        args.vocab_size,
        pattern="cl100k_base",
        special_tokens=["<|endoftext|>"],
        name="stdlib_demo",
        progress=not args.no_progress,
    )
    print(f"trained: vocabulary of {enc.n_vocab} in {time.monotonic() - t0:.1f} s")

    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        loaded = _save_and_load(enc, args.keep, kept=True)
    else:
        # Removed when done, also after an error or Ctrl-C: a demo leaves nothing behind.
        with tempfile.TemporaryDirectory(prefix="ferrotok-demo-") as out_dir:
            loaded = _save_and_load(enc, out_dir, kept=False)
    assert loaded.encode(SAMPLE) == enc.encode(SAMPLE)

    print("sample:")
    print("    " + SAMPLE.rstrip("\n").replace("\n", "\n    "))
    _show("trained", loaded, SAMPLE)
    cl100k = _cl100k_if_local()
    if cl100k is None:
        print(
            "   cl100k_base: not available offline (set FERROTOK_DATA_DIR to a directory "
            "holding cl100k_base.tiktoken, or fill tiktoken's cache) - skipped"
        )
    else:
        _show("cl100k_base", cl100k, SAMPLE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
