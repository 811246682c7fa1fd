"""The saved-encoding format, read and written: `Encoding.save(path)` and `Encoding.load(path)`
call `save` and `read` here, which deal in names, patterns and tables only (this module does
not know `Encoding`).

The format is two files side by side:

* `path` — the ranks, a standard `.tiktoken` file (`base64(token) rank` per line), which
  tiktoken's own `tiktoken.load.load_tiktoken_bpe(path)` reads;
* `path + ".json"` — everything else: `{"format": "ferrotok-encoding", "version": 1,
  "name": ..., "pat_str": ..., "special_tokens": {text: id}, "n_vocab": ...,
  "ranks_sha256": ...}`. The hash ties the sidecar to its ranks file, so a ranks file
  replaced on its own is detected.

>>> import os, tempfile, ferrotok
>>> enc = ferrotok.train(["hello world"] * 3, 260, special_tokens=["<|end|>"], progress=False)
>>> path = os.path.join(tempfile.mkdtemp(), "hello.tiktoken")
>>> enc.save(path)
>>> again = ferrotok.Encoding.load(path)
>>> again.encode("hello world<|end|>", allowed_special="all") == enc.encode(
...     "hello world<|end|>", allowed_special="all")
True
"""

from __future__ import annotations

import hashlib
import json
import operator
import os
from typing import NamedTuple, Union

from .files import atomic_write_all, check_file_path
from .load import format_tiktoken_bpe, parse_tiktoken_bpe

# A path as `open()` takes it; bytes are decoded as the file system does (`os.fsdecode`).
StrPath = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]

FORMAT = "ferrotok-encoding"
VERSION = 1
#: Ordinary ranks are below this: the core's limit (`train`'s vocabulary bound is the same).
RANK_LIMIT = 2**21


def _str_path(path: StrPath) -> str:
    return os.fsdecode(os.fspath(path))


def sidecar_path(path: StrPath) -> str:
    """Where the metadata of the encoding saved at `path` lives."""
    return _str_path(path) + ".json"


class SavedEncoding(NamedTuple):
    """What `read` found: the arguments of `Encoding(...)`."""

    name: str
    pat_str: str
    mergeable_ranks: dict[bytes, int]
    special_tokens: dict[str, int]


def save(
    path: StrPath,
    *,
    name: str,
    pat_str: str,
    mergeable_ranks: dict[bytes, int],
    special_tokens: dict[str, int],
) -> None:
    """Writes an encoding as `path` (a `.tiktoken` ranks file) and `path + ".json"`.

    The directory must exist, and `path` must name a file (not end in a separator)."""
    path = _str_path(path)
    check_file_path(path)  # before abspath, which drops a trailing separator
    path = os.path.abspath(path)
    ranks = format_tiktoken_bpe(mergeable_ranks)
    meta = {
        "format": FORMAT,
        "version": VERSION,
        "name": name,
        "pat_str": pat_str,
        "special_tokens": special_tokens,
        "n_vocab": _n_vocab(mergeable_ranks, special_tokens),
        "ranks_sha256": hashlib.sha256(ranks).hexdigest(),
    }
    data = json.dumps(meta, indent=2, ensure_ascii=False).encode("utf-8") + b"\n"
    # One change of both files: a failure or Ctrl-C part way leaves the old pair, which
    # `read` would otherwise refuse as a mismatch (the hash no longer fits).
    atomic_write_all([(path, ranks), (sidecar_path(path), data)])


def _n_vocab(ranks: dict[bytes, int], specials: dict[str, int]) -> int:
    """One more than the largest id (`Encoding.n_vocab`)."""
    return max(max(ranks.values(), default=-1), max(specials.values(), default=-1)) + 1


