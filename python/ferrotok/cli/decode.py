"""`ferrotok decode`: token ids → text, the exact bytes written as they are.

Ids come as arguments, or from a file or standard input as whitespace/comma-separated text, a
JSON list or a `.npy` array. Large inputs are parsed a block at a time into 4-byte ints, never
one Python int per id. Every id is decoded before anything is written: a bad id leaves no
output.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, BinaryIO

from ..progress import Percent
from . import arrays, inputs
from .arrays import id_array, npy_ids
from .common import (
    EXIT_OK,
    CLIError,
    add_encoding_arguments,
    add_file_option,
    load_encoding,
    stdout_write,
)
from .inputs import decode_utf8, read_error, read_input_bytes
from .threads import map_parts

if TYPE_CHECKING:
    import array

    from ..core import Encoding


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds `decode` to the `ferrotok` command's subcommands."""
    p = subparsers.add_parser("decode", help="token ids -> text", description=cmd_decode.__doc__)
    p.add_argument(
        "ids", nargs="*", metavar="ID", help="token ids (default: read from --file or stdin)"
    )
    add_file_option(
        p, "read ids from PATH: whitespace/comma-separated, a JSON list, or a .npy array"
    )
    add_encoding_arguments(p)
    p.set_defaults(func=cmd_decode)


#: An id has at most this many digits (leading zeros included): ids are below 2**32, so
#: this leaves room for zeros, and keeps a 5,000-digit "id" from reaching `int()` (which
#: refuses more than 4,300 digits with a traceback) or an error message.
_MAX_ID_DIGITS = 20


def _shown(item: object) -> str:
    """`item` as an error message quotes it: at most about 40 characters, never megabytes."""
    if isinstance(item, int) and not isinstance(item, bool) and item.bit_length() > 128:
        return f"a number of {item.bit_length()} bits"
    text = repr(item[:40]) + "..." if isinstance(item, str) and len(item) > 40 else repr(item)
    return text if len(text) <= 50 else text[:47] + "..."


def _parse_ids(chunks: list[str], source: str, json_list: bool = True) -> list[int]:
    """Ids from arguments, whitespace/comma-separated text or (if `json_list`) a JSON list.
    The first item that is not an id is the error (found without a list of every item)."""
    import re

    text = " ".join(chunks).strip()
    items: Iterable[object]
    if json_list and text.startswith("["):
        import json

        try:
            values = json.loads(text)
        except RecursionError:
            raise CLIError(f"{source}: not a JSON list of ids (nested too deeply)") from None
        except ValueError as e:  # bad JSON, or an int of more digits than Python converts
            raise CLIError(f"{source}: not a JSON list of ids ({_short(str(e))})") from None
        if not isinstance(values, list):
            raise CLIError(f"{source}: expected a JSON list of ids")
        items = values
    else:
        items = (match.group() for match in re.finditer(r"[^\s,]+", text))
    ids = []
    for item in items:
        if isinstance(item, str) and item.isascii() and item.isdigit():
            if len(item) > _MAX_ID_DIGITS:
                raise CLIError(
                    f"{source}: {_shown(item)} is not a token id ({len(item)} digits; "
                    f"ids have at most {_MAX_ID_DIGITS})"
                )
            ids.append(int(item))
        elif isinstance(item, int) and not isinstance(item, bool) and 0 <= item < 2**64:
            ids.append(item)
        else:
            raise CLIError(f"{source}: {_shown(item)} is not a token id (a non-negative integer)")
    return ids


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ====================
# Reading ids: bounded on malformed input
# ====================

# Ids are read this many bytes at a time, each block checked before the next is read.
_READ_BLOCK = 1 << 20


def _byte_classes() -> bytes:
    """A `bytes.translate` table: each byte of ids text as its class, `d` a digit, `s` a
    separator (ASCII whitespace as `str` has it, and the comma), `b` a bracket, `n` a byte of
    a character that is not ASCII (of which ids text may have only whitespace and a
    byte-order mark), `x` anything else (which ids text never has)."""
    table = bytearray(b"x" * 256)
    for byte in b"0123456789":
        table[byte] = ord("d")
    for byte in b" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f,":
        table[byte] = ord("s")
    for byte in b"[]":
        table[byte] = ord("b")
    for byte in range(0x80, 0x100):
        table[byte] = ord("n")
    return bytes(table)


_CLASSES = _byte_classes()


# A run of this many digits stops the reading (the parser then refuses any id of more than
# `_MAX_ID_DIGITS`): longer than that bound, so that the search for it stays cheap (a needle
# of 21 took 6 ns a byte in text of short digit runs, one of 256 under 1 ns).
_MAX_RUN = 256


