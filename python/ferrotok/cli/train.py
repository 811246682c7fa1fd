"""`ferrotok train FILE... --vocab-size N [--pattern P] [--special TOKEN]... -o PATH`.

`register(subparsers)` adds the subcommand to the `ferrotok` command's parser (see
`ferrotok.cli`); `run(args)` runs it.
User errors (missing or non-UTF-8 files, a bad pattern, a vocabulary too small) print one
line on stderr and exit with status 2; Ctrl-C exits with status 130.

Example::

    $ ferrotok train corpus/*.txt --vocab-size 32768 --special '<|endoftext|>' -o my.tiktoken
    pieces: 1,234,567 distinct, 9,876,543 total
    merges: 32,511 in 3.2 s (counting 1.9 s, merging 1.3 s)
    ...
"""

from __future__ import annotations

import argparse
import os
import pathlib
import stat
import sys
import time
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .cuts import can_cut, last_cut

if TYPE_CHECKING:
    from ..core import Encoding

# Tokens per byte are measured on at most this much of the input.
_MEASURE_BYTES = 64 << 20


def register(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    """Adds the `train` subcommand to `subparsers` and returns its parser."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "train",
        help="train a byte-level BPE vocabulary on text files",
        description=(
            "Train a byte-level BPE vocabulary on UTF-8 text files (each file is one "
            "document) and save it as PATH (a .tiktoken file) plus PATH.json."
        ),
    )
    p.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="UTF-8 text files, one document each ('-': standard input); JSONL and Parquet "
        "files (and .gz/.zst ones) give one document per record, read from --field",
    )
    p.add_argument(
        "--field", default="text", help="JSONL field / Parquet column with the text"
    )
    p.add_argument(
        "--vocab-size",
        type=int,
        required=True,
        metavar="N",
        help="vocabulary size: 256 bytes + merges + special tokens",
    )
    p.add_argument(
        "--pattern",
        default=None,
        metavar="P",
        help="pre-tokenization regex, or an encoding name (default: cl100k_base's)",
    )
    p.add_argument(
        "--special",
        action="append",
        default=[],
        metavar="TOKEN",
        help="a special token (repeatable); gets an id after the merged tokens",
    )
    p.add_argument("--min-frequency", type=int, default=None, metavar="K")
    p.add_argument("--max-token-length", type=int, default=None, metavar="BYTES")
    p.add_argument("--name", default=None, help="encoding name (default: from PATH)")
    p.add_argument("--threads", type=int, default=None, help="counting threads")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("-o", "--output", required=True, metavar="PATH", help="where to save")
    p.set_defaults(func=run)
    return p


def _fail(msg: str) -> int:
    print(f"ferrotok train: error: {msg}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    """Runs `ferrotok train` with parsed arguments; returns the exit status."""
    from ..train import count_pieces, train_from_counts

    out = os.fspath(args.output)
    if not out:
        return _fail("-o is empty: give the path to save the vocabulary at")
    if os.path.isdir(out) or out.endswith((os.sep, os.altsep or os.sep)):
        example = os.path.join(out, "vocab.tiktoken")
        what = "is a directory" if os.path.isdir(out) else "ends in a separator (a directory)"
        return _fail(f"-o {out} {what}: give a file path, such as {example}")
    out_dir = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(out_dir):
        return _fail(f"cannot write {out}: directory {out_dir} does not exist")
    if args.threads is not None and args.threads < 1:
        return _fail(f"--threads must be a positive number, got {args.threads}")
    for token in args.special:
        if not _is_utf8(token):
            return _fail(f"--special {token!r} is not valid UTF-8 text")
    name = args.name or os.path.splitext(os.path.basename(out))[0] or "trained"
    # A file name's bytes that are not UTF-8 (lone surrogates here) cannot go into the JSON
    # sidecar: they become U+FFFD in the name taken from it.
    name = name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    if "-" in args.files and not os.path.exists(_STDIN):
        if os.path.lexists(_STDIN):  # the link is there, what it names is not
            return _fail("FILE '-': standard input is closed")
        return _fail(f"FILE '-' (standard input) needs {_STDIN}, which this system lacks")
    # `-` is standard input, read as a stream (once, in windows) like a named pipe.
    paths = [pathlib.Path(_STDIN if f == "-" else f) for f in args.files]
    for target in (out, out + ".json"):
        if any(_same_file(target, p) for p in paths):
            return _fail(f"-o {out} would overwrite the input file {target}")
    try:
        _check_args(args)
        t0 = time.monotonic()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            counts = count_pieces(
                paths,
                pattern=args.pattern,
                special_tokens=args.special,
                num_threads=args.threads,
                progress=not args.no_progress,
                field=args.field,
            )
        for w in caught:
            print(f"ferrotok train: warning: {w.message}", file=sys.stderr)
        t1 = time.monotonic()
        with warnings.catch_warnings():
            # A vocabulary short of vocab_size gets the note below, in the command's words.
            warnings.filterwarnings("ignore", "vocab_size is", UserWarning)
            enc = train_from_counts(
                counts,
                args.vocab_size,
                min_frequency=args.min_frequency,
                max_token_length=args.max_token_length,
                name=name,
                progress=not args.no_progress,
            )
        t2 = time.monotonic()
        enc.save(out)
    except KeyboardInterrupt:
        print("ferrotok train: interrupted", file=sys.stderr)
        return 130
    except OSError as e:
        # `[Errno 21] is a directory: 'x'` said as the other subcommands say it: `x: is ...`.
        if e.filename is not None and e.strerror:
            return _fail(f"{os.fsdecode(e.filename)}: {e.strerror}")
        return _fail(str(e))
    except (ValueError, TypeError) as e:
        return _fail(str(e))
    n_merges = enc.n_vocab - 256 - len(args.special)
    print(f"pieces: {len(counts):,} distinct, {counts.total():,} total")
    print(
        f"merges: {n_merges:,} in {t2 - t0:.1f} s "
        f"(counting {t1 - t0:.1f} s, merging {t2 - t1:.1f} s)"
    )
    if n_merges < args.vocab_size - 256 - len(args.special):
        print(f"note: the corpus ran out of pairs before vocab size {args.vocab_size}")
    # A stream (a named pipe, `<(...)`) was read once, by the counting: it is not measured.
    files = [p for p in paths if _is_regular(p)]
    try:
        tokens, nbytes, partial = _tokens_per_byte(enc, files, args.field)
    except KeyboardInterrupt:
        # Only the measurement is cut short: the vocabulary is saved.
        print(f"saved: {out} and {out}.json (vocabulary {enc.n_vocab:,})")
        print("ferrotok train: interrupted while measuring tokens per byte", file=sys.stderr)
        return 130
    if nbytes:
        where = "the input" if len(files) == len(paths) else "the input's regular files"
        where = f"first {nbytes / 1e6:.0f} MB of {where}" if partial else where
        print(f"tokens per byte on {where}: {tokens / nbytes:.4f} ({tokens:,} tokens)")
    print(f"saved: {out} and {out}.json (vocabulary {enc.n_vocab:,})")
    return 0


def _same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Are `a` and `b` one existing file (links and relative paths included)?"""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


_STDIN = "/dev/stdin"


def _is_utf8(text: str) -> bool:
    """Can `text` (an argument; undecodable bytes arrive as lone surrogates) be UTF-8?"""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _is_regular(path: pathlib.Path) -> bool:
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False


def _check_args(args: argparse.Namespace) -> None:
    """Checks that need no input, so they fail before any counting."""
    from ..train import check_arguments

    check_arguments(
        args.vocab_size,
        pattern=args.pattern,
        special_tokens=args.special,
        min_frequency=args.min_frequency,
        max_token_length=args.max_token_length,
    )


def _tokens_per_byte(
    enc: Encoding, paths: Sequence[pathlib.Path], field: str = "text"
) -> tuple[int, int, bool]:
    """Tokens and bytes of the input (up to `_MEASURE_BYTES`), encoded with `enc`.

    Files are read and encoded 1 MB at a time, cut where `ferrotok.cli.cuts` allows (so the
    count is the whole text's), or the whole measured part at once for a pattern it does not
    cover; only token counts are kept.
    """
    tokens = nbytes = 0
    block = 1 << 20 if can_cut(enc) else _MEASURE_BYTES

    def add(part: bytes) -> None:
        nonlocal tokens, nbytes
        # Special tokens in the text count as one token each, as in training.
        tokens += enc.count(part.decode("utf-8", errors="replace"), allowed_special="all")
        nbytes += len(part)

    from ..data.readers import input_format, iter_documents

    for p in paths:
        if input_format(str(p)) != ("text", None):  # records: the documents' text
            for doc in iter_documents(p, field=field, skip_bad=True):
                add(doc.encode("utf-8"))
                if nbytes >= _MEASURE_BYTES:
                    return tokens, nbytes, True
            continue
        with open(p, "rb") as f:
            pending = b""
            while nbytes + len(pending) < _MEASURE_BYTES:
                chunk = f.read(block)
                if not chunk:
                    break
                searched = max(len(pending) - 1, 0)
                pending += chunk
                cut = last_cut(pending, searched, enc) if block < _MEASURE_BYTES else 0
                if cut:
                    add(pending[:cut])
                    pending = pending[cut:]
            if pending and nbytes < _MEASURE_BYTES:
                add(pending)
        if nbytes >= _MEASURE_BYTES:
            return tokens, nbytes, True
    return tokens, nbytes, False
