"""The `ferrotok` command: encode, decode, count and show tokens from a shell.

    $ ferrotok encode "hello world"
    15339 1917
    $ ferrotok encode --format json "hello world" | ferrotok decode
    hello world
    $ ferrotok count README.md LICENSE
      412 README.md
      229 LICENSE
      641 total
    $ ferrotok show --no-color "hello world"
    hello| world

Every subcommand takes `--encoding NAME` (default `cl100k_base`) or `--model NAME`. Text comes
from the argument, `--file PATH` or standard input, and is read as UTF-8 exactly as it is (a
trailing newline is text too). A user mistake (unknown encoding, unreadable or non-UTF-8 file,
bad ids, special-token text without `--allow-special`, encoding files missing offline) is a
message on stderr and exit status 2, never a traceback.

Adding a subcommand (e.g. `train`): write `register_NAME(subparsers)` that calls
`subparsers.add_parser(...)` and `parser.set_defaults(func=run)` where `run(args) -> int`
returns the exit status (raise `CLIError` for a user mistake), then call it from the marked
spot in `build_parser`.
"""

from __future__ import annotations

import argparse
import array
import os
import sys
from collections.abc import Iterable, Iterator
from functools import partial
from typing import TYPE_CHECKING, Any, Callable, Literal, TypeVar

if TYPE_CHECKING:
    from ..core import Encoding

__all__ = ["CLIError", "build_parser", "main", "add_encoding_arguments", "load_encoding"]

DEFAULT_ENCODING = "cl100k_base"
EXIT_OK = 0
EXIT_USER_ERROR = 2


class CLIError(Exception):
    """A user mistake: `main` prints `ferrotok: error: <message>` and exits with status 2."""


# ====================
# Shared helpers
# ====================


def add_encoding_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds `--encoding` / `--model` (one of them) to a subcommand's parser."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "-e",
        "--encoding",
        metavar="NAME",
        help=f"encoding name (default: {DEFAULT_ENCODING}); see `ferrotok encodings`",
    )
    group.add_argument(
        "-m", "--model", metavar="MODEL", help="use the encoding of this model, e.g. gpt-4o"
    )


def load_encoding(args: argparse.Namespace) -> Encoding:
    """The encoding chosen by `--encoding` / `--model`; `CLIError` if it cannot be had."""
    from .. import registry
    from ..load import DownloadError
    from ..model import encoding_name_for_model

    name = getattr(args, "encoding", None)
    model = getattr(args, "model", None)
    if model is not None:
        try:
            name = encoding_name_for_model(model)
        except KeyError:
            raise CLIError(
                f"unknown model {model!r}; pass --encoding with one of: "
                + ", ".join(registry.list_encoding_names())
            ) from None
    if name is None:
        name = DEFAULT_ENCODING
    if name not in registry.list_encoding_names():  # "" included (an unset `$ENC`, say)
        raise CLIError(
            f"unknown encoding {name!r}; known encodings: "
            + ", ".join(registry.list_encoding_names())
        )
    try:
        return registry.get_encoding(name)
    except DownloadError as e:
        # The message says what was tried and how to work offline (FERROTOK_DATA_DIR).
        raise CLIError(f"could not load encoding {name!r}: {e}") from None
    except (OSError, ValueError) as e:
        # A corrupt file in FERROTOK_DATA_DIR (the message names it), an unreadable cache, ...
        raise CLIError(f"could not load encoding {name!r}: {e}") from None


def _read_input_bytes(path: str | None) -> tuple[bytes, str]:
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
        raise _read_error(path, e) from None


def _read_error(path: str, e: OSError) -> CLIError:
    """A file that cannot be read, said in one line."""
    if isinstance(e, FileNotFoundError):
        return CLIError(f"{path}: no such file")
    if isinstance(e, IsADirectoryError):
        return CLIError(f"{path}: is a directory")
    return CLIError(f"{path}: cannot read ({e.strerror or e})")


