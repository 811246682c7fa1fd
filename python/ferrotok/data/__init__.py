"""From a corpus of files to token shards, and from shards (or documents) to training batches.

The parts (each imported only when first used, so ``import ferrotok.data`` stays light):

* :func:`tokenize_files` (:mod:`.job`): text / JSONL / Parquet files, compressed or not, to
  Megatron, nanoGPT, llm.c, datatrove or numpy shards plus a manifest, on all cores, in
  bounded memory, resumable (``ferrotok tokenize`` on the command line).
* :func:`iter_documents` (:mod:`.readers`): the same inputs as a stream of ``str``.
* :func:`read_shard`, :class:`TokenShards`, :class:`ShardDataset` (:mod:`.datasets`): shards
  memory-mapped, cut into causal-LM windows for a ``DataLoader``.
* :mod:`ferrotok.data.ray`: the same on a Ray cluster (``pip install ferrotok[ray]``).

Packing documents already in memory:

Two ways to turn documents (lists of token ids) into sequences of ``seq_len`` inputs with their
next-token labels:

* :class:`PackedDataset` concatenates the documents, each followed by a separator token (e.g.
  ``<|endoftext|>``), and cuts the stream into consecutive windows — no padding, every token is a
  target exactly once (GPT-2's recipe).
* :class:`PaddedDataset` keeps one document per sequence, truncated or split to fit, padded on
  the right; ``attention_mask`` marks the real tokens and padded labels are ``-100``.

Items are dicts of int64 tensors of length ``seq_len`` (``input_ids``, ``labels``, ...), so the
default ``DataLoader`` collation stacks them into ``[b, seq_len]`` batches. ``labels`` are already
shifted: ``labels[t]`` is the token following ``input_ids[t]``. Pure Python plus torch, which is
imported only when items are built as tensors (``as_tensors=False`` returns lists and needs no
torch). This module never needs the compiled extension.

Example:
    >>> docs = [[1, 2, 3], [4, 5], [6, 7, 8, 9]]
    >>> ds = PackedDataset(docs, seq_len=4, separator=0, as_tensors=False)
    >>> len(ds), ds[0]["input_ids"], ds[0]["labels"]
    (2, [1, 2, 3, 0], [2, 3, 0, 4])
"""

from __future__ import annotations

import operator
import warnings
from array import array
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

__all__ = [
    "IGNORE_INDEX",
    "PackedDataset",
    "PaddedDataset",
    "document_causal_mask",
    "tokenize_files",
    "iter_documents",
    "BadInput",
    "read_shard",
    "TokenShards",
    "ShardDataset",
]

_LAZY = {
    "tokenize_files": "job",
    "iter_documents": "readers",
    "BadInput": "readers",
    "read_shard": "datasets",
    "TokenShards": "datasets",
    "ShardDataset": "datasets",
}

if TYPE_CHECKING:
    from .datasets import ShardDataset, TokenShards, read_shard
    from .job import tokenize_files
    from .readers import BadInput, iter_documents


def __getattr__(name: str) -> Any:
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'ferrotok.data' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{mod}"), name)
    globals()[name] = value
    return value


#: Label value ignored by the loss (``torch.nn.CrossEntropyLoss``'s default ``ignore_index``).
IGNORE_INDEX = -100


def _as_ids(doc: Sequence[int], index: int) -> array[int]:
    if isinstance(doc, (bytes, bytearray, str)) or (
        isinstance(doc, memoryview) and doc.format in ("B", "b", "c")
    ):
        # `array("q", b)` would read the raw bytes as 8-byte ints.
        raise TypeError(
            f"document {index} must be a sequence of int token ids, got {type(doc).__name__}"
        )
    try:
        ids = array("q", doc)
    except (TypeError, OverflowError) as e:
        raise TypeError(f"document {index} must be a sequence of int token ids: {e}") from None
    if ids and min(ids) < 0:
        raise ValueError(f"document {index} contains a negative token id ({min(ids)})")
    return ids


