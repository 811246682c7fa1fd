"""Loading a HuggingFace `tokenizer.json` as an `Encoding` (`Encoding.from_hf`).

What it promises: the `Encoding` returned encodes as HuggingFace `tokenizers` 0.23 does with
the same file (the Rust pipeline in `rust/src/pipeline/` does the work and refuses, with a
`ValueError` naming it, any component it does not implement). Special tokens are the file's
added tokens marked `special`; the post-processor's single-sequence template (BOS/EOS) is
read here into the ids `encode(..., add_special_tokens=True)` puts around a text.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

if TYPE_CHECKING:
    pass

StrPath = Union[str, "os.PathLike[str]"]


def tokenizer_json_path(path: StrPath) -> Path:
    """`path` itself, or the `tokenizer.json` in it if it is a directory."""
    p = Path(os.fspath(path))
    if p.is_dir():
        inner = p / "tokenizer.json"
        if not inner.is_file():
            raise FileNotFoundError(f"no tokenizer.json in directory {str(p)!r}")
        return inner
    if not p.is_file():
        raise FileNotFoundError(f"no such tokenizer.json file: {str(p)!r}")
    return p


def _name_for(p: Path) -> str:
    """The encoding's name: the directory's name for `dir/tokenizer.json`, else the file's
    stem without a `.tokenizer` suffix (`gpt-2.tokenizer.json` → `gpt-2`)."""
    if p.name == "tokenizer.json":
        return p.absolute().parent.name or "tokenizer"
    stem = p.stem
    return stem[: -len(".tokenizer")] if stem.endswith(".tokenizer") else stem


def read_hf(path: StrPath) -> tuple[str, str]:
    """The text of the `tokenizer.json` at `path` (a file or a directory holding one) and the
    encoding's name for it. `Encoding.from_hf` builds the encoding from them."""
    p = tokenizer_json_path(path)
    return p.read_text(encoding="utf-8"), _name_for(p)


def single_template(pp: Any) -> tuple[list[int], list[int]]:
    """The ids the post-processor puts before and after a single sequence: HF's reading of
    it (`ferrotok.hf.processors.build`, which refuses what HF refuses or ferrotok does not
    read, with a ValueError naming it)."""
    from .hf.processors import build

    processor = build(pp)
    return ([], []) if processor is None else processor.single_ids()
