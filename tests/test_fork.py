"""Work in a forked child: what PyTorch's `DataLoader` workers do on Linux.

A child forked from a process whose thread pool had started inherits the pool but not its
threads. Each test forks after the parent has used ferrotok's pools (loading an encoding
does), then asks the child for work that runs in parallel for the first time there; before
the pools were tied to the process (`rust/src/runtime/pool.rs`), the child waited forever. A child
forked while another thread of the parent was building a table waited forever too, for a
builder it does not have (`rust/src/runtime/process_once.rs`).
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from functools import partial
from typing import Any, Callable

import ferrotok
import pytest
from oracle import fresh_encoding, pair

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork"),
    # From 3.12 Python warns on any fork of a process with threads; forking is the point.
    pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning"),
]

LONG = "a" * 5_000 + " 日本語のテキストを長く続けます" * 40 + " " + "x9" * 300
# One piece longer than BACKTRACK_AFTER (128 KiB): the backtracking tables are built at once.
LONGER = "a" * 200_000 + LONG


def _run(work: Callable[[], Any], out: Any) -> None:
    try:
        out.put(("ok", work()))
    except BaseException as e:  # noqa: B036 - anything the child meets goes back to the test
        out.put(("error", repr(e)))


def in_forked_child(work: Callable[[], Any], timeout: float = 120.0) -> Any:
    """`work()` run in a child forked from this process; fails the test if it hangs."""
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_run, args=(work, out))
    child.start()
    try:
        status, value = out.get(timeout=timeout)
    except Exception:
        pytest.fail(f"the forked child gave no answer in {timeout:.0f} s (hung)")
    finally:
        child.join(timeout=10)
        if child.is_alive():
            child.kill()
    assert status == "ok", value
    return value


def test_building_the_backtrack_tables_in_a_forked_child() -> None:
    # The backtracking tables are built in parallel, once long pieces add up to 128 KiB.
    enc = fresh_encoding("o200k_base")
    assert enc.encode_ordinary(LONG) == pair("o200k_base")[1].encode_ordinary(LONG)  # not yet
    got = in_forked_child(lambda: enc.encode_ordinary(LONGER))
    assert got == pair("o200k_base")[1].encode_ordinary(LONGER)


def test_a_fork_while_another_thread_builds_the_backtrack_tables() -> None:
    # A thread encodes a piece that has the backtracking tables built at once (40-50 ms for o200k)
    # while the test forks, at several delays so that some fork lands inside the build. The
    # child needs the tables too; it waited forever for the parent's building thread, which
    # is not in the child, while the tables were in a `OnceLock`
    # (`rust/src/runtime/process_once.rs`).
    want = pair("o200k_base")[1].encode_ordinary(LONGER)
    for delay in (0.0, 0.002, 0.005, 0.01, 0.02, 0.03):
        enc = fresh_encoding("o200k_base")
        builder = threading.Thread(target=enc.encode_ordinary, args=(LONGER,))
        builder.start()
        time.sleep(delay)
        got = in_forked_child(partial(enc.encode_ordinary, LONGER), timeout=30.0)
        builder.join()
        assert got == want, f"fork {delay * 1e3:.0f} ms after the building thread started"


def test_loading_an_encoding_in_a_forked_child() -> None:
    # Building an encoding's pair table runs in parallel.
    fresh_encoding("r50k_base")
    ranks = ferrotok.get_encoding("cl100k_base")._mergeable_ranks
    pat = ferrotok.get_encoding("cl100k_base")._pat_str

    def load_and_encode() -> list[int]:
        enc = ferrotok.Encoding(
            "cl100k_in_child", pat_str=pat, mergeable_ranks=ranks, special_tokens={}
        )
        return enc.encode_ordinary(LONG)

    assert in_forked_child(load_and_encode) == pair("cl100k_base")[1].encode_ordinary(LONG)


def test_training_in_a_forked_child() -> None:
    # Counting runs on a pool of one thread per core unless told otherwise.
    fresh_encoding("r50k_base")
    texts = [f"the {i} forked workers count pieces, low lower lowest " * 50 for i in range(200)]

    def train() -> list[bytes]:
        enc = ferrotok.train(texts, 400, progress=False)
        return [enc.decode_single_token_bytes(t) for t in range(enc.n_vocab)]

    got = in_forked_child(train)
    want = ferrotok.train(texts, 400, progress=False)
    assert got == [want.decode_single_token_bytes(t) for t in range(want.n_vocab)]


@pytest.mark.parametrize(
    ("name", "pattern"),
    [("o200k_base", None), ("cl100k_base", r"[a-z]++[A-Z]|\d+|\s+(?!\S)|\s+|\S")],
)
def test_tables_built_before_a_fork_are_the_childs_without_building(
    name: str, pattern: str | None
) -> None:
    enc = fresh_encoding(name)
    if pattern is not None:  # a pattern on the general path: its DFA is built too
        enc = ferrotok.Encoding(
            "general", pat_str=pattern, mergeable_ranks=enc._mergeable_ranks, special_tokens={}
        )
    assert not any(built for _, built in enc._core_bpe.tables_built())
    enc.build_tables()
    built = enc._core_bpe.tables_built()
    assert len(built) == (3 if pattern is None else 4) and all(b for _, b in built), built

    def work() -> tuple[list[tuple[str, bool]], list[int]]:
        # Asked before the child encodes anything: there, nothing has built them.
        return enc._core_bpe.tables_built(), enc.encode_ordinary(LONG)

    in_child, ids = in_forked_child(work)
    assert in_child == built
    reference = pair(name)[1]
    if pattern is not None:
        reference = type(reference)(
            "general", pat_str=pattern, mergeable_ranks=reference._mergeable_ranks,
            special_tokens={},
        )
    assert ids == reference.encode_ordinary(LONG)


@pytest.mark.parametrize("model", ["llama-spm", "qwen2"])
def test_a_tokenizer_json_models_tables_built_before_a_fork_are_the_childs(model: str) -> None:
    # SentencePiece BPE (char pairs, whole-token answers) and byte-level BPE (cut tables,
    # whole-token answers, the Split's tables): built in the parent, the child has them
    # without building, and encodes as the parent does.
    from test_hf_parity import model_path

    enc = ferrotok.Encoding.from_hf(model_path(model))
    enc.build_tables()
    built = enc._core_bpe.tables_built()
    assert built and all(b for _, b in built), built
    text = LONG + " def f():\n" + " " * 16 + "return x\n"

    def work() -> tuple[list[tuple[str, bool]], list[int]]:
        return enc._core_bpe.tables_built(), enc.encode_ordinary(text)

    in_child, ids = in_forked_child(work)
    assert in_child == built
    assert ids == enc.encode_ordinary(text)