def _decode_utf8(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _not_utf8(name, data, e) from None


def _not_utf8(name: str, data: bytes, e: UnicodeDecodeError, offset: int = 0) -> CLIError:
    """`data` (which starts at byte `offset` of `name`) failed to decode as `e` says."""
    return CLIError(
        f"{name}: not UTF-8 text (byte 0x{data[e.start]:02x} at offset {offset + e.start})"
    )


def _input_text(args: argparse.Namespace) -> str:
    """The text of the `TEXT` argument, `--file` or standard input."""
    if args.text is not None and args.file is not None:
        raise CLIError("give either TEXT or --file, not both")
    if args.text is not None:
        try:
            args.text.encode("utf-8")
        except UnicodeEncodeError:
            # Undecodable bytes in argv arrive as lone surrogates (PEP 383).
            raise CLIError("the TEXT argument is not valid UTF-8; use --file") from None
        text: str = args.text
        return text
    data, name = _read_input_bytes(args.file)
    return _decode_utf8(data, name)


def _encode(enc: Encoding, text: str, allow_special: bool) -> list[int]:
    return _with_special_check(enc, enc.encode, text, allow_special)


_R = TypeVar("_R")
_P = TypeVar("_P")


def _with_special_check(
    enc: Encoding, call: Callable[..., _R], text: str, allow_special: bool
) -> _R:
    """`call(text)` with every special token allowed, or none, naming the first one found."""
    if allow_special:
        return call(text, allowed_special="all")
    try:
        return call(text)
    except ValueError:
        error = _special_token_error(enc, text)
        if error is None:
            raise
        raise error from None


def _special_token_error(enc: Encoding, text: str, name: str = "") -> CLIError | None:
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


def _stdout_write(data: bytes | memoryview | str) -> None:
    """Writes to standard output; bytes go through untouched (no locale encoding)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:
        sys.stdout.write(bytes(data).decode("utf-8", errors="replace"))
        return
    sys.stdout.flush()
    buffer.write(data)
    buffer.flush()


# ====================
# Reading a file in parts
# ====================


# A file is encoded or counted a block at a time (so that memory stays bounded, progress can
# be shown and Ctrl-C stops it within a block), cut where every OpenAI pattern ends a piece
# whatever follows: after a "\n" that follows a non-space character, before any character
# but a space or "/". No alternative of the r50k, cl100k or o200k pattern that can hold such
# a "\n" goes on past it into such a character (the letter runs cannot start with "\n" nor
# take it as their one leading symbol, the punctuation runs take only newlines and "/" after
# them, the whitespace run is the "\n" alone), none starts at the "\n" and goes on past it
# (the punctuation runs may start with a space only), and that "\n" is one piece whether the
# text goes on or ends there, so the parts' ids joined are the whole's ids. So a line may
# start with a letter, a digit, "{", "<", "#", a mark...: JSON Lines and markup are cut too.
# (A "\r\n" is not a cut: r50k splits it when a letter follows and not at the end.) Python's
# isspace() holds for every char the patterns' \s matches, so a cut found here is one in the
# patterns' own terms. The parts stay bytes: only
# the chars either side of a "\n" are decoded here, to be tested; the core checks that the
# rest is UTF-8 as it encodes it, on the threads of `_map_parts` (for 390 MB of English, a
# profile of this thread had 0.75 s in decoding and 1.35 s in joining and cutting `str`s).
_BLOCK = 8 << 20
_PROGRESS_MIN_BYTES = 64 << 20
# `count` hands small files to its threads in batches of at least this many bytes.
_COUNT_BATCH = 1 << 20


class _Progress:
    """`{verb} {name}: N%` on stderr as `update(done)` moves through `total`, shown only on a
    terminal and for work of at least `least` (of the same unit as `total`)."""

    line_open = False  # a progress line awaits its newline: `main` ends it before a message

    def __init__(self, verb: str, name: str, total: int | None, least: int) -> None:
        self.label = f"{verb} {name}"
        self.total = total or 0
        self.show = total is not None and total >= least and sys.stderr.isatty()
        self.shown = -1

    def update(self, done: int) -> None:
        if self.show and self.total:
            percent = min(100, done * 100 // self.total)
            if percent != self.shown:
                print(f"\r{self.label}: {percent}%", end="", file=sys.stderr, flush=True)
                self.shown = percent
                _Progress.line_open = True

    def close(self) -> None:
        _end_progress_line()


def _end_progress_line() -> None:
    if _Progress.line_open:
        print(file=sys.stderr)
        _Progress.line_open = False


def _last_cut(data: bytes | bytearray, start: int = 0) -> int:
    """The last place in `data[start:]` (UTF-8) where it may be cut (see above), or 0.
    (Only the bytes added since the last search are searched, so that text with no cut in it
    costs one pass, not one per block.) The chars either side of a "\n" are decoded to be
    tested as `str` tests them; one that is not whole UTF-8 here is no cut."""
    i = data.rfind(b"\n", max(start, 1), len(data) - 1)
    while i > 0:
        after, before = _char_at(data, i + 1), _char_before(data, i)
        if after and not after.isspace() and after != "/" and before and not before.isspace():
            return i + 1
        i = data.rfind(b"\n", max(start, 1), i)
    return 0


def _char_at(data: bytes | bytearray, i: int) -> str:
    """The char whose UTF-8 starts at `data[i]`, or "" if there is none whole."""
    lead = data[i]
    width = 1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
    try:
        return bytes(data[i : i + width]).decode("utf-8")
    except UnicodeDecodeError:
        return ""


def _char_before(data: bytes | bytearray, i: int) -> str:
    """The char whose UTF-8 ends just before `data[i]`, or "" if there is none whole."""
    j = i - 1
    while j > max(i - 4, 0) and 0x80 <= data[j] < 0xC0:  # continuation bytes
        j -= 1
    try:
        return bytes(data[j:i]).decode("utf-8")
    except UnicodeDecodeError:
        return ""


def _can_cut(enc: Encoding) -> bool:
    from ..openai_public import CL100K_PATTERN, O200K_PATTERN, R50K_PATTERN

    patterns = (R50K_PATTERN, CL100K_PATTERN, O200K_PATTERN)
    return enc._pat_str in patterns and not any("\n" in t for t in enc.special_tokens_set)


# A part of a file: where it starts (a byte offset) and its bytes, which the core checks
# are UTF-8 as it encodes them.
_Part = tuple[int, bytes]


def _input_parts(enc: Encoding, path: str | None, verb: str) -> Iterator[_Part]:
    """The file at `path` (`-` or None: standard input), in parts cut as above."""
    if path is None or path == "-":
        stdin = sys.stdin
        if stdin is None or getattr(stdin, "buffer", None) is None or stdin.isatty():
            data, _ = _read_input_bytes(path)  # the prompt and the closed cases
            yield 0, data
            return
        yield from _file_parts(enc, stdin.buffer, None, verb)
        return
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            yield from _file_parts(enc, f, size, verb, path)
    except OSError as e:
        raise _read_error(path, e) from None


def _file_parts(
    enc: Encoding, f: Any, size: int | None, verb: str, name: str = "<stdin>"
) -> Iterator[_Part]:
    """The bytes read from `f`, in parts whose ids joined are the whole text's ids: cut as
    above, about `_BLOCK` bytes each, or the whole file at once if `enc` is not one of the
    patterns the rule holds for. With a terminal, shows `{verb} {name}: N%` for big files.
    The bytes are not decoded here: the core checks them as it encodes (`_in_core`)."""
    if not _can_cut(enc):
        yield 0, f.read()
        return
    progress = _Progress(verb, name, size, _PROGRESS_MIN_BYTES)
    done, offset, pending = 0, 0, bytearray()
    while True:
        block = f.read(_BLOCK)
        searched = max(len(pending) - 1, 0)  # a "\n" there has not had its next char
        pending += block
        done += len(block)
        # A short block is the end of the file (a buffered read returns less only there):
        # read on to be sure rather than cut, so that a small file is one part.
        if len(block) == _BLOCK:
            cut = _last_cut(pending, searched)
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


def _part_threads() -> int:
    """Threads for `_map_parts`: the CPUs this process may run on, at most 8 (each part in
    work holds its text and ids, ~24 MB)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, 8))


