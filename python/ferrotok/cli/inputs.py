"""Reading a subcommand's input: the `TEXT` argument, `--file PATH` or standard input, as text
or as parts of a file that encode as the whole does (`ferrotok.cli.cuts`).

A part stays bytes: only the chars either side of a cut are decoded here; the core checks that
the rest is UTF-8 as it encodes it, on the threads of `map_parts`. Every failure to read is a
`CLIError` naming the file.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from functools import partial
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from ..progress import Percent
from .arrays import id_array
from .common import CLIError
from .cuts import can_cut, last_cut
from .threads import map_parts

if TYPE_CHECKING:
    import array

    from ..core import Encoding

_R = TypeVar("_R")

# A file is read this many bytes at a time, and cut into parts of about this size.
BLOCK = 8 << 20
# Reading a file at least this big shows its progress (on a terminal).
PROGRESS_MIN_BYTES = 64 << 20


def read_input_bytes(path: str | None) -> tuple[bytes, str]:
    """The bytes of `path` (`-` or None: standard input) and a name for messages."""
    if path is None or path == "-":
        stdin = sys.stdin
        if stdin is None:
            raise CLIError("no input: give TEXT or --file PATH (standard input is closed)")
        if stdin.isatty():
            print("ferrotok: reading standard input (end with Ctrl-D)", file=sys.stderr)
        buffer = getattr(stdin, "buffer", None)
        data = buffer.read() if buffer is not None else stdin.read().encode("utf-8")
        return data, "<stdin>"
    try:
        with open(path, "rb") as f:
            return f.read(), path
    except OSError as e:
        raise read_error(path, e) from None


def read_error(path: str, e: OSError) -> CLIError:
    """A file that cannot be read, said in one line."""
    if isinstance(e, FileNotFoundError):
        return CLIError(f"{path}: no such file")
    if isinstance(e, IsADirectoryError):
        return CLIError(f"{path}: is a directory")
    return CLIError(f"{path}: cannot read ({e.strerror or e})")


def decode_utf8(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise not_utf8(name, data, e) from None


def not_utf8(name: str, data: bytes, e: UnicodeDecodeError, offset: int = 0) -> CLIError:
    """`data` (which starts at byte `offset` of `name`) failed to decode as `e` says."""
    return CLIError(
        f"{name}: not UTF-8 text (byte 0x{data[e.start]:02x} at offset {offset + e.start})"
    )


def check_one_source(args: argparse.Namespace) -> None:
    """`CLIError` if both `TEXT` and `--file` are given."""
    if args.text is not None and args.file is not None:
        raise CLIError("give either TEXT or --file, not both")


def input_text(args: argparse.Namespace) -> str:
    """The text of the `TEXT` argument, `--file` or standard input."""
    check_one_source(args)
    if args.text is not None:
        try:
            args.text.encode("utf-8")
        except UnicodeEncodeError:
            # Undecodable bytes in argv arrive as lone surrogates (PEP 383).
            raise CLIError("the TEXT argument is not valid UTF-8; use --file") from None
        text: str = args.text
        _note_if_a_file(text)
        return text
    data, name = read_input_bytes(args.file)
    return decode_utf8(data, name)


def _note_if_a_file(text: str) -> None:
    """TEXT is text, never a file name (`count`'s FILEs are files, like wc's): when it also
    names a file, say on stderr how to read the file instead. (Only a one-line TEXT short
    enough to be a path is looked up.)"""
    if not text or len(text) > 4096 or "\n" in text or "\0" in text:
        return
    try:
        is_file = os.path.isfile(text)
    except (OSError, ValueError):
        return
    if is_file:
        import shlex

        print(
            f"ferrotok: note: {text!r} is read as text, not as the file of that name "
            f"(to read the file: -f {shlex.quote(text)})",
            file=sys.stderr,
        )


def encode_text(enc: Encoding, text: str, allow_special: bool) -> list[int]:
    return with_special_check(enc, enc.encode, text, allow_special)


def with_special_check(
    enc: Encoding, call: Callable[..., _R], text: str, allow_special: bool
) -> _R:
    """`call(text)` with every special token allowed, or none, naming the first one found."""
    if allow_special:
        return call(text, allowed_special="all")
    try:
        return call(text)
    except ValueError:
        error = special_token_error(enc, text)
        if error is None:
            raise
        raise error from None


def special_token_error(enc: Encoding, text: str, name: str = "") -> CLIError | None:
    """The error naming the first special token in `text` (read from the file `name`), if
    one is there."""
    import re

    specials = sorted(enc.special_tokens_set, key=len, reverse=True)
    match = re.search("|".join(map(re.escape, specials)), text) if specials else None
    if match is None:
        return None
    return CLIError(
        f"{name + ': ' if name else ''}the text contains the special token {match.group()!r}; "
        "pass --allow-special to encode it as that token"
    )


# A part of a file: where it starts (a byte offset) and its bytes, which the core checks
# are UTF-8 as it encodes them.
Part = tuple[int, bytes]


def input_parts(enc: Encoding, path: str | None, verb: str) -> Iterator[Part]:
    """The file at `path` (`-` or None: standard input), in parts cut as above."""
    if path is None or path == "-":
        stdin = sys.stdin
        if stdin is None or getattr(stdin, "buffer", None) is None or stdin.isatty():
            data, _ = read_input_bytes(path)  # the prompt and the closed cases
            yield 0, data
            return
        yield from file_parts(enc, stdin.buffer, None, verb)
        return
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            yield from file_parts(enc, f, size, verb, path)
    except OSError as e:
        raise read_error(path, e) from None


def file_parts(
    enc: Encoding, f: Any, size: int | None, verb: str, name: str = "<stdin>"
) -> Iterator[Part]:
    """The bytes read from `f`, in parts whose ids joined are the whole text's ids: cut as
    above, about `BLOCK` bytes each, or the whole file at once if `enc` is not one of the
    patterns the rule holds for. With a terminal, shows `{verb} {name}: N%` for big files.
    The bytes are not decoded here: the core checks them as it encodes (`in_core`)."""
    if not can_cut(enc):
        yield 0, f.read()
        return
    progress = Percent(verb, name, size, PROGRESS_MIN_BYTES)
    done, offset, pending = 0, 0, bytearray()
    while True:
        block = f.read(BLOCK)
        searched = max(len(pending) - 1, 0)  # a "\n" there has not had its next char
        pending += block
        done += len(block)
        # A short block is the end of the file (a buffered read returns less only there):
        # read on to be sure rather than cut, so that a small file is one part.
        if len(block) == BLOCK:
            cut = last_cut(pending, searched, enc)
        else:
            cut = 0 if block else len(pending)
        if cut or not block:
            yield offset, bytes(pending[:cut])
            del pending[:cut]
            offset += cut
        progress.update(done)
        if not block:
            progress.close()
            return


def encoded_parts(enc: Encoding, args: argparse.Namespace, verb: str) -> Iterator[array.array[int]]:
    """The ids of the `TEXT` argument, `--file` or standard input, a part at a time, in order
    (a file is read and encoded in parts on several threads, see "Reading a file in parts")."""
    if args.text is not None:
        yield id_array(encode_text(enc, input_text(args), args.allow_special))
        return
    name = "<stdin>" if args.file in (None, "-") else args.file
    call = partial(in_core, enc._core_bpe.encode_utf8_to_bytes, enc, name, args.allow_special)
    for packed in map_parts(call, input_parts(enc, args.file, verb)):
        ids = id_array()
        ids.frombytes(packed)
        yield ids


def in_core(
    call: Callable[[bytes, bool, bool], _R],
    enc: Encoding,
    name: str,
    allow_special: bool,
    part: Part,
) -> _R:
    """`call` (the core's `encode_utf8_to_bytes` or `count_utf8`) on a part of the file
    `name`, its errors said as the command line says them; a part after the first continues
    the text (SentencePiece's `▁` goes in front of the first alone). Ids come back as the
    bytes of 4-byte ints, for `array('I').frombytes`: no int object per id, and no pass
    reading them into the array."""
    offset, data = part
    try:
        return call(data, allow_special, offset > 0)
    except UnicodeDecodeError as e:
        raise not_utf8(name, data, e, offset) from None
    except ValueError:
        error = special_token_error(enc, data.decode("utf-8"), name)
        if error is None:
            raise
        raise error from None
