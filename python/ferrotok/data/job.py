"""``tokenize_files``: a corpus of files in, token shards and a manifest out.

What the job promises:

* The shards hold, in input order, each document's ids exactly as ``Encoding.encode`` gives
  them (special-token text encoded as text unless ``allowed_special`` says otherwise), with
  ``bos`` before and ``eot`` after each document when set (``eot`` defaults to the encoding's
  ``<|endoftext|>``).
* A shard holds whole documents: it is closed before the first document that would take it
  past ``shard_tokens`` (a longer document gets a shard of its own). Shard boundaries depend
  only on the documents, so the output is byte for byte the same whatever ``num_threads``,
  the batch size or an interruption and resume.
* Memory is bounded: documents are read in batches of about ``batch_bytes``, with at most
  two batches queued between the reader, the encoder and the writer, whatever the corpus
  size.
* Reading (and decompressing), encoding and writing run at once, in three threads; encoding
  runs on ``num_threads`` Rust threads outside the GIL. JSONL lines and Parquet values are
  parsed on those threads too (:mod:`ferrotok.data.native`): the reader thread only reads.
* No half-written shard is ever visible: shard files are written as ``*.tmp`` and renamed
  when complete; Ctrl-C (``KeyboardInterrupt``) removes the unfinished one. After each shard,
  ``manifest.json`` records it and where in the input the next one starts, so running the same
  job again resumes after the last complete shard (a different job in the same directory is
  refused unless ``overwrite=True``).
* Bad records raise :class:`~ferrotok.data.readers.BadInput` (file and line), or with
  ``skip_bad=True`` are skipped and counted in the manifest.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

from ..progress import Line, end_line
from .native import EncodeStage, laid_out, with_specials
from .readers import Batch, Position, Skipped, expand_inputs, iter_segments
from .readers import input_format as _input_format
from .writers import FORMATS, ShardWriter, dtype_for_vocab

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from ..core import Encoding

__all__ = ["tokenize_files", "resolve_encoding", "encoding_hash", "with_specials", "MANIFEST"]

StrPath = Union[str, "os.PathLike[str]"]

#: The manifest's file name in the output directory.
MANIFEST = "manifest.json"
_MANIFEST_FORMAT = "ferrotok-shards"
_DEFAULT = "default"
_QUEUE = 2  # batches in flight between two stages

# The writing stage (`Job`, `WriteStage`, `JobProgress`, the manifest functions and
# `token_id`) is shared with `ray.write_shards`, which feeds it batches from a Ray dataset.


def resolve_encoding(encoding: Encoding | str | os.PathLike[str]) -> Encoding:
    """An :class:`Encoding` from itself, a registered name, or the path of an encoding saved
    with ``Encoding.save``."""
    from ..core import Encoding

    if isinstance(encoding, Encoding):
        return encoding
    if isinstance(encoding, os.PathLike) or (
        isinstance(encoding, str) and os.path.exists(encoding)
    ):
        return Encoding.load(os.fspath(encoding))
    if isinstance(encoding, str):
        from ..registry import get_encoding

        return get_encoding(encoding)
    raise TypeError(f"encoding must be an Encoding, a name or a path, got {encoding!r}")


def encoding_hash(enc: Encoding) -> str:
    """sha256 of what decides an encoding's ids: its ranks, pattern and special tokens."""
    from ..load import format_tiktoken_bpe

    h = hashlib.sha256()
    h.update(format_tiktoken_bpe(enc._mergeable_ranks))
    h.update(enc._pat_str.encode("utf-8", "surrogatepass"))
    h.update(json.dumps(sorted(enc._special_tokens.items())).encode("utf-8"))
    return h.hexdigest()


