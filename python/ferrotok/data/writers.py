"""Token shards in the layouts training stacks read, written so no reader sees half a shard.

Every writer takes documents as one flat id array plus per-document lengths (already holding
any BOS/EOT), in order, and lays them out exactly as its ecosystem does (little-endian):

* ``megatron``: ``NAME.bin`` (the ids) + ``NAME.idx``, megatron-core's ``IndexedDataset``
  index: ``b"MMIDIDX\\x00\\x00"``, version ``<Q`` 1, dtype code ``<B`` (4 int32, 8 uint16),
  sequence count ``<Q``, document count ``<Q`` (sequences + 1), int32 sequence lengths,
  int64 byte pointers, int64 document indices ``0..n`` (one sequence per document).
* ``bin``: ``NAME.bin``, the bare ids (nanoGPT's ``np.memmap(..., dtype=np.uint16)``).
* ``llmc``: ``NAME.bin`` with llm.c's header of 256 int32: magic ``20240520``, version 1,
  token count, for uint16 ids; magic ``20240801``, version 7 for uint32 ids (its Llama 3
  files); then the ids.
* ``datatrove``: ``NAME.ds`` (the ids) + ``NAME.ds.index`` (``<u8``: the end of each
  document, in tokens from the start of ``.ds``) + ``NAME.ds.metadata`` (``TOKENIZER|2``,
  the token count, the count in words), as datatrove's ``DocumentTokenizer`` writes and its
  ``DatatroveFileDataset`` reads.
* ``numpy``: ``NAME.ids.npy`` (1-d ids) + ``NAME.offsets.npy`` (``<i8``, documents + 1
  entries: ``ids[offsets[i]:offsets[i + 1]]`` is document ``i``).

Files are written under a ``.tmp`` name and renamed into place by :meth:`ShardWriter.close`
once complete (index last), so an interrupted job leaves only ``.tmp`` files, which
:meth:`ShardWriter.abort` removes.

Where the OS allows it (``os.fdatasync`` and ``os.posix_fadvise``: Linux), the ids written are
handed to the disk every :data:`SYNC_EVERY` bytes and dropped from the page cache. Why: the
shards are written once and read later, so keeping them cached only evicts pages others use;
and the page cache of a job that writes gigabytes otherwise grows onto pages the kernel has
not used for a while, which cost far more to take than pages just freed (in a VM each may be a
fault in the host too). Dropping what is on disk recycles the same few megabytes of pages
shard after shard. The files' contents are the same either way.
"""

from __future__ import annotations

import os
import struct
from typing import IO, Any

import numpy as np
import numpy.typing as npt

__all__ = ["FORMATS", "ShardWriter", "shard_files", "dtype_for_vocab"]

FORMATS = ("megatron", "bin", "llmc", "datatrove", "numpy")

_MEGATRON_HEADER = b"MMIDIDX\x00\x00"
_MEGATRON_DTYPE = {np.dtype(np.uint16): 8, np.dtype(np.int32): 4, np.dtype(np.uint32): 4}
_LLMC = {np.dtype(np.uint16): (20240520, 1), np.dtype(np.uint32): (20240801, 7)}
_NPY_HEADER = 128  # bytes reserved for an .npy header, rewritten with the shape at close
#: Bytes of ids written to a shard between two hand-overs to the disk (see the module doc).
SYNC_EVERY = 32 << 20
_CAN_DROP = hasattr(os, "fdatasync") and hasattr(os, "posix_fadvise")


def _drop_pages(fd: int) -> None:
    """Drops the clean cached pages of ``fd``'s file: advice, so a file system that refuses
    it changes nothing."""
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    except OSError:
        pass


def dtype_for_vocab(n_vocab: int) -> np.dtype[Any]:
    """uint16 when every id fits (``n_vocab <= 65536``), else uint32."""
    return np.dtype(np.uint16) if n_vocab <= 1 << 16 else np.dtype(np.uint32)


def shard_files(fmt: str, name: str) -> list[str]:
    """File names of shard ``name`` in format ``fmt``, the index (if any) last."""
    if fmt == "megatron":
        return [name + ".bin", name + ".idx"]
    if fmt in ("bin", "llmc"):
        return [name + ".bin"]
    if fmt == "datatrove":
        return [name + ".ds", name + ".ds.metadata", name + ".ds.index"]
    if fmt == "numpy":
        return [name + ".ids.npy", name + ".offsets.npy"]
    raise ValueError(f"unknown output format {fmt!r}: expected one of {', '.join(FORMATS)}")


