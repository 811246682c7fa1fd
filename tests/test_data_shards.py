"""ferrotok.data.tokenize_files / `ferrotok tokenize`: files in, shards out.

The oracle is tiktoken: every shard, read back by its own ecosystem's reader (megatron-core's
IndexedDataset, datatrove's DatatroveFileDataset, numpy memmaps, llm.c's header), must hold
each document's tiktoken ids (plus EOT/BOS where asked), in input order. Documents are samples
of the shared corpus written as JSONL and Parquet, compressed and not. Also: shard cutting,
determinism across thread counts and batch sizes, Ctrl-C (in-process and SIGINT to the CLI),
resume, every kind of bad input, and reading shards back for training.
"""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from oracle import corpus_file, pair

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
zstandard = pytest.importorskip("zstandard")

from ferrotok.data import ShardDataset, TokenShards, read_shard, tokenize_files  # noqa: E402
from ferrotok.data.readers import BadInput, iter_documents  # noqa: E402

EOT = "<|endoftext|>"


def _sample_docs() -> list[str]:
    """About 240 kB of documents of varied sizes from the three corpus files, plus edge
    cases: an empty document, special-token text, lone surrogates, NUL, CRLF."""
    docs: list[str] = []
    for name in ("english.txt", "code.txt", "multilingual.txt"):
        text = corpus_file(name).read_text(encoding="utf-8")[:80_000]
        sizes = [37, 500, 2_000, 9_000, 150]
        at, i = 0, 0
        while at < len(text):
            n = sizes[i % len(sizes)]
            docs.append(text[at : at + n])
            at += n
            i += 1
    docs += ["", f"before {EOT} after", "lone \ud800 surrogate", "nul\x00byte", "a\r\nb\r\n"]
    return docs


DOCS = _sample_docs()


def _expected(name: str, docs: list[str], *, eot: bool = True, bos: int | None = None):
    _, tk = pair(name)
    out = []
    for d in docs:
        ids = tk.encode(d, disallowed_special=())
        out.append(([bos] if bos is not None else []) + ids + ([tk.eot_token] if eot else []))
    return out


def _write_jsonl(path: Path, docs: list[str], compress: str | None = None, **extra) -> Path:
    lines = "".join(json.dumps({"id": i, "text": d, **extra}) + "\n" for i, d in enumerate(docs))
    data = lines.encode("utf-8")
    if compress == "gz":
        path = path.with_name(path.name + ".gz")
        path.write_bytes(gzip.compress(data))
    elif compress == "zst":
        path = path.with_name(path.name + ".zst")
        path.write_bytes(zstandard.ZstdCompressor().compress(data))
    else:
        path.write_bytes(data)
    return path


def _write_parquet(path: Path, docs: list[str]) -> Path:
    # Parquet strings are UTF-8: lone surrogates become U+FFFD, as tiktoken encodes them.
    table = pa.table({"id": list(range(len(docs))), "text": _clean(docs)})
    pq.write_table(table, path, row_group_size=97)
    return path


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("inputs")
    half = len(DOCS) // 2
    out = {
        "jsonl": _write_jsonl(d / "a.jsonl", DOCS),
        "jsonl.gz": _write_jsonl(d / "b.jsonl", DOCS, "gz"),
        "jsonl.zst": _write_jsonl(d / "c.jsonl", DOCS, "zst"),
        "parquet": _write_parquet(d / "d.parquet", DOCS),
    }
    split = d / "split"
    split.mkdir()
    _write_jsonl(split / "part-0.jsonl", DOCS[:half], "zst")
    _write_jsonl(split / "part-1.jsonl", DOCS[half:])
    out["dir"] = split
    return out


def _read_megatron(out: Path) -> list[list[int]]:
    # megatron-core's reader exists for Python >= 3.10 only (PyPI's last 3.9 release, 0.3.0,
    # predates it), so on 3.9 the layout is checked by ferrotok's and numpy's readers alone.
    IndexedDataset = pytest.importorskip(
        "megatron.core.datasets.indexed_dataset"
    ).IndexedDataset

    docs = []
    for s in json.loads((out / "manifest.json").read_text())["shards"]:
        prefix = str(out / s["files"][0][: -len(".bin")])
        ds = IndexedDataset(prefix)
        assert len(ds) == s["documents"]
        assert len(ds.document_indices) == len(ds) + 1
        docs += [ds[i].tolist() for i in range(len(ds))]
    return docs


