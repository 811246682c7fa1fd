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

__all__ = ["EncodeStage"]

Flat = tuple["npt.NDArray[np.uint32]", "npt.NDArray[np.int64]"]
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
    ) -> None:
        self.enc = enc
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
            return enc.encode_batch_to_numpy(
                texts, num_threads=self.num_threads, allowed_special=self.core_allowed,
                disallowed_special=(),
            )
        return enc.encode_ordinary_batch_to_numpy(texts, num_threads=self.num_threads)

    def _jsonl(self, part: JsonlBlock) -> Flat:
        flat = self.enc._core_bpe.encode_jsonl_block(
            part.data, self.field, self.core_allowed, self.num_threads
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
                self.core_allowed, self.num_threads,
            )
        if flat is not None:
            return flat
        return self._texts(
            arrow_values_slow(arr, part.path, part.first_row, self.field, self._bad)
        )

    def feed(self, seg: Segment) -> tuple[Batch, Any, Any] | None:
        """Encodes a segment's parts; returns ``(batch, ids, offsets)`` when a batch ends
        after it (as :func:`~ferrotok.data.readers.iter_batches` would end one there)."""
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
        ids, offsets = _joined(self.pending)
        snap = Skipped(dict(self.skipped.counts), list(self.skipped.examples))
        batch = Batch([], seg.end, self.nbytes, snap)
        self.pending, self.docs, self.nbytes = [], 0, 0
        return batch, ids, offsets


def _joined(parts: list[Flat]) -> tuple[Any, Any]:
    """One ``(ids, offsets)`` of several, documents one after another."""
    import numpy as np

    if len(parts) == 1:
        return parts[0]
    if not parts:
        return np.zeros(0, dtype=np.uint32), np.zeros(1, dtype=np.int64)
    ids = np.concatenate([p[0] for p in parts])
    offs = [np.zeros(1, dtype=np.int64)]
    base = 0
    for p_ids, p_offs in parts:
        offs.append(np.asarray(p_offs[1:], dtype=np.int64) + base)
        base += len(p_ids)
    return ids, np.concatenate(offs)