def _check_seq_len(seq_len: int) -> None:
    if not isinstance(seq_len, int) or seq_len <= 0:
        raise ValueError(f"seq_len must be a positive int, got {seq_len!r}")


def _check_token(name: str, value: int | None) -> None:
    if value is not None and (not isinstance(value, int) or value < 0):
        raise ValueError(f"{name} must be a non-negative int token id, got {value!r}")


def _to_output(item: dict[str, list[int]], as_tensors: bool) -> dict[str, Any]:
    if not as_tensors:
        return item
    import torch

    return {k: torch.tensor(v, dtype=torch.long) for k, v in item.items()}


def _require_torch(as_tensors: bool) -> None:
    if as_tensors:
        try:
            import torch  # noqa: F401
        except ImportError:
            raise ImportError(
                "as_tensors=True needs PyTorch (pip install torch); pass as_tensors=False for lists"
            ) from None


class _Stream:
    """A packed token stream handed to :class:`PackedDataset` as is (``from_stream``)."""

    def __init__(self, tokens: Any) -> None:
        self.tokens = tokens

    def __iter__(self) -> Any:  # only to be an Iterable for the type checker
        return iter(())


class PackedDataset:
    """Documents concatenated into one stream and cut into windows of ``seq_len`` inputs.

    Window ``i`` covers stream tokens ``[i·L, i·L + L]`` (``L + 1`` tokens): the first ``L`` are
    ``input_ids``, the last ``L`` are ``labels``, so consecutive windows share one boundary token
    and each stream token after the first is a target exactly once.

    Args:
        documents: token-id sequences.
        seq_len: ``L``.
        separator: token appended after every document (e.g. the encoding's ``eot_token``);
            None concatenates them directly.
        drop_last: drop the final partial window (default). Otherwise it is padded with
            ``pad_id``, labels ``-100`` and ``attention_mask`` 0 on the padding.
        pad_id: padding input id when ``drop_last=False``.
        document_ids: also return ``position_ids`` (restarting at 0 after every separator) and
            ``document_ids`` (index within the window), for per-document positions and
            block-causal attention (:func:`document_causal_mask`); needs a ``separator``.
        as_tensors: items as int64 tensors (default) or as lists.

    Items: ``{"input_ids", "labels"}`` (+ ``"attention_mask"`` when ``drop_last=False``,
    + ``"position_ids"``, ``"document_ids"`` when ``document_ids=True``), each of length ``L``.

    Example:
        >>> ds = PackedDataset([[5, 6, 7], [8, 9]], seq_len=3, separator=0, document_ids=True,
        ...                    as_tensors=False)
        >>> ds.stream.tolist()
        [5, 6, 7, 0, 8, 9, 0]
        >>> item = ds[1]
        >>> item["input_ids"], item["labels"], item["position_ids"], item["document_ids"]
        ([0, 8, 9], [8, 9, 0], [3, 0, 1], [0, 1, 1])
        >>> PackedDataset([[5, 6, 7], [8, 9]], seq_len=8, separator=0, drop_last=False,
        ...               as_tensors=False)[0]["attention_mask"]
        [1, 1, 1, 1, 1, 1, 0, 0]
    """

    def __init__(
        self,
        documents: Iterable[Sequence[int]],
        seq_len: int,
        *,
        separator: int | None = None,
        drop_last: bool = True,
        pad_id: int = 0,
        document_ids: bool = False,
        as_tensors: bool = True,
    ) -> None:
        _check_seq_len(seq_len)
        _check_token("separator", separator)
        _check_token("pad_id", pad_id)
        if document_ids and separator is None:
            raise ValueError("document_ids=True needs a separator to find document boundaries")
        _require_torch(as_tensors)
        self.seq_len = seq_len
        self.separator = separator
        self.drop_last = drop_last
        self.pad_id = pad_id
        self.document_ids = document_ids
        self.as_tensors = as_tensors
        self.num_documents: int | None
        if isinstance(documents, _Stream):
            # An already packed stream (e.g. a memory-mapped shard): used as is, not copied.
            self.stream: Any = documents.tokens
            self.num_documents = None
        else:
            stream = array("q")
            num_docs = 0
            for i, doc in enumerate(documents):
                stream.extend(_as_ids(doc, i))
                if separator is not None:
                    stream.append(separator)
                num_docs += 1
            self.num_documents = num_docs
            self.stream = stream
        targets = max(len(self.stream) - 1, 0)  # tokens that can be predicted
        self._len = targets // seq_len if drop_last else -(-targets // seq_len)
        if self._len == 0:
            warnings.warn(
                f"the packed stream holds {len(self.stream)} tokens, fewer than one sequence "
                f"of seq_len={seq_len} plus its label: the dataset is empty",
                UserWarning,
                stacklevel=2,
            )

    @classmethod
    def from_stream(
        cls,
        tokens: Any,
        seq_len: int,
        *,
        separator: int | None = None,
        drop_last: bool = True,
        pad_id: int = 0,
        document_ids: bool = False,
        as_tensors: bool = True,
    ) -> PackedDataset:
        """Windows over an already packed 1-d token stream — a numpy array, an
        ``np.memmap`` of a shard (see :func:`read_shard`), an ``array.array`` — used in
        place, never copied. ``separator`` is the token that ends each document in it
        (needed for ``document_ids``); nothing is appended.

        Example:
            >>> import numpy as np
            >>> ds = PackedDataset.from_stream(np.arange(9, dtype=np.uint16), 4,
            ...                                as_tensors=False)
            >>> len(ds), ds[1]["input_ids"], ds[1]["labels"]
            (2, [4, 5, 6, 7], [5, 6, 7, 8])
        """
        if getattr(tokens, "ndim", 1) != 1:
            raise ValueError("tokens must be a 1-d sequence of token ids")
        return cls(
            _Stream(tokens), seq_len, separator=separator, drop_last=drop_last, pad_id=pad_id,
            document_ids=document_ids, as_tensors=as_tensors,
        )

    @property
    def num_tokens(self) -> int:
        """Length of the packed stream (documents plus separators)."""
        return len(self.stream)

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, index: int) -> dict[str, Any]:
        index = operator.index(index)  # a float or a str is a TypeError, as for a list
        if not -self._len <= index < self._len:
            raise IndexError(f"index {index} out of range for {self._len} sequences")
        index %= self._len
        L = self.seq_len
        window = [int(t) for t in self.stream[index * L : index * L + L + 1].tolist()]
        real = len(window) - 1  # real input positions
        pad = L - real
        item = {
            "input_ids": window[:-1] + [self.pad_id] * pad,
            "labels": window[1:] + [IGNORE_INDEX] * pad,
        }
        if not self.drop_last:
            item["attention_mask"] = [1] * real + [0] * pad
        if self.document_ids:
            positions, docs = [], []
            # a window may start mid-document: find where that document began
            start = index * L
            j = start - 1
            while j >= 0 and self.stream[j] != self.separator:
                j -= 1
            pos, doc = start - (j + 1), 0
            for tok in window[:-1]:
                positions.append(pos)
                docs.append(doc)
                if tok == self.separator:
                    pos, doc = 0, doc + 1
                else:
                    pos += 1
            item["position_ids"] = positions + [0] * pad
            item["document_ids"] = docs + [doc + 1] * pad
        return _to_output(item, self.as_tensors)