def token_id(enc: Encoding, what: str, value: int | str | None) -> int | None:
    """The id of ``bos``/``eot`` (``what``) given as an id, a special token's text or None,
    checked against ``enc``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TypeError(f"{what} must be a token id, a special token's text or None")
    if isinstance(value, str):
        if value not in enc._special_tokens:
            raise ValueError(f"{what}={value!r} is not a special token of {enc.name}")
        return enc._special_tokens[value]
    if not 0 <= value < enc.n_vocab:
        raise ValueError(f"{what}={value} is not an id of {enc.name} (0..{enc.n_vocab - 1})")
    return value


@dataclass
class Job:
    """What decides the output: the same job in the same directory resumes."""

    identity: dict[str, Any]
    paths: list[str]


def write_manifest(directory: str, manifest: dict[str, Any]) -> None:
    """Replaces ``directory``'s manifest by ``manifest``, atomically and flushed to disk."""
    path = os.path.join(directory, MANIFEST)
    tmp = path + ".tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(manifest, f, indent=1)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:  # Ctrl-C part way: the previous manifest stays, whole
        try:
            os.remove(tmp)
        except FileNotFoundError:
            pass
        raise


class JobProgress:
    """Bytes, documents, tokens and MB/s on stderr: on a terminal one line redrawn in place
    at most twice a second (a :class:`ferrotok.progress.Line`, so that a message printed
    after :func:`ferrotok.progress.end_line` starts a line of its own), elsewhere a line
    every 10 seconds."""

    def __init__(self, enabled: bool, total_bytes: int) -> None:
        self.enabled = enabled
        self.total = total_bytes
        self.t0 = time.monotonic()
        self.last = 0.0
        self.line = Line(enabled)
        self.tty = self.line.enabled
        self.shown_at = (-1, -1, -1)

    def __call__(self, nbytes: int, docs: int, tokens: int, final: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not final and now - self.last < (0.5 if self.tty else 10.0):
            return
        if final and self.shown_at == (nbytes, docs, tokens):
            end_line()  # the last line drawn says it already
            return
        self.last = now
        self.shown_at = (nbytes, docs, tokens)
        dt = max(now - self.t0, 1e-9)
        mb = nbytes / 1e6
        pct = f" ({100 * nbytes / self.total:.0f}% of files)" if self.total else ""
        line = (
            f"tokenize: {mb:,.1f} MB{pct}, {docs:,} docs, {tokens:,} tokens, "
            f"{mb / dt:,.1f} MB/s, {tokens / dt / 1e6:,.2f} M tokens/s"
        )
        if self.tty:
            self.line.draw(line)
            if final:
                end_line()
        else:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()


class WriteStage:
    """The writing stage: adds BOS/EOT, cuts shards, renames them into place, keeps the
    manifest. Runs in its own thread; every method but ``run`` is private to it."""

    def __init__(
        self,
        directory: str,
        job: Job,
        manifest: dict[str, Any],
        *,
        fmt: str,
        prefix: str,
        dtype: np.dtype[Any],
        shard_tokens: int,
        bos: int | None,
        eot: int | None,
        tokenizer: str,
        start: Position,
        skipped: Skipped,
        progress: JobProgress,
    ) -> None:
        self.directory = directory
        self.job = job
        self.manifest = manifest
        self.fmt = fmt
        self.prefix = prefix
        self.dtype = dtype
        self.shard_tokens = shard_tokens
        self.bos = bos
        self.eot = eot
        self.tokenizer = tokenizer
        self.shard: ShardWriter | None = None
        self.pos = start  # where the batch being written starts
        self.skipped = skipped  # skipped records up to self.pos
        self.docs_in_batch = 0  # documents of the current batch already written
        self.docs_offset = 0  # documents of the current batch dropped before it came here
        self.progress = progress
        shards = manifest["shards"]
        self.total_docs = sum(s["documents"] for s in shards)
        self.total_tokens = sum(s["tokens"] for s in shards)
        self.bytes_done = 0
        self.error: BaseException | None = None

    def _open(self) -> ShardWriter:
        if self.shard is None:
            name = f"{self.prefix}_{len(self.manifest['shards']):05d}"
            self.shard = ShardWriter(self.directory, name, self.fmt, self.dtype, self.tokenizer)
        return self.shard

    def _close(self) -> None:
        shard, self.shard = self.shard, None
        if shard is None or shard.num_documents == 0:
            if shard is not None:
                shard.abort()
            return
        try:
            files = shard.close()
        except BaseException:
            shard.abort()  # no unfinished file is left behind
            raise
        self.manifest["shards"].append(
            {
                "files": [os.path.basename(f) for f in files],
                "documents": shard.num_documents,
                "tokens": shard.num_tokens,
                # where the next shard's first document is: skip `documents` documents
                # after the input position `file`, `record`
                "next": {
                    "file": self.pos.file,
                    "record": self.pos.record,
                    "documents": self.docs_in_batch,
                    "skipped": self.skipped.to_json(),
                },
            }
        )
        write_manifest(self.directory, self.manifest)

    def write(
        self, batch: Batch, ids: npt.NDArray[Any], offsets: npt.NDArray[Any], dropped: int = 0
    ) -> None:
        """Writes a batch's documents (``ids[offsets[i]:offsets[i + 1]]`` is document ``i``,
        without BOS/EOT); the first ``dropped`` of the batch were left out (they are in the
        shards already) and count for the resume position."""
        laid = laid_out(ids, offsets, self.bos, self.eot, self.dtype.name)
        self.write_chunks(batch, [laid], dropped)

    def write_chunks(
        self, batch: Batch, chunks: list[tuple[npt.NDArray[Any], npt.NDArray[Any]]],
        dropped: int = 0,
    ) -> None:
        """As :meth:`write`, the documents given laid out for the shards: each chunk's ids
        already hold BOS/EOT and are of the shards' dtype, and its offsets count them."""
        import numpy as np

        self.docs_offset = self.docs_in_batch = dropped
        done = 0  # documents of the earlier chunks
        for ids, offsets in chunks:
            n = len(offsets) - 1
            i = 0  # next document of this chunk
            while i < n:
                shard = self._open()
                room = self.shard_tokens - shard.num_tokens
                base = int(offsets[i])
                # documents i..i+k-1 fit: they end at most `room` past `base`
                k = int(np.searchsorted(offsets, base + room, side="right")) - 1 - i
                if k == 0 and shard.num_tokens == 0:
                    k = 1  # a document longer than a shard gets a shard of its own
                if k:
                    stop = int(offsets[i + k])
                    shard.write(ids[base:stop], np.diff(offsets[i : i + k + 1]))
                    i += k
                    self.docs_in_batch = self.docs_offset + done + i
                    self.total_docs += k
                    self.total_tokens += stop - base
                if i < n:  # the next document does not fit: the shard is full
                    self._close()
            done += n
        self.bytes_done += batch.nbytes
        self.pos = batch.end
        self.skipped = batch.skipped
        self.docs_in_batch = self.docs_offset = 0
        self.progress(self.bytes_done, self.total_docs, self.total_tokens)

    def finish(self) -> None:
        self._close()

    def abort(self) -> None:
        if self.shard is not None:
            self.shard.abort()
            self.shard = None

    def run(self, q: queue.Queue[Any]) -> None:
        """Writes the batches from ``q`` until None (finish) or ``"abort"``."""
        ended = False  # the end marker was taken from the queue
        try:
            while True:
                item = q.get()
                if item is None or isinstance(item, str):
                    ended = True
                    if item is None:
                        self.finish()
                    else:
                        self.abort()
                    return
                self.write_chunks(*item)
        except BaseException as e:  # noqa: BLE001 - handed to the main thread
            self.error = e
            self.abort()
            # Keep draining until the end marker, so the producer never blocks on a full queue.
            while not ended:
                item = q.get()
                ended = item is None or isinstance(item, str)


def _drop_documents(
    chunks: list[tuple[npt.NDArray[Any], npt.NDArray[Any]]], k: int
) -> tuple[list[tuple[npt.NDArray[Any], npt.NDArray[Any]]], int]:
    """The chunks without their first ``k`` documents (all if fewer), and how many that
    left out."""
    out = []
    dropped = 0
    for ids, offsets in chunks:
        n = len(offsets) - 1
        take = min(k - dropped, n)
        if take:
            ids = ids[offsets[take]:]
            offsets = offsets[take:] - offsets[take]
            dropped += take
        if take < n:
            out.append((ids, offsets))
    return out, dropped


def _describe_inputs(paths: list[str]) -> list[dict[str, Any]]:
    out = []
    for p in paths:
        st = os.stat(p)
        out.append({"path": os.path.abspath(p), "bytes": st.st_size, "mtime_ns": st.st_mtime_ns})
    return out


def clear_shards(directory: str, prefix: str) -> None:
    """Removes the shards named ``prefix_*`` and the manifest from ``directory``."""
    for name in os.listdir(directory):
        if name.startswith(prefix + "_") or name in (MANIFEST, MANIFEST + ".tmp"):
            os.remove(os.path.join(directory, name))


def tokenize_files(
    inputs: StrPath | Sequence[StrPath],
    output_dir: StrPath,
    *,
    encoding: Encoding | str | os.PathLike[str] = "cl100k_base",
    format: str = "megatron",
    input_format: str | None = None,
    field: str = "text",
    text_mode: str = "file",
    bos: int | str | None = None,
    eot: int | str | None = _DEFAULT,
    allowed_special: str | Sequence[str] = (),
    shard_tokens: int = 100_000_000,
    prefix: str = "shard",
    dtype: str | None = None,
    num_threads: int | None = None,
    skip_bad: bool = False,
    overwrite: bool = False,
    progress: bool = True,
    batch_bytes: int = 4 << 20,
) -> dict[str, Any]:
    """Tokenizes files into shards in ``output_dir``; returns the manifest (also written
    there as ``manifest.json``).

    Args:
        inputs: files, globs or directories; plain text, JSONL or Parquet, each optionally
            ``.gz``/``.zst`` (Parquet not): see :mod:`ferrotok.data.readers`.
        output_dir: created if missing.
        encoding: an ``Encoding``, a registered name (``"cl100k_base"``), or the path of an
            encoding saved with ``Encoding.save``.
        format: ``"megatron"`` (``.bin`` + ``.idx``), ``"bin"`` (nanoGPT), ``"llmc"`` (llm.c's
            256-int header), ``"datatrove"`` (``.ds`` + ``.ds.index``) or ``"numpy"``
            (``.ids.npy`` + ``.offsets.npy``); see :mod:`ferrotok.data.writers`.
        input_format: ``"text"``, ``"jsonl"`` or ``"parquet"`` for all files (default: from
            each file's name).
        field: the JSONL field / Parquet column holding each document's text.
        text_mode: plain text as one document per ``"file"``, per ``"line"``, or split on a
            separator string.
        bos: a token (id or special token text) before each document, or None.
        eot: a token after each document; by default the encoding's ``<|endoftext|>``
            (None: nothing).
        allowed_special: special tokens encoded as such when their text appears in a
            document (``"all"``, or a list); by default all text is ordinary text.
        shard_tokens: tokens per shard at most (a longer document gets a shard of its own).
        prefix: shard names are ``{prefix}_{index:05d}``.
        dtype: ``"uint16"`` or ``"uint32"``; default uint16 when the vocabulary fits.
        num_threads: encoding threads (default: all cores). The output never depends on it.
        skip_bad: skip bad records and count them in the manifest instead of raising.
        overwrite: replace the shards of a different job in ``output_dir``.
        progress: bytes, documents, tokens and MB/s on stderr.
        batch_bytes: input bytes read per batch (memory per batch in flight).

    Running the same call again after an interruption resumes after the last complete
    shard; after a complete run it does nothing and returns the manifest.
    """
    import numpy as np

    if format not in FORMATS:
        raise ValueError(f"unknown format {format!r}: expected one of {', '.join(FORMATS)}")
    if not isinstance(shard_tokens, int) or shard_tokens < 1:
        raise ValueError(f"shard_tokens must be a positive int, got {shard_tokens!r}")
    if not isinstance(batch_bytes, int) or batch_bytes < 1:
        raise ValueError(f"batch_bytes must be a positive int, got {batch_bytes!r}")
    if num_threads is None:
        num_threads = os.cpu_count() or 1
    if not isinstance(num_threads, int) or num_threads < 1:
        raise ValueError(f"num_threads must be a positive int, got {num_threads!r}")
    if not prefix or os.sep in prefix or prefix.startswith("."):
        raise ValueError(f"prefix must be a plain file name part, got {prefix!r}")
    enc = resolve_encoding(encoding)
    bos_id = token_id(enc, "bos", bos)
    if eot == _DEFAULT:
        eot = enc._special_tokens.get("<|endoftext|>")
        if eot is None:
            raise ValueError(
                f"{enc.name} has no <|endoftext|>: pass eot= (a token) or eot=None"
            )
    eot_id = token_id(enc, "eot", eot)
    if dtype is None:
        out_dtype = dtype_for_vocab(enc.n_vocab)
    else:
        out_dtype = np.dtype(dtype)
        if out_dtype not in (np.dtype(np.uint16), np.dtype(np.uint32)):
            raise ValueError(f"dtype must be uint16 or uint32, got {dtype!r}")
        if out_dtype == np.dtype(np.uint16) and enc.n_vocab > 1 << 16:
            raise ValueError(f"{enc.name} has {enc.n_vocab} ids: they do not fit uint16")
    if allowed_special == "all":
        allowed: str | list[str] = "all"
    else:
        if isinstance(allowed_special, str):
            raise TypeError("allowed_special must be 'all' or a list of special tokens")
        allowed = sorted(allowed_special)
        unknown = [s for s in allowed if s not in enc._special_tokens]
        if unknown:
            raise ValueError(f"not special tokens of {enc.name}: {', '.join(unknown)}")
    paths = expand_inputs(inputs)
    # A share of the input is shown when the bytes read are the files' bytes: nothing is
    # decompressed (.gz, .zst) or decoded (Parquet).
    share = True
    for p in paths:
        kind, comp = _input_format(p, input_format)
        share &= comp is None and kind != "parquet"

    directory = os.fspath(output_dir)
    os.makedirs(directory, exist_ok=True)
    identity = {
        "encoding": enc.name,
        "encoding_sha256": encoding_hash(enc),
        "n_vocab": enc.n_vocab,
        "format": format,
        "dtype": out_dtype.name,
        "bos": bos_id,
        "eot": eot_id,
        "allowed_special": allowed,
        "shard_tokens": shard_tokens,
        "prefix": prefix,
        "input_format": input_format,
        "field": field,
        "text_mode": text_mode,
        "skip_bad": skip_bad,
        "inputs": _describe_inputs(paths),
    }
    job = Job(identity, paths)
    manifest = prepare_manifest(directory, job, prefix, overwrite)
    if manifest.get("complete"):
        if progress:
            sys.stderr.write(f"tokenize: {directory} already holds this job's shards\n")
        return manifest
    shards = manifest["shards"]
    if shards:
        nxt = shards[-1]["next"]
        start = Position(nxt["file"], nxt["record"])
        skip_docs = int(nxt["documents"])
        skipped = Skipped.from_json(nxt["skipped"])
    else:
        start, skip_docs, skipped = Position(0, 0), 0, Skipped()
    total_bytes = sum(os.path.getsize(p) for p in paths) if share else 0
    bar = JobProgress(progress, total_bytes)
    writer = WriteStage(
        directory, job, manifest, fmt=format, prefix=prefix, dtype=out_dtype,
        shard_tokens=shard_tokens, bos=bos_id, eot=eot_id, tokenizer=enc.name, start=start,
        skipped=Skipped.from_json(skipped.to_json()), progress=bar,
    )
    read_q: queue.Queue[Any] = queue.Queue(_QUEUE)
    write_q: queue.Queue[Any] = queue.Queue(_QUEUE)
    stop = threading.Event()
    reader_error: list[BaseException] = []

    stage = EncodeStage(enc, field=field, skip_bad=skip_bad, allowed=allowed,
                        num_threads=num_threads, batch_bytes=batch_bytes, skipped=skipped,
                        bos=bos_id, eot=eot_id, dtype=out_dtype.name)

    def read() -> None:
        try:
            for b in iter_segments(
                paths, format=input_format, field=field, text_mode=text_mode,
                skip_bad=skip_bad, batch_bytes=batch_bytes, start=start,
            ):
                while not stop.is_set():
                    try:
                        read_q.put(b, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
        except BaseException as e:  # noqa: BLE001 - handed to the main thread
            reader_error.append(e)
        while not stop.is_set():  # the end (or the error) is signalled by None
            try:
                read_q.put(None, timeout=0.1)
                break
            except queue.Full:
                continue

    def put_write(item: Any) -> None:
        while True:
            if writer.error is not None:
                raise writer.error
            try:
                write_q.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    reader = threading.Thread(target=read, name="ferrotok-read", daemon=True)
    wthread = threading.Thread(target=writer.run, args=(write_q,), name="ferrotok-write",
                               daemon=True)
    reader.start()
    wthread.start()
    finished = False
    try:
        while True:
            seg = read_q.get()
            if seg is None:
                break
            done = stage.feed_chunks(seg)
            if done is None:
                continue
            b, chunks = done
            dropped = 0
            if skip_docs:  # resuming: the documents before the start are already in shards
                chunks, dropped = _drop_documents(chunks, skip_docs)
                skip_docs -= dropped
            put_write((b, chunks, dropped))
        if reader_error:
            raise reader_error[0]
        put_write(None)
        wthread.join()
        if writer.error is not None:
            raise writer.error
        finished = True
    finally:
        stop.set()
        if not finished:
            # Stop the writer: it removes its unfinished shard. Completed shards stay, and
            # the manifest names them, so the next run resumes after them.
            while wthread.is_alive():
                try:
                    write_q.put("abort", timeout=0.1)
                    break
                except queue.Full:
                    try:
                        write_q.get_nowait()
                    except queue.Empty:
                        pass
            wthread.join()
            reader.join(timeout=5)
    final_skipped = writer.skipped
    manifest.update(
        {
            "complete": True,
            "documents": writer.total_docs,
            "tokens": writer.total_tokens,
            "skipped": final_skipped.to_json(),
        }
    )
    write_manifest(directory, manifest)
    bar(writer.bytes_done, writer.total_docs, writer.total_tokens, final=True)
    return manifest


def prepare_manifest(
    directory: str, job: Job, prefix: str, overwrite: bool
) -> dict[str, Any]:
    """The manifest to continue from: the stored one if it is this job's, else a new one
    (after clearing the old job's files when ``overwrite``)."""
    path = os.path.join(directory, MANIFEST)
    old: dict[str, Any] | None = None
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            try:
                old = json.load(f)
            except json.JSONDecodeError:
                old = None
        if not (isinstance(old, dict) and old.get("format") == _MANIFEST_FORMAT):
            if not overwrite:
                raise FileExistsError(
                    f"{path} is not a ferrotok shard manifest: pass overwrite=True "
                    "(--overwrite) to replace it"
                )
            old = None
    if old is not None and old.get("job") == job.identity:
        shards = old["shards"]
        if all(
            os.path.exists(os.path.join(directory, f)) for s in shards for f in s["files"]
        ):
            # Resume: remove what an interrupted run left past the last complete shard.
            keep = {f for s in shards for f in s["files"]}
            for name in os.listdir(directory):
                if name.startswith(prefix + "_") and name not in keep:
                    os.remove(os.path.join(directory, name))
            return old
        if not overwrite:
            raise FileNotFoundError(
                f"{directory}: shards named in {MANIFEST} are missing: pass overwrite=True "
                "(--overwrite) to start again"
            )
    elif old is not None or any(n.startswith(prefix + "_") for n in os.listdir(directory)):
        if not overwrite:
            raise FileExistsError(
                f"{directory} holds shards of a different job (encoding, options or input "
                "files differ): pass overwrite=True (--overwrite) to replace them, or choose "
                "another directory"
            )
    clear_shards(directory, prefix)
    manifest: dict[str, Any] = {
        "format": _MANIFEST_FORMAT,
        "version": 1,
        "complete": False,
        "job": job.identity,
        "shards": [],
    }
    write_manifest(directory, manifest)
    return manifest


# Names used by the shard readers (datasets.py) to find a job's files.
def manifest_shards(directory: str) -> list[list[str]]:
    """The files of each shard listed in ``directory``'s manifest, as paths."""
    with open(os.path.join(directory, MANIFEST), encoding="utf-8") as f:
        m = json.load(f)
    return [[os.path.join(directory, f) for f in s["files"]] for s in m["shards"]]