def _map_parts(call: Callable[[_P], _R], parts: Iterable[_P]) -> Iterator[_R]:
    """`map(call, parts)`, with parts in work on several threads at once (the core encodes,
    parses and formats with the GIL released, so they use every core), a few parts ahead of
    the results, which come in order. Errors come in the order of a plain loop too: an error
    reading a part is raised only after the parts before it have been done and their errors
    raised.
    Input of one part (most files) runs on this thread: threads for it would cost more than
    they give (3,000 files of 2 KB took 1.6 s against 0.4)."""
    source = iter(parts)
    first = next(source, None)
    if first is None:
        return
    threads = _part_threads()
    try:
        second = next(source) if threads > 1 else None
    except StopIteration:
        second = None
    except Exception:
        call(first)
        raise
    if second is None:
        yield call(first)
        yield from map(call, source)
        return
    from collections import deque
    from concurrent.futures import Future, ThreadPoolExecutor
    from itertools import chain

    source = chain([first, second], source)
    del first, second
    pool = ThreadPoolExecutor(threads, thread_name_prefix="ferrotok-part")
    pending: deque[Future[_R]] = deque()
    try:
        while True:
            try:
                part = next(source)
            except StopIteration:
                break
            except Exception:
                for earlier in pending:
                    earlier.result()
                raise
            pending.append(pool.submit(call, part))
            del part  # the worker holds it only while it works
            if len(pending) > threads:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        # On an error or Ctrl-C: parts not started are dropped, the ones in work (at most
        # `threads`, ~0.1 s each) finish first.
        pool.shutdown(wait=True, cancel_futures=True)