class PaddedDataset:
    """One document per sequence, right-padded to ``seq_len`` with an attention mask.

    Each document (plus ``separator`` if given) yields ``len - 1`` predictions; documents longer
    than ``seq_len + 1`` tokens are truncated (``overflow="truncate"``) or split into several
    sequences (``overflow="split"``, consecutive chunks sharing one boundary token). Documents
    with fewer than 2 tokens have nothing to predict and are skipped.

    Args:
        documents: token-id sequences.
        seq_len: sequence length ``L``.
        pad_id: padding input id (labels are ``-100`` there, ``attention_mask`` 0).
        separator: token appended to every document (e.g. ``eot_token``), or None.
        overflow: ``"truncate"`` or ``"split"``.
        as_tensors: items as int64 tensors (default) or as lists.

    Items: ``{"input_ids", "labels", "attention_mask"}``, each of length ``L``.

    Example:
        >>> ds = PaddedDataset([[5, 6, 7], [8]], seq_len=4, pad_id=0, separator=1,
        ...                    as_tensors=False)
        >>> ds[0]
        {'input_ids': [5, 6, 7, 0], 'labels': [6, 7, 1, -100], 'attention_mask': [1, 1, 1, 0]}
        >>> ds[1]
        {'input_ids': [8, 0, 0, 0], 'labels': [1, -100, -100, -100], 'attention_mask': [1, 0, 0, 0]}
    """

    def __init__(
        self,
        documents: Iterable[Sequence[int]],
        seq_len: int,
        *,
        pad_id: int = 0,
        separator: int | None = None,
        overflow: str = "truncate",
        as_tensors: bool = True,
    ) -> None:
        _check_seq_len(seq_len)
        _check_token("pad_id", pad_id)
        _check_token("separator", separator)
        if overflow not in ("truncate", "split"):
            raise ValueError(f"overflow must be 'truncate' or 'split', got {overflow!r}")
        _require_torch(as_tensors)
        self.seq_len = seq_len
        self.pad_id = pad_id
        self.separator = separator
        self.overflow = overflow
        self.as_tensors = as_tensors
        self.sequences: list[array[int]] = []
        self.num_documents = 0
        self.num_skipped = 0
        for i, doc in enumerate(documents):
            ids = _as_ids(doc, i)
            if separator is not None:
                ids.append(separator)
            self.num_documents += 1
            if len(ids) < 2:
                self.num_skipped += 1
                continue
            if overflow == "truncate":
                self.sequences.append(ids[: seq_len + 1])
            else:
                for start in range(0, len(ids) - 1, seq_len):
                    self.sequences.append(ids[start : start + seq_len + 1])

    def __len__(self) -> int:
        return len(self.sequences)

    def __getitem__(self, index: int) -> dict[str, Any]:
        window = self.sequences[index].tolist()
        real = len(window) - 1
        pad = self.seq_len - real
        item = {
            "input_ids": window[:-1] + [self.pad_id] * pad,
            "labels": window[1:] + [IGNORE_INDEX] * pad,
            "attention_mask": [1] * real + [0] * pad,
        }
        return _to_output(item, self.as_tensors)


def document_causal_mask(document_ids: Any) -> Any:
    """Block-causal bool mask ``[b, s, s]`` (True = attend) from ``document_ids [b, s]``.

    Token ``i`` attends token ``j`` when ``j <= i`` and both belong to the same document, so
    packed documents do not see each other. Pass it as ``mask=`` to ``TransformerLM``.

    Example:
        >>> import torch
        >>> document_causal_mask(torch.tensor([[0, 0, 1]]))[0].int().tolist()
        [[1, 0, 0], [1, 1, 0], [0, 0, 1]]
    """
    import torch

    if not isinstance(document_ids, torch.Tensor):
        raise TypeError(f"document_ids must be a torch tensor, got {type(document_ids).__name__}")
    if document_ids.dim() != 2:
        raise ValueError(f"document_ids must be [b, s], got {tuple(document_ids.shape)}")
    s = document_ids.shape[1]
    same = document_ids[:, :, None] == document_ids[:, None, :]
    causal = torch.ones(s, s, dtype=torch.bool, device=document_ids.device).tril()
    return same & causal
