"""Reading shards back for training, memory-mapped: nothing is loaded whole.

* :func:`read_shard` gives one shard's ids (a read-only ``np.memmap``) and its document
  offsets (``None`` for the formats without an index: ``bin``, ``llmc``).
* :class:`TokenShards` joins a job's shards (its directory, in manifest order, or a list of
  shards) into one token stream addressed by position.
* :class:`ShardDataset` cuts that stream into windows of ``seq_len`` inputs plus next-token
  labels, exactly as :class:`~ferrotok.data.PackedDataset` does (window ``i`` covers stream
  tokens ``[i·L, i·L + L]``); with ``document_ids=True`` it also returns per-document
  ``position_ids`` and ``document_ids`` for block-causal attention.

The memory maps are opened lazily in each process and dropped when pickled, so a
``DataLoader`` with worker processes works (each worker maps the files itself).
"""

from __future__ import annotations

import json
import os
import struct
import warnings
from collections.abc import Sequence
from typing import Any, Union

import numpy as np
import numpy.typing as npt

from .writers import FORMATS

__all__ = ["read_shard", "TokenShards", "ShardDataset"]

StrPath = Union[str, "os.PathLike[str]"]

_SUFFIXES = (
    (".ids.npy", "numpy"),
    (".offsets.npy", "numpy"),
    (".ds.index", "datatrove"),
    (".ds.metadata", "datatrove"),
    (".ds", "datatrove"),
    (".idx", "megatron"),
)


def _shard_name(path: str, fmt: str | None) -> tuple[str, str]:
    """``(name, format)`` of a shard given any of its files (or its name and format)."""
    for suffix, f in _SUFFIXES:
        if path.endswith(suffix) and (fmt is None or fmt == f):
            return path[: -len(suffix)], f
    if path.endswith(".bin"):
        name = path[:-4]
        if fmt is None:
            if os.path.exists(name + ".idx"):
                fmt = "megatron"
            else:
                with open(path, "rb") as fh:
                    head = fh.read(8)
                magic = struct.unpack("<i", head[:4])[0] if len(head) >= 4 else 0
                fmt = "llmc" if magic in (20240520, 20240801) else "bin"
        return name, fmt
    if fmt is None:
        raise ValueError(f"cannot tell the shard format of {path}: pass format=")
    return path, fmt


def read_shard(
    path: StrPath, format: str | None = None, dtype: str | None = None
) -> tuple[npt.NDArray[Any], npt.NDArray[np.int64] | None]:
    """``(ids, offsets)`` of one shard: ``ids`` memory-mapped, ``offsets`` (documents + 1
    entries) from its index, or None for ``bin``/``llmc``. ``path`` is any of the shard's
    files (or its name, with ``format``). ``dtype`` is needed only for ``bin`` (default
    uint16) and ``datatrove`` (default: from its metadata, else uint16)."""
    p = os.fspath(path)
    name, fmt = _shard_name(p, format)
    if fmt not in FORMATS:
        raise ValueError(f"unknown shard format {fmt!r}: expected one of {', '.join(FORMATS)}")
    if fmt == "numpy":
        ids = np.load(name + ".ids.npy", mmap_mode="r")
        offsets = np.load(name + ".offsets.npy")
        return ids, offsets.astype(np.int64)
    if fmt == "megatron":
        with open(name + ".idx", "rb") as f:
            head = f.read(34)
            if head[:9] != b"MMIDIDX\x00\x00":
                raise ValueError(f"{name}.idx is not a Megatron index")
            code = head[17]
            (n,) = struct.unpack("<Q", head[18:26])
            lengths = np.frombuffer(f.read(4 * n), dtype="<i4")
        kind = {8: np.uint16, 4: np.int32, 5: np.int64, 1: np.uint8}.get(code)
        if kind is None:
            raise ValueError(f"{name}.idx: unsupported dtype code {code}")
        ids = np.memmap(name + ".bin", dtype=kind, mode="r")
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return ids, offsets
    if fmt == "llmc":
        header = np.fromfile(name + ".bin", dtype="<i4", count=256)
        magic, version, count = (int(x) for x in header[:3])
        if (magic, version) == (20240520, 1):
            kind = np.uint16
        elif (magic, version) == (20240801, 7):
            kind = np.uint32
        else:
            raise ValueError(f"{name}.bin: not an llm.c token file (magic {magic})")
        return np.memmap(name + ".bin", dtype=kind, mode="r", offset=1024, shape=(count,)), None
    if fmt == "datatrove":
        kind_name = dtype
        if kind_name is None and os.path.exists(name + ".ds.metadata"):
            with open(name + ".ds.metadata", encoding="utf-8") as f:
                size = f.readline().strip().rsplit("|", 1)[-1]
            kind_name = {"2": "uint16", "4": "uint32"}.get(size)
        ids = np.memmap(name + ".ds", dtype=np.dtype(kind_name or "uint16"), mode="r")
        ends = np.fromfile(name + ".ds.index", dtype="<u8").astype(np.int64)
        return ids, np.concatenate([np.zeros(1, np.int64), ends])
    return np.memmap(name + ".bin", dtype=np.dtype(dtype or "uint16"), mode="r"), None


