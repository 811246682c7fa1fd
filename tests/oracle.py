"""The test oracle: where the official BPE files and the corpus are, tiktoken set up offline,
and `pair(name)` giving ferrotok's and tiktoken's encodings side by side.

The project sits beside `shared/` (`<root>/main` and `<root>/shared`). Tests read the encoding
files through `FERROTOK_DATA_DIR` (the same variable users set) and give tiktoken, the parity
oracle, the same files through its cache layout, so no test touches the network.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("FERROTOK_SHARED_DIR", ROOT.parent / "shared"))
ENCODINGS_DIR = Path(os.environ.get("FERROTOK_DATA_DIR", SHARED / "encodings"))
CORPUS_DIR = Path(os.environ.get("FERROTOK_CORPUS_DIR", SHARED / "corpus"))

ENCODING_NAMES = [
    "gpt2",
    "r50k_base",
    "p50k_base",
    "p50k_edit",
    "cl100k_base",
    "o200k_base",
    "o200k_harmony",
]

_URLS = {
    "r50k_base.tiktoken": "https://openaipublic.blob.core.windows.net/encodings/r50k_base.tiktoken",
    "p50k_base.tiktoken": "https://openaipublic.blob.core.windows.net/encodings/p50k_base.tiktoken",
    "cl100k_base.tiktoken": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
    "o200k_base.tiktoken": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "vocab.bpe": "https://openaipublic.blob.core.windows.net/gpt-2/encodings/main/vocab.bpe",
    "encoder.json": "https://openaipublic.blob.core.windows.net/gpt-2/encodings/main/encoder.json",
}


def _setup_offline() -> None:
    if not ENCODINGS_DIR.is_dir():
        raise RuntimeError(
            f"The official BPE files are not at {ENCODINGS_DIR}. Set FERROTOK_DATA_DIR to a "
            "directory holding cl100k_base.tiktoken etc. (see README)."
        )
    os.environ["FERROTOK_DATA_DIR"] = str(ENCODINGS_DIR)
    # tiktoken reads `sha1(url)` files from its cache directory.
    cache = Path(tempfile.mkdtemp(prefix="ferrotok-tiktoken-cache-"))
    # ~8 MB of copies a session: without this, every test run left them in the temp dir.
    atexit.register(shutil.rmtree, cache, ignore_errors=True)
    for name, url in _URLS.items():
        src = ENCODINGS_DIR / name
        if src.exists():
            shutil.copyfile(src, cache / hashlib.sha1(url.encode()).hexdigest())
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)


_setup_offline()


@functools.cache
def pair(name: str):
    """ferrotok's and tiktoken's encodings of the same name (loaded once per session)."""
    import ferrotok
    import tiktoken

    return ferrotok.get_encoding(name), tiktoken.get_encoding(name)


def fresh_encoding(name: str):
    """A new ferrotok Encoding with `name`'s pattern and ranks: none of the tables ferrotok
    builds after load (the pair filter, the backtracking tables, the cuts') is built yet."""
    import ferrotok

    base = ferrotok.get_encoding(name)
    return ferrotok.Encoding(
        f"{name}_fresh",
        pat_str=base._pat_str,
        mergeable_ranks=base._mergeable_ranks,
        special_tokens={},
    )


def corpus_file(name: str) -> Path:
    """A file of the shared corpus; a missing corpus fails the test, it never skips it."""
    path = CORPUS_DIR / name
    if not path.exists():
        raise FileNotFoundError(f"corpus file {path} is missing (set FERROTOK_CORPUS_DIR)")
    return path