# ====================
# encode
# ====================


def _npy_header(count: int) -> bytes:
    """The header of a `.npy` (format 1.0) file of `count` little-endian uint32 values."""
    header = f"{{'descr': '<u4', 'fortran_order': False, 'shape': ({count},), }}"
    # Magic (6) + version (2) + header length (2) + header + "\n", padded to 64 bytes.
    pad = -(10 + len(header) + 1) % 64
    header_bytes = (header + " " * pad + "\n").encode("latin-1")
    return b"\x93NUMPY\x01\x00" + len(header_bytes).to_bytes(2, "little") + header_bytes


def _id_array(ids: Iterable[int] = ()) -> array.array[int]:
    """`ids` as 4-byte unsigned ints: a tenth of the memory of a list of ints."""
    values = array.array("I", ids)  # C unsigned int: 4 bytes on every platform Python runs on
    if values.itemsize != 4:
        raise RuntimeError("array('I') is not 4 bytes wide here")
    return values


# Ids are written this many at a time, so that the text of all of them is never held at once;
# writing more than _PROGRESS_MIN_IDS of them as text (~1.5 s) shows its progress.
_IDS_PER_CHUNK = 1 << 20
_PROGRESS_MIN_IDS = 16 << 20


def _output_chunks(
    ids: array.array[int], fmt: str, name: str = "<stdout>"
) -> Iterator[bytes | memoryview]:
    """`ids` written as `fmt` (`list`, `json` or `npy`), a piece at a time. Writing many ids
    as text shows its progress (`writing NAME: N%`) on a terminal."""
    if fmt == "npy":
        yield _npy_header(len(ids))
        if sys.byteorder == "big":
            ids = array.array("I", ids)
            ids.byteswap()
        yield memoryview(ids).cast("B")
        return
    from .._core import format_ids

    sep = ", " if fmt == "json" else " "
    yield b"[" if fmt == "json" else b""
    progress = _Progress("writing", name, len(ids), _PROGRESS_MIN_IDS)
    starts = range(0, len(ids), _IDS_PER_CHUNK)
    # sep.join(map(str, ...)), written in Rust (with the GIL released, so pieces are made on
    # several threads): 1M random ids below 200,000 took 10.8 ms, against 154 ms with str()
    # on each and 37 ms through a table of each id's text.
    pieces = (ids[start : start + _IDS_PER_CHUNK] for start in starts)
    for start, text in zip(starts, _map_parts(lambda piece: format_ids(piece, sep), pieces)):
        if start:
            yield sep.encode()
        yield text
        progress.update(start + _IDS_PER_CHUNK)
    progress.close()
    yield b"]\n" if fmt == "json" else b"\n"


def _encode_input(enc: Encoding, args: argparse.Namespace) -> array.array[int]:
    """The ids of the `TEXT` argument, `--file` or standard input; a file is read and encoded
    in parts (see "Reading a file in parts")."""
    ids = _id_array()
    for part in _encoded_parts(enc, args, "encoding"):
        ids.extend(part)
    return ids


def _encoded_parts(
    enc: Encoding, args: argparse.Namespace, verb: str
) -> Iterator[array.array[int]]:
    """The ids of the `TEXT` argument, `--file` or standard input, a part at a time, in order
    (a file is read and encoded in parts on several threads, see "Reading a file in parts")."""
    if args.text is not None:
        yield _id_array(_encode(enc, _input_text(args), args.allow_special))
        return
    name = "<stdin>" if args.file in (None, "-") else args.file
    call = partial(_in_core, enc._core_bpe.encode_utf8_to_bytes, enc, name, args.allow_special)
    for packed in _map_parts(call, _input_parts(enc, args.file, verb)):
        ids = _id_array()
        ids.frombytes(packed)
        yield ids


