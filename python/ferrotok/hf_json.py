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
    """The ids the post-processor puts before and after a single sequence."""
    try:
        return _single_template(pp)
    except (KeyError, TypeError, IndexError, AttributeError) as e:
        msg = f"tokenizer.json: a malformed post-processor ({type(e).__name__}: {e})"
        raise ValueError(msg) from e


def _single_template(pp: Any) -> tuple[list[int], list[int]]:
    from .hf.processors import build, kind_of

    if not pp:
        return [], []
    build(pp)  # refuses what HF refuses (or ferrotok does not read), naming it
    kind = kind_of(pp)
    if kind == "ByteLevel":
        return [], []
    if kind == "Sequence":
        before: list[int] = []
        after: list[int] = []
        for p in pp.get("processors") or []:
            b, a = _single_template(p)
            before = b + before
            after = after + a
        return before, after
    if kind in ("RobertaProcessing", "BertProcessing"):
        return [int(pp["cls"][1])], [int(pp["sep"][1])]
    if kind == "TemplateProcessing":
        specials = pp.get("special_tokens") or {}
        before, after = [], []
        seen_sequence = False
        for piece in pp.get("single") or []:
            if "Sequence" in piece:
                seen_sequence = True
                continue
            token = piece["SpecialToken"]["id"]
            ids = [int(i) for i in specials[token]["ids"]]
            (after if seen_sequence else before).extend(ids)
        return before, after
    raise ValueError(f"tokenizer.json: post-processor {kind} is not supported by ferrotok")
