"""`ferrotok decode`: token ids → text, the exact bytes written as they are.

Ids come as arguments, or from a file or standard input as whitespace/comma-separated text, a
JSON list or a `.npy` array. Large inputs are parsed a block at a time into 4-byte ints, never
one Python int per id. Every id is decoded before anything is written: a bad id leaves no
output.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from ..progress import Percent
from . import arrays, inputs
from .arrays import id_array, npy_ids
from .common import EXIT_OK, CLIError, add_encoding_arguments, load_encoding, stdout_write
from .inputs import decode_utf8, read_input_bytes
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
    p.add_argument(
        "-f",
        "--file",
        metavar="PATH",
        help="read ids from PATH: whitespace/comma-separated, a JSON list, or a .npy array",
    )
    add_encoding_arguments(p)
    p.set_defaults(func=cmd_decode)


def _parse_ids(chunks: list[str], source: str, json_list: bool = True) -> list[int]:
    """Ids from arguments, whitespace/comma-separated text or (if `json_list`) a JSON list."""
    import re

    text = " ".join(chunks).strip()
    if json_list and text.startswith("["):
        import json

        try:
            values = json.loads(text)
        except ValueError as e:
            raise CLIError(f"{source}: not a JSON list of ids ({e})") from None
        if not isinstance(values, list):
            raise CLIError(f"{source}: expected a JSON list of ids")
        items: list[object] = values
    else:
        items = [item for item in re.split(r"[\s,]+", text) if item]
    ids = []
    for item in items:
        if isinstance(item, str) and item.isascii() and item.isdigit():
            ids.append(int(item))
        elif isinstance(item, int) and not isinstance(item, bool) and item >= 0:
            ids.append(item)
        else:
            raise CLIError(f"{source}: {item!r} is not a token id (a non-negative integer)")
    return ids


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
        data, source = read_input_bytes(args.file)
        if data.startswith(b"\x93NUMPY"):
            ids = npy_ids(data, source)
        elif data.isascii():  # what `encode` writes: parsed from the bytes, no `str` of all
            ids = _text_ids(data, source, enc)
        else:
            ids = _text_ids(decode_utf8(data, source), source, enc)
        del data  # a `.npy` file's ids may still be a view of it
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
