"""The job's encoding step: :class:`~ferrotok.data.readers.Segment`\\ s in, batches of ids out,
with JSONL lines and Parquet values parsed and encoded natively.

What this module promises:

* The batches are those :func:`~ferrotok.data.readers.iter_batches` gives for the same
  input and ``batch_bytes``, encoded as ``encode_batch_to_numpy`` encodes their texts: the
  same documents in the same order, cut at the same places (``end``, ``nbytes``), with the
  same :class:`~ferrotok.data.readers.Skipped` snapshot — so shards and manifests are byte
  for byte those of the per-document path, resume included.
* A JSONL block is parsed by the encoder's threads, each line's field read in place
  (``CoreBPE.encode_jsonl_block``); a Parquet array is encoded from its Arrow buffers
  (``CoreBPE.encode_arrow_values``). No document becomes a Python ``str``.
* With ``bos``/``eot``/``dtype`` the ids come laid out for the shards: each document with
  ``bos`` before and ``eot`` after it, as ``dtype`` (:meth:`EncodeStage.feed_chunks` gives a
  batch as the arrays each part was encoded into, never joined). The native calls lay them
  out in the one copy they make anyway; only the slow path lays them out here.
* Whenever the native parser is not sure to agree with Python's rules (a bad line, a lone
  surrogate escape, ``NaN``, bytes that are not UTF-8...) it declines the whole block, and
  the block is read here with :mod:`json` (:func:`~ferrotok.data.readers.jsonl_block_slow`):
  the bad record is named or skipped and counted exactly as the Python reader does.

Why: a reader thread that turned each document into a ``str`` cost as much CPU as
encoding, on the same cores.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Union

from .readers import (
    ArrowValues,
    BadInput,
    Batch,
    JsonlBlock,
    Segment,
    Skipped,
    arrow_values_slow,
    jsonl_block_slow,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from ..core import Encoding

__all__ = ["EncodeStage", "with_specials"]

#: ``(ids, offsets)``: ``ids[offsets[i]:offsets[i + 1]]`` is document ``i`` (with its BOS/EOT).
Flat = tuple["npt.NDArray[Any]", "npt.NDArray[np.int64]"]
_Allowed = Union[Literal["all"], "set[str]"]


class EncodeStage:
    """Encodes segments and cuts them into batches (see the module doc). ``skipped`` is
    where reading starts (a resumed job's count) and is counted into."""

    def __init__(
        self,
        enc: Encoding,
        *,
        field: str,
        skip_bad: bool,
        allowed: str | list[str],
        num_threads: int,
        batch_bytes: int,
        skipped: Skipped,
        bos: int | None = None,
        eot: int | None = None,
        dtype: str = "uint32",
    ) -> None:
        if dtype not in ("uint16", "uint32"):
            raise ValueError(f"dtype must be 'uint16' or 'uint32', got {dtype!r}")
        self.enc = enc
        self.bos = bos
        self.eot = eot
        self.dtype = dtype
        self.field = field
        self.skip_bad = skip_bad
        self.allowed = allowed
        # as the core takes it: the word "all", or a set (empty: ordinary text only)
        self.core_allowed: _Allowed = "all" if allowed == "all" else set(allowed)
        self.num_threads = num_threads
        self.batch_bytes = batch_bytes
        self.skipped = skipped
        self.pending: list[Flat] = []  # encoded parts of the batch being gathered
        self.docs = 0
        self.nbytes = 0

    def _bad(self, err: BadInput) -> None:
        if not self.skip_bad:
            raise err
        self.skipped.add(err)

    def _texts(self, texts: list[str]) -> Flat:
        enc = self.enc
        if self.core_allowed:
            ids, offsets = enc.encode_batch_to_numpy(
                texts, num_threads=self.num_threads, allowed_special=self.core_allowed,
                disallowed_special=(),
            )
        else:
            ids, offsets = enc.encode_ordinary_batch_to_numpy(texts, num_threads=self.num_threads)
        return laid_out(ids, offsets, self.bos, self.eot, self.dtype)

    def _jsonl(self, part: JsonlBlock) -> Flat:
        flat = self.enc._core_bpe.encode_jsonl_block(
            part.data, self.field, self.core_allowed, self.num_threads,
            bos=self.bos, eot=self.eot, dtype=self.dtype,
        )
        if flat is not None:
            return flat
        return self._texts(
            jsonl_block_slow(part.data, part.path, part.first_line, self.field, self._bad)
        )

    def _arrow(self, part: ArrowValues) -> Flat:
        import pyarrow as pa

        arr = part.array
        kind = arr.type
        wide = pa.types.is_large_string(kind) or pa.types.is_large_binary(kind)
        plain = pa.types.is_string(kind) or pa.types.is_binary(kind)
        flat = None
        if (wide or plain) and not arr.null_count:
            _, offsets, data = arr.buffers()
            flat = self.enc._core_bpe.encode_arrow_values(
                offsets, b"" if data is None else data, wide, arr.offset, len(arr),
                self.core_allowed, self.num_threads, bos=self.bos, eot=self.eot,
                dtype=self.dtype,
            )
        if flat is not None:
            return flat
        return self._texts(
            arrow_values_slow(arr, part.path, part.first_row, self.field, self._bad)
        )

    def feed(self, seg: Segment) -> tuple[Batch, Any, Any] | None:
        """Encodes a segment's parts; returns ``(batch, ids, offsets)`` when a batch ends
        after it (as :func:`~ferrotok.data.readers.iter_batches` would end one there)."""
        done = self.feed_chunks(seg)
        if done is None:
            return None
        batch, chunks = done
        ids, offsets = _joined(chunks, self.dtype)
        return batch, ids, offsets

    def feed_chunks(self, seg: Segment) -> tuple[Batch, list[Flat]] | None:
        """As :meth:`feed`, the batch's documents given as the ``(ids, offsets)`` of each
        part that holds any, in order, not joined into one array."""
        for part in seg.parts:
            if isinstance(part, BadInput):
                self._bad(part)
                continue
            if isinstance(part, JsonlBlock):
                flat = self._jsonl(part)
            elif isinstance(part, ArrowValues):
                flat = self._arrow(part)
            else:
                flat = self._texts(part)
            n = len(flat[1]) - 1
            if n:
                self.pending.append(flat)
                self.docs += n
        self.nbytes += seg.nbytes
        if seg.cut == "bytes":
            ends = self.nbytes >= self.batch_bytes
        elif seg.cut == "docs":
            ends = self.docs > 0
        else:
            ends = True
        if not ends:
            return None
        chunks = self.pending
        snap = Skipped(dict(self.skipped.counts), list(self.skipped.examples))
        batch = Batch([], seg.end, self.nbytes, snap)
        self.pending, self.docs, self.nbytes = [], 0, 0
        return batch, chunks


def with_specials(
    ids: npt.NDArray[Any], offsets: npt.NDArray[Any], bos: int | None, eot: int | None
) -> tuple[npt.NDArray[Any], npt.NDArray[np.int64]]:
    """``(ids, lengths)`` of a flat batch (``ids[offsets[i]:offsets[i + 1]]`` is document
    ``i``) with ``bos`` put before and ``eot`` after each document (None: not)."""
    import numpy as np

    n = len(offsets) - 1
    offs = np.asarray(offsets, dtype=np.int64)
    lengths: npt.NDArray[np.int64] = offs[1:] - offs[:-1]
    extra = [t for t in (bos, eot) if t is not None]
    if extra and n:
        if len(extra) == 2:
            at = np.empty(2 * n, dtype=np.int64)
            at[0::2] = offsets[:-1]
            at[1::2] = offsets[1:]
            values = np.tile(np.array(extra, dtype=ids.dtype), n)
        else:
            at = np.asarray(offsets[:-1] if bos is not None else offsets[1:], dtype=np.int64)
            values = np.full(n, extra[0], dtype=ids.dtype)
        # np.insert keeps the given order among equal positions: eot of document i comes
        # before bos of document i + 1, and an empty document gets bos then eot.
        ids = np.insert(ids, at, values)
        lengths = lengths + len(extra)
    return ids, lengths


def laid_out(
    ids: npt.NDArray[Any], offsets: npt.NDArray[Any], bos: int | None, eot: int | None,
    dtype: str,
) -> Flat:
    """``(ids, offsets)`` of a flat batch with ``bos`` put before and ``eot`` after each
    document (None: not), the ids as ``dtype``: what the native calls return for the same
    arguments."""
    import numpy as np

    out, lengths = with_specials(ids, offsets, bos, eot)
    if dtype == "uint16" and len(out) and int(out.max()) > 0xFFFF:
        raise ValueError("an id does not fit uint16: the encoding's ids need uint32")
    laid = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=laid[1:])
    return out.astype(dtype, copy=False), laid


def _joined(parts: list[Flat], dtype: str = "uint32") -> tuple[Any, Any]:
    """One ``(ids, offsets)`` of several, documents one after another."""
    import numpy as np

    if len(parts) == 1:
        return parts[0]
    if not parts:
        return np.zeros(0, dtype=dtype), np.zeros(1, dtype=np.int64)
    ids = np.concatenate([p[0] for p in parts])
    offs = [np.zeros(1, dtype=np.int64)]
    base = 0
    for p_ids, p_offs in parts:
        offs.append(np.asarray(p_offs[1:], dtype=np.int64) + base)
        base += len(p_ids)
    return ids, np.concatenate(offs)
