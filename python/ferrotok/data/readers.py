"""Documents from files: plain text, JSON Lines and Parquet, optionally ``.gz`` / ``.zst``.

What this module promises:

* Every document comes out as a ``str``, in input order: files in the order given (a glob or
  a directory expands to its files sorted by name), and within a file in file order.
* A record that cannot be a document — a JSONL line that is not a JSON object, a missing
  field, a ``null`` or non-string value, bytes that are not UTF-8 — raises :class:`BadInput`
  naming the file and the line (or Parquet row). With ``skip_bad=True`` it is skipped instead
  and counted in :attr:`Skipped`, by reason, with the first few places kept: never dropped
  silently. Blank JSONL lines are not records (JSON Lines allows them) and are not counted.
* Memory is bounded by the batch size (plus one document), never by the file: files are read
  in blocks, Parquet in record batches. The one exception is ``text_mode="file"``, where a
  whole file is one document and so is held at once.
* A :class:`Position` ``(file, record)`` names where a batch ends, so a job can start again
  after it (``start=``) and get exactly the documents that follow.

JSONL is parsed with pyarrow's JSON reader (C++, outside the GIL) when pyarrow is there; any
block it refuses or that holds a null is parsed again line by line with :mod:`json`, which
finds the bad line and gives the same strings for the good ones (a lone surrogate escape,
which pyarrow refuses, becomes U+FFFD, as tiktoken encodes it). Decompression (zlib, zstd)
also runs outside the GIL, so reading overlaps encoding in another thread.

:func:`iter_segments` is the job's way in (see :mod:`ferrotok.data.native`): the same reading
with no document made a ``str`` — raw JSONL blocks and Parquet's Arrow arrays, parsed and
encoded natively on the encoding threads — and the batch boundaries left to the consumer,
which applies the rules :func:`iter_batches` applies, so both cut the same batches.
"""

from __future__ import annotations

import glob
import io
import json
import os
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, Any, NamedTuple, Union, cast

from .._core import count_byte

__all__ = [
    "BadInput",
    "Batch",
    "Position",
    "Skipped",
    "expand_inputs",
    "input_format",
    "iter_batches",
    "iter_documents",
    "iter_segments",
]

StrPath = Union[str, "os.PathLike[str]"]

#: Formats a file can be read as.
FORMATS = ("text", "jsonl", "parquet")
#: How a plain-text file is cut into documents (or any other string: a separator).
TEXT_MODES = ("file", "line")

_JSONL_EXT = (".jsonl", ".ndjson", ".json")
_PARQUET_EXT = (".parquet", ".pq")
_COMPRESSED_EXT = (".gz", ".zst", ".zstd")

_BLOCK = 8 << 20  # bytes read from a file at a time (before decompression)
_SKIP_EXAMPLES = 10  # places of skipped records kept in the manifest


class BadInput(ValueError):
    """A record that cannot be a document; the message names the file and line (or row)."""

    def __init__(self, path: str, where: str, reason: str, detail: str) -> None:
        self.path = path
        self.where = where
        self.reason = reason
        super().__init__(f"{path}:{where}: {detail} (pass skip_bad=True / --skip-bad to skip)")


@dataclass
class Skipped:
    """Records skipped under ``skip_bad=True``: counts by reason and the first few places."""

    counts: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)

    def add(self, err: BadInput) -> None:
        self.counts[err.reason] = self.counts.get(err.reason, 0) + 1
        if len(self.examples) < _SKIP_EXAMPLES:
            self.examples.append(str(err).split(" (pass skip_bad", 1)[0])

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def to_json(self) -> dict[str, Any]:
        return {"total": self.total, "by_reason": dict(sorted(self.counts.items())),
                "examples": list(self.examples)}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Skipped:
        return cls(dict(obj.get("by_reason", {})), list(obj.get("examples", [])))


class Position(NamedTuple):
    """Where reading stands: records ``< record`` of file ``file`` (and every earlier file)
    are consumed. A record is a line (JSONL, text by line), a row (Parquet), a piece between
    separators, or the whole file (text by file)."""

    file: int
    record: int


