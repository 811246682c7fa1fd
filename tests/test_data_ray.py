"""ferrotok.data.ray on a local Ray cluster the test starts (ray.init(num_cpus=2)).

Tokenizing a ray.data.Dataset gives tiktoken's ids per row; its shards are byte for byte the
ones tokenize_files writes from the same documents in a JSONL file; a vocabulary counted on
the workers and summed is the one ferrotok.train makes in one process.
"""

from __future__ import annotations

import json

import pytest
from oracle import corpus_file, pair

ray = pytest.importorskip("ray")
pa = pytest.importorskip("pyarrow")

import ferrotok  # noqa: E402
from ferrotok.data import tokenize_files  # noqa: E402
from ferrotok.data.ray import Tokenize, count_pieces, train, write_shards  # noqa: E402


def _docs() -> list[str]:
    text = corpus_file("english.txt").read_text(encoding="utf-8")[:60_000]
    text += corpus_file("multilingual.txt").read_text(encoding="utf-8")[:30_000]
    return [text[i : i + 700] for i in range(0, len(text), 700)] + ["", "x<|endoftext|>y"]


DOCS = _docs()


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    ctx = ray.data.DataContext.get_current()
    ctx.execution_options.preserve_order = True
    ctx.enable_progress_bars = False
    try:
        yield
    finally:
        ray.shutdown()


def _dataset(docs: list[str]):
    """Four blocks (no repartition: with 2 CPUs, a shuffle stage can starve the workers)."""
    q = -(-len(docs) // 4)
    return ray.data.from_arrow([pa.table({"text": docs[i : i + q]})
                                for i in range(0, len(docs), q)])


def test_tokenize_write_shards_and_train(cluster, tmp_path):
    _, tk = pair("cl100k_base")
    ds = _dataset(DOCS)
    tokens = ds.map_batches(Tokenize, fn_constructor_kwargs={"encoding": "cl100k_base"},
                            batch_format="pyarrow", batch_size=64, concurrency=1)
    rows = tokens.take_all()
    assert [r["text"] for r in rows] == DOCS
    for r in rows:
        want = tk.encode(r["text"], disallowed_special=()) + [tk.eot_token]
        assert list(r["ids"]) == want and r["num_tokens"] == len(want)

    # the shards written from Ray equal tokenize_files' from the same documents
    m = write_shards(tokens, tmp_path / "ray", encoding="cl100k_base", format="megatron",
                     shard_tokens=8_000)
    src = tmp_path / "docs.jsonl"
    src.write_text("".join(json.dumps({"text": d}) + "\n" for d in DOCS), encoding="utf-8")
    ref = tokenize_files(src, tmp_path / "ref", format="megatron", shard_tokens=8_000,
                         progress=False)
    assert [s["tokens"] for s in m["shards"]] == [s["tokens"] for s in ref["shards"]]
    for s in ref["shards"]:
        for f in s["files"]:
            assert (tmp_path / "ray" / f).read_bytes() == (tmp_path / "ref" / f).read_bytes()

    # a vocabulary trained on Ray is the one trained in one process
    counts = count_pieces(ds, special_tokens=["<|endoftext|>"], batch_size=64)
    assert counts == ferrotok.count_pieces(DOCS, special_tokens=["<|endoftext|>"],
                                           progress=False)
    enc = train(ds, 600, special_tokens=["<|endoftext|>"], name="t")
    want = ferrotok.train(DOCS, 600, special_tokens=["<|endoftext|>"], name="t",
                          progress=False)
    assert enc._mergeable_ranks == want._mergeable_ranks
    assert enc._special_tokens == want._special_tokens


def test_tokenize_numpy_batches_and_errors(cluster):
    _, tk = pair("r50k_base")
    t = Tokenize("r50k_base", eot=None)
    out = t({"text": __import__("numpy").array(["hello world", "bye"], dtype=object)})
    assert [x.tolist() for x in out["ids"]] == [tk.encode("hello world"), tk.encode("bye")]
    assert out["ids"][0].dtype.name == "uint16"
    with pytest.raises(KeyError, match="no column 'body'"):
        Tokenize(column="body")(pa.table({"text": ["a"]}))
    with pytest.raises(TypeError, match="row 1 of the batch: column 'text' is null"):
        Tokenize()(pa.table({"text": ["a", None]}))