def _in_core(
    call: Callable[[bytes, bool], _R], enc: Encoding, name: str, allow_special: bool, part: _Part
) -> _R:
    """`call` (the core's `encode_utf8_to_bytes` or `count_utf8`) on a part of the file
    `name`, its errors said as the command line says them. Ids come back as the bytes of
    4-byte ints, for `array('I').frombytes`: a list's int objects, and reading them back into
    the array, cost 1.27 s of the 8.5 s that 390 MB of English took (o200k, a profile)."""
    offset, data = part
    try:
        return call(data, allow_special)
    except UnicodeDecodeError as e:
        raise _not_utf8(name, data, e, offset) from None
    except ValueError:
        error = _special_token_error(enc, data.decode("utf-8"), name)
        if error is None:
            raise
        raise error from None


def cmd_encode(args: argparse.Namespace) -> int:
    """`ferrotok encode`: text → token ids."""
    if args.text is not None and args.file is not None:
        raise CLIError("give either TEXT or --file, not both")
    enc = load_encoding(args)
    # Every id is made before anything is written: an error in the input (a bad byte, a
    # special token) leaves no partial output behind.
    ids = _encode_input(enc, args)
    if args.output is not None and args.output != "-":
        from ..load import _atomic_write

        try:
            _atomic_write(args.output, _output_chunks(ids, args.format, args.output))
        except OSError as e:
            raise CLIError(f"{args.output}: cannot write ({e.strerror or e})") from None
        return EXIT_OK
    if args.format == "npy" and sys.stdout.isatty():
        raise CLIError("refusing to write binary .npy data to a terminal; use -o PATH or redirect")
    for chunk in _output_chunks(ids, args.format):
        _stdout_write(chunk)
    return EXIT_OK


# ====================
# decode
# ====================


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


def _npy_ids(data: bytes, name: str) -> array.array[int] | memoryview:
    """The ids in a 1-D integer `.npy` file (what `encode --format npy` writes), without numpy,
    as items of their own width (not a list: 95M ids would take 3.8 GB as Python ints): a view
    of `data` itself when they are in this machine's byte order, else a byte-swapped copy.
    Negative values are found when they fail to decode (see `cmd_decode`).

    >>> data = b"".join(_output_chunks(_id_array([15339, 1917]), "npy"))
    >>> _npy_ids(data, "ids.npy").tolist()
    [15339, 1917]
    """
    import ast

    codes: dict[str, Literal["B", "H", "h", "I", "i", "Q", "q"]] = {
        "u1": "B", "u2": "H", "i2": "h", "u4": "I", "i4": "i", "u8": "Q", "i8": "q"
    }  # fmt: skip
    try:
        # Format 1.0 has a 2-byte header length; 2.0 and 3.0 a 4-byte one.
        size = 2 if data[6:7] == b"\x01" else 4
        header_len = int.from_bytes(data[8 : 8 + size], "little")
        start = 8 + size + header_len
        header = ast.literal_eval(data[8 + size : start].decode("utf-8"))
        descr, shape = header["descr"], header["shape"]
        if not isinstance(descr, str) or descr[1:] not in codes or descr[0] not in "<>|=":
            raise ValueError(f"unsupported dtype {descr!r}")
        if len(shape) != 1:
            raise ValueError(f"shape {shape} is not 1-D")
        code, width = codes[descr[1:]], int(descr[2:])
        if array.array(code).itemsize != width:
            raise ValueError(f"no {descr} support on this platform")
        if (len(data) - start) % width:
            raise ValueError(f"{len(data) - start} bytes of data, not a whole number of {descr}")
        values: array.array[int] | memoryview = memoryview(data)[start:].cast(code)
        if (descr[0] == ">" and sys.byteorder == "little") or (
            descr[0] == "<" and sys.byteorder == "big"
        ):
            values = array.array(code, values)
            values.byteswap()
        if len(values) != shape[0]:
            raise ValueError(f"{len(values)} values, the header says {shape[0]}")
    except (ValueError, SyntaxError, KeyError, TypeError, IndexError) as e:
        raise CLIError(f"{name}: not a 1-D integer .npy array of ids ({e})") from None
    return values


# Text of ids is parsed about this many characters at a time, so that a large file never
# becomes one list of all its ids as Python strs and ints.
_ID_TEXT_BLOCK = 8 << 20