def _read_datatrove(out: Path, token_size: int) -> list[list[int]]:
    # As for megatron-core: datatrove's reader is on PyPI for Python >= 3.10 only.
    DatatroveFileDataset = pytest.importorskip("datatrove.utils.dataset").DatatroveFileDataset

    docs: list[list[int]] = []
    for s in json.loads((out / "manifest.json").read_text())["shards"]:
        path = str(out / s["files"][0])
        ds = DatatroveFileDataset(path, seq_len=s["tokens"] - 1, token_size=token_size)
        assert len(ds) == 1
        stream = ds[0]["input_ids"].tolist()
        ends = np.fromfile(path + ".index", dtype="<u8").tolist()
        assert ends[-1] == len(stream) == s["tokens"]
        start = 0
        for e in ends:
            docs.append(stream[start:e])
            start = e
    return docs


def _read_split(out: Path, fmt: str, eot_id: int) -> list[list[int]]:
    """Documents of bin/llmc/numpy shards, read with numpy as their users do."""
    stream: list[int] = []
    docs: list[list[int]] = []
    m = json.loads((out / "manifest.json").read_text())
    dtype = np.dtype(m["job"]["dtype"])
    for s in m["shards"]:
        path = out / s["files"][0]
        if fmt == "bin":
            stream += np.memmap(path, dtype=dtype, mode="r").tolist()
        elif fmt == "llmc":
            header = np.fromfile(path, dtype="<i4", count=256)
            magic, version = (20240520, 1) if dtype == np.uint16 else (20240801, 7)
            assert (header[0], header[1], header[2]) == (magic, version, s["tokens"])
            stream += np.fromfile(path, dtype=dtype, offset=1024).tolist()
        else:
            ids = np.load(path, mmap_mode="r")
            offsets = np.load(out / s["files"][1])
            assert ids.dtype == dtype and offsets[-1] == len(ids) == s["tokens"]
            docs += [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])]
    if fmt == "numpy":
        return docs
    doc: list[int] = []
    for t in stream:  # every document ends with EOT (and has none inside: disallowed text)
        doc.append(t)
        if t == eot_id:
            docs.append(doc)
            doc = []
    assert not doc
    return docs


def _clean(docs: list[str]) -> list[str]:
    """Lone surrogates replaced by U+FFFD as tiktoken's encode does."""
    return [d.encode("utf-16", "surrogatepass").decode("utf-16", "replace") for d in docs]


@pytest.mark.parametrize("kind", ["jsonl", "jsonl.gz", "jsonl.zst", "parquet", "dir"])
def test_megatron_shards_hold_tiktoken_ids(inputs, tmp_path, kind):
    m = tokenize_files(inputs[kind], tmp_path, encoding="cl100k_base", format="megatron",
                       shard_tokens=15_000, progress=False, batch_bytes=50_000)
    docs = _clean(DOCS) if kind == "parquet" else DOCS
    want = _expected("cl100k_base", docs)
    assert _read_megatron(tmp_path) == want
    assert m["complete"] and m["documents"] == len(DOCS)
    assert m["tokens"] == sum(map(len, want))
    assert m["job"]["dtype"] == "uint32" and len(m["shards"]) > 3
    assert all(s["tokens"] <= 15_000 or s["documents"] == 1 for s in m["shards"])
    assert m["skipped"]["total"] == 0


# (megatron with cl100k_base is test_megatron_shards_hold_tiktoken_ids)
@pytest.mark.parametrize(
    "name, fmt",
    [(n, f) for n in ("r50k_base", "cl100k_base")
     for f in ("bin", "llmc", "datatrove", "numpy", "megatron")
     if (n, f) != ("cl100k_base", "megatron")],
)
def test_every_format_read_back_by_its_reader(inputs, tmp_path, fmt, name, monkeypatch):
    from ferrotok.data import writers

    # Every write handed to the disk and dropped from the page cache at once (where the OS
    # allows it): the files are the same, headers rewritten at close included.
    monkeypatch.setattr(writers, "SYNC_EVERY", 1)
    dropped = []
    real_drop = writers.ShardWriter._drop_cached
    monkeypatch.setattr(writers.ShardWriter, "_drop_cached",
                        lambda self: (dropped.append(1), real_drop(self)))
    m = tokenize_files(inputs["jsonl.zst"], tmp_path, encoding=name, format=fmt,
                       shard_tokens=50_000, progress=False)
    assert bool(dropped) == writers._CAN_DROP
    want = _expected(name, DOCS)
    eot_id = pair(name)[1].eot_token
    if fmt == "megatron":
        got = _read_megatron(tmp_path)
    elif fmt == "datatrove":
        got = _read_datatrove(tmp_path, 2 if name == "r50k_base" else 4)
    else:
        got = _read_split(tmp_path, fmt, eot_id)
    assert got == want
    assert m["job"]["dtype"] == ("uint16" if name == "r50k_base" else "uint32")
    # ferrotok's own reader agrees, for every format
    flat = [t for d in want for t in d]
    assert TokenShards(tmp_path).tokens(0, len(flat)).tolist() == flat


