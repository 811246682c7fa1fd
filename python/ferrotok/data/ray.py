"""ferrotok on Ray Data: tokenize a ``ray.data.Dataset``, write its shards, train a vocabulary.

Needs ``pip install ferrotok[ray]`` (ray and pyarrow); ``import ferrotok`` never imports ray.

* :class:`Tokenize` is a callable class for ``Dataset.map_batches``: each worker builds the
  encoding once and adds an ``ids`` column (Arrow ``large_list<uint16|uint32>``, BOS/EOT
  included) and a ``num_tokens`` column to every batch. The ids are exactly
  ``Encoding.encode``'s for each row.
* :func:`write_shards` streams a tokenized dataset to shards in any of
  :mod:`ferrotok.data.writers`' formats, with the same cutting rule and manifest as
  :func:`~ferrotok.data.tokenize_files`; with ``preserve_order`` set in the dataset's
  ``DataContext`` (it does so for the datasets it is given) the shards are the same bytes as
  ``tokenize_files`` writes for the same documents.
* :func:`count_pieces` counts pieces block by block on the workers and sums the
  ``PieceCounts`` on the driver; :func:`train` then runs ``train_from_counts``: the same
  vocabulary as ``ferrotok.train`` on the same texts in one process (counts add exactly).

Example (a local cluster; on a real one, ``ray.init(address="auto")``)::

    import ray, ferrotok
    from ferrotok.data.ray import Tokenize, write_shards

    ds = ray.data.read_parquet("s3://bucket/corpus/")  # a "text" column
    tokens = ds.map_batches(Tokenize, fn_constructor_kwargs={"encoding": "cl100k_base"},
                            batch_format="pyarrow", concurrency=8)
    write_shards(tokens, "/shared/shards", encoding="cl100k_base", format="megatron")
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Union

if TYPE_CHECKING:
    from ..core import Encoding
    from ..train import PieceCounts

__all__ = ["Tokenize", "write_shards", "count_pieces", "train"]

StrPath = Union[str, "os.PathLike[str]"]


def _texts(batch: Any, column: str) -> list[Any]:
    """The ``column`` of a batch (pyarrow Table, dict of numpy arrays, pandas DataFrame)."""
    if hasattr(batch, "column_names"):  # pyarrow.Table
        if column not in batch.column_names:
            raise KeyError(f"no column {column!r} (columns: {', '.join(batch.column_names)})")
        values: list[Any] = batch.column(column).to_pylist()
        return values
    if column not in batch:
        raise KeyError(f"no column {column!r} (columns: {', '.join(map(str, batch))})")
    col = batch[column]
    return list(col.tolist() if hasattr(col, "tolist") else col)


def _check_texts(texts: list[Any], column: str) -> list[str]:
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            kind = "null" if t is None else type(t).__name__
            raise TypeError(f"row {i} of the batch: column {column!r} is {kind}, not a string")
    return texts


class Tokenize:
    """A ``map_batches`` callable class: adds token ids to each batch.

    Args:
        encoding: an ``Encoding``, a registered name or a saved encoding's path (built once
            per worker).
        column: the text column.
        output_column: the ids column (``large_list`` of uint16 when the vocabulary fits,
            else uint32); ``num_tokens`` (int64) is added too.
        bos, eot, allowed_special: as for :func:`~ferrotok.data.tokenize_files` (``eot``
            defaults to the encoding's ``<|endoftext|>``; pass None for none).
        num_threads: encoding threads per worker (default 1: Ray's parallelism is the
            workers; raise it with ``num_cpus=`` on ``map_batches``).

    Returns a ``pyarrow.Table`` for a pyarrow batch, else a dict of numpy arrays (ids as an
    object array of uint arrays).
    """

    def __init__(
        self,
        encoding: Encoding | str | os.PathLike[str] = "cl100k_base",
        column: str = "text",
        *,
        output_column: str = "ids",
        bos: int | str | None = None,
        eot: int | str | None = "default",
        allowed_special: str | Sequence[str] = (),
        num_threads: int = 1,
    ) -> None:
        from .job import resolve_encoding, token_id
        from .writers import dtype_for_vocab

        self.enc = resolve_encoding(encoding)
        self.column = column
        self.output_column = output_column
        self.bos = token_id(self.enc, "bos", bos)
        if eot == "default":
            eot = self.enc._special_tokens.get("<|endoftext|>")
        self.eot = token_id(self.enc, "eot", eot)
        self.allowed: str | set[str] = (
            "all" if allowed_special == "all" else set(allowed_special)
        )
        self.num_threads = num_threads
        self.dtype = dtype_for_vocab(self.enc.n_vocab)

    def encode(self, texts: list[str]) -> tuple[Any, Any]:
        """``(ids, offsets)`` of ``texts`` with BOS/EOT, ids in the output dtype."""
        import numpy as np

        from .native import with_specials

        if self.allowed:
            ids, offsets = self.enc.encode_batch_to_numpy(
                texts, num_threads=self.num_threads, allowed_special=self.allowed,  # type: ignore[arg-type]
                disallowed_special=(),
            )
        else:
            ids, offsets = self.enc.encode_ordinary_batch_to_numpy(
                texts, num_threads=self.num_threads
            )
        ids, lengths = with_specials(ids, offsets, self.bos, self.eot)
        out = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=out[1:])
        return ids.astype(self.dtype, copy=False), out

    def __call__(self, batch: Any) -> Any:
        import numpy as np

        texts = _check_texts(_texts(batch, self.column), self.column)
        ids, offsets = self.encode(texts)
        if hasattr(batch, "column_names"):
            import pyarrow as pa

            lists = pa.LargeListArray.from_arrays(pa.array(offsets), pa.array(ids))
            table = batch
            for name, col in ((self.output_column, lists),
                              ("num_tokens", pa.array(np.diff(offsets)))):
                if name in table.column_names:
                    table = table.drop_columns([name])
                table = table.append_column(name, col)
            return table
        out = dict(batch)
        rows = np.empty(len(texts), dtype=object)
        for i in range(len(texts)):
            rows[i] = ids[offsets[i] : offsets[i + 1]]
        out[self.output_column] = rows
        out["num_tokens"] = np.diff(offsets)
        return out


def write_shards(
    dataset: Any,
    output_dir: StrPath,
    *,
    encoding: Encoding | str | os.PathLike[str] = "cl100k_base",
    column: str = "ids",
    format: str = "megatron",
    shard_tokens: int = 100_000_000,
    prefix: str = "shard",
    overwrite: bool = False,
    batch_size: int = 4096,
) -> dict[str, Any]:
    """Writes the ``column`` of a tokenized dataset (rows of ids, e.g. from
    :class:`Tokenize`) to shards in ``output_dir``, in dataset order; returns the manifest.

    The rows are streamed to this process (the driver) and written here: shards live on
    the driver's filesystem (a shared one on a cluster). ``encoding`` names the encoding in
    the manifest and picks the dtype. An existing job's directory is refused unless
    ``overwrite``; there is no resume (write again).
    """
    import numpy as np
    import pyarrow as pa

    from .job import (
        MANIFEST,
        Job,
        JobProgress,
        WriteStage,
        clear_shards,
        encoding_hash,
        prepare_manifest,
        write_manifest,
    )
    from .readers import Batch, Position, Skipped
    from .writers import FORMATS, dtype_for_vocab

    if format not in FORMATS:
        raise ValueError(f"unknown format {format!r}: expected one of {', '.join(FORMATS)}")
    from .job import resolve_encoding

    enc = resolve_encoding(encoding)
    dtype = dtype_for_vocab(enc.n_vocab)
    directory = os.fspath(output_dir)
    os.makedirs(directory, exist_ok=True)
    identity = {
        "source": "ray",
        "encoding": enc.name,
        "encoding_sha256": encoding_hash(enc),
        "n_vocab": enc.n_vocab,
        "format": format,
        "dtype": dtype.name,
        "shard_tokens": shard_tokens,
        "prefix": prefix,
        "column": column,
    }
    try:
        with open(os.path.join(directory, MANIFEST), encoding="utf-8") as f:
            same = json.load(f).get("job") == identity
    except (OSError, ValueError, AttributeError):
        same = False
    if same:  # this write done before (or begun): start it again
        clear_shards(directory, prefix)
    manifest = prepare_manifest(directory, Job(identity, []), prefix, overwrite)
    writer = WriteStage(
        directory, Job(identity, []), manifest, fmt=format, prefix=prefix, dtype=dtype,
        shard_tokens=shard_tokens, bos=None, eot=None, tokenizer=enc.name,
        start=Position(0, 0), skipped=Skipped(), progress=JobProgress(False, 0),
    )
    ctx = getattr(dataset, "context", None)
    if ctx is not None:
        ctx.execution_options.preserve_order = True
    try:
        rows = 0
        for table in dataset.iter_batches(batch_size=batch_size, batch_format="pyarrow"):
            col = table.column(column).combine_chunks()
            if not (pa.types.is_list(col.type) or pa.types.is_large_list(col.type)):
                raise TypeError(f"column {column!r} is {col.type}, expected lists of ids")
            if col.null_count:
                raise ValueError(f"column {column!r} has null rows")
            offsets = np.asarray(col.offsets, dtype=np.int64)
            ids = np.asarray(col.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0])))
            offsets = offsets - offsets[0]
            rows += len(col)
            writer.write(Batch([], Position(0, rows), 0, Skipped()), ids, offsets)
        writer.finish()
    except BaseException:
        writer.abort()
        raise
    manifest.update({"complete": True, "documents": writer.total_docs,
                     "tokens": writer.total_tokens, "skipped": Skipped().to_json()})
    write_manifest(directory, manifest)
    return manifest


def _count_batch(batch: Any, column: str, pattern: str | None,
                 special_tokens: list[str] | None) -> dict[str, Any]:
    from ..train import count_pieces as count_local

    texts = _check_texts(_texts(batch, column), column)
    counts = count_local(texts, pattern=pattern, special_tokens=special_tokens, num_threads=1,
                         progress=False)
    return {"counts": [counts.to_bytes()]}


def count_pieces(
    dataset: Any,
    column: str = "text",
    *,
    pattern: str | None = None,
    special_tokens: Sequence[str] | None = None,
    batch_size: int = 4096,
    **map_batches_args: Any,
) -> PieceCounts:
    """``ferrotok.count_pieces`` of the ``column`` of a Ray dataset: each batch is counted
    on a worker, the tables are summed here. ``map_batches_args`` go to ``map_batches``
    (e.g. ``concurrency=``, ``num_cpus=``)."""

    from ..train import PieceCounts, resolve_pattern

    pat = resolve_pattern(pattern)
    specials = list(special_tokens or [])
    counted = dataset.map_batches(
        _count_batch, fn_kwargs={"column": column, "pattern": pat, "special_tokens": specials},
        batch_size=batch_size, batch_format="pyarrow", **map_batches_args,
    )
    total = PieceCounts(pat, specials)
    # pyarrow, not numpy: a numpy bytes array would strip the tables' trailing NUL bytes
    for b in counted.iter_batches(batch_format="pyarrow"):
        for blob in b.column("counts").to_pylist():
            total = total + PieceCounts.from_bytes(blob)
    return total


def train(
    dataset: Any,
    vocab_size: int,
    column: str = "text",
    *,
    pattern: str | None = None,
    special_tokens: Sequence[str] | None = None,
    min_frequency: int | None = None,
    max_token_length: int | None = None,
    name: str = "trained",
    **map_batches_args: Any,
) -> Encoding:
    """``ferrotok.train`` on the ``column`` of a Ray dataset: counting on the workers
    (:func:`count_pieces`), merging here (``train_from_counts``). Same vocabulary as
    training on the same texts in one process."""
    from ..train import train_from_counts

    counts = count_pieces(dataset, column, pattern=pattern, special_tokens=special_tokens,
                          **map_batches_args)
    return train_from_counts(counts, vocab_size, min_frequency=min_frequency,
                             max_token_length=max_token_length, name=name, progress=False)