def read(
    path: StrPath,
    *,
    name: str | None = None,
    pat_str: str | None = None,
    special_tokens: dict[str, int] | None = None,
) -> SavedEncoding:
    """Reads an encoding written by `save`.

    A plain `.tiktoken` file without a sidecar loads too when `pat_str` is given (and
    `special_tokens`, if it has any); arguments given override the sidecar's values.
    """
    path = _str_path(path)
    with open(path, "rb") as f:
        contents = f.read()
    meta: dict[str, object] = {}
    side = sidecar_path(path)
    if os.path.exists(side):
        with open(side, "rb") as f:
            meta = _read_sidecar(f.read(), side)
        version = meta.get("version")
        # `type() is int`: JSON's `true` and `1.0` compare equal to 1 in Python.
        if type(version) is not int or version != VERSION:
            raise ValueError(f"{side}: format version {_short(repr(version))} is not supported")
        expected = meta.get("ranks_sha256")
        if expected is not None and hashlib.sha256(contents).hexdigest() != expected:
            raise ValueError(
                f"{path} does not match {side} (sha256 differs): the ranks file was changed "
                "or replaced after saving"
            )
    elif pat_str is None:
        raise FileNotFoundError(
            2,
            f"no sidecar {side!r} with the pattern and special tokens; pass pat_str= "
            "(and special_tokens=) to load a plain .tiktoken file",
            side,
        )
    ranks = parse_tiktoken_bpe(contents, path, rank_limit=RANK_LIMIT)
    pat = pat_str if pat_str is not None else meta.get("pat_str")
    specials = special_tokens if special_tokens is not None else meta.get("special_tokens", {})
    enc_name = name if name is not None else meta.get("name")
    if not isinstance(pat, str):
        raise ValueError(f"{side}: 'pat_str' must be a string")
    if enc_name is not None and not isinstance(enc_name, str):
        raise ValueError(f"{'name' if name is not None else side + ': name'} must be a string")
    if enc_name is None:
        enc_name = os.path.splitext(os.path.basename(path))[0]
    where = "special_tokens" if special_tokens is not None else f"{side}: 'special_tokens'"
    checked = _check_specials(specials, where)
    n_vocab = meta.get("n_vocab")
    if n_vocab is not None and type(n_vocab) is not int:
        raise ValueError(f"{side}: 'n_vocab' must be an int, not {_short(repr(n_vocab))}")
    made = _n_vocab(ranks, checked)
    # (An empty ranks file is left to `Encoding`, which names that.)
    if special_tokens is None and n_vocab is not None and ranks and n_vocab != made:
        raise ValueError(
            f"{side}: 'n_vocab' is {n_vocab!r}, but {path} and the special tokens make "
            f"{made} tokens (is the ranks file cut short?)"
        )
    return SavedEncoding(enc_name, pat, ranks, checked)


def _read_sidecar(data: bytes, side: str) -> dict[str, object]:
    """The sidecar's JSON object; a `ValueError` naming `side` if it is not one, is not
    UTF-8, or nests too deeply for `json` (which recurses once per level: a file of 100,000
    `[` would otherwise be a `RecursionError`)."""
    try:
        meta = json.loads(data.decode("utf-8"))
    except RecursionError:
        raise ValueError(f"{side}: not valid JSON for a sidecar: nested too deeply") from None
    except ValueError as e:  # JSONDecodeError and UnicodeDecodeError
        raise ValueError(f"{side}: not valid JSON: {_short(str(e), 200)}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ValueError(f"{side}: not a ferrotok encoding sidecar")
    return meta


def _short(text: str, limit: int = 40) -> str:
    """`text`, cut to `limit` characters: an error never echoes a whole file back."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _check_specials(specials: object, where: str) -> dict[str, int]:
    """`specials` as `{text: id}` if every text is a non-empty string and every id an int
    (or an integer type such as numpy's) in 0..2**32-2; otherwise a ValueError that names
    `where` and the token. Two tokens may share an id, and a special token an ordinary
    token's rank, as `Encoding()` and tiktoken allow (o200k_harmony has two on 200018), so
    that whatever `save` wrote loads."""
    if not isinstance(specials, dict):
        raise ValueError(f"{where} must be an object of text -> id")
    out: dict[str, int] = {}
    for text, value in specials.items():
        if not isinstance(text, str) or not text:
            raise ValueError(f"{where}: a special token must be a non-empty string, not {text!r}")
        try:
            i = operator.index(value) if not isinstance(value, bool) else -1
        except TypeError:
            i = -1
        if not 0 <= i < 2**32 - 1:
            raise ValueError(f"{where}: {text!r} has id {value!r}, not an int in 0..2**32-2")
        out[text] = i
    return out