def test_bos_eot_and_special_tokens(tmp_path):
    enc, tk = pair("cl100k_base")
    docs = ["hello", f"x{EOT}y", "", "<|fim_prefix|>z"]
    src = _write_jsonl(tmp_path / "s.jsonl", docs)
    bos = tk.encode_single_token("<|fim_prefix|>")
    tokenize_files(src, tmp_path / "a", format="numpy", bos="<|fim_prefix|>", eot=None,
                   progress=False)
    assert _read_split(tmp_path / "a", "numpy", -1) == _expected(
        "cl100k_base", docs, eot=False, bos=bos)
    tokenize_files(src, tmp_path / "b", format="numpy", allowed_special="all", eot=100,
                   progress=False)
    want = [tk.encode(d, allowed_special="all") + [100] for d in docs]
    assert _read_split(tmp_path / "b", "numpy", -1) == want
    assert want[1][1] == tk.eot_token  # the special token, not its text
    with pytest.raises(ValueError, match="not a special token"):
        tokenize_files(src, tmp_path / "c", bos="<|nope|>", progress=False)


def test_output_does_not_depend_on_threads_or_batches(inputs, tmp_path):
    runs = []
    for i, (threads, batch) in enumerate([(1, 1 << 22), (2, 30_000), (3, 7_000)]):
        out = tmp_path / f"r{i}"
        tokenize_files(inputs["jsonl"], out, format="megatron", shard_tokens=10_000,
                       num_threads=threads, batch_bytes=batch, progress=False)
        runs.append({p.name: p.read_bytes() for p in sorted(out.iterdir())
                     if p.name != "manifest.json"})
    assert len(runs[0]) > 6
    assert runs[0] == runs[1] == runs[2]


def _files(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.name != "manifest.json"}


def test_interrupt_then_resume(inputs, tmp_path, monkeypatch):
    from ferrotok.data import writers

    ref = tmp_path / "ref"
    tokenize_files(inputs["jsonl.gz"], ref, format="datatrove", shard_tokens=25_000,
                   batch_bytes=40_000, progress=False)
    out = tmp_path / "out"
    real_close = writers.ShardWriter.close
    calls = []

    def close(self):
        calls.append(1)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return real_close(self)

    monkeypatch.setattr(writers.ShardWriter, "close", close)
    with pytest.raises(KeyboardInterrupt):
        tokenize_files(inputs["jsonl.gz"], out, format="datatrove", shard_tokens=25_000,
                       batch_bytes=40_000, progress=False)
    monkeypatch.setattr(writers.ShardWriter, "close", real_close)
    names = sorted(p.name for p in out.iterdir())
    assert not [n for n in names if n.endswith(".tmp")]
    m = json.loads((out / "manifest.json").read_text())
    assert not m["complete"] and len(m["shards"]) == 3
    assert len(names) == 1 + 3 * 3  # manifest + three complete shards of three files
    # the same job resumes (with other batch sizes and threads) and ends as one run does
    m2 = tokenize_files(inputs["jsonl.gz"], out, format="datatrove", shard_tokens=25_000,
                        batch_bytes=100_000, num_threads=1, progress=False)
    assert m2["complete"]
    assert _files(out) == _files(ref)
    assert m2["shards"] == json.loads((ref / "manifest.json").read_text())["shards"]
    # a finished job is left alone; a different one is refused without --overwrite
    assert tokenize_files(inputs["jsonl.gz"], out, format="datatrove", shard_tokens=25_000,
                          progress=False)["tokens"] == m2["tokens"]
    with pytest.raises(FileExistsError, match="different job"):
        tokenize_files(inputs["jsonl.gz"], out, format="datatrove", shard_tokens=9_999,
                       progress=False)
    tokenize_files(inputs["jsonl.gz"], out, format="bin", overwrite=True, progress=False)
    assert not [p for p in out.iterdir() if p.name.endswith((".ds", ".index"))]