@dataclass
class Batch:
    """Documents read in order, and where reading stands after them."""

    texts: list[str]
    end: Position
    nbytes: int  # input bytes (decompressed) the documents came from
    skipped: Skipped  # what was skipped up to ``end`` (a snapshot)


class JsonlBlock(NamedTuple):
    """Whole JSONL lines as read (the last one maybe without its ``\\n``), not parsed yet."""

    data: bytes
    path: str
    first_line: int  # lines of the file before the block


class ArrowValues(NamedTuple):
    """A Parquet column's values as read: a pyarrow string or binary array without nulls."""

    array: Any
    path: str
    first_row: int  # rows of the file before the array


#: What a :class:`Segment` holds, in input order: documents, a skipped record, or records
#: not parsed yet.
Part = Union[list[str], BadInput, JsonlBlock, ArrowValues]

#: Where a batch may end after a :class:`Segment`: always (``"end"``), once it holds
#: ``batch_bytes`` of input (``"bytes"``), or if it holds a document (``"docs"``, at the end
#: of a file).
CUTS = ("bytes", "docs", "end")


@dataclass
class Segment:
    """Input read since the last segment (:func:`iter_segments`), and the place after it,
    where :func:`iter_batches` would check whether a batch ends (``cut``)."""

    parts: list[Part]
    nbytes: int
    end: Position
    cut: str


def input_format(path: str, fmt: str | None = None) -> tuple[str, str | None]:
    """``(format, compression)`` of ``path``: ``fmt`` if given, else from the file name
    (``.jsonl``/``.ndjson``/``.json``, ``.parquet``/``.pq``, anything else text), under an
    optional ``.gz``/``.zst`` suffix."""
    name = os.path.basename(path).lower()
    comp = None
    for ext in _COMPRESSED_EXT:
        if name.endswith(ext):
            comp = "zst" if ext.startswith(".zst") else "gz"
            name = name[: -len(ext)]
            break
    if fmt is None:
        if name.endswith(_JSONL_EXT):
            fmt = "jsonl"
        elif name.endswith(_PARQUET_EXT):
            fmt = "parquet"
        else:
            fmt = "text"
    if fmt not in FORMATS:
        raise ValueError(f"unknown input format {fmt!r}: expected one of {', '.join(FORMATS)}")
    if fmt == "parquet" and comp is not None:
        raise ValueError(
            f"{path}: a compressed Parquet file is not supported (Parquet compresses its own "
            "pages): decompress it first"
        )
    return fmt, comp


def expand_inputs(inputs: StrPath | Sequence[StrPath]) -> list[str]:
    """Files named by ``inputs``: paths, globs (``*``, ``?``, ``[``, ``**``) and directories
    (every file below, hidden ones excepted), each expansion sorted by name; order otherwise
    kept. Raises ``FileNotFoundError`` for a name that matches nothing."""
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    if isinstance(inputs, bytes):
        raise TypeError("inputs must be paths (str or os.PathLike), not bytes")
    out: list[str] = []
    for item in inputs:
        p = os.fspath(item)
        if not isinstance(p, str):
            raise TypeError(f"inputs must be paths (str or os.PathLike), got {p!r}")
        if os.path.isdir(p):
            found = []
            for root, dirs, files in os.walk(p):
                dirs[:] = [d for d in dirs if not d.startswith(".")]
                found += [os.path.join(root, f) for f in files if not f.startswith(".")]
            if not found:
                raise FileNotFoundError(f"directory {p} holds no files")
            out += sorted(found)
        elif os.path.exists(p):
            out.append(p)
        elif glob.has_magic(p):
            found = sorted(f for f in glob.glob(p, recursive=True) if os.path.isfile(f))
            if not found:
                raise FileNotFoundError(f"no file matches {p}")
            out += found
        else:
            raise FileNotFoundError(f"no such file: {p}")
    if not out:
        raise ValueError("no input files given")
    return out


