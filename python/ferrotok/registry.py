"""The encoding registry: names → `Encoding`, built once and shared (thread-safe)."""

from __future__ import annotations

import threading

from .core import Encoding
from .openai_public import ENCODING_CONSTRUCTORS, SPECS, file_url, tiktoken_file_contents

_lock = threading.RLock()
ENCODINGS: dict[str, Encoding] = {}


def get_encoding(encoding_name: str) -> Encoding:
    """The registered encoding called `encoding_name`, loaded on first use.

    >>> enc = get_encoding("cl100k_base")
    >>> enc.encode("hello world")
    [15339, 1917]
    """
    if not isinstance(encoding_name, str):
        raise ValueError(f"Expected a string in get_encoding, got {type(encoding_name)}")
    enc = ENCODINGS.get(encoding_name)
    if enc is not None:
        return enc
    with _lock:
        if encoding_name in ENCODINGS:
            return ENCODINGS[encoding_name]
        constructor = ENCODING_CONSTRUCTORS.get(encoding_name)
        if constructor is None:
            raise ValueError(
                f"Unknown encoding {encoding_name}.\n"
                f"Known encodings: {', '.join(list_encoding_names())}"
            )
        enc = _fast_load(encoding_name) or Encoding(**constructor())
        ENCODINGS[encoding_name] = enc
        return enc


def _fast_load(name: str) -> Encoding | None:
    """The registered encoding built straight from its verified file's bytes, parsed in Rust
    (no Python dict of ranks); `None` where that path does not apply or the Rust parser
    declines the file (the Python parser then accepts it or names the bad line)."""
    spec = SPECS.get(name)
    if spec is None:
        return None
    try:
        return Encoding._from_tiktoken_contents(
            name,
            contents=tiktoken_file_contents(spec["file"]),
            source=file_url(spec["file"]),
            pat_str=spec["pat_str"],
            special_tokens=spec["special_tokens"],
            explicit_n_vocab=spec.get("explicit_n_vocab"),
        )
    except ValueError:
        return None


def list_encoding_names() -> list[str]:
    """Names that `get_encoding` accepts."""
    return list(ENCODING_CONSTRUCTORS)
