"""Loading a HuggingFace `tokenizer.json` as an `Encoding` (`Encoding.from_hf`).

What it promises: the `Encoding` returned encodes as HuggingFace `tokenizers` 0.23 does with
the same file (the Rust pipeline in `rust/src/pipeline/` does the work and refuses, with a
`ValueError` naming it, any component it does not implement). Special tokens are the file's
added tokens marked `special`; the post-processor's single-sequence template (BOS/EOS) is
read here into the ids `encode(..., add_special_tokens=True)` puts around a text. It also
holds the entries `to_hf` and `sp_model` write into a `tokenizer.json` alike (an added token,
a template).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

if TYPE_CHECKING:
    pass

StrPath = Union[str, "os.PathLike[str]"]


def file_or_inner(path: StrPath, inner: str, what: str) -> Path:
    """`path` itself, or the file `inner` in it if it is a directory (a model checkout)."""
    p = Path(os.fspath(path))
    if p.is_dir():
        if not (p / inner).is_file():
            raise FileNotFoundError(f"no {inner} in directory {str(p)!r}")
        return p / inner
    if not p.is_file():
        raise FileNotFoundError(f"no such {what} file: {str(p)!r}")
    return p


def tokenizer_json_path(path: StrPath) -> Path:
    """`path` itself, or the `tokenizer.json` in it if it is a directory."""
    return file_or_inner(path, "tokenizer.json", "tokenizer.json")


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


# ---- writing: the parts of a tokenizer.json that `to_hf` and `sp_model` write alike ----


def added_token(token_id: int, content: str, special: bool, normalized: bool) -> dict[str, Any]:
    """An `added_tokens` entry as HF writes one, without `single_word`, `lstrip`, `rstrip`."""
    return {
        "id": token_id,
        "content": content,
        "single_word": False,
        "lstrip": False,
        "rstrip": False,
        "normalized": normalized,
        "special": special,
    }


def template(before: list[tuple[int, str]], after: list[tuple[int, str]]) -> dict[str, Any]:
    """HF's TemplateProcessing putting the special tokens `before` and `after` (id, text)
    around a text, and around each text of a pair as HF's Llama files put them (the second's
    with type id 1)."""

    def part(tokens: list[tuple[int, str]], type_id: int) -> list[dict[str, Any]]:
        return [{"SpecialToken": {"id": text, "type_id": type_id}} for _, text in tokens]

    def seq(name: str, type_id: int) -> list[dict[str, Any]]:
        return [{"Sequence": {"id": name, "type_id": type_id}}]

    first = part(before, 0) + seq("A", 0) + part(after, 0)
    return {
        "type": "TemplateProcessing",
        "single": first,
        "pair": first + part(before, 1) + seq("B", 1) + part(after, 1),
        "special_tokens": {
            text: {"id": text, "ids": [i], "tokens": [text]} for i, text in [*before, *after]
        },
    }