def _open(path: str, comp: str | None) -> IO[bytes]:
    if comp == "gz":
        import gzip

        return cast("IO[bytes]", gzip.open(path, "rb"))
    if comp == "zst":
        try:
            import zstandard
        except ImportError:
            raise ImportError(
                f"{path}: reading .zst needs the zstandard package (pip install zstandard, "
                "or ferrotok[data])"
            ) from None
        raw = open(path, "rb")  # noqa: SIM115 - closed with the reader (closefd)
        return cast("IO[bytes]", zstandard.ZstdDecompressor().stream_reader(raw, closefd=True))
    return open(path, "rb")


def _blocks(f: IO[bytes], sep: bytes, size: int = _BLOCK) -> Iterator[bytes]:
    """The stream cut into blocks of about ``size`` bytes that end just after a ``sep``
    (the last may not): the stream read in chunks of ``size`` bytes, and a block ending
    after the last ``sep`` of a chunk that holds one."""
    if len(sep) == 1 and hasattr(os, "pread") and isinstance(f, io.BufferedReader):
        try:
            fd = f.fileno()
            st = os.fstat(fd)
            start = f.tell()
        except (OSError, ValueError):
            pass
        else:
            if stat.S_ISREG(st.st_mode):
                yield from _file_blocks(f, fd, sep, size, start, st.st_size)
                return
    yield from _stream_blocks(f, sep, size)


#: Bytes of a file read at a time, back from a chunk's end, to find its last separator.
_PEEK = 64 << 10


def _file_blocks(
    f: IO[bytes], fd: int, sep: bytes, size: int, start: int, end: int
) -> Iterator[bytes]:
    """:func:`_blocks` of a regular file ``f`` (descriptor ``fd``) read from ``start``, whose
    size is ``end``: the same blocks, each read from the file with no other copy. The end of
    each chunk is looked at first (``os.pread``, which leaves ``f`` where it is) for its last
    separator, so the block up to it is read exactly, where a block read past its end had to
    be joined to the next one's start (a copy of the block, GIL held)."""
    pos = start  # where the next block starts, and where `f` is
    lo = start  # where the current chunk starts
    while lo < end:
        hi = min(lo + size, end)
        cut = _last_sep(fd, sep, lo, hi)
        if cut is None:
            break  # the file changed under us: read on as a stream
        if cut > lo:  # a separator is in the chunk: the block ends after it
            block = f.read(cut - pos)
            pos += len(block)
            if block:
                yield block
            if pos != cut:
                break  # the file changed under us
        lo = hi
    # What follows the last separator (or anything the file gained while it was read).
    yield from _stream_blocks(f, sep, size)


def _last_sep(fd: int, sep: bytes, lo: int, hi: int) -> int | None:
    """Just past the last ``sep`` in bytes ``lo..hi`` of file ``fd`` (``lo`` if none), read
    back from ``hi`` a window at a time; None if the file is shorter than ``hi``."""
    at = hi
    while at > lo:
        n = min(_PEEK, at - lo)
        window = os.pread(fd, n, at - n)
        if len(window) != n:
            return None
        i = window.rfind(sep)
        if i >= 0:
            return at - n + i + 1
        at -= n
    return lo


def _stream_blocks(f: IO[bytes], sep: bytes, size: int) -> Iterator[bytes]:
    """:func:`_blocks` of any stream."""
    rest = b""
    while True:
        chunk = f.read(size)
        if not chunk:
            if rest:
                yield rest
            return
        if len(sep) == 1 and (cut := chunk.rfind(sep)) >= 0:
            # The last separator is in the chunk: the block is copied once (``rest +
            # data[:cut]`` copied it twice), with the GIL the encoding threads want held.
            cut += 1
            if rest:
                yield rest + memoryview(chunk)[:cut]
            else:
                yield chunk if cut == len(chunk) else chunk[:cut]
            rest = chunk[cut:]
            continue
        data = rest + chunk if rest else chunk
        cut = data.rfind(sep)
        if cut < 0:
            rest = data
            continue
        cut += len(sep)
        yield data[:cut]
        rest = data[cut:]