def _shards_of(source: StrPath | Sequence[StrPath]) -> tuple[list[str], str | None, str | None]:
    """Shard file paths, their format and dtype from a job directory or a list of files."""
    if isinstance(source, (str, os.PathLike)) and os.path.isdir(source):
        d = os.fspath(source)
        mpath = os.path.join(d, "manifest.json")
        if not os.path.exists(mpath):
            raise FileNotFoundError(f"{d} has no manifest.json: pass the shard files instead")
        with open(mpath, encoding="utf-8") as f:
            m = json.load(f)
        files = [os.path.join(d, s["files"][0]) for s in m["shards"]]
        if not m.get("complete"):
            warnings.warn(f"{d}: the tokenize job is not complete", UserWarning, stacklevel=3)
        return files, m["job"]["format"], m["job"]["dtype"]
    if isinstance(source, (str, os.PathLike)):
        return [os.fspath(source)], None, None
    return [os.fspath(s) for s in source], None, None


class TokenShards:
    """The shards of a tokenize job as one memory-mapped token stream.

    Args:
        source: a job's output directory (shards in manifest order), one shard file, or a
            list of shard files.
        format: the shard format (default: from the manifest or the file names).
        dtype: for ``bin`` shards not listed in a manifest (default uint16).
    """

    def __init__(
        self,
        source: StrPath | Sequence[StrPath],
        *,
        format: str | None = None,
        dtype: str | None = None,
    ) -> None:
        files, fmt, kind = _shards_of(source)
        self.files = files
        self.format = format or fmt
        self.dtype = dtype or kind
        self._maps: list[npt.NDArray[Any]] | None = None
        self._offsets: list[npt.NDArray[np.int64] | None] = []
        sizes = []
        for f in files:
            ids, offsets = read_shard(f, self.format, self.dtype)
            sizes.append(len(ids))
            self._offsets.append(offsets)
            del ids
        self.starts = np.zeros(len(files) + 1, dtype=np.int64)
        np.cumsum(sizes, out=self.starts[1:])
        self._doc_ends: npt.NDArray[np.int64] | None = None

    @property
    def num_tokens(self) -> int:
        return int(self.starts[-1])

    def __len__(self) -> int:
        return self.num_tokens

    def _open(self) -> list[npt.NDArray[Any]]:
        if self._maps is None:
            self._maps = [read_shard(f, self.format, self.dtype)[0] for f in self.files]
        return self._maps

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_maps"] = None  # each process maps the files itself
        return state

    def tokens(self, start: int, stop: int) -> npt.NDArray[np.int64]:
        """Stream tokens ``[start, stop)`` as int64 (copied out of the maps)."""
        maps = self._open()
        start, stop = max(start, 0), min(stop, self.num_tokens)
        out = np.empty(max(stop - start, 0), dtype=np.int64)
        s = int(np.searchsorted(self.starts, start, side="right")) - 1
        at = 0
        pos = start
        while pos < stop:
            base = int(self.starts[s])
            end = min(stop, int(self.starts[s + 1]))
            out[at : at + end - pos] = maps[s][pos - base : end - base]
            at += end - pos
            pos = end
            s += 1
        return out

    def doc_ends(self, separator: int | None = None) -> npt.NDArray[np.int64]:
        """Stream positions just after each document (from the shard indexes, or, for
        shards without one, after each ``separator`` token, found by one pass)."""
        if self._doc_ends is None:
            parts = []
            for i, offsets in enumerate(self._offsets):
                base = int(self.starts[i])
                if offsets is not None:
                    parts.append(offsets[1:] + base)
                    continue
                if separator is None:
                    raise ValueError(
                        f"{self.format} shards have no document index: pass separator= "
                        "(the end-of-text id) to find document boundaries"
                    )
                ids = self._open()[i]
                step = 1 << 24
                for a in range(0, len(ids), step):
                    hits = np.flatnonzero(np.asarray(ids[a : a + step]) == separator)
                    parts.append(hits.astype(np.int64) + (base + a + 1))
            self._doc_ends = np.concatenate(parts) if parts else np.zeros(0, np.int64)
        return self._doc_ends