def test_sigint_to_the_cli_leaves_complete_shards_and_resumes(tmp_path):
    text = "".join(corpus_file(n).read_text(encoding="utf-8")[:3_000_000]
                   for n in ("english.txt", "code.txt", "multilingual.txt"))
    docs = [text[i : i + 3000] for i in range(0, len(text), 3000)]
    src = _write_jsonl(tmp_path / "big.jsonl", docs)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "ferrotok", "tokenize", str(src), "-o", str(out),
           "--format", "megatron", "--shard-tokens", "20000", "--threads", "1",
           "--no-progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    manifest = out / "manifest.json"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if manifest.exists() and json.loads(manifest.read_text() or "{}").get("shards"):
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    m = json.loads(manifest.read_text())
    assert not m["complete"] and m["shards"]
    names = {p.name for p in out.iterdir()}
    assert not [n for n in names if n.endswith(".tmp")]
    listed = {f for s in m["shards"] for f in s["files"]}
    assert names == listed | {"manifest.json"}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert _read_megatron(out) == [
        ids for ids in _expected("cl100k_base", docs)
    ]


def _bad_cases(tmp_path: Path):
    good = json.dumps({"text": "ok"}) + "\n"
    yield "not_json", b'{"text": "broken\n', "line 2"
    yield "missing_field", b'{"body": "x"}\n', "line 2"
    yield "not_string", b'{"text": 5}\n', "line 2"
    yield "not_string", b'{"text": null}\n', "line 2"
    yield "not_object", b'["text"]\n', "line 2"
    yield "invalid_utf8", b'{"text": "caf\xe9"}\n', "line 2"
    _ = good


@pytest.mark.parametrize("case", list(range(6)))
def test_bad_jsonl_records(tmp_path, case):
    reason, bad, where = list(_bad_cases(tmp_path))[case]
    src = tmp_path / "bad.jsonl"
    src.write_bytes(b'{"text": "first"}\n' + bad + b'\n{"text": "last"}\n')
    with pytest.raises(BadInput) as e:
        tokenize_files(src, tmp_path / "a", format="numpy", progress=False)
    assert f"{src}:{where}:" in str(e.value) and e.value.reason == reason
    assert "skip_bad" in str(e.value)
    m = tokenize_files(src, tmp_path / "b", format="numpy", skip_bad=True, progress=False)
    assert m["documents"] == 2 and m["skipped"]["by_reason"] == {reason: 1}
    assert m["skipped"]["examples"][0].startswith(f"{src}:{where}:")
    assert _read_split(tmp_path / "b", "numpy", -1) == _expected("cl100k_base",
                                                                 ["first", "last"])


def test_bad_text_parquet_and_cli(tmp_path):
    txt = tmp_path / "lines.txt"
    txt.write_bytes(b"one\n\ntwo\nbad \xff\nthree\n")
    with pytest.raises(BadInput, match=r"lines.txt:line 4: invalid UTF-8"):
        list(iter_documents(txt, text_mode="line"))
    assert list(iter_documents(txt, text_mode="line", skip_bad=True)) == ["one", "two", "three"]
    par = tmp_path / "nulls.parquet"
    pq.write_table(pa.table({"text": ["a", None, "c"]}), par)
    with pytest.raises(BadInput, match=r"nulls.parquet:row 1: column 'text' is null"):
        list(iter_documents(par))
    with pytest.raises(ValueError, match="no column 'body'"):
        list(iter_documents(par, field="body"))
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_bytes(gzip.compress(b'{"text": "a"}\n{"text": 1}\n'))
    r = subprocess.run([sys.executable, "-m", "ferrotok", "tokenize", str(bad), "-o",
                        str(tmp_path / "o"), "--no-progress"], capture_output=True, text=True)
    assert r.returncode == 2 and f"{bad}:line 2: field 'text' is int" in r.stderr
    r = subprocess.run([sys.executable, "-m", "ferrotok", "tokenize", str(bad), "-o",
                        str(tmp_path / "o"), "--no-progress", "--skip-bad", "--overwrite"],
                       capture_output=True, text=True)
    assert r.returncode == 0 and "1 records skipped" in r.stdout, r.stderr