def _decode(data: bytes, path: str, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadInput(path, where, "invalid_utf8", f"invalid UTF-8 at byte {e.start}") from None


def jsonl_line(raw: bytes, path: str, n: int, field: str) -> str:
    """The text of ``field`` in JSONL line ``n`` (``raw``, not blank) with Python's rules, or
    :class:`BadInput` naming what is wrong."""
    where = f"line {n}"
    text = _decode(raw, path, where)
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise BadInput(
            path, where, "not_json", f"not JSON ({e.msg} at column {e.colno})"
        ) from None
    if not isinstance(obj, dict):
        raise BadInput(path, where, "not_object",
                       f"a JSON {type(obj).__name__}, expected an object")
    if field not in obj:
        raise BadInput(path, where, "missing_field", f"no field {field!r}")
    value = obj[field]
    if not isinstance(value, str):
        kind = "null" if value is None else type(value).__name__
        raise BadInput(path, where, "not_string",
                       f"field {field!r} is {kind}, expected a string")
    return _no_lone_surrogates(value)


def jsonl_block_slow(
    block: bytes, path: str, first_line: int, field: str, bad: Callable[[BadInput], None]
) -> list[str]:
    """The texts of a JSONL block line by line with :mod:`json`; each bad line goes to
    ``bad`` (which raises it or counts it), blank lines are not records."""
    texts = []
    for n, raw in enumerate(block.split(b"\n"), start=first_line + 1):
        if not raw.strip():
            continue
        try:
            texts.append(jsonl_line(raw, path, n, field))
        except BadInput as e:
            bad(e)
    return texts


def parquet_values_slow(
    values: list[Any], path: str, first_row: int, field: str, bad: Callable[[BadInput], None]
) -> list[str]:
    """The texts of a column's values (``str``, ``bytes`` or None) from ``first_row`` on;
    a null or bytes that are not UTF-8 go to ``bad``."""
    texts = []
    for r, v in enumerate(values, start=first_row):
        where = f"row {r}"
        if v is None:
            bad(BadInput(path, where, "not_string", f"column {field!r} is null, expected a string"))
        elif isinstance(v, bytes):
            try:
                texts.append(_decode(v, path, where))
            except BadInput as e:
                bad(e)
        else:
            texts.append(v)
    return texts


def arrow_values_slow(
    array: Any, path: str, first_row: int, field: str, bad: Callable[[BadInput], None]
) -> list[str]:
    """:func:`parquet_values_slow` of a pyarrow array; string values that are not UTF-8
    (which ``to_pylist`` cannot make a ``str``) are read as bytes, so the row is named."""
    import pyarrow as pa

    try:
        values = array.to_pylist()
    except UnicodeDecodeError:
        large = pa.types.is_large_string(array.type)
        values = array.cast(pa.large_binary() if large else pa.binary()).to_pylist()
    return parquet_values_slow(values, path, first_row, field, bad)


def _no_lone_surrogates(text: str) -> str:
    """``text`` with each lone surrogate (a ``\\ud800`` escape in JSON) replaced by U+FFFD,
    as tiktoken's ``encode`` and pyarrow's reader treat them, so that the text is valid
    Unicode everywhere (training refuses surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


class _Reader:
    """Batches of documents from a list of files (see :func:`iter_batches`)."""

    def __init__(
        self,
        paths: list[str],
        *,
        fmt: str | None,
        field: str,
        text_mode: str,
        skip_bad: bool,
        batch_bytes: int,
        start: Position,
        native: bool = False,
    ) -> None:
        self.paths = paths
        self.fmt = fmt
        self.field = field
        self.text_mode = text_mode
        self.skip_bad = skip_bad
        self.batch_bytes = batch_bytes
        self.block = max(4096, min(_BLOCK, batch_bytes))  # bytes read at a time
        self.start = start
        self.skipped = Skipped()
        self.texts: list[str] = []
        self.nbytes = 0
        self._arrow_json: Any = None
        # Segments instead of batches (`iter_segments`): records go to `parts` in order, and
        # every place where a batch may end yields a segment, whose consumer decides.
        self.native = native
        self.parts: list[Part] = []

    def _bad(self, err: BadInput) -> None:
        if not self.skip_bad:
            raise err
        if self.native:
            self._part(err)
        else:
            self.skipped.add(err)

    def _part(self, part: Part) -> None:
        if self.texts:
            self.parts.append(self.texts)
            self.texts = []
        self.parts.append(part)

    def _take(self, end: Position) -> Batch:
        snap = Skipped(dict(self.skipped.counts), list(self.skipped.examples))
        b = Batch(self.texts, end, self.nbytes, snap)
        self.texts, self.nbytes = [], 0
        return b

    def _segment(self, end: Position, cut: str) -> Segment:
        if self.texts:
            self.parts.append(self.texts)
        seg = Segment(self.parts, self.nbytes, end, cut)
        self.parts, self.texts, self.nbytes = [], [], 0
        return seg

    def _cut(self, end: Position) -> Iterator[Any]:
        """A batch ends at ``end`` once it holds ``batch_bytes`` of input."""
        if self.native:
            yield self._segment(end, "bytes")
        elif self.nbytes >= self.batch_bytes:
            yield self._take(end)

    def _file_end(self, end: Position) -> Iterator[Any]:
        """A file ends at ``end``: a batch ends there if it holds a document."""
        if self.native:
            yield self._segment(end, "docs")
        elif self.texts:
            yield self._take(end)

    def run(self) -> Iterator[Any]:
        for i in range(self.start.file, len(self.paths)):
            path = self.paths[i]
            skip = self.start.record if i == self.start.file else 0
            fmt, comp = input_format(path, self.fmt)
            if fmt == "parquet":
                gen = self._parquet(i, path, skip)
            elif fmt == "jsonl":
                gen = self._jsonl(i, path, comp, skip)
            else:
                gen = self._text(i, path, comp, skip)
            yield from gen
        # The last batch, empty or not, carries the end position.
        if self.native:
            yield self._segment(Position(len(self.paths), 0), "end")
        else:
            yield self._take(Position(len(self.paths), 0))

    # -- JSON Lines ---------------------------------------------------------------------

    def _jsonl(self, i: int, path: str, comp: str | None, skip: int) -> Iterator[Any]:
        line = 0  # lines before the current block
        with _open(path, comp) as f:
            for block in _blocks(f, b"\n", self.block):
                n_lines = count_byte(block, 10) + (0 if block.endswith(b"\n") else 1)
                if line + n_lines <= skip:
                    line += n_lines
                    continue
                if line < skip:  # the start is inside this block: drop the lines before it
                    cut = 0
                    for _ in range(skip - line):
                        cut = block.index(b"\n", cut) + 1
                    block = block[cut:]
                    line = skip
                    n_lines = count_byte(block, 10) + (0 if block.endswith(b"\n") else 1)
                self._jsonl_block(block, path, line)
                self.nbytes += len(block)
                line += n_lines
                yield from self._cut(Position(i, line))
        yield from self._file_end(Position(i + 1, 0))

    def _jsonl_block(self, block: bytes, path: str, first_line: int) -> None:
        if self.native:
            self._part(JsonlBlock(block, path, first_line))
            return
        texts = self._jsonl_fast(block)
        if texts is not None:
            self.texts += texts
            return
        self.texts += jsonl_block_slow(block, path, first_line, self.field, self._bad)

    def _jsonl_fast(self, block: bytes) -> list[str] | None:
        """The block's texts through pyarrow, or None if pyarrow is missing, refuses the
        block, or finds a null (then the slow path names the line)."""
        if self._arrow_json is False:
            return None
        if self._arrow_json is None:
            try:
                import pyarrow as pa
                import pyarrow.json as paj
            except ImportError:
                self._arrow_json = False
                return None
            self._arrow_json = (
                pa,
                paj,
                paj.ParseOptions(
                    explicit_schema=pa.schema([(self.field, pa.large_string())]),
                    unexpected_field_behavior="ignore",
                ),
            )
        pa, paj, parse = self._arrow_json
        if block.isspace():  # (no copy, unlike strip)
            return []
        try:
            table = paj.read_json(
                pa.BufferReader(block),
                read_options=paj.ReadOptions(use_threads=False, block_size=len(block) + 1),
                parse_options=parse,
            )
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            return None
        col = table.column(self.field)
        if col.null_count:
            return None
        try:
            texts: list[str] = col.to_pylist()
        except UnicodeDecodeError:  # pyarrow passes raw non-UTF-8 bytes through
            return None
        return texts

    # -- Parquet ------------------------------------------------------------------------

    def _parquet(self, i: int, path: str, skip: int) -> Iterator[Any]:
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise ImportError(
                f"{path}: reading Parquet needs pyarrow (pip install pyarrow, or ferrotok[data])"
            ) from None
        # No pre-buffering: with it, `iter_batches` reads ahead every row group it is given and
        # keeps them (2.9 GB resident on a 2 GB file). A buffered stream and small record
        # batches keep what one row group holds in memory at a time small too.
        pf = pq.ParquetFile(path, pre_buffer=False, buffer_size=8 << 20)
        schema = pf.schema_arrow
        if self.field not in schema.names:
            raise ValueError(
                f"{path}: no column {self.field!r} (columns: {', '.join(schema.names)})"
            )
        kind = schema.field(self.field).type
        is_binary = pa.types.is_binary(kind) or pa.types.is_large_binary(kind)
        if not (pa.types.is_string(kind) or pa.types.is_large_string(kind) or is_binary):
            raise ValueError(f"{path}: column {self.field!r} is {kind}, expected strings")
        row = 0
        groups: list[int] = []
        for g in range(pf.num_row_groups):  # whole row groups before the start are not read
            n = pf.metadata.row_group(g).num_rows
            if not groups and row + n <= skip:
                row += n
            else:
                groups.append(g)
        rows_per_batch = 1024
        for rb in pf.iter_batches(batch_size=rows_per_batch, row_groups=groups,
                                  columns=[self.field], use_threads=False):
            col = rb.column(0)
            if row + len(col) <= skip:  # wholly before the start
                row += len(col)
                continue
            if row < skip:
                col = col.slice(skip - row)
                row = skip
            if self.native and not col.null_count:
                self._part(ArrowValues(col, path, row))
            elif col.null_count or is_binary:
                self.texts += arrow_values_slow(col, path, row, self.field, self._bad)
            else:
                try:
                    self.texts += col.to_pylist()
                except UnicodeDecodeError:  # not UTF-8: the slow path names the row
                    self.texts += arrow_values_slow(col, path, row, self.field, self._bad)
            self.nbytes += col.nbytes
            row += len(col)
            yield from self._cut(Position(i, row))
        yield from self._file_end(Position(i + 1, 0))

    # -- plain text ---------------------------------------------------------------------

    def _text(self, i: int, path: str, comp: str | None, skip: int) -> Iterator[Any]:
        if self.text_mode == "file":
            if skip == 0:
                with _open(path, comp) as f:
                    data = f.read()
                try:
                    self.texts.append(_decode(data, path, "1"))
                except BadInput as e:
                    self._bad(e)
                self.nbytes += len(data)
            yield from self._cut(Position(i + 1, 0))
            return
        line_mode = self.text_mode == "line"
        sep = b"\n" if line_mode else self.text_mode.encode("utf-8")
        record = 0  # records before the current piece
        line = 1  # line number where the current block starts
        with _open(path, comp) as f:
            for block in _blocks(f, sep, self.block):
                pieces = block.split(sep)
                if block.endswith(sep):
                    pieces.pop()
                for piece in pieces:
                    if record >= skip:
                        where = f"line {line}"
                        if line_mode and piece.endswith(b"\r"):
                            piece = piece[:-1]
                        if piece:  # empty lines / pieces are not documents
                            try:
                                self.texts.append(_decode(piece, path, where))
                            except BadInput as e:
                                self._bad(e)
                    record += 1
                    line += piece.count(b"\n") + (1 if line_mode else 0)
                    if not line_mode:
                        line += sep.count(b"\n")
                self.nbytes += len(block)
                yield from self._cut(Position(i, record))
        yield from self._file_end(Position(i + 1, 0))


def iter_batches(
    inputs: StrPath | Sequence[StrPath],
    *,
    format: str | None = None,
    field: str = "text",
    text_mode: str = "file",
    skip_bad: bool = False,
    batch_bytes: int = 4 << 20,
    start: Position | None = None,
    skipped: Skipped | None = None,
) -> Iterator[Batch]:
    """Batches of about ``batch_bytes`` of documents from ``inputs`` (see the module doc).

    Args:
        inputs: files, globs or directories (:func:`expand_inputs`).
        format: ``"text"``, ``"jsonl"`` or ``"parquet"`` for every file; default from each
            file's name.
        field: the JSONL field / Parquet column holding the text.
        text_mode: plain text as one document per ``"file"``, per ``"line"`` (blank lines
            skipped), or any other string: the separator between documents (empty pieces
            skipped).
        skip_bad: skip bad records (counted in ``skipped``) instead of raising
            :class:`BadInput`.
        batch_bytes: input bytes per batch (a batch ends at a record boundary).
        start: skip what comes before this position (from a previous batch's ``end``).
        skipped: a :class:`Skipped` to count into (default: a new one, not returned).

    The last batch may be empty; its ``end`` is ``Position(len(files), 0)``.
    """
    reader = _reader(inputs, format, field, text_mode, skip_bad, batch_bytes, start, False)
    if skipped is not None:
        reader.skipped = skipped
    return cast("Iterator[Batch]", reader.run())


def iter_segments(
    inputs: StrPath | Sequence[StrPath],
    *,
    format: str | None = None,
    field: str = "text",
    text_mode: str = "file",
    skip_bad: bool = False,
    batch_bytes: int = 4 << 20,
    start: Position | None = None,
) -> Iterator[Segment]:
    """What :func:`iter_batches` reads, as :class:`Segment`\\ s: JSONL blocks and Parquet
    arrays not made documents yet, and the places where a batch may end, for a consumer that
    parses them natively and cuts the batches itself (:mod:`ferrotok.data.native`). Bad
    records found while reading are raised as :func:`iter_batches` raises them, or with
    ``skip_bad`` put among the parts in their place. Files are read in the blocks
    :func:`iter_batches` reads for ``batch_bytes``, so the segments end where its checks
    are."""
    reader = _reader(inputs, format, field, text_mode, skip_bad, batch_bytes, start, True)
    return cast("Iterator[Segment]", reader.run())


def _reader(
    inputs: StrPath | Sequence[StrPath],
    format: str | None,
    field: str,
    text_mode: str,
    skip_bad: bool,
    batch_bytes: int,
    start: Position | None,
    native: bool,
) -> _Reader:
    if not isinstance(text_mode, str) or not text_mode:
        raise ValueError("text_mode must be 'file', 'line' or a non-empty separator string")
    if not isinstance(field, str) or not field:
        raise ValueError("field must be a non-empty string")
    paths = expand_inputs(inputs)
    for p in paths:
        input_format(p, format)  # every file's format is checked before any work
    return _Reader(paths, fmt=format, field=field, text_mode=text_mode, skip_bad=skip_bad,
                   batch_bytes=batch_bytes, start=start or Position(0, 0), native=native)


def iter_documents(
    inputs: StrPath | Sequence[StrPath],
    *,
    format: str | None = None,
    field: str = "text",
    text_mode: str = "file",
    skip_bad: bool = False,
) -> Iterator[str]:
    """Every document of ``inputs`` as a ``str``, in order, streamed (see :func:`iter_batches`).

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "docs.jsonl")
    >>> with open(path, "w") as f:
    ...     _ = f.write('{"text": "hello"}\\n{"id": 2, "text": "world"}\\n')
    >>> list(iter_documents(path))
    ['hello', 'world']
    """
    for batch in iter_batches(inputs, format=format, field=field, text_mode=text_mode,
                              skip_bad=skip_bad):
        yield from batch.texts