class ShardDataset:
    """Fixed-length causal-LM windows over memory-mapped shards (a map-style dataset).

    Window ``i`` is stream tokens ``[i·L, i·L + L]``: ``input_ids`` the first ``L``,
    ``labels`` the last ``L``; the final partial window is dropped. With ``document_ids``,
    items also hold ``position_ids`` (restarting at 0 at each document's first token) and
    ``document_ids`` (0 for the document the window starts in, then 1, 2, ...), which
    :func:`~ferrotok.data.document_causal_mask` turns into a block-causal mask.

    Args:
        source: a tokenize job's directory, or shard files (see :class:`TokenShards`).
        seq_len: ``L``.
        document_ids: also return ``position_ids`` and ``document_ids``.
        separator: for ``bin``/``llmc`` shards with ``document_ids``: the token that ends
            each document.
        as_tensors: int64 tensors (default, needs torch) or numpy arrays.
        format, dtype: see :class:`TokenShards`.
    """

    def __init__(
        self,
        source: StrPath | Sequence[StrPath] | TokenShards,
        seq_len: int,
        *,
        document_ids: bool = False,
        separator: int | None = None,
        as_tensors: bool = True,
        format: str | None = None,
        dtype: str | None = None,
    ) -> None:
        if not isinstance(seq_len, int) or seq_len <= 0:
            raise ValueError(f"seq_len must be a positive int, got {seq_len!r}")
        self.shards = (
            source if isinstance(source, TokenShards)
            else TokenShards(source, format=format, dtype=dtype)
        )
        self.seq_len = seq_len
        self.document_ids = document_ids
        self.separator = separator
        self.as_tensors = as_tensors
        if as_tensors:
            import torch  # noqa: F401 - fail now, not in a worker
        if document_ids:
            self.shards.doc_ends(separator)
        self._len = max(self.shards.num_tokens - 1, 0) // seq_len
        if self._len == 0:
            warnings.warn(
                f"the shards hold {self.shards.num_tokens} tokens, fewer than one sequence of "
                f"seq_len={seq_len} plus its label: the dataset is empty",
                UserWarning,
                stacklevel=2,
            )

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, index: int) -> dict[str, Any]:
        import operator

        index = operator.index(index)
        if not -self._len <= index < self._len:
            raise IndexError(f"index {index} out of range for {self._len} sequences")
        index %= self._len
        L = self.seq_len
        start = index * L
        window = self.shards.tokens(start, start + L + 1)
        item: dict[str, npt.NDArray[np.int64]] = {"input_ids": window[:-1], "labels": window[1:]}
        if self.document_ids:
            ends = self.shards.doc_ends(self.separator)
            t = np.arange(start, start + L, dtype=np.int64)
            d = np.searchsorted(ends, t, side="right")
            first = np.where(d > 0, ends[np.maximum(d - 1, 0)], 0)
            item["position_ids"] = t - first
            item["document_ids"] = (d - d[0]).astype(np.int64)
        if not self.as_tensors:
            return item
        import torch

        return {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in item.items()}