def _text_ids(text: str | bytes, source: str, enc: Encoding) -> array.array[int] | list[int]:
    """The ids in whitespace/comma-separated text (parsed a block at a time into 4-byte ints,
    blocks on several threads) or a JSON list; an id past `enc`'s last is an error here,
    before any is decoded. `text` may be ASCII `bytes` (a file as read): then no `str` of the
    whole file is made (450 MB of ids as text took 1.35 GB with one, see `cmd_decode`)."""
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
        # text format is, with no list of all its ids as Python ints (95M ids took 3.8 GB
        # that way), each block checked to be JSON (`parse_json_ids`).
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

    ids = _id_array()
    progress = _Progress("reading", source, len(text), _PROGRESS_MIN_BYTES)
    done = 0
    for size, part in _map_parts(parse, _id_text_blocks(text, start, stop, json_list)):
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
        data, source = _read_input_bytes(args.file)
        if data.startswith(b"\x93NUMPY"):
            ids = _npy_ids(data, source)
        elif data.isascii():  # what `encode` writes: parsed from the bytes, no `str` of all
            ids = _text_ids(data, source, enc)
        else:
            ids = _text_ids(_decode_utf8(data, source), source, enc)
        del data  # a `.npy` file's ids may still be a view of it
    out: list[bytes] = []
    chunk = ids[:0]
    try:
        # An array's ids are read from its buffer, without an int object each; a part at a
        # time, so that no second copy of all the ids and of all the text is ever made. All
        # parts are decoded before any is written: a bad id leaves no output.
        for i in range(0, len(ids), _IDS_PER_CHUNK):
            chunk = ids[i : i + _IDS_PER_CHUNK]
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
        _stdout_write(part)
    if sys.stdout.isatty() and not (out and out[-1].endswith(b"\n")):
        _stdout_write(b"\n")
    return EXIT_OK


# ====================
# count
# ====================


def cmd_count(args: argparse.Namespace) -> int:
    """`ferrotok count`: tokens per file, like `wc`; a `total` line for several files."""
    enc = load_encoding(args)
    paths: list[str | None] = list(args.files) or [None]
    names = ["<stdin>" if path in (None, "-") else path for path in paths]
    failed: set[int] = set()

    # The parts of every file go through one `_map_parts`, so that files smaller than a part
    # are counted on all cores too (50 files of 4 MB took 2.4 s one file at a time, against
    # 1.5 s for the same 200 MB as one file), in batches of at least `_COUNT_BATCH` bytes, so
    # that small files do not pay a thread's hand-off each. A file's error comes back as its
    # result.
    # (The items' type is written out: an alias made at run time would need 3.10's `|`.)
    def batches() -> Iterator[list[tuple[int, _Part | CLIError]]]:
        batch: list[tuple[int, _Part | CLIError]] = []
        size = 0
        for i, path in enumerate(paths):
            try:
                for part in _input_parts(enc, path, "counting"):
                    batch.append((i, part))
                    size += len(part[1])
                    if size >= _COUNT_BATCH:
                        yield batch
                        batch, size = [], 0
                    if i in failed:  # its first error is in: read no further
                        break
            except CLIError as e:
                batch.append((i, e))
        if batch:
            yield batch

    # `count`, not `len(encode(...))`: no ids at all (390 MB of English as a list of ids: 95M
    # of them and a peak of 3.4 GB of memory).
    call = enc._core_bpe.count_utf8

    def count(item: tuple[int, _Part | CLIError]) -> tuple[int, int | CLIError]:
        i, part = item
        if isinstance(part, CLIError) or i in failed:
            return i, part if isinstance(part, CLIError) else 0
        try:
            return i, _in_core(call, enc, names[i], args.allow_special, part)
        except CLIError as e:
            return i, e

    counts = [0] * len(paths)
    for results in _map_parts(lambda batch: [count(item) for item in batch], batches()):
        for i, n in results:
            if i in failed:
                continue
            if isinstance(n, CLIError):
                # Like wc: report this file, count the others, fail at the end.
                failed.add(i)
                _end_progress_line()
                print(f"ferrotok: error: {n}", file=sys.stderr)
            else:
                counts[i] += n
    rows: list[tuple[int, str | None]] = [
        (counts[i], None if path in (None, "-") and len(paths) == 1 else (path or "-"))
        for i, path in enumerate(paths)
        if i not in failed
    ]
    if len(paths) > 1:
        rows.append((sum(n for n, _ in rows), "total"))
    width = max((len(str(n)) for n, _ in rows), default=1)
    out = "".join(f"{n:>{width}} {name}\n" if name is not None else f"{n}\n" for n, name in rows)
    _stdout_write(out)
    return EXIT_USER_ERROR if failed else EXIT_OK


