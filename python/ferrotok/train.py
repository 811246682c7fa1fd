"""Training a byte-level BPE vocabulary: `train`, `count_pieces`, `train_from_counts`.

The vocabulary learned is exactly specified (see `rust/src/train/mod.rs`): ranks 0..255 are
the bytes; documents are split on the special tokens, then cut into pieces by the pattern;
each step merges the most frequent adjacent pair (ties: smallest `(left, right)` ids) into the
next rank. With `min_frequency` and `max_token_length` unset, this is what rustbpe 0.1.0 learns
from the same documents, pattern and number of merges.

>>> import ferrotok
>>> enc = ferrotok.train(["hello hello hello world"], 260, progress=False)
>>> enc.n_vocab
260
>>> enc.decode(enc.encode("hello world"))
'hello world'
"""

from __future__ import annotations

import functools
import itertools
import os
import re
import stat
import sys
import warnings
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Union, cast

from . import _core
from .core import Encoding
from .files import atomic_write
from .openai_public import CL100K_PATTERN, O200K_PATTERN, R50K_PATTERN
from .progress import Phases

if TYPE_CHECKING:
    # `typing.TypeGuard` is Python 3.10+; ferrotok runs on 3.9, where annotations stay strings.
    from typing import TypeGuard  # novm (only for type checkers)

__all__ = [
    "PieceCounts",
    "count_pieces",
    "train",
    "train_from_counts",
    "resolve_pattern",
    "check_arguments",
]

StrPath = Union[str, "os.PathLike[str]"]
TextsOrFiles = Union[Iterable[str], Iterable["os.PathLike[str]"], "os.PathLike[str]"]

DEFAULT_PATTERN = CL100K_PATTERN

_NAMED_PATTERNS = {
    "cl100k_base": CL100K_PATTERN,
    "o200k_base": O200K_PATTERN,
    "o200k_harmony": O200K_PATTERN,
    "r50k_base": R50K_PATTERN,
    "p50k_base": R50K_PATTERN,
    "p50k_edit": R50K_PATTERN,
    "gpt2": R50K_PATTERN,
}

# How much text is handed to Rust at a time when streaming strings (characters).
_BATCH_CHARS = 8 << 20
_BATCH_ITEMS = 8192


# What an encoding's name looks like; no useful pre-tokenization regex does.
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def resolve_pattern(pattern: str | None) -> str:
    """The regex for `pattern`: `None` is cl100k_base's, a registered encoding's name is
    that encoding's pattern (any other name is a ValueError), anything else is a regex.

    >>> resolve_pattern("cl100k_base") == resolve_pattern(None)
    True
    """
    if pattern is None:
        return DEFAULT_PATTERN
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a str, got {type(pattern).__name__}")
    if pattern in _NAMED_PATTERNS:
        return _NAMED_PATTERNS[pattern]
    if _NAME.fullmatch(pattern):
        # A name: a registered encoding's (a tiktoken plugin's included), or a typo. As a
        # regex it would match only its own text, and training would learn nothing.
        from .registry import get_encoding, list_encoding_names

        if pattern not in list_encoding_names():
            raise ValueError(
                f"pattern {pattern!r} is not the name of a registered encoding (known: "
                f"{', '.join(list_encoding_names())}); to match that text literally, "
                f"write the regex as '(?:{pattern})'"
            )
        return get_encoding(pattern)._pat_str
    return pattern


def _check_specials(special_tokens: Iterable[str] | None) -> list[str]:
    if special_tokens is None:
        return []
    if isinstance(special_tokens, str):
        raise TypeError("special_tokens must be a list of strings, not one string")
    out: list[str] = []
    seen: set[str] = set()  # a set: `s in out` was quadratic in the number of tokens
    for i, s in enumerate(special_tokens):
        if not isinstance(s, str):
            raise TypeError(f"special token {i} is {type(s).__name__}, not str")
        if not s:
            raise ValueError(f"special token {i} is empty")
        if s in seen:
            raise ValueError(f"special token {s!r} is given twice")
        seen.add(s)
        out.append(s)
    return out