class _IdsCheck:
    """Whether blocks of input, in order, can still be ids text: no byte ids never have, no
    run of `_MAX_RUN` digits, at most two brackets (a JSON list's), UTF-8 whose characters
    that are not ASCII are whitespace (a byte-order mark first). A block it turns down holds
    an error the parser will name; reading stops there, so that `/dev/zero` or a huge file of
    anything costs a block of memory, not all of it (it took 1.4 GB for 100 MB, and
    `< /dev/zero` grew until killed)."""

    def __init__(self) -> None:
        import codecs

        self.brackets = 0
        self.tail = b""  # the classes of the last bytes checked, for a run across blocks
        self.decoder = codecs.getincrementaldecoder("utf-8")()
        self.first = True

    def accepts(self, block: bytes, last: bool = False) -> bool:
        import re

        if self.first and block.startswith(b"\xef\xbb\xbf"):
            block = block[3:]  # a byte-order mark (some editors start a file with one)
        self.first = False
        classes = block.translate(_CLASSES)
        if b"x" in classes:
            return False
        if b"b" in classes:
            self.brackets += classes.count(b"b")
            if self.brackets > 2:
                return False
        # ASCII needs no decoding, unless a character began in the block before.
        if not block.isascii() or self.decoder.getstate()[0]:
            try:
                text = self.decoder.decode(block, final=last)
            except UnicodeDecodeError:
                return False
            if re.search(r"[^\s0-9,\[\]]", text):
                return False
        runs = self.tail + classes
        if b"d" * _MAX_RUN in runs:
            return False
        self.tail = runs[-_MAX_RUN:]
        return True


def _read_ids_input(path: str | None) -> tuple[bytes, str, bool]:
    """The bytes of the ids input (`path`; `-` or None: standard input), a name for messages,
    and whether all of it was read: reading stops after the first block `_IdsCheck` turns
    down. A `.npy` file is read whole (its ids are binary). A terminal is read as before (a
    person types it)."""
    if path is None or path == "-":
        stdin = sys.stdin
        buffer = getattr(stdin, "buffer", None) if stdin is not None else None
        if buffer is None or stdin.isatty():
            data, name = read_input_bytes(path)
            return data, name, True
        data, complete = _read_checked(buffer, seekable=False)
        return data, "<stdin>", complete
    try:
        with open(path, "rb") as f:
            regular = stat.S_ISREG(os.fstat(f.fileno()).st_mode)
            data, complete = _read_checked(f, seekable=regular)
            return data, path, complete
    except OSError as e:
        raise read_error(path, e) from None


def _read_checked(f: BinaryIO, seekable: bool) -> tuple[bytes, bool]:
    """`f`'s bytes as `_read_ids_input` reads them, and whether that is all of them. A
    regular file is checked a block at a time and then read again in one piece, up to where
    the check stopped: no second copy of a large file; a stream's blocks are kept as read."""
    first = f.read(_READ_BLOCK)
    if first.startswith(b"\x93NUMPY"):
        return first + f.read(), True
    check = _IdsCheck()
    blocks: list[bytes] = []
    size, block, complete = 0, first, True
    while True:
        last = len(block) < _READ_BLOCK  # a buffered read is short only at the end
        size += len(block)
        if not seekable:
            blocks.append(block)
        if not check.accepts(block, last):
            complete = False
            break
        if last:
            break
        block = f.read(_READ_BLOCK)
    if not seekable:
        return b"".join(blocks), complete
    f.seek(0)
    return f.read(size), complete


# Text of ids is parsed about this many characters at a time, so that a large file never
# becomes one list of all its ids as Python strs and ints.
_ID_TEXT_BLOCK = 8 << 20


def _text_ids(text: str | bytes, source: str, enc: Encoding) -> array.array[int] | list[int]:
    """The ids in whitespace/comma-separated text (parsed a block at a time into 4-byte ints,
    blocks on several threads) or a JSON list; an id past `enc`'s last is an error here,
    before any is decoded. `text` may be ASCII `bytes` (a file as read): then no `str` of the
    whole file is made."""
    import re

    from .._core import parse_id_text, parse_json_ids

    # A byte-order mark (some Windows editors start a UTF-8 file with one) is not an id.
    if isinstance(text, str) and text.startswith("\ufeff"):
        text = text[1:]
    elif isinstance(text, bytes) and text.startswith(b"\xef\xbb\xbf"):
        text = text[3:]
    # The first char that `str.lstrip` keeps (in ASCII, \x1c-\x1f are spaces to `str`).
    first = (
        re.compile(r"\S").search(text)
        if isinstance(text, str)
        else re.compile(rb"[^\s\x1c-\x1f]").search(text)
    )
    start, stop, json_list = 0, len(text), False
    if first and first.group() in ("[", b"["):
        # A JSON list of ids (what `encode --format json` writes) is read in blocks as the
        # text format is, with no list of all its ids as Python ints, each block checked to
        # be JSON (`parse_json_ids`).
        while stop > 0 and text[stop - 1 : stop].isspace():
            stop -= 1
        if text[stop - 1 : stop] not in ("]", b"]"):
            return _parse_ids([text if isinstance(text, str) else text.decode("ascii")], source)
        start, stop, json_list = first.end(), stop - 1, True

    def parse(block: tuple[str, bool]) -> tuple[int, bytes | list[int]]:
        # The usual text (ASCII digits and separators, every id in range) is read in Rust,
        # with the GIL released; anything else, errors included, by `_parse_ids`, which names
        # what is wrong.
        chunk, last = block
        if json_list:
            packed = parse_json_ids(chunk, enc.max_token_value, last)
        else:
            packed = parse_id_text(chunk, enc.max_token_value)
        if packed is not None:
            return len(chunk), packed
        part = _parse_ids([chunk], source, json_list=False)
        error = _bad_id(enc, part, source) if part and max(part) > enc.max_token_value else None
        if error:
            raise error
        if json_list:  # ids all right, but not as JSON has them (commas, zeros, spaces)
            raise CLIError(
                f"{source}: not a JSON list of ids (one comma between two ids, no leading zeros)"
            )
        return len(chunk), part

    ids = id_array()
    progress = Percent("reading", source, len(text), inputs.PROGRESS_MIN_BYTES)
    done = 0
    for size, part in map_parts(parse, _id_text_blocks(text, start, stop, json_list)):
        done += size
        progress.update(done)
        if isinstance(part, bytes):
            ids.frombytes(part)
        else:
            ids.extend(part)
    progress.close()
    return ids