def test_arrow_and_json_paths_read_the_same_strings(tmp_path):
    from ferrotok.data import readers

    for ensure_ascii in (True, False):
        # written raw, a lone surrogate would not be UTF-8: only escaped (ensure_ascii)
        docs = DOCS if ensure_ascii else _clean(DOCS)
        lines = [json.dumps({"text": d}, ensure_ascii=ensure_ascii) for d in docs]
        src = tmp_path / f"t{ensure_ascii}.jsonl"
        src.write_text("\n".join(lines) + "\n\n", encoding="utf-8")
        fast = list(iter_documents(src))
        r = readers._Reader([str(src)], fmt=None, field="text", text_mode="file",
                            skip_bad=False, batch_bytes=1 << 30, start=readers.Position(0, 0))
        r._arrow_json = False  # the json module only
        slow = [t for b in r.run() for t in b.texts]
        assert fast == slow == _clean(DOCS)


def test_shard_dataset_windows_and_documents(inputs, tmp_path):
    import torch

    tokenize_files(inputs["jsonl"], tmp_path, format="megatron", shard_tokens=20_000,
                   progress=False)
    want = _expected("cl100k_base", DOCS)
    flat = [t for d in want for t in d]
    L = 64
    ds = ShardDataset(tmp_path, L, document_ids=True)
    assert len(ds) == (len(flat) - 1) // L
    ends = np.cumsum([len(d) for d in want])
    for i in (0, 1, 313, len(ds) - 1):  # some windows cross shard boundaries
        item = ds[i]
        assert item["input_ids"].tolist() == flat[i * L : i * L + L]
        assert item["labels"].tolist() == flat[i * L + 1 : i * L + L + 1]
        t = np.arange(i * L, i * L + L)
        d = np.searchsorted(ends, t, side="right")
        start = np.where(d > 0, ends[np.maximum(d - 1, 0)], 0)
        assert item["position_ids"].tolist() == (t - start).tolist()
        assert item["document_ids"].tolist() == (d - d[0]).tolist()
    loader = torch.utils.data.DataLoader(ds, batch_size=8, num_workers=2)
    first = next(iter(loader))
    assert first["input_ids"].shape == (8, L)
    assert first["input_ids"][3].tolist() == flat[3 * L : 4 * L]
    # bin shards have no index: the separator finds the documents
    tokenize_files(inputs["jsonl"], tmp_path / "bin", format="bin", shard_tokens=20_000,
                   progress=False)
    eot = pair("cl100k_base")[1].eot_token
    b = ShardDataset(tmp_path / "bin", L, document_ids=True, separator=eot, as_tensors=False)
    assert b[313]["position_ids"].tolist() == ds[313]["position_ids"].tolist()
    with pytest.warns(UserWarning, match="fewer than one sequence"):
        assert len(ShardDataset(tmp_path, 10**9)) == 0


def test_packed_dataset_from_a_memory_mapped_shard(inputs, tmp_path):
    from ferrotok.data import PackedDataset

    tokenize_files(inputs["jsonl"], tmp_path, format="numpy", progress=False)
    ids, offsets = read_shard(tmp_path / "shard_00000.ids.npy")
    assert isinstance(ids, np.memmap) and offsets is not None
    ds = PackedDataset.from_stream(ids, 32, as_tensors=False)
    assert ds.stream is ids  # not copied
    assert ds[5]["input_ids"] == ids[160:192].tolist()
    with pytest.warns(UserWarning, match="fewer than one sequence"):
        PackedDataset([[1, 2]], 8, as_tensors=False)


def test_train_reads_the_same_inputs(inputs):
    import ferrotok

    docs = _clean(DOCS)
    want = ferrotok.count_pieces(docs, progress=False)
    for kind in ("jsonl.zst", "parquet"):
        got = ferrotok.count_pieces([inputs[kind]], progress=False)
        assert got == want
    a = ferrotok.train([inputs["jsonl.gz"]], 400, progress=False)
    b = ferrotok.train(docs, 400, progress=False)
    assert a._mergeable_ranks == b._mergeable_ranks


def test_import_is_light():
    code = ("import sys, ferrotok, ferrotok.data; "
            "print(sorted(m for m in ('ray', 'pyarrow', 'numpy', 'torch') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "ray" not in r.stdout and "pyarrow" not in r.stdout, r.stdout
    assert os.environ.get("FERROTOK_DATA_DIR")
