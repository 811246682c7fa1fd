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
        spec = SPECS.get(encoding_name)
        if spec is not None:
            # Fast path: the file's bytes go to Rust, which parses them; no Python dict.
            enc = Encoding._from_tiktoken_contents(
                encoding_name,
                contents=tiktoken_file_contents(spec["file"]),
                source=file_url(spec["file"]),
                pat_str=spec["pat_str"],
                special_tokens=spec["special_tokens"],
                explicit_n_vocab=spec.get("explicit_n_vocab"),
            )
        else:
            enc = Encoding(**constructor())
        ENCODINGS[encoding_name] = enc
        return enc


def list_encoding_names() -> list[str]:
    """Names that `get_encoding` accepts."""
    return list(ENCODING_CONSTRUCTORS)