def _npy_header(dtype: np.dtype[Any], n: int) -> bytes:
    d = {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": (n,)}
    body = repr(d).encode("latin1")
    pre = b"\x93NUMPY\x01\x00"
    room = _NPY_HEADER - len(pre) - 2
    if len(body) + 1 > room:
        raise ValueError("shard too large for its .npy header")
    body = body + b" " * (room - len(body) - 1) + b"\n"
    return pre + struct.pack("<H", len(body)) + body


def _metric(n: int) -> str:
    """A token count in words, as datatrove's metadata has it (``1.2M tokens``)."""
    for unit, size in (("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3)):
        if n >= size:
            return f"{n / size:.1f} {unit}T"
    return f"{n} T"


class ShardWriter:
    """One shard being written: :meth:`write` documents, then :meth:`close` (or :meth:`abort`).

    ``megatron`` with uint32 ids is written with Megatron's int32 code (ids below 2^31 read
    the same); ``datatrove`` supports uint16 and uint32.
    """

    def __init__(
        self, directory: str, name: str, fmt: str, dtype: np.dtype[Any], tokenizer: str = ""
    ) -> None:
        self.fmt = fmt
        self.tokenizer = tokenizer
        self.dtype = np.dtype(dtype)
        if self.dtype not in (np.dtype(np.uint16), np.dtype(np.uint32)):
            raise ValueError(f"ids must be uint16 or uint32, got {self.dtype}")
        self.dtype = self.dtype.newbyteorder("<")
        self.paths = [os.path.join(directory, f) for f in shard_files(fmt, name)]
        self.tmp = [p + ".tmp" for p in self.paths]
        self.num_tokens = 0
        self.unsynced = 0  # bytes written since the last hand-over to the disk
        self.lengths: list[npt.NDArray[np.int64]] = []
        self._f: IO[bytes] | None = open(self.tmp[0], "wb")  # noqa: SIM115 - closed in close()
        if fmt == "llmc":
            self._f.write(b"\0" * 1024)
        elif fmt == "numpy":
            self._f.write(b"\0" * _NPY_HEADER)

    @property
    def num_documents(self) -> int:
        return sum(len(x) for x in self.lengths)

    def write(self, ids: npt.NDArray[Any], lengths: npt.NDArray[np.int64]) -> None:
        """Appends documents: ``ids`` flat (cast to the shard's dtype), ``lengths`` theirs."""
        assert self._f is not None, "shard already closed"
        if len(ids):
            self._f.write(np.ascontiguousarray(ids, dtype=self.dtype).data)
            self.unsynced += len(ids) * self.dtype.itemsize
            if _CAN_DROP and self.unsynced >= SYNC_EVERY:
                self._drop_cached()
        self.num_tokens += len(ids)
        self.lengths.append(np.array(lengths, dtype=np.int64))

    def _drop_cached(self) -> None:
        """Writes what the data file holds to the disk and drops it from the page cache."""
        assert self._f is not None
        self._f.flush()
        fd = self._f.fileno()
        os.fdatasync(fd)  # (both calls release the GIL)
        _drop_pages(fd)
        self.unsynced = 0

    def close(self) -> list[str]:
        """Finishes the files and renames them into place; returns their paths."""
        assert self._f is not None, "shard already closed"
        f, self._f = self._f, None
        lengths = np.concatenate(self.lengths) if self.lengths else np.zeros(0, np.int64)
        n = len(lengths)
        try:
            if self.fmt == "llmc":
                if self.num_tokens >= 1 << 31:
                    raise ValueError("an llm.c shard holds fewer than 2^31 tokens")
                magic, version = _LLMC[np.dtype(self.dtype.type)]
                header = np.zeros(256, dtype="<i4")
                header[:3] = (magic, version, self.num_tokens)
                f.seek(0)
                f.write(header.tobytes())
            elif self.fmt == "numpy":
                f.seek(0)
                f.write(_npy_header(self.dtype, self.num_tokens))
            f.flush()
            os.fsync(f.fileno())
            if _CAN_DROP:
                _drop_pages(f.fileno())
        finally:
            f.close()
        index: bytes | None = None
        item = self.dtype.itemsize
        if self.fmt == "megatron":
            if n and lengths.max() >= 1 << 31:
                raise ValueError("a Megatron sequence holds fewer than 2^31 tokens")
            pointers = np.zeros(n, dtype="<i8")
            if n > 1:
                np.cumsum(lengths[:-1] * item, out=pointers[1:])
            index = b"".join(
                [
                    _MEGATRON_HEADER,
                    struct.pack("<Q", 1),
                    struct.pack("<B", _MEGATRON_DTYPE[np.dtype(self.dtype.type)]),
                    struct.pack("<Q", n),
                    struct.pack("<Q", n + 1),
                    lengths.astype("<i4").tobytes(),
                    pointers.tobytes(),
                    np.arange(n + 1, dtype="<i8").tobytes(),
                ]
            )
        elif self.fmt == "datatrove":
            index = np.cumsum(lengths, dtype=np.int64).astype("<u8").tobytes()
            meta = f"{self.tokenizer}|{item}\n{self.num_tokens}\n{_metric(self.num_tokens)}"
            with open(self.tmp[1], "wb") as g:
                g.write(meta.encode("utf-8"))
        elif self.fmt == "numpy":
            offsets = np.zeros(n + 1, dtype="<i8")
            np.cumsum(lengths, out=offsets[1:])
            index = _npy_header(np.dtype("<i8"), n + 1) + offsets.tobytes()
        if index is not None:
            with open(self.tmp[-1], "wb") as g:
                g.write(index)
                g.flush()
                os.fsync(g.fileno())
        # The data file first, the index last: a shard is complete when its index exists.
        for tmp, final in zip(self.tmp, self.paths):
            os.replace(tmp, final)
        return list(self.paths)

    def abort(self) -> None:
        """Closes and removes the unfinished files."""
        if self._f is not None:
            self._f.close()
            self._f = None
        for tmp in self.tmp:
            try:
                os.remove(tmp)
            except FileNotFoundError:
                pass
