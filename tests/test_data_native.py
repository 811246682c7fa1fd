"""The data job's native reading (ferrotok.data.native, rust/src/data) against the Python path.

The oracle is the per-document path the job had before: `json.loads` per line (the readers'
`_Reader` with pyarrow's JSON reader turned off, so Python's own rules decide) or
`to_pylist` per Parquet array, then `encode_ordinary_batch_to_numpy` / `encode_batch_to_numpy`.
Every batch the native stage cuts must equal that path's batch: the same end position, input
bytes, skipped-record snapshot and ids — which makes shards and manifests byte for byte the
same, since the writing stage is shared. JSONL blocks hold every kind of line the native parser
must read exactly or hand back: escapes, surrogate pairs, lone surrogates, every JSON type in
other fields, NaN, duplicate keys, CRLF, blank lines, non-objects, missing/null/non-string
fields, invalid UTF-8, huge numbers. Hypothesis writes JSON objects with `json.dumps` and checks
the native field text against `json.loads`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from oracle import pair

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from ferrotok.data import readers, tokenize_files  # noqa: E402
from ferrotok.data.native import EncodeStage  # noqa: E402
from ferrotok.data.readers import BadInput, Position, Skipped  # noqa: E402

ENC, TK = pair("cl100k_base")
EOT = "<|endoftext|>"


def _old_batches(paths: list[str], *, allowed: Any = (), **kw: Any) -> list[tuple]:
    """The per-document path: batches of texts from Python's json (not pyarrow's), encoded."""
    r = readers._Reader(paths, fmt=None, field=kw.get("field", "text"),
                        text_mode=kw.get("text_mode", "line"),
                        skip_bad=kw.get("skip_bad", False), batch_bytes=kw["batch_bytes"],
                        start=kw.get("start", Position(0, 0)))
    r._arrow_json = False
    out = []
    for b in r.run():
        if allowed:
            ids, offs = ENC.encode_batch_to_numpy(b.texts, num_threads=2,
                                                  allowed_special=allowed,
                                                  disallowed_special=())
        else:
            ids, offs = ENC.encode_ordinary_batch_to_numpy(b.texts, num_threads=2)
        out.append((b.end, b.nbytes, b.skipped.to_json(), ids.tolist(), offs.tolist()))
    return out


def _new_batches(paths: list[str], *, allowed: Any = (), threads: int = 2,
                 **kw: Any) -> list[tuple]:
    stage = EncodeStage(ENC, field=kw.get("field", "text"), skip_bad=kw.get("skip_bad", False),
                        allowed=allowed if allowed == "all" else list(allowed),
                        num_threads=threads, batch_bytes=kw["batch_bytes"], skipped=Skipped())
    out = []
    for seg in readers.iter_segments(paths, text_mode=kw.get("text_mode", "line"),
                                     field=kw.get("field", "text"),
                                     skip_bad=kw.get("skip_bad", False),
                                     batch_bytes=kw["batch_bytes"], start=kw.get("start")):
        done = stage.feed(seg)
        if done is not None:
            b, ids, offs = done
            assert ids.dtype == np.uint32 and offs.dtype == np.int64
            out.append((b.end, b.nbytes, b.skipped.to_json(), ids.tolist(), offs.tolist()))
    return out


def _lines() -> list[bytes]:
    """JSONL lines of every kind (each ends with its newline)."""
    ok = [
        {"text": "plain"},
        {"id": 7, "text": 'quote " backslash \\ newline \n tab \t é 😀 \u2028'},
        {"a": None, "b": True, "c": False, "d": 1.5e300, "e": -0.0, "f": [1, [2, {"g": []}]],
         "h": {"i": {"j": "k"}}, "text": "after nesting"},
        {"ключ": "значение", "键": 1, "text": "unicode keys"},
        {"text": ""},
        {"text": f"special {EOT} text"},
        {"n": 10**40, "text": "huge int"},
        {"text": "x" * 70_000},  # longer than a piece
    ]
    lines = [json.dumps(o).encode() + b"\n" for o in ok]
    lines += [json.dumps(o, ensure_ascii=False).encode() + b"\n" for o in ok]
    lines += [
        b'{"text": "surrogate pair \\ud83d\\ude00 escaped"}\n',
        b'{"text": "crlf"}\r\n',
        b"\n",
        b"   \t \r\n",
        b'{"te\\u0078t": "escaped key"}\n',
        b'{"other": "lone \\ud800 elsewhere", "text": "fine"}\n',
        b'{"text": "first", "text": "last wins"}\n',  # as in a Python dict
    ]
    return lines


BAD_LINES = [
    (b'{"text": "lone \\ud800 surrogate"}\n', None),  # a document: U+FFFD in Python
    (b'{"text": "reversed \\ude00\\ud83d"}\n', None),
    (b'{"x": NaN, "text": "nan elsewhere"}\n', None),  # json.loads takes NaN
    (b'{"x": -Infinity, "text": "inf"}\n', None),
    (b'{"text": 1, "text": "string last"}\n', None),
    (b'{"text": "string first", "text": 2}\n', "not_string"),
    (b'["text", "a list"]\n', "not_object"),
    (b'"just a string"\n', "not_object"),
    (b'{"body": "no text"}\n', "missing_field"),
    (b'{"text": null}\n', "not_string"),
    (b'{"text": {"nested": "object"}}\n', "not_string"),
    (b'{"text": "caf\xe9 latin-1"}\n', "invalid_utf8"),
    (b'{"text": "broken\n', "not_json"),
    (b'{"text": "trailing"} x\n', "not_json"),
    (b'{"text": "raw \x01 control"}\n', "not_json"),
    (b'\x0b{"text": "vertical tab"}\n', "not_json"),
]


def _write(path: Path, lines: list[bytes]) -> str:
    path.write_bytes(b"".join(lines))
    return str(path)


@pytest.mark.parametrize("batch_bytes", [300, 5_000, 1 << 22])
def test_jsonl_batches_equal_the_json_path(tmp_path, batch_bytes):
    good = _lines()
    # a file of good lines, one with every bad line among good ones, one whose tail is only
    # bad and blank lines (no document: no batch ends at its end), one without a last newline
    files = [
        _write(tmp_path / "a.jsonl", good * 3),
        _write(tmp_path / "b.jsonl", [x for bad, _ in BAD_LINES for x in (bad, good[0])]),
        _write(tmp_path / "c.jsonl", good[:3] + [BAD_LINES[7][0], b"\n", BAD_LINES[9][0]]),
        _write(tmp_path / "d.jsonl", good[:4] + [b'{"text": "no newline"}']),
    ]
    old = _old_batches(files, skip_bad=True, batch_bytes=batch_bytes)
    new = _new_batches(files, skip_bad=True, batch_bytes=batch_bytes)
    assert new == old
    skipped = old[-1][2]
    assert skipped["total"] == 2 + sum(1 for _, r in BAD_LINES if r)
    # without skip_bad both name the same first bad line
    with pytest.raises(BadInput) as e_old:
        _old_batches(files, batch_bytes=batch_bytes)
    with pytest.raises(BadInput) as e_new:
        _new_batches(files, batch_bytes=batch_bytes)
    assert str(e_new.value) == str(e_old.value) and "b.jsonl:line 11:" in str(e_new.value)
    # resumed in the middle of a file, on one thread, with special tokens allowed
    for start in (Position(0, 5), Position(1, 9), Position(3, 2)):
        for allowed in ((), "all", {EOT}):
            kw: dict[str, Any] = dict(skip_bad=True, batch_bytes=batch_bytes, start=start,
                                      allowed=allowed)
            assert _new_batches(files, threads=1, **kw) == _old_batches(files, **kw)


@pytest.mark.parametrize("text_mode", ["line", "file", "\n\n"])
def test_text_and_mixed_inputs_cut_the_same_batches(tmp_path, text_mode):
    """Plain text keeps its list-of-str path; its batches, and those of a mix of plain text,
    JSONL and Parquet files, are cut where they were."""
    files = []
    for i in range(4):
        body = "".join(f"line {i}.{k} " + "word " * (k % 7) + ("\n\n" if k % 3 else "\n")
                       for k in range(150))
        raw = body.encode() + (b"bad \xff\n" if i == 1 else b"") + b"tail"
        (tmp_path / f"t{i}.txt").write_bytes(raw)
        files.append(str(tmp_path / f"t{i}.txt"))
    files.insert(2, _write(tmp_path / "m.jsonl", _lines()[:5] + [BAD_LINES[9][0]]))
    files.insert(4, _parquet(tmp_path / "m.parquet", [f"p{i}" for i in range(90)], pa.string()))
    (tmp_path / "empty.txt").write_bytes(b"")
    files.append(str(tmp_path / "empty.txt"))
    for batch_bytes in (100, 3_000, 1 << 22):
        for start in (Position(0, 0), Position(1, 40), Position(3, 2)):
            kw: dict[str, Any] = dict(skip_bad=True, batch_bytes=batch_bytes, start=start,
                                      text_mode=text_mode)
            new = _new_batches(files, **kw)
            assert new == _old_batches(files, **kw)
            assert len(new) > 1


def test_count_byte_counts_as_bytes_count():
    from ferrotok._core import count_byte

    data = b"".join(_lines()) * 50 + b"no newline \xff"
    for piece in (b"", b"\n", b"abc", data, data[7:-3]):
        assert count_byte(piece, 10) == piece.count(b"\n")
    assert count_byte(data, 0xFF) == data.count(b"\xff")


def test_each_line_alone_native_or_handed_back(tmp_path):
    """A block of one line: the native result, when there is one, is json.loads's text; the
    lines Python reads differently or refuses are handed back (None)."""
    core = ENC._core_bpe
    for line in _lines():
        got = core.encode_jsonl_block(line, "text", set(), 1)
        assert got is not None, line
        ids, offs = got
        if not line.strip():
            assert offs.tolist() == [0]
            continue
        text = json.loads(line)["text"]
        assert ids.tolist() == TK.encode_ordinary(text) and offs.tolist() == [0, len(ids)]
    for line, _ in BAD_LINES:
        assert core.encode_jsonl_block(line, "text", set(), 1) is None, line
        assert core.encode_jsonl_block(b'{"text": "ok"}\n' * 3000 + line, "text", set(), 2) is None


def test_native_layout_for_shards_equals_the_python_one():
    """With bos/eot/dtype the native calls lay the ids out as native.laid_out lays out their
    plain result (each document with BOS before and EOT after it, uint16 or uint32), on one
    thread or two; an id past uint16 is refused, never cut."""
    from ferrotok.data.native import laid_out

    core = ENC._core_bpe
    block = b"".join(_lines()) * 20
    texts = ["alpha", "", "βγ 😀", "x" * 100_000, "tail"] * 30
    arr = pa.array(texts, pa.large_string())
    _, offs_buf, data_buf = arr.buffers()
    calls = [
        lambda threads, **kw: core.encode_jsonl_block(block, "text", set(), threads, **kw),
        lambda threads, **kw: core.encode_arrow_values(offs_buf, data_buf, True, arr.offset,
                                                       len(arr), "all", threads, **kw),
    ]
    for call in calls:
        ids, offs = call(1)
        assert ids.dtype == np.uint32
        for bos, eot in ((None, None), (None, 100_255), (7, None), (7, 100_255)):
            want_ids, want_offs = laid_out(ids, offs, bos, eot, "uint32")
            for threads in (1, 2):
                got_ids, got_offs = call(threads, bos=bos, eot=eot, dtype="uint32")
                assert got_ids.dtype == np.uint32 and got_offs.dtype == np.int64
                assert got_ids.tolist() == want_ids.tolist()
                assert got_offs.tolist() == want_offs.tolist()
        # cl100k's ids go past uint16: refused whole, like the Python layout
        with pytest.raises(ValueError, match="uint16"):
            call(2, eot=5, dtype="uint16")
        with pytest.raises(ValueError, match="uint16"):
            laid_out(ids, offs, None, 5, "uint16")
        with pytest.raises(ValueError, match="does not fit uint16"):
            call(1, eot=70_000, dtype="uint16")
        with pytest.raises(ValueError, match="dtype"):
            call(1, dtype="int64")
    # ids that fit uint16 (GPT-2's): the same values, narrowed
    import ferrotok

    gpt2 = ferrotok.get_encoding("gpt2")._core_bpe
    ids, offs = gpt2.encode_jsonl_block(block, "text", set(), 2)
    got_ids, got_offs = gpt2.encode_jsonl_block(block, "text", set(), 2, bos=1, eot=50256,
                                                dtype="uint16")
    want_ids, want_offs = laid_out(ids, offs, 1, 50256, "uint16")
    assert got_ids.dtype == np.uint16 and want_ids.dtype == np.uint16
    assert got_ids.tolist() == want_ids.tolist() and got_offs.tolist() == want_offs.tolist()


def test_writing_chunks_cuts_the_shards_of_one_array(tmp_path):
    """The writing stage given a batch as several laid-out chunks (as the job hands it over,
    some documents dropped on resume) writes the shards and manifest entries it writes from
    the same documents as one array: shard cuts fall across chunk ends, a document longer
    than a shard gets one of its own."""
    from ferrotok.data import job as jobmod
    from ferrotok.data.native import laid_out

    rng = np.random.default_rng(5)
    lens = rng.integers(0, 40, size=300)
    lens[[17, 150]] = 130  # longer than a shard
    offsets = np.zeros(len(lens) + 1, dtype=np.int64)
    np.cumsum(lens, out=offsets[1:])
    ids = rng.integers(0, 50_000, size=int(offsets[-1])).astype(np.uint32)

    def run(d: Path, chunked: bool, drop: int) -> tuple[list[Any], dict[str, bytes]]:
        d.mkdir()
        job = jobmod.Job({"test": 1}, [])
        manifest = jobmod.prepare_manifest(str(d), job, "shard", False)
        w = jobmod.WriteStage(
            str(d), job, manifest, fmt="megatron", prefix="shard", dtype=np.dtype(np.uint16),
            shard_tokens=100, bos=3, eot=50_256, tokenizer="t", start=Position(0, 0),
            skipped=Skipped(), progress=jobmod.JobProgress(False, 0),
        )
        for i, (a, b) in enumerate([(0, 120), (120, 300)]):
            batch = readers.Batch([], Position(0, b), 10, Skipped())
            part_ids = ids[offsets[a]:offsets[b]]
            part_offs = offsets[a:b + 1] - offsets[a]
            k = drop if i == 0 else 0
            if not chunked:
                w.write(batch, part_ids[part_offs[k]:], part_offs[k:] - part_offs[k], k)
                continue
            flat = laid_out(part_ids, part_offs, 3, 50_256, "uint16")
            cuts = sorted({0, b - a, *rng.integers(0, b - a, size=6).tolist()})
            chunks = []
            for x, y in zip(cuts, cuts[1:]):
                o = flat[1][x:y + 1]
                chunks.append((flat[0][o[0]:o[-1]], o - o[0]))
            chunks, dropped = jobmod._drop_documents(chunks, k)
            assert dropped == k
            w.write_chunks(batch, chunks, dropped)
        w.finish()
        files = {f.name: f.read_bytes() for f in sorted(d.iterdir()) if f.name != "manifest.json"}
        return manifest["shards"], files

    for drop in (0, 5, 120):
        one = run(tmp_path / f"one{drop}", False, drop)
        many = run(tmp_path / f"many{drop}", True, drop)
        assert one == many
        # and both are the greedy cut of the documents (with BOS/EOT) into shards of 100
        docs = [[3, *ids[offsets[i]:offsets[i + 1]].tolist(), 50_256]
                for i in range(drop, len(lens))]
        want: list[list[int]] = [[]]
        counts = [0]
        for doc in docs:
            if want[-1] and len(want[-1]) + len(doc) > 100:
                want.append([])
                counts.append(0)
            want[-1] += doc
            counts[-1] += 1
        shards, files = one
        assert [s["documents"] for s in shards] == counts
        got = [np.frombuffer(files[s["files"][0]], dtype=np.uint16).tolist() for s in shards]
        assert got == want


def test_tokenize_files_jsonl_skips_and_counts_as_before(tmp_path):
    lines = [x for bad, _ in BAD_LINES for x in (bad, *_lines()[:2])]
    src = tmp_path / "mixed.jsonl"
    src.write_bytes(b"".join(lines))
    m = tokenize_files(src, tmp_path / "o", format="numpy", skip_bad=True, progress=False,
                       batch_bytes=2_000)
    want_docs = []
    for raw in lines:
        if not raw.strip():
            continue
        try:
            want_docs.append(readers.jsonl_line(raw.rstrip(b"\n"), "x", 1, "text"))
        except BadInput:
            pass
    assert m["documents"] == len(want_docs)
    assert m["skipped"]["total"] == sum(1 for _, r in BAD_LINES if r)
    d = tmp_path / "o"
    ids = np.concatenate([np.load(d / s["files"][0]) for s in m["shards"]]).tolist()
    want = [t for doc in want_docs for t in TK.encode(doc, disallowed_special=()) + [TK.eot_token]]
    assert ids == want


def _parquet(path: Path, values: list[Any], kind: Any, row_group_size: int = 50) -> str:
    pq.write_table(pa.table({"id": list(range(len(values))), "text": pa.array(values, kind)}),
                   path, row_group_size=row_group_size)
    return str(path)


def test_parquet_batches_equal_to_pylist(tmp_path):
    texts = [f"doc {i} " + "é😀 word " * (i % 13) for i in range(400)] + ["", EOT, "z" * 70_000]
    files = [_parquet(tmp_path / f"{i}.parquet", texts, kind)
             for i, kind in enumerate([pa.string(), pa.large_string()])]
    raw = [t.encode() for t in texts]
    raw[3] = b"bad \xff utf-8"
    files.append(_parquet(tmp_path / "bin.parquet", raw, pa.binary()))
    files.append(_parquet(tmp_path / "lbin.parquet", raw[:100], pa.large_binary()))
    with_nulls = list(texts[:120])
    with_nulls[7] = with_nulls[60] = None
    files.append(_parquet(tmp_path / "nulls.parquet", with_nulls, pa.string()))
    for batch_bytes in (2_000, 1 << 22):
        for start in (Position(0, 0), Position(0, 77), Position(2, 130), Position(4, 61)):
            kw: dict[str, Any] = dict(skip_bad=True, batch_bytes=batch_bytes, start=start)
            new = _new_batches(files, **kw)
            assert new == _old_batches(files, **kw)
            if start == Position(0, 0):
                assert new[-1][2]["by_reason"] == {"invalid_utf8": 2, "not_string": 2}
    with pytest.raises(BadInput, match=r"bin.parquet:row 3: invalid UTF-8"):
        _new_batches(files, batch_bytes=1 << 22)


def test_arrow_values_from_buffers(tmp_path):
    core = ENC._core_bpe
    texts = ["alpha", "", "βγ 😀", "x" * 100_000, "tail"]
    for kind in (pa.string(), pa.large_string(), pa.binary(), pa.large_binary()):
        arr = pa.array([t.encode() for t in texts] if "binary" in str(kind) else texts, kind)
        wide = str(kind).startswith("large")
        for a in range(len(texts) + 1):
            for b in range(a, len(texts) + 1):
                s = arr.slice(a, b - a)
                _, offs_buf, data_buf = s.buffers()
                got = core.encode_arrow_values(offs_buf, data_buf if data_buf else b"", wide,
                                               s.offset, len(s), set(), 2)
                assert got is not None
                ids, offs = got
                want, tokens = [0], []
                for t in texts[a:b]:
                    tokens += TK.encode_ordinary(t)
                    want.append(len(tokens))
                assert ids.tolist() == tokens and offs.tolist() == want
    # buffers that are not an array's: handed back or refused, never read past
    assert core.encode_arrow_values(b"\0" * 4, b"", False, 0, 3, set(), 1) is None
    bad = np.array([0, 5, 2], dtype=np.int32).tobytes()
    assert core.encode_arrow_values(bad, b"abcdef", False, 0, 2, set(), 1) is None
    assert core.encode_arrow_values(bad, b"abcdef", True, 0, 1, set(), 1) is None
    with pytest.raises(TypeError):
        core.encode_arrow_values("not a buffer", b"", False, 0, 0, set(), 1)
    with pytest.raises(BufferError):
        core.encode_arrow_values(np.zeros(2, np.int32), b"", False, 0, 0, set(), 1)


def test_parquet_start_inside_a_large_row_group(tmp_path):
    # A start past the first record batch of a row group: the record batches before it are
    # skipped whole, not taken for the rows at the start.
    texts = [f"doc {i}" for i in range(6_000)]
    src = _parquet(tmp_path / "big.parquet", texts, pa.string(), row_group_size=5_000)
    for row in (0, 100, 1_500, 3_000, 4_999, 5_000, 5_001, 5_999, 6_000):
        start = Position(0, row)
        got = [t for b in readers.iter_batches(src, start=start) for t in b.texts]
        assert got == texts[row:]
        kw: dict[str, Any] = dict(batch_bytes=7_000, start=start)
        assert _new_batches([src], **kw) == _old_batches([src], **kw)


def test_parquet_job_resumes_as_one_run(tmp_path, monkeypatch):
    from ferrotok.data import writers

    texts = [f"row {i} " + "text " * (i % 50) for i in range(3_000)]
    src = _parquet(tmp_path / "d.parquet", texts, pa.large_string(), row_group_size=700)
    ref = tmp_path / "ref"
    tokenize_files(src, ref, format="bin", shard_tokens=9_000, batch_bytes=20_000,
                   progress=False)
    real_close = writers.ShardWriter.close
    calls = []

    def close(self):
        calls.append(1)
        if len(calls) == 5:
            raise KeyboardInterrupt
        return real_close(self)

    out = tmp_path / "out"
    monkeypatch.setattr(writers.ShardWriter, "close", close)
    with pytest.raises(KeyboardInterrupt):
        tokenize_files(src, out, format="bin", shard_tokens=9_000, batch_bytes=20_000,
                       progress=False)
    monkeypatch.setattr(writers.ShardWriter, "close", real_close)
    m = tokenize_files(src, out, format="bin", shard_tokens=9_000, batch_bytes=20_000,
                       num_threads=1, progress=False)
    # The shards are those of one run. (Where the next shard starts is recorded relative to
    # a record batch, and a resumed Parquet read starts at another row group, whose record
    # batches start elsewhere: the `next` positions may differ, each one a valid start.)
    ref_shards = json.loads((ref / "manifest.json").read_text())["shards"]
    assert [(s["files"], s["documents"], s["tokens"]) for s in m["shards"]] == [
        (s["files"], s["documents"], s["tokens"]) for s in ref_shards
    ]
    for s in m["shards"]:
        assert (out / s["files"][0]).read_bytes() == (ref / s["files"][0]).read_bytes()
    ids = np.concatenate([np.fromfile(out / s["files"][0], np.uint32 if m["job"]["dtype"] ==
                                      "uint32" else np.uint16) for s in m["shards"]]).tolist()
    assert ids == [t for d in texts for t in TK.encode_ordinary(d) + [TK.eot_token]]


def _json_values(st: Any) -> Any:
    scalars = (st.none() | st.booleans() | st.integers(min_value=-(10**30), max_value=10**30)
               | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20))
    return st.recursive(scalars, lambda kids: st.lists(kids, max_size=4)
                        | st.dictionaries(st.text(max_size=8), kids, max_size=4),
                        max_leaves=12)


def test_hypothesis_json_objects_read_as_json_loads():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    # ensure_ascii escapes every non-ASCII character, lone surrogates included
    surrogates = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
    field_text = st.text(st.characters() | surrogates, max_size=40)
    core = ENC._core_bpe

    @given(
        st.dictionaries(st.text(max_size=8), _json_values(st), max_size=5),
        st.none() | field_text | _json_values(st),
        st.integers(min_value=0, max_value=5),
        st.booleans(),
        st.booleans(),
    )
    @settings(max_examples=300, deadline=None)
    def check(obj, value, at, ensure_ascii, special_float):
        obj = dict(obj)
        obj.pop("text", None)
        items = list(obj.items())
        if value is not None or at % 2:
            items.insert(min(at, len(items)), ("text", value))
        if special_float:
            items.append(("f", float("nan") if at % 2 else float("-inf")))
        line = json.dumps(dict(items), ensure_ascii=ensure_ascii)
        try:
            raw = line.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate written raw: not UTF-8 at all
            raw = line.encode("utf-8", "surrogatepass")
        got = core.encode_jsonl_block(raw, "text", set(), 1)
        try:
            text = readers.jsonl_line(raw, "h", 1, "text")
        except BadInput:
            assert got is None
            return
        lone = text != json.loads(raw)["text"]  # the reader replaced a lone surrogate
        top_keys_plain = all(k == k.encode("utf-8", "replace").decode() for k in dict(items))
        if got is None:
            # handed back only for what the native parser must not read itself
            assert lone or special_float or not top_keys_plain
            return
        assert not (lone or special_float)
        ids, offs = got
        assert ids.tolist() == TK.encode_ordinary(text) and offs.tolist() == [0, len(ids)]

    check()


def test_file_blocks_are_the_stream_blocks(tmp_path, monkeypatch):
    """A regular file is cut into the blocks a stream of the same bytes is cut into (the
    last separator of each chunk ends a block, the rest follows), though each block is read
    exactly after a look at its chunk's end: long lines across chunks and windows, no
    separator at the end, only separators, an empty file, a file read from a later start."""
    import io
    import random

    monkeypatch.setattr(readers, "_PEEK", 7)  # windows smaller than lines and chunks
    rnd = random.Random(5)
    contents = [b"", b"\n", b"\n\n\n", b"no separator at all", b"a\n" * 50 + b"tail"]
    for _ in range(40):
        lines = [bytes(rnd.choice(b"xyz ") for _ in range(rnd.choice([0, 1, 3, 9, 40])))
                 for _ in range(rnd.randrange(1, 30))]
        data = b"\n".join(lines)
        contents.append(data if rnd.random() < 0.5 else data + b"\n")
    path = tmp_path / "f.jsonl"
    for data in contents:
        path.write_bytes(data)
        for size in (1, 2, 5, 16, 64, 1000):
            for skip in (0, 3):
                with open(path, "rb") as f:
                    f.read(skip)
                    got = list(readers._blocks(f, b"\n", size))
                stream = io.BytesIO(data)
                stream.read(skip)
                want = list(readers._stream_blocks(stream, b"\n", size))
                assert got == want, (data, size, skip)
                assert b"".join(got) == data[skip:]
