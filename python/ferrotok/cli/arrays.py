"""Ids as arrays of 4-byte unsigned ints (a tenth of the memory of a list of ints), written as
text (`list`, `json`) or a `.npy` file a piece at a time, and read back from a `.npy` file
without numpy.
"""

from __future__ import annotations

import array
import sys
from collections.abc import Iterable, Iterator
from typing import Literal

from ..progress import Percent
from .common import CLIError
from .threads import map_parts


def npy_header(count: int) -> bytes:
    """The header of a `.npy` (format 1.0) file of `count` little-endian uint32 values."""
    header = f"{{'descr': '<u4', 'fortran_order': False, 'shape': ({count},), }}"
    # Magic (6) + version (2) + header length (2) + header + "\n", padded to 64 bytes.
    pad = -(10 + len(header) + 1) % 64
    header_bytes = (header + " " * pad + "\n").encode("latin-1")
    return b"\x93NUMPY\x01\x00" + len(header_bytes).to_bytes(2, "little") + header_bytes


def id_array(ids: Iterable[int] = ()) -> array.array[int]:
    """`ids` as 4-byte unsigned ints: a tenth of the memory of a list of ints."""
    values = array.array("I", ids)  # C unsigned int: 4 bytes on every platform Python runs on
    if values.itemsize != 4:
        raise RuntimeError("array('I') is not 4 bytes wide here")
    return values


# Ids are written this many at a time, so that the text of all of them is never held at once;
# writing more than _PROGRESS_MIN_IDS of them as text shows its progress.
IDS_PER_CHUNK = 1 << 20
_PROGRESS_MIN_IDS = 16 << 20


def output_chunks(
    ids: array.array[int], fmt: str, name: str = "<stdout>"
) -> Iterator[bytes | memoryview]:
    """`ids` written as `fmt` (`list`, `json` or `npy`), a piece at a time. Writing many ids
    as text shows its progress (`writing NAME: N%`) on a terminal."""
    if fmt == "npy":
        yield npy_header(len(ids))
        if sys.byteorder == "big":
            ids = array.array("I", ids)
            ids.byteswap()
        yield memoryview(ids).cast("B")
        return
    from .._core import format_ids

    sep = ", " if fmt == "json" else " "
    yield b"[" if fmt == "json" else b""
    progress = Percent("writing", name, len(ids), _PROGRESS_MIN_IDS)
    starts = range(0, len(ids), IDS_PER_CHUNK)
    # sep.join(map(str, ...)), written in Rust (with the GIL released, so pieces are made on
    # several threads): over ten times as fast as `str()` on each id.
    pieces = (ids[start : start + IDS_PER_CHUNK] for start in starts)
    for start, text in zip(starts, map_parts(lambda piece: format_ids(piece, sep), pieces)):
        if start:
            yield sep.encode()
        yield text
        progress.update(start + IDS_PER_CHUNK)
    progress.close()
    yield b"]\n" if fmt == "json" else b"\n"


def npy_ids(data: bytes, name: str) -> array.array[int] | memoryview:
    """The ids in a 1-D integer `.npy` file (what `encode --format npy` writes), without numpy,
    as items of their own width (not a list of Python ints, ten times the memory): a view
    of `data` itself when they are in this machine's byte order, else a byte-swapped copy.
    Negative values are found when they fail to decode (see `cmd_decode`).

    >>> data = b"".join(output_chunks(id_array([15339, 1917]), "npy"))
    >>> npy_ids(data, "ids.npy").tolist()
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
    except (ValueError, SyntaxError, KeyError, TypeError, IndexError, RecursionError) as e:
        # (Python 3.9's parser says a deeply nested header with a MemoryError, newer ones with
        # a SyntaxError; a header's numbers may have thousands of digits: the message is cut.)
        why = str(e) if len(str(e)) <= 120 else str(e)[:117] + "..."
        raise CLIError(f"{name}: not a 1-D integer .npy array of ids ({why})") from None
    except MemoryError:
        raise CLIError(f"{name}: not a 1-D integer .npy array of ids (header too deep)") from None
    return values