def _id_text_blocks(
    text: str | bytes, start: int, stop: int, after_comma: bool = False
) -> Iterator[tuple[str, bool]]:
    """`text[start:stop]` in blocks of about `_ID_TEXT_BLOCK` chars, each cut before a
    separator (or, if `after_comma`, just after a comma), as `str` (`bytes` must be ASCII),
    each with whether it is the last. An empty range is one empty last block."""
    import re

    cut = r"," if after_comma else r"[\s,]"
    str_separator, bytes_separator = re.compile(cut), re.compile(cut.encode())
    while True:
        at = min(start + _ID_TEXT_BLOCK, stop)
        found = (
            str_separator.search(text, at, stop)
            if isinstance(text, str)
            else bytes_separator.search(text, at, stop)
        )
        end = (found.end() if after_comma else found.start()) if found else stop
        block = text[start:end]
        yield (block if isinstance(block, str) else block.decode("ascii")), end == stop
        if end == stop:
            return
        start = end


def _bad_id(enc: Encoding, ids: Iterable[int], source: str) -> CLIError | None:
    """What is wrong with the first id of `ids` that is negative or past `enc`'s last, if any."""
    for i in ids:
        if i < 0:
            return CLIError(f"{source}: {i} is not a token id (a non-negative integer)")
        if i > enc.max_token_value:
            return CLIError(
                f"token id {i} is out of range for {enc.name} (ids go up to {enc.max_token_value})"
            )
    return None


def _first_unknown(enc: Encoding, ids: Iterable[int]) -> int | None:
    """The first of `ids` that is no token of `enc`, if any (read from the ids, not from
    the `KeyError`, whose text is tiktoken's)."""
    for i in ids:
        try:
            enc.decode_single_token_bytes(int(i))
        except KeyError:
            return int(i)
    return None


def cmd_decode(args: argparse.Namespace) -> int:
    """`ferrotok decode`: token ids → text (the exact bytes, written as they are)."""
    if args.ids and args.file is not None:
        raise CLIError("give either IDS or --file, not both")
    enc = load_encoding(args)
    ids: array.array[int] | list[int] | memoryview
    if args.ids:
        ids = _parse_ids(args.ids, "IDS")
        source = "IDS"
    else:
        data, source, complete = _read_ids_input(args.file)
        if data.startswith(b"\x93NUMPY"):
            ids = npy_ids(data, source)
        elif data.isascii():  # what `encode` writes: parsed from the bytes, no `str` of all
            ids = _text_ids(data, source, enc)
        else:
            ids = _text_ids(decode_utf8(data, source), source, enc)
        del data  # a `.npy` file's ids may still be a view of it
        if not complete:  # the parser names what stopped the reading; this is a safety net
            raise CLIError(f"{source}: not token ids (reading stopped at something ids never have)")
    out: list[bytes] = []
    chunk = ids[:0]
    try:
        # An array's ids are read from its buffer, without an int object each; a part at a
        # time, so that no second copy of all the ids and of all the text is ever made. All
        # parts are decoded before any is written: a bad id leaves no output.
        for i in range(0, len(ids), arrays.IDS_PER_CHUNK):
            chunk = ids[i : i + arrays.IDS_PER_CHUNK]
            out.append(enc.decode_bytes(chunk))
    except KeyError:  # an id in range that is not a token, or one past the range
        token = _first_unknown(enc, chunk)
        if token is None:
            raise CLIError(f"{source}: an id is not in {enc.name}'s vocabulary") from None
        error = _bad_id(enc, [token], source)
        raise error or CLIError(f"token id {token} is not in {enc.name}'s vocabulary") from None
    except OverflowError:  # an id below 0 or past 2**32 - 1
        error = _bad_id(enc, ids, source)
        if error is None:
            raise
        raise error from None
    for part in out:
        stdout_write(part)
    if sys.stdout.isatty() and not (out and out[-1].endswith(b"\n")):
        stdout_write(b"\n")
    return EXIT_OK