# ====================
# show
# ====================

# Pastel backgrounds (xterm 256 colours) with black text: readable on light and dark themes.
_BACKGROUNDS = (153, 223, 194, 225, 230)
_RESET = "\x1b[0m"


def _token_text(token: bytes, plain: bool, newline: str = "\\n") -> str:
    """A token's text for display, one escape per character that would not show.

    Control characters (a terminal would obey escape codes) become `\\xNN`, `\\t`, `\\r`;
    a newline becomes `newline`; bytes that are not whole UTF-8 characters on their own
    (a character split between tokens) become `\\xNN`. In plain mode, `\\` and `|` are
    escaped too, so the separator is unambiguous.

    >>> _token_text(b"a|b\\t\\xe4", plain=True)
    'a\\\\|b\\\\t\\\\xe4'
    """
    out = []
    for c in token.decode("utf-8", errors="surrogateescape"):
        o = ord(c)
        if c == "\n":
            out.append(newline)
        elif 0xDC80 <= o <= 0xDCFF:  # an undecodable byte, from surrogateescape
            out.append(f"\\x{o - 0xDC00:02x}")
        elif plain and c in "\\|":
            out.append("\\" + c)
        elif c == "\t":
            out.append("\\t" if plain else c)
        elif c == "\r":
            out.append("\\r")
        elif o < 0x20 or 0x7F <= o < 0xA0:
            out.append(f"\\x{o:02x}")
        else:
            out.append(c)
    return "".join(out)


def _want_color(choice: str) -> bool:
    if choice == "always":
        return True
    if choice == "never":
        return False
    return (
        sys.stdout.isatty()
        and "NO_COLOR" not in os.environ
        and os.environ.get("TERM", "") != "dumb"
    )


def render_tokens(tokens: list[bytes], color: bool, first: int = 0, end: bool = True) -> str:
    """The text with visible token boundaries; `first` is the number of tokens shown before
    these (a file is shown a part at a time), and `end` ends the output with a newline.

    Plain: tokens separated by `|`, with `\\`, `|` and control characters escaped so the
    output is unambiguous. Colour: each token on an alternating background. In both, a
    newline shows as `\\n` and then breaks the line.

    >>> render_tokens([b"hello", b" world", b"!\\n", b"a|b"], color=False)
    'hello| world|!\\\\n\\n|a\\\\|b\\n'
    """
    parts = []
    for i, token in enumerate(tokens, start=first):
        if color:
            start = f"\x1b[48;5;{_BACKGROUNDS[i % len(_BACKGROUNDS)]}m\x1b[38;5;16m"
            # End the colour before each line break, so it does not fill the line's rest.
            shown = _token_text(token, plain=False, newline="\\n" + _RESET + "\n" + start)
            parts.append(start + shown + _RESET)
        else:
            if i:
                parts.append("|")
            parts.append(_token_text(token, plain=True, newline="\\n\n"))
    out = "".join(parts)
    return out if out.endswith("\n") or not end else out + "\n"


def cmd_show(args: argparse.Namespace) -> int:
    """`ferrotok show`: the text with token boundaries visible (colours, or `|` + ids).

    A file is shown as it is read, part by part, so an error in a later part (a byte that is
    not UTF-8, a special token's text) is reported after the earlier parts are shown; the
    exit status is then non-zero. (`ferrotok encode` writes nothing until every id is made.)"""
    if args.text is not None and args.file is not None:
        raise CLIError("give either TEXT or --file, not both")
    enc = load_encoding(args)
    color = _want_color(args.color)
    # A file is shown as it is read, a part at a time: memory stays bounded and Ctrl-C stops
    # it (a 200 MB file shown whole took gigabytes, as bytes objects of all its tokens).
    shown, out = 0, ""
    width = len(str(enc.max_token_value))  # the same for every part
    for ids in _encoded_parts(enc, args, "showing"):
        tokens = enc.decode_tokens_bytes(ids)
        if args.ids:
            lines = (f"{i:>{width}}  {_token_text(t, plain=True)}\n" for i, t in zip(ids, tokens))
            out = "".join(lines)
        else:
            out = render_tokens(tokens, color=color, first=shown, end=False)
        shown += len(tokens)
        _stdout_write(out)
    if not args.ids and not out.endswith("\n"):
        _stdout_write("\n")
    return EXIT_OK