class PieceCounts:
    """Distinct pieces of a corpus and how often each occurs, with the pattern and special
    tokens they were cut with. Made by `count_pieces`; add tables from shards with `+`,
    pickle them, or `save`/`load` them, then `train_from_counts`.

    >>> a = count_pieces(["the cat"], progress=False)
    >>> b = count_pieces(["the dog"], progress=False)
    >>> (a + b).most_common(1)
    [('the', 2)]
    """

    __slots__ = ("_core",)

    def __init__(self, pattern: str | None = None, special_tokens: Sequence[str] = ()) -> None:
        """An empty table for `pattern` (see `resolve_pattern`) and `special_tokens`."""
        self._core = _core.PieceCounts(resolve_pattern(pattern), _check_specials(special_tokens))

    @classmethod
    def _wrap(cls, core: _core.PieceCounts) -> PieceCounts:
        self = cls.__new__(cls)
        self._core = core
        return self

    @property
    def pattern(self) -> str:
        """The regex the pieces were cut with."""
        return self._core.pattern

    @property
    def special_tokens(self) -> list[str]:
        """The special tokens the documents were split on."""
        return self._core.special_tokens

    def __len__(self) -> int:
        """The number of distinct pieces."""
        return len(self._core)

    def total(self) -> int:
        """The number of pieces, with multiplicity."""
        return self._core.total()

    def most_common(self, n: int | None = None) -> list[tuple[str, int]]:
        """The `n` most frequent pieces (all if `None`) with their counts, ties by piece."""
        if n is not None and (not isinstance(n, int) or n < 0):
            raise ValueError(f"n must be a non-negative int or None, got {n!r}")
        return self._core.most_common(n)

    def __add__(self, other: object) -> PieceCounts:
        if not isinstance(other, PieceCounts):
            return NotImplemented
        return PieceCounts._wrap(self._core.add(other._core))

    def __radd__(self, other: object) -> PieceCounts:
        # Lets `sum(tables)` work (it starts from 0).
        if other == 0:
            return self
        return NotImplemented

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PieceCounts):
            return NotImplemented
        return self._core.equals(other._core)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<PieceCounts {len(self)} distinct, {self.total()} total>"

    def to_bytes(self) -> bytes:
        """A compact, canonical binary form (equal tables give equal bytes)."""
        return self._core.to_bytes()

    @classmethod
    def from_bytes(cls, data: bytes) -> PieceCounts:
        """The table `to_bytes` wrote; `ValueError` if `data` is not one."""
        return cls._wrap(_core.PieceCounts.from_bytes(data))

    def __reduce__(self) -> tuple[object, tuple[bytes]]:
        return (PieceCounts.from_bytes, (self.to_bytes(),))

    def save(self, path: StrPath) -> None:
        """Writes the table to `path` (atomically)."""
        atomic_write(os.path.abspath(os.fspath(path)), self.to_bytes())

    @classmethod
    def load(cls, path: StrPath) -> PieceCounts:
        """Reads a table written by `save`."""
        with open(path, "rb") as f:
            data = f.read()
        try:
            return cls.from_bytes(data)
        except ValueError as e:
            raise ValueError(f"{os.fspath(path)}: {e}") from None


def _is_path(x: object) -> TypeGuard[os.PathLike[str]]:
    return isinstance(x, os.PathLike)


def _sources(texts_or_files: TextsOrFiles) -> tuple[list[str] | None, Iterable[object]]:
    """(file paths, ()) or (None, iterable of texts), decided by the first item."""
    if isinstance(texts_or_files, (str, bytes)):
        raise TypeError(
            "expected an iterable of texts or of paths, got a single "
            f"{type(texts_or_files).__name__}: pass [text] for one text, "
            "or [pathlib.Path(name)] for one file"
        )
    if _is_path(texts_or_files):
        return [os.fspath(texts_or_files)], ()
    try:
        it = iter(cast("Iterable[object]", texts_or_files))
    except TypeError:
        raise TypeError(
            f"expected an iterable of texts or of paths, got {type(texts_or_files).__name__}"
        ) from None
    end = object()  # not None, which could be the first item (an error, raised below)
    first = next(it, end)
    if first is end:
        return None, ()
    if not _is_path(first):
        _warn_if_text_names_a_file(first)
        if isinstance(texts_or_files, (list, tuple)):
            return None, texts_or_files
        return None, itertools.chain([first], it)
    paths = [os.fspath(first)]
    for i, p in enumerate(it, start=1):
        if not _is_path(p):
            raise TypeError(
                f"item {i} of the input is {type(p).__name__}: pass either texts (str) "
                "or paths (os.PathLike), not both"
            )
        paths.append(os.fspath(p))
    return paths, ()


def _warn_if_text_names_a_file(text: object) -> None:
    """Warns if the first text is the name of a file: `train(["corpus.txt"], ...)` trains on
    those ten characters, not on the file (HuggingFace's trainers take file names as `str`),
    and the encoding comes out all but empty. One `stat`, of the first text only."""
    if not (isinstance(text, str) and 0 < len(text) < 4096 and "\n" not in text):
        return
    if os.path.isfile(text):  # False, not an error, for a NUL or an unencodable char
        warnings.warn(
            f"the first text, {text!r}, is the name of a file, but a str is trained on as "
            f"text; to train on the file's contents, pass a path: [pathlib.Path({text!r})]",
            UserWarning,
            stacklevel=_user_frame(),
        )


def _check_files(paths: list[str]) -> None:
    """Opens every regular file once so a missing or unreadable one fails before any work.
    A stream (a named pipe, `/dev/stdin`) is only looked up: opening it would connect its
    writer to a reader that goes away at once, and what it wrote would be lost."""
    for p in paths:
        st = os.stat(p)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(21, "is a directory, expected a text file", p)
        if stat.S_ISREG(st.st_mode):
            with open(p, "rb"):
                pass


def _records(paths: list[str]) -> bool:
    """Whether some file holds records (JSONL, Parquet) or is compressed: those are read as
    documents by `ferrotok.data.readers`; plain text files go to the Rust reader whole."""
    from .data.readers import input_format

    return any(input_format(p) != ("text", None) for p in paths)


def _count_into(
    counter: _core.Counter, texts_or_files: TextsOrFiles, bar: Phases, field: str = "text"
) -> None:
    paths, texts = _sources(texts_or_files)
    if paths is not None and _records(paths):
        from .data.readers import iter_documents

        # One document per JSONL line / Parquet row (its `field`), compressed or not.
        texts, paths = iter_documents(paths, field=field), None
    if paths is not None:
        _check_files(paths)
        counter.add_files(paths, bar)
        return
    if isinstance(texts, (list, tuple)):
        # Already in memory: hand Rust slices, which checks the items' types itself.
        for start in range(0, len(texts), _BATCH_ITEMS):
            counter.add_texts(texts[start : start + _BATCH_ITEMS], start, bar)
            bar("counting", counter.bytes_counted, None)
        return
    # Any other iterable is streamed: at most _BATCH_CHARS characters are held at a time.
    batch: list[object] = []
    chars = 0
    first = 0
    for i, item in enumerate(texts):
        if not batch:
            first = i
        batch.append(item)
        chars += len(item) if isinstance(item, str) else 0
        if chars >= _BATCH_CHARS or len(batch) >= _BATCH_ITEMS:
            counter.add_texts(batch, first, bar)
            bar("counting", counter.bytes_counted, None)
            batch, chars = [], 0
    if batch:
        counter.add_texts(batch, first, bar)
        bar("counting", counter.bytes_counted, None)


def count_pieces(
    texts_or_files: TextsOrFiles,
    *,
    pattern: str | None = None,
    special_tokens: Iterable[str] | None = None,
    num_threads: int | None = None,
    progress: bool = True,
    field: str = "text",
) -> PieceCounts:
    """Counts the distinct pieces of a corpus: the first half of `train`.

    `texts_or_files` is an iterable of `str` (streamed, never held whole) or of paths
    (`os.PathLike`; a plain text file is one document, read as UTF-8 without newline
    translation, in bounded windows, in parallel; a JSONL or Parquet file, or a `.gz`/`.zst`
    one, gives one document per line or row: its `field`, as `ferrotok tokenize` reads it).
    Tables from shards can be added with `+`; training on
    the sum gives the same vocabulary as counting everything at once.

    >>> counts = count_pieces(["to be or not to be"], progress=False)
    >>> counts.most_common(2)
    [(' be', 2), (' not', 1)]
    """
    pat = resolve_pattern(pattern)
    specials = _check_specials(special_tokens)
    threads = _check_threads(num_threads)
    counter = _core.Counter(pat, specials, threads)
    _warn_if_pattern_drops_text(pat)
    bar = Phases(progress)
    try:
        _count_into(counter, texts_or_files, bar, field)
    finally:
        bar.close()
    return PieceCounts._wrap(counter.finish())


# Text of many kinds (cased and uncased scripts, combining marks, digits, punctuation,
# every sort of space, emoji) to tell whether a pattern leaves characters out of its pieces.
_PROBES = (
    "Hello", " world", "It's", "don't", "2024", " 3.14", "-", ",", "!?", "$", "_", "#",
    "\n", "\r\n", "\t", "  ", " ", "\u00a0", "x\u200by", "naïve", "e\u0301",
    "日本語", "한국어", "العربية", "עברית", "Русский", "हिन्दी", "ไทย", "😀", "👍🏽",
)