# ====================
# encodings
# ====================


def cmd_encodings(args: argparse.Namespace) -> int:
    """`ferrotok encodings`: the encoding names `--encoding` accepts."""
    from ..registry import list_encoding_names

    _stdout_write("".join(name + "\n" for name in list_encoding_names()))
    return EXIT_OK


# ====================
# The parser
# ====================


def _add_text_input(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("text", nargs="?", metavar="TEXT", help="the text (default: stdin)")
    parser.add_argument("-f", "--file", metavar="PATH", help="read the text from PATH (UTF-8)")


def _add_allow_special(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--allow-special",
        action="store_true",
        help="encode special-token text (e.g. <|endoftext|>) as the special token "
        "(without it, such text is an error)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The `ferrotok` argument parser; each subcommand sets `func(args) -> int`."""
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="ferrotok",
        description="Byte-level BPE tokenizer with tiktoken's encodings.",
        epilog="Encoding files are read from FERROTOK_DATA_DIR, then tiktoken's cache "
        "(TIKTOKEN_CACHE_DIR), else downloaded.",
    )
    parser.add_argument("--version", action="version", version=f"ferrotok {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = subparsers.add_parser("encode", help="text -> token ids", description=cmd_encode.__doc__)
    _add_text_input(p)
    add_encoding_arguments(p)
    _add_allow_special(p)
    p.add_argument(
        "--format",
        choices=("list", "json", "npy"),
        default="list",
        help="list: space-separated ids; json: a JSON list; npy: a .npy uint32 array",
    )
    p.add_argument("-o", "--output", metavar="PATH", help="write to PATH instead of stdout")
    p.set_defaults(func=cmd_encode)

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

    p = subparsers.add_parser(
        "count", help="tokens per file, like wc", description=cmd_count.__doc__
    )
    p.add_argument("files", nargs="*", metavar="FILE", help="files to count (default: stdin)")
    add_encoding_arguments(p)
    _add_allow_special(p)
    p.set_defaults(func=cmd_count)

    p = subparsers.add_parser(
        "show", help="the text with token boundaries visible", description=cmd_show.__doc__
    )
    _add_text_input(p)
    add_encoding_arguments(p)
    _add_allow_special(p)
    p.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour each token (auto: when stdout is a terminal and NO_COLOR is unset)",
    )
    p.add_argument(
        "--no-color",
        dest="color",
        action="store_const",
        const="never",
        help="same as --color never",
    )
    p.add_argument("--ids", action="store_true", help="one token per line: its id and its text")
    p.set_defaults(func=cmd_show)

    p = subparsers.add_parser("encodings", help="list the encoding names")
    p.set_defaults(func=cmd_encodings)

    # ---- More subcommands plug in here, one line each (keep this block last). ----
    # A register function adds its parser and `set_defaults(func=...)`; see the module doc.
    from .train import register_train

    register_train(subparsers)

    return parser


def main(argv: list[str] | None = None) -> int:
    """Runs the command line `argv` (default: `sys.argv[1:]`); returns the exit status.

    >>> main(["encode", "hello world"])
    15339 1917
    0
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, --version, or a usage error (argparse says why)
        return e.code if isinstance(e.code, int) else (0 if e.code is None else EXIT_USER_ERROR)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        status = func(args)
        sys.stdout.flush()  # a full disk shows here, not as a traceback at exit
        return status
    except CLIError as e:
        _end_progress_line()
        print(f"ferrotok: error: {e}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        _end_progress_line()
        print("ferrotok: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): stop quietly, and keep Python from
        # complaining again when it flushes stdout at exit.
        _stdout_to_devnull()
        return 1
    except OSError as e:
        # Most often writing failed (a full disk, `> /dev/full`); the files the command reads
        # give CLIErrors that name them. Either way: a message, not a traceback.
        _end_progress_line()
        what = e.filename if e.filename is not None else "writing the output"
        print(f"ferrotok: error: {what}: {e.strerror or e}", file=sys.stderr)
        _stdout_to_devnull()
        return EXIT_USER_ERROR


def _stdout_to_devnull() -> None:
    """Points stdout at the null device, so that Python's flush at exit cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