def _warn_if_pattern_drops_text(pattern: str) -> None:
    """Warns if some probe text falls outside the pattern's pieces: training never sees
    such text, and the encoding trained with the pattern drops it (encode then decode
    loses it), which is almost never what was meant."""
    lost = _dropped_probes(pattern)
    if lost:
        examples = ", ".join(repr(p) for p in lost[:4])
        warnings.warn(
            f"the pattern {pattern!r} leaves text out of its pieces (e.g. {examples}): "
            "training skips that text and the trained encoding drops it; a pattern that "
            "keeps all text ends with catch-alls such as \\s+|[^\\s\\p{L}\\p{N}]+",
            UserWarning,
            stacklevel=_user_frame(),
        )


@functools.lru_cache(maxsize=16)
def _dropped_probes(pattern: str) -> tuple[str, ...]:
    """The probes (or, if each alone is whole, all of them joined) that lose text when cut
    by `pattern`. Cached: a custom pattern costs a compile (~20 ms for GPT-2's on the general
    path), and shards are often counted one call each."""
    # With the 256 byte tokens as the vocabulary, the ids are the bytes of the pieces.
    core = _core.CoreBPE({bytes([i]): i for i in range(256)}, [], pattern)
    lost = tuple(p for p in _PROBES if bytes(core.encode_ordinary(p)) != p.encode())
    whole = "".join(_PROBES)
    if not lost and bytes(core.encode_ordinary(whole)) != whole.encode():
        lost = (whole,)
    return lost


def _user_frame() -> int:
    """The `stacklevel` for a warning raised by this module's caller that points at the
    first frame outside ferrotok (the user's call to `train` or `count_pieces`)."""
    level, frame = 1, sys._getframe(1)
    while frame.f_back is not None and frame.f_globals.get("__name__", "").startswith(
        "ferrotok."
    ):
        level, frame = level + 1, frame.f_back
    return level


def _check_threads(num_threads: int | None) -> int:
    if num_threads is None:
        return 0
    if not isinstance(num_threads, int) or num_threads < 1:
        raise ValueError(f"num_threads must be a positive int or None, got {num_threads!r}")
    if num_threads > _MAX_THREADS:
        # Thousands of threads take seconds to start and stop, and ignore Ctrl-C meanwhile.
        raise ValueError(f"num_threads is {num_threads}; at most {_MAX_THREADS}")
    return num_threads


#: The most counting threads a call may ask for (machines have far fewer cores).
_MAX_THREADS = 1024


def _check_vocab_size(vocab_size: int, n_special: int) -> int:
    if not isinstance(vocab_size, int) or isinstance(vocab_size, bool):
        raise TypeError(f"vocab_size must be an int, got {type(vocab_size).__name__}")
    if vocab_size < 256 + n_special:
        raise ValueError(
            f"vocab_size is {vocab_size}, but the 256 byte tokens and {n_special} special "
            f"token(s) already take {256 + n_special}"
        )
    if vocab_size - n_special > _MAX_ORDINARY:
        raise ValueError(
            f"vocab_size is {vocab_size}: {vocab_size - n_special:,} ordinary tokens, more than "
            f"an encoding can have ({_MAX_ORDINARY:,}: their ranks are below 2**21)"
        )
    return vocab_size - 256 - n_special


#: The most ordinary tokens an encoding can have (ranks below 2**21; docs/compatibility.md,
#: "Where the two part ways").
_MAX_ORDINARY = 2**21
#: Bound for `min_frequency` and `max_token_length` (the core takes 64-bit ints).
_MAX_OPTION = 2**63 - 1


def _check_options(min_frequency: int | None, max_token_length: int | None) -> None:
    if min_frequency is not None and (
        not isinstance(min_frequency, int) or not 1 <= min_frequency <= _MAX_OPTION
    ):
        raise ValueError(f"min_frequency must be a positive int or None, got {min_frequency!r}")
    if max_token_length is not None and (
        not isinstance(max_token_length, int) or not 1 <= max_token_length <= _MAX_OPTION
    ):
        raise ValueError(
            f"max_token_length must be a positive int or None, got {max_token_length!r}"
        )


def check_arguments(
    vocab_size: int,
    *,
    pattern: str | None = None,
    special_tokens: Iterable[str] | None = None,
    min_frequency: int | None = None,
    max_token_length: int | None = None,
) -> list[str]:
    """Checks the arguments of `train` that need no text, so that a caller can refuse them
    before reading a corpus: a `ValueError` or `TypeError` names the first that is wrong.
    Returns the special tokens as a list. (`pattern` is checked only if given.)

    >>> check_arguments(300, special_tokens=["<|end|>"])
    ['<|end|>']
    """
    specials = _check_specials(special_tokens)
    _check_vocab_size(vocab_size, len(specials))
    _check_options(min_frequency, max_token_length)
    if pattern is not None:
        resolve_pattern(pattern)
    return specials


def train_from_counts(
    counts: PieceCounts,
    vocab_size: int,
    *,
    min_frequency: int | None = None,
    max_token_length: int | None = None,
    name: str = "trained",
    progress: bool = True,
) -> Encoding:
    """Learns a vocabulary from a piece-count table: the second half of `train`.

    >>> counts = count_pieces(["low lower lowest"] * 3, progress=False)
    >>> enc = train_from_counts(counts, 258, progress=False)
    >>> [enc.decode_single_token_bytes(t) for t in (256, 257)]
    [b'lo', b'low']
    """
    if not isinstance(counts, PieceCounts):
        raise TypeError(f"counts must be a PieceCounts, got {type(counts).__name__}")
    specials = counts.special_tokens
    n_merges = _check_vocab_size(vocab_size, len(specials))
    _check_options(min_frequency, max_token_length)
    bar = Phases(progress)
    try:
        tokens = _core.learn_merges(
            counts._core, n_merges, min_frequency or 0, max_token_length, bar
        )
    finally:
        bar.close()
    if len(tokens) < n_merges:
        # Not an error (a small corpus has few pairs), but not what was asked for: say so.
        warnings.warn(
            f"vocab_size is {vocab_size}, but the counts hold only {len(tokens)} of the "
            f"{n_merges} merges it asks for (the text has no other pair to merge within "
            f"min_frequency and max_token_length); the vocabulary has "
            f"{256 + len(tokens) + len(specials)} tokens",
            stacklevel=_user_frame(),
        )
    return _encoding(name, counts.pattern, tokens, specials)


def _encoding(name: str, pattern: str, tokens: list[bytes], specials: list[str]) -> Encoding:
    ranks = {bytes([i]): i for i in range(256)}
    # Two merges can make the same bytes (e.g. "a"+"bc" and "ab"+"c"); the later rank wins,
    # as in `dict(rustbpe.Tokenizer().get_mergeable_ranks())`, and the earlier one is unused.
    for i, t in enumerate(tokens):
        ranks[t] = 256 + i
    first_special = 256 + len(tokens)
    return Encoding(
        name,
        pat_str=pattern,
        mergeable_ranks=ranks,
        special_tokens={s: first_special + i for i, s in enumerate(specials)},
    )


def train(
    texts_or_files: TextsOrFiles,
    vocab_size: int,
    *,
    pattern: str | None = None,
    special_tokens: Iterable[str] | None = None,
    min_frequency: int | None = None,
    max_token_length: int | None = None,
    name: str = "trained",
    progress: bool = True,
    num_threads: int | None = None,
    field: str = "text",
) -> Encoding:
    """Trains a byte-level BPE encoding on a corpus.

    Args:
        texts_or_files: an iterable of `str` (streamed) or of paths (`os.PathLike`, e.g.
            `pathlib.Path`; a text file is one document, read in parallel; a JSONL or
            Parquet file, or a `.gz`/`.zst` one, one document per record). A `str` is always
            text: if the first one is also a file's name, a warning says so.
        vocab_size: the size of the vocabulary: 256 bytes + merges + special tokens.
            Fewer merges are made if the corpus runs out of pairs.
        pattern: the pre-tokenization regex, or the name of a registered encoding whose
            pattern to use; default cl100k_base's.
        special_tokens: texts that split documents and are never merged; they get the ids
            after the last merged token.
        min_frequency: stop when the most frequent pair occurs fewer times (extension).
        max_token_length: never make a token longer than this many bytes (extension).
        name: the encoding's name.
        progress: show a progress bar on stderr (only when it is a terminal).
        num_threads: threads for counting (default: all cores). The result never depends
            on it.
        field: the JSONL field / Parquet column holding the text, for such files.

    Ctrl-C stops training promptly with `KeyboardInterrupt`.

    >>> enc = train(["the cat sat on the mat"] * 10, 300, special_tokens=["<|eot|>"],
    ...             progress=False)
    >>> enc.encode("the mat<|eot|>", allowed_special="all")[-1] == enc.n_vocab - 1
    True
    """
    specials = check_arguments(
        vocab_size,
        special_tokens=special_tokens,
        min_frequency=min_frequency,
        max_token_length=max_token_length,
    )
    counts = count_pieces(
        texts_or_files,
        pattern=pattern,
        special_tokens=specials,
        num_threads=num_threads,
        progress=progress,
        field=field,
    )
    return train_from_counts(
        counts,
        vocab_size,
        min_frequency=min_frequency,
        max_token_length=max_token_length,
        name=name,
        progress=progress,
    )
