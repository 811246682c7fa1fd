"""Training: exact equality with rustbpe 0.1.0, determinism, count tables, save/load,
errors and interruption. Corpus slices are small so the file runs in well under a minute."""

from __future__ import annotations

import collections
import json
import multiprocessing
import os
import pathlib
import pickle
import random
import re
import signal
import subprocess
import sys
import textwrap
import warnings

import ferrotok
import pytest
import regex
import rustbpe
import tiktoken
import tiktoken.load
from ferrotok import _core
from ferrotok.openai_public import CL100K_PATTERN, O200K_PATTERN
from ferrotok.train import resolve_pattern

# GPT-2's pattern as published (no possessives): not one of the hand-written splitters, so
# training with it counts pieces through the general path (regex-automata and its DFA).
GPT2_PUBLISHED_PATTERN = (
    r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
)


def _find_corpus() -> pathlib.Path:
    """The shared corpus: $FERROTOK_CORPUS_DIR, else shared/corpus beside or inside the repo."""
    if "FERROTOK_CORPUS_DIR" in os.environ:
        return pathlib.Path(os.environ["FERROTOK_CORPUS_DIR"])
    root = pathlib.Path(__file__).resolve().parents[1]
    for cand in (root.parent / "shared" / "corpus", root / "shared" / "corpus"):
        if cand.exists():
            return cand
    raise RuntimeError("shared/corpus not found; set FERROTOK_CORPUS_DIR")


CORPUS = _find_corpus()

EOT = "<|endoftext|>"


def corpus(name: str, start: int, size: int) -> str:
    """`size` bytes of a shared corpus file from `start`, cut at character boundaries."""
    with open(CORPUS / f"{name}.txt", "rb") as f:
        f.seek(start)
        return f.read(size).decode("utf-8", errors="ignore")


def rustbpe_ranks(docs: list[str], vocab_size: int, pattern: str) -> dict[bytes, int]:
    tok = rustbpe.Tokenizer()
    tok.train_from_iterator(iter(docs), vocab_size, pattern=pattern)
    return {bytes(k): v for k, v in tok.get_mergeable_ranks()}


def synthetic_docs(seed: int, n_docs: int) -> list[str]:
    """Text nobody has seen: random words over mixed scripts, digits, code-ish punctuation
    and odd whitespace, so ties, long runs and multi-byte characters all occur."""
    rng = random.Random(seed)
    alphabet = "aaabbcdeeefghiiklmnoorsttuüéßжыд日本語한국😀 "
    words = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 9))) for _ in range(300)]
    seps = [
        " ",
        " ",
        " ",
        "\n",
        "\n\n",
        "  ",
        "\t",
        ", ",
        ". ",
        "(",
        ")",
        "{}",
        "'s ",
        "123",
        " 4567",
    ]
    docs = []
    for _ in range(n_docs):
        parts = []
        for _ in range(rng.randint(1, 200)):
            parts.append(rng.choice(words))
            parts.append(rng.choice(seps))
        docs.append("".join(parts))
    return docs


# ---------------------------------------------------------------- equality with rustbpe


@pytest.mark.parametrize(
    ("name", "start", "size", "vocab", "pattern"),
    [
        ("english", 0, 400_000, 512, CL100K_PATTERN),
        ("code", 1_000_000, 600_000, 8192, CL100K_PATTERN),
        ("multilingual", 2_000_000, 500_000, 2048, O200K_PATTERN),
        ("english", 5_000_000, 700_000, 8192, O200K_PATTERN),
        ("english", 3_000_000, 500_000, 4096, GPT2_PUBLISHED_PATTERN),
        ("multilingual", 4_000_000, 400_000, 2048, GPT2_PUBLISHED_PATTERN),
    ],
)
def test_equals_rustbpe_on_shared_corpora(name, start, size, vocab, pattern):
    docs = corpus(name, start, size).split("\n\n")
    enc = ferrotok.train(docs, vocab, pattern=pattern, progress=False)
    assert enc._mergeable_ranks == rustbpe_ranks(docs, vocab, pattern)
    assert enc.n_vocab == vocab


def test_equals_rustbpe_at_32k_on_mixed_text():
    docs = (corpus("english", 9_000_000, 900_000) + corpus("code", 0, 900_000)).split("\n\n")
    # Both stop early if the corpus runs out of pairs (this one does; ferrotok says so);
    # they must agree on when.
    with pytest.warns(UserWarning, match="only 30279 of the 32512 merges"):
        enc = ferrotok.train(docs, 32768, pattern=CL100K_PATTERN, progress=False)
    ref = rustbpe_ranks(docs, 32768, CL100K_PATTERN)
    assert enc._mergeable_ranks == ref


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_equals_rustbpe_on_unseen_synthetic_text(seed):
    docs = synthetic_docs(seed, 300)
    for vocab, pattern in [(300, CL100K_PATTERN), (1500, O200K_PATTERN)]:
        enc = ferrotok.train(docs, vocab, pattern=pattern, progress=False)
        assert enc._mergeable_ranks == rustbpe_ranks(docs, vocab, pattern)


@pytest.mark.parametrize("pattern", [CL100K_PATTERN, O200K_PATTERN])
def test_special_tokens_split_documents_and_are_never_merged(pattern):
    specials = [EOT, "<|fim|>"]
    base = corpus("code", 3_000_000, 300_000).split("\n\n")
    rng = random.Random(5)
    docs = []
    for d in base:
        # Special tokens anywhere: between docs, inside words, doubled.
        cut = rng.randrange(len(d) + 1)
        docs.append(d[:cut] + rng.choice(specials) + d[cut:] + EOT + EOT)
    vocab = 2000
    enc = ferrotok.train(docs, vocab, pattern=pattern, special_tokens=specials, progress=False)
    split = [p for d in docs for p in regex.split("<\\|endoftext\\|>|<\\|fim\\|>", d)]
    assert enc._mergeable_ranks == rustbpe_ranks(split, vocab - len(specials), pattern)
    n_merged = len(enc._mergeable_ranks)
    assert enc._special_tokens == {EOT: n_merged, "<|fim|>": n_merged + 1}
    assert enc.n_vocab == vocab
    assert not any(b"<|" in t and b"|>" in t for t in enc._mergeable_ranks)
    assert enc.encode("x" + EOT, allowed_special="all")[-1] == n_merged


# ---------------------------------------------------------------- semantics details


def test_empty_corpus_gives_the_byte_vocabulary():
    with pytest.warns(UserWarning, match="only 0 of the 743 merges"):
        enc = ferrotok.train([], 1000, special_tokens=[EOT], progress=False)
    assert enc._mergeable_ranks == {bytes([i]): i for i in range(256)}
    assert enc._special_tokens == {EOT: 256}
    with pytest.warns(UserWarning, match="only 0 of the 743 merges"):
        enc = ferrotok.train(["", "a", EOT], 1000, special_tokens=[EOT], progress=False)
    assert len(enc._mergeable_ranks) == 256


def test_ties_go_to_the_smallest_pair_and_overlaps_count():
    # 'aaa' holds (a, a) twice: 2 x 3 = 6 beats 'zz' x 5; 'ba' and 'bb' tie at 4: 'ba' first.
    docs = ["aaa"] * 3 + ["zz"] * 5 + ["ba"] * 4 + ["bb"] * 4
    enc = ferrotok.train(docs, 260, pattern=r"\S+|\s+", progress=False)
    order = sorted((r, t) for t, r in enc._mergeable_ranks.items() if r >= 256)
    assert [t for _, t in order] == [b"aa", b"zz", b"ba", b"bb"]


def _brute_force(pieces: dict[str, int], n_merges, min_frequency=None, max_len=None):
    words = {tuple(bytes([b]) for b in p.encode()): c for p, c in pieces.items()}
    banned = set()
    out = []
    while len(out) < n_merges:
        counts = collections.Counter()
        for w, c in words.items():
            for pair in zip(w, w[1:]):
                counts[pair] += c
        cands = [(-c, p) for p, c in counts.items() if p not in banned]
        if not cands:
            break
        # Highest count, then smallest (left id, right id): ids grow with the order made.
        ids = {bytes([i]): i for i in range(256)}
        ids.update({t: 256 + i for i, t in enumerate(out)})
        c, pair = min((c, (ids[p[0]], ids[p[1]]), p) for c, p in cands)[0::2]
        if min_frequency and -c < min_frequency:
            break
        if max_len and len(pair[0] + pair[1]) > max_len:
            banned.add(pair)
            continue
        new = pair[0] + pair[1]
        out.append(new)
        merged = {}
        for w, cnt in words.items():
            nw, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == pair:
                    nw.append(new)
                    i += 2
                else:
                    nw.append(w[i])
                    i += 1
            merged[tuple(nw)] = merged.get(tuple(nw), 0) + cnt
        words = merged
    return out


@pytest.mark.parametrize("seed", range(3))
def test_min_frequency_and_max_token_length_follow_their_definition(seed):
    docs = synthetic_docs(100 + seed, 8)
    counts = ferrotok.count_pieces(docs, progress=False)
    pieces = dict(counts.most_common())
    for min_f, max_len in [(None, None), (3, None), (None, 3), (2, 4)]:
        enc = ferrotok.train_from_counts(
            counts, 400, min_frequency=min_f, max_token_length=max_len, progress=False
        )
        got = [t for t, r in sorted(enc._mergeable_ranks.items(), key=lambda x: x[1]) if r >= 256]
        assert got == _brute_force(pieces, 144, min_f, max_len)
        if max_len:
            assert max(len(t) for t in enc._mergeable_ranks) <= max_len


# ---------------------------------------------------------------- determinism and sharding


def test_threads_strings_files_and_chunking_give_identical_ranks(tmp_path):
    # One big document (chunked inside Rust), the same as a file (read in windows), as
    # many small files, with 1 or 2 threads: all must give the same counts and ranks.
    text = corpus("english", 0, 3_500_000) + EOT + corpus("code", 0, 2_500_000)
    big = tmp_path / "big.txt"
    big.write_bytes(text.encode())
    kw = {"special_tokens": [EOT], "progress": False}
    ref = ferrotok.count_pieces([text], num_threads=1, **kw)
    assert ferrotok.count_pieces([text], num_threads=2, **kw) == ref
    assert ferrotok.count_pieces([big], num_threads=2, **kw) == ref
    assert ferrotok.count_pieces(iter([text]), **kw) == ref
    # Against an independent splitter: the `regex` module, on the text cut at the special.
    expected = collections.Counter()
    for segment in text.split(EOT):
        expected.update(regex.findall(CL100K_PATTERN, segment))
    assert dict(ref.most_common()) == dict(expected)
    enc1 = ferrotok.train_from_counts(ref, 4096, progress=False)
    enc2 = ferrotok.train([big], 4096, num_threads=1, **kw)
    assert enc1._mergeable_ranks == enc2._mergeable_ranks


def _count_shard(path: str) -> bytes:
    counts = ferrotok.count_pieces([pathlib.Path(path)], special_tokens=[EOT], progress=False)
    return pickle.dumps(counts)


def test_sharded_counts_from_separate_processes_equal_one_call(tmp_path):
    docs = corpus("multilingual", 0, 1_200_000).split("\n\n")
    shards = []
    for i in range(3):
        p = tmp_path / f"shard{i}.txt"
        p.write_text(EOT.join(docs[i::3]), encoding="utf-8")
        shards.append(str(p))
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:
        tables = [pickle.loads(b) for b in pool.map(_count_shard, shards)]
    total = sum(tables)
    one = ferrotok.count_pieces(
        [pathlib.Path(s) for s in shards], special_tokens=[EOT], progress=False
    )
    assert total == one
    a = ferrotok.train_from_counts(total, 3000, progress=False)
    b = ferrotok.train(
        [pathlib.Path(s) for s in shards], 3000, special_tokens=[EOT], progress=False
    )
    assert a._mergeable_ranks == b._mergeable_ranks
    assert a._special_tokens == b._special_tokens == {EOT: 2999}


def test_most_common_refuses_a_negative_count():
    counts = ferrotok.count_pieces(["a b a"], progress=False)
    assert counts.most_common(0) == [] and counts.most_common(None) == counts.most_common(9)
    for n in (-1, 1.5, "2"):
        with pytest.raises(ValueError, match="non-negative int or None"):
            counts.most_common(n)


def test_piece_counts_add_pickle_save_load(tmp_path):
    a = ferrotok.count_pieces(["the cat sat", "the hat"], progress=False)
    b = ferrotok.count_pieces(["the mat"], progress=False)
    s = a + b
    assert dict(s.most_common())["the"] == 3
    assert s.total() == a.total() + b.total() == 7
    assert len(s) == 5
    assert pickle.loads(pickle.dumps(s)) == s
    s.save(tmp_path / "c.bin")
    assert ferrotok.PieceCounts.load(tmp_path / "c.bin") == s
    assert s.to_bytes() == (b + a).to_bytes()  # canonical form
    other = ferrotok.count_pieces(["x"], pattern="o200k_base", progress=False)
    with pytest.raises(ValueError, match="different patterns"):
        s + other
    (tmp_path / "junk.bin").write_bytes(b"not counts")
    with pytest.raises(ValueError, match="junk.bin"):
        ferrotok.PieceCounts.load(tmp_path / "junk.bin")
    # A table that `to_bytes` never writes (here the last piece twice, which read as one sum
    # would be counts made up): refused, not read.
    one = ferrotok.count_pieces(["zz"], pattern=r"\S+|\s+", progress=False).to_bytes()
    assert one.endswith(b"\x02zz\x01")
    doubled = one[:-5] + b"\x02" + one[-4:] + one[-4:]  # the count of pieces 1 -> 2
    with pytest.raises(ValueError, match="repeated piece"):
        ferrotok.PieceCounts.from_bytes(doubled)


def test_from_bytes_refuses_a_piece_that_holds_a_special_token():
    # Counting splits "<|x|>" out; a table whose piece holds it is one counting never made.
    pat = r"\S+|\s+"
    with_special = ferrotok.count_pieces(["q<|x|>"], pattern=pat, special_tokens=["<|x|>"],
                                         progress=False)
    assert dict(with_special.most_common()) == {"q": 1}
    plain = ferrotok.count_pieces(["q<|x|>"], pattern=pat, progress=False).to_bytes()
    head = b"FTPIECE1" + bytes([len(pat)]) + pat.encode() + b"\x00"  # no special tokens
    assert plain.startswith(head)
    forged = with_special.to_bytes()[: len(head) + 6] + plain[len(head):]
    want = 'the piece "q<|x|>" holds the special token "<|x|>"'
    with pytest.raises(ValueError, match=re.escape(want)):
        ferrotok.PieceCounts.from_bytes(forged)
    # The same pieces under the header they were counted with read back as they were.
    assert ferrotok.PieceCounts.from_bytes(plain).most_common() == [("q<|x|>", 1)]


# ---------------------------------------------------------------- save / load / tiktoken


def test_save_load_and_tiktoken_give_the_same_ids(tmp_path):
    docs = corpus("code", 6_000_000, 400_000).split("\n\n")
    enc = ferrotok.train(docs, 3000, special_tokens=[EOT, "<|pad|>"], name="mine", progress=False)
    path = tmp_path / "mine.tiktoken"
    enc.save(path)
    meta = json.loads((tmp_path / "mine.tiktoken.json").read_text())
    assert meta["pat_str"] == CL100K_PATTERN and meta["special_tokens"][EOT] == 2998
    loaded = ferrotok.load(path)
    assert loaded.name == "mine"
    assert loaded._mergeable_ranks == enc._mergeable_ranks
    # `Encoding.load`, the spelling type checkers accept, reads the same encoding.
    typed = ferrotok.Encoding.load(path)
    assert (typed.name, typed._pat_str, typed._special_tokens) == (
        loaded.name,
        loaded._pat_str,
        loaded._special_tokens,
    )
    assert typed._mergeable_ranks == enc._mergeable_ranks
    ranks = tiktoken.load.load_tiktoken_bpe(str(path))
    assert ranks == enc._mergeable_ranks
    tk = tiktoken.Encoding(
        "mine",
        pat_str=meta["pat_str"],
        mergeable_ranks=ranks,
        special_tokens=meta["special_tokens"],
    )
    sample = corpus("code", 9_000_000, 50_000) + EOT + "héllo wörld 日本語 😀<|pad|>"
    assert tk.encode(sample, allowed_special="all") == loaded.encode(sample, allowed_special="all")
    assert loaded.decode(loaded.encode(sample, allowed_special="all")) == sample
    # A ranks file changed behind the sidecar's back is detected.
    path.write_bytes(path.read_bytes()[:-20])
    with pytest.raises(ValueError, match="does not match"):
        ferrotok.load(path)
    with pytest.raises(ValueError, match="does not match"):
        ferrotok.Encoding.load(path)


def test_load_plain_tiktoken_file_needs_a_pattern(tmp_path):
    p = tmp_path / "plain.tiktoken"
    ferrotok.dump_tiktoken_bpe({bytes([i]): i for i in range(256)}, str(p))
    with pytest.raises(FileNotFoundError, match="pat_str"):
        ferrotok.load(p)
    enc = ferrotok.load(p, pat_str=r"\S+|\s+")
    assert enc.encode("hi") == [104, 105]
    assert ferrotok.Encoding.load(p, pat_str=r"\S+|\s+", name="plain").name == "plain"


def _saved_small(tmp_path):
    enc = ferrotok.train([corpus("english", 0, 20_000)], 270, special_tokens=[EOT], progress=False)
    path = tmp_path / "small.tiktoken"
    enc.save(path)
    return enc, path, json.loads((tmp_path / "small.tiktoken.json").read_text())


@pytest.mark.parametrize(
    "specials, message",
    [
        ({EOT: 269.9}, "not an int"),
        ({EOT: "269"}, "not an int"),
        ({EOT: None}, "not an int"),
        ({EOT: True}, "not an int"),
        ({EOT: -1}, "not an int"),
        ({EOT: 2**32 - 1}, "not an int"),
        ({"": 269}, "non-empty string"),
        ([EOT, 269], "must be an object"),
    ],
)
def test_load_refuses_a_sidecar_whose_special_tokens_cannot_be_right(tmp_path, specials, message):
    _, path, meta = _saved_small(tmp_path)
    side = tmp_path / "small.tiktoken.json"
    side.write_text(json.dumps(dict(meta, special_tokens=specials)))
    with pytest.raises(ValueError, match=message) as info:
        ferrotok.load(path)
    assert "small.tiktoken.json" in str(info.value)
    # The same checks hold for special tokens passed to `load` (named as the argument).
    if isinstance(specials, dict):
        with pytest.raises(ValueError, match=message) as info:
            ferrotok.load(path, special_tokens=specials)
        assert str(info.value).startswith("special_tokens")


def test_what_save_writes_load_reads_shared_and_colliding_ids_too(tmp_path):
    # o200k_harmony gives 200018 to two special tokens (so does tiktoken's table), and the
    # constructor, like tiktoken's, lets a special token take an ordinary token's rank.
    harmony = ferrotok.get_encoding("o200k_harmony")
    path = tmp_path / "harmony.tiktoken"
    harmony.save(path)
    again = ferrotok.load(path)
    assert again._special_tokens == harmony._special_tokens and again.n_vocab == harmony.n_vocab
    ranks = {bytes([i]): i for i in range(256)}
    odd = ferrotok.Encoding("odd", pat_str=r"\S+|\s+", mergeable_ranks=ranks,
                            special_tokens={"<s>": 5, "<t>": 300, "<u>": 300})  # fmt: skip
    odd.save(tmp_path / "odd.tiktoken")
    assert ferrotok.load(tmp_path / "odd.tiktoken")._special_tokens == odd._special_tokens
    # Integer types other than int are ids too (numpy's, say), passed to load.
    import numpy as np
    loaded = ferrotok.load(tmp_path / "odd.tiktoken", special_tokens={"<s>": np.int64(300)})
    assert loaded._special_tokens == {"<s>": 300} and type(loaded._special_tokens["<s>"]) is int


def test_load_checks_n_vocab_when_the_sidecar_has_no_hash(tmp_path):
    enc = ferrotok.train([corpus("english", 0, 20_000)], 270, progress=False)
    path = tmp_path / "small.tiktoken"
    enc.save(path)
    side = tmp_path / "small.tiktoken.json"
    meta = json.loads(side.read_text())
    del meta["ranks_sha256"]
    side.write_text(json.dumps(meta))
    assert ferrotok.load(path).n_vocab == enc.n_vocab == meta["n_vocab"] == 270
    # Cut at a line end, the ranks file still parses; only the count tells.
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:200]))
    with pytest.raises(ValueError, match="'n_vocab' is 270, but .* make 200 tokens"):
        ferrotok.load(path)


@pytest.mark.parametrize(
    "interrupt, after",
    [
        (OSError(1, "Operation not permitted"), False),
        (KeyboardInterrupt(), False),
        (KeyboardInterrupt(), True),  # Ctrl-C just after the sidecar's rename was made
    ],
)
def test_save_keeps_the_old_pair_when_the_second_file_cannot_be_replaced(
    tmp_path, monkeypatch, interrupt, after
):
    old, path, _ = _saved_small(tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    new = ferrotok.train([corpus("code", 0, 20_000)], 300, progress=False)
    real_replace = os.replace

    def replace(src, dst):
        if os.fspath(dst).endswith(".json") and os.fspath(src).endswith(".tmp"):
            if after:
                real_replace(src, dst)
            raise interrupt
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(type(interrupt)):
        new.save(path)
    monkeypatch.undo()
    # Both files are the old ones again, no temporary or backup file is left, and the pair
    # still loads; a save that succeeds then replaces both.
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    assert ferrotok.load(path)._mergeable_ranks == old._mergeable_ranks
    new.save(path)
    assert ferrotok.load(path)._mergeable_ranks == new._mergeable_ranks
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(before)


def test_save_that_fails_on_a_new_path_leaves_nothing(tmp_path, monkeypatch):
    enc = ferrotok.train([corpus("english", 0, 20_000)], 270, progress=False)
    real_replace = os.replace

    def replace(src, dst):
        if os.fspath(dst).endswith(".json"):
            raise OSError(28, "No space left on device")
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(OSError, match="No space"):
        enc.save(tmp_path / "fresh.tiktoken")
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- bad input


def test_bad_arguments_raise_before_any_work(tmp_path):
    with pytest.raises(ValueError, match="vocab_size is 256"):
        ferrotok.train(["x"], 256, special_tokens=[EOT], progress=False)
    with pytest.raises(ValueError, match="pattern"):
        ferrotok.train(["x"], 300, pattern="(unclosed", progress=False)
    with pytest.raises(ValueError, match="twice"):
        ferrotok.train(["x"], 300, special_tokens=["<a>", "<a>"], progress=False)
    with pytest.raises(ValueError, match="empty"):
        ferrotok.train(["x"], 300, special_tokens=[""], progress=False)
    with pytest.raises(TypeError, match="single str"):
        ferrotok.train("some text", 300, progress=False)
    with pytest.raises(ValueError, match="min_frequency"):
        ferrotok.train(["x"], 300, min_frequency=0, progress=False)


def test_non_str_items_are_named_by_index():
    def gen():
        yield "fine"
        yield "also fine"
        yield b"bytes"

    with pytest.raises(TypeError, match="item 2 of the input is bytes"):
        ferrotok.train(gen(), 300, progress=False)
    with pytest.raises(TypeError, match="item 1 .* path"):
        ferrotok.count_pieces(["a", pathlib.Path("x")], progress=False)
    # A first item of None is an error too, not an empty input (it once trained on nothing).
    for first_none in ([None, "abc abc"], iter([None, "abc abc"])):
        with pytest.raises(TypeError, match="item 0 of the input is NoneType"):
            ferrotok.train(first_none, 300, progress=False)
    with pytest.raises(TypeError, match="item 0 of the input is NoneType"):
        ferrotok.count_pieces([None], progress=False)
    with pytest.raises(ValueError, match="more than an encoding can have"):
        ferrotok.train(["x"], 2**21 + 1, progress=False)
    with pytest.raises(ValueError, match="min_frequency"):
        ferrotok.train(["x"], 300, min_frequency=2**64, progress=False)
    with pytest.raises(ValueError, match="num_threads is 100000; at most 1024"):
        ferrotok.count_pieces(["x"], num_threads=100_000, progress=False)
    with pytest.raises(ValueError, match="item 1 of the input is not valid Unicode"):
        ferrotok.count_pieces(["ok", "bad \ud800 surrogate"], progress=False)


def test_unreadable_and_non_utf8_files_name_the_file_and_offset(tmp_path):
    good = tmp_path / "good.txt"
    good.write_text("hello", encoding="utf-8")
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        ferrotok.train([good, tmp_path / "missing.txt"], 300, progress=False)
    with pytest.raises(IsADirectoryError):
        ferrotok.train([tmp_path], 300, progress=False)
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"caf\xc3\xa9 ok " * 10 + b"\xff tail")
    with pytest.raises(ValueError, match=r"bad.txt is not UTF-8: invalid byte at offset 90"):
        ferrotok.train([good, bad], 300, progress=False)
    # The same in a file big enough to be read in windows.
    big = tmp_path / "big_bad.txt"
    big.write_bytes(b"word " * 1_000_000 + b"\x80" + b"more")
    with pytest.raises(
        ValueError, match=r"big_bad.txt is not UTF-8: invalid byte at offset 5000000"
    ):
        ferrotok.count_pieces([big], progress=False)


# ---------------------------------------------------------------- interruption


def test_an_exception_in_the_progress_hook_stops_merging_at_once():
    counts = ferrotok.count_pieces(corpus("english", 0, 300_000).split("\n\n"), progress=False)
    calls = []

    class Stop(Exception):
        pass

    def hook(phase, done, total):
        calls.append((phase, done))
        raise Stop  # at the first report: nothing may be merged after it

    with pytest.raises(Stop):
        # Huge vocabulary: without the exception this would merge until pairs run out.
        _core.learn_merges(counts._core, 10_000_000, 0, None, hook)
    assert calls == [("merging", 0)]


@pytest.fixture
def ctrl_c_raises():
    """Python's Ctrl-C handler, installed even where SIGINT starts ignored (a background
    job, as CI may run us): the tests are about what happens when Ctrl-C is live."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_a_pending_ctrl_c_stops_merging_at_the_next_report(ctrl_c_raises):
    counts = ferrotok.count_pieces(corpus("english", 0, 300_000).split("\n\n"), progress=False)
    calls = []

    def hook(phase, done, total):
        calls.append((phase, done))
        if len(calls) == 1:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C, seen by the next signal check

    with pytest.raises(KeyboardInterrupt):
        _core.learn_merges(counts._core, 10_000_000, 0, None, hook)
    # Stopped at the report after the signal (the next timed report or the final one),
    # never running to the end without raising.
    assert calls[0] == ("merging", 0) and len(calls) <= 3


def test_ctrl_c_stops_training_with_keyboard_interrupt(tmp_path):
    # A long counting job in a child process; SIGINT must end it with KeyboardInterrupt.
    src = CORPUS / "code.txt"
    script = textwrap.dedent(
        f"""
        import itertools, signal, sys, ferrotok
        # Live Ctrl-C even if this process started with SIGINT ignored (background job).
        signal.signal(signal.SIGINT, signal.default_int_handler)
        text = open({str(src)!r}, encoding="utf-8").read(2_000_000)
        try:
            print("started", flush=True)
            # An endless stream of documents: only Ctrl-C can end this training.
            ferrotok.train(itertools.repeat(text), 50000, progress=False)
        except KeyboardInterrupt:
            print("KeyboardInterrupt", flush=True)
            sys.exit(42)
        print("finished", flush=True)
        """
    )
    _ctrl_c_after_a_second(script)  # by then Rust is counting (not an assertion on speed)


def _ctrl_c_after_a_second(script: str) -> None:
    """Runs `script` in a child that prints "started", sends it SIGINT a second later, and
    checks that it caught KeyboardInterrupt (it prints that and exits with 42)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "started"
    import time

    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert "KeyboardInterrupt" in out, err
    assert proc.returncode == 42


needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")


@needs_fifo
def test_a_named_pipe_among_the_files_is_read_once_and_whole(tmp_path):
    # The pipe's writer starts only once a reader opens it, so an early open-and-close
    # (to check the file) would hand its text to a reader that goes away, and the real
    # read would then wait forever: run in a child, so that is a failure, not a hang.
    src = tmp_path / "src.txt"
    src.write_text(corpus("english", 0, 200_000), encoding="utf-8")
    script = textwrap.dedent(
        f"""
        import os, pathlib, threading, ferrotok
        d = pathlib.Path({str(tmp_path)!r})
        text = (d / "src.txt").read_text(encoding="utf-8")
        fifo = d / "stream"
        os.mkfifo(fifo)
        files = [d / f"{{i}}.txt" for i in range(50)]
        for i, f in enumerate(files):
            f.write_text(f"document {{i}} " * 10, encoding="utf-8")

        def write():
            with open(fifo, "w", encoding="utf-8") as w:
                for i in range(0, len(text), 10_000):
                    w.write(text[i : i + 10_000])

        threading.Thread(target=write, daemon=True).start()
        got = ferrotok.count_pieces([fifo, *files], progress=False)
        whole = [text] + [f.read_text(encoding="utf-8") for f in files]
        print(got == ferrotok.count_pieces(whole, progress=False), got.total())
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert out.stdout.split()[0] == "True", out.stderr
    assert int(out.stdout.split()[1]) > 40_000


@needs_fifo
def test_ctrl_c_while_a_named_pipe_waits_for_its_writer(tmp_path):
    fifo = tmp_path / "stream"
    os.mkfifo(fifo)
    script = textwrap.dedent(
        f"""
        import pathlib, signal, sys, ferrotok
        signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            print("started", flush=True)
            ferrotok.train([pathlib.Path({str(fifo)!r})], 300, progress=False)
        except KeyboardInterrupt:
            print("KeyboardInterrupt", flush=True)
            sys.exit(42)
        """
    )
    _ctrl_c_after_a_second(script)  # no writer ever comes: training waits on the pipe


@pytest.mark.parametrize("pattern", ["", "a*", "(?=a)", r"\p{L}+", r"\S+"])
def test_a_pattern_that_drops_text_is_warned_about(pattern):
    with pytest.warns(UserWarning, match="leaves text out of its pieces") as caught:
        ferrotok.count_pieces(["hello world, 42"], pattern=pattern, progress=False)
    # The warning points at the caller, not at ferrotok's own code.
    assert caught[0].filename == __file__


@pytest.mark.parametrize("pattern", [None, "o200k_base", "r50k_base", GPT2_PUBLISHED_PATTERN])
def test_patterns_that_keep_all_text_are_not_warned_about(pattern):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ferrotok.count_pieces(["hello world, 42"], pattern=pattern, progress=False)


def test_a_text_that_names_a_file_is_warned_about(tmp_path, monkeypatch):
    (tmp_path / "corpus.txt").write_text("the cat sat on the mat " * 50)
    monkeypatch.chdir(tmp_path)
    with pytest.warns(UserWarning, match=re.escape("[pathlib.Path('corpus.txt')]")) as caught:
        counts = ferrotok.count_pieces(iter(["corpus.txt"]), progress=False)
    assert caught[0].filename == __file__
    # Still trained on as the text it is: nothing the caller gave is changed.
    assert counts.most_common() == [(".txt", 1), ("corpus", 1)]
    # The file itself, or a text that is no file's name, is not warned about.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        as_file = ferrotok.count_pieces([pathlib.Path("corpus.txt")], progress=False)
        assert dict(as_file.most_common())[" cat"] == 50
        ferrotok.count_pieces(["no-such-file.txt", "corpus.txt"], progress=False)
        for odd in ("a\x00b", "x" * 5000):  # no file name: no warning, and no error
            ferrotok.count_pieces([odd], progress=False)
        with pytest.raises(ValueError, match="item 0 of the input is not valid Unicode"):
            ferrotok.count_pieces(["\udc80"], progress=False)


# ---------------------------------------------------------------- progress bar


_PROGRESS_CHILD = textwrap.dedent(
    """
    import pathlib, sys, ferrotok
    src = pathlib.Path(sys.argv[1])
    ferrotok.train([src], 2000, progress=sys.argv[2] == "on")
    """
)


def _run_with_tty_stderr(*args: str) -> str:
    """Runs the child with stderr on a pseudo-terminal; returns what it wrote there."""
    import pty

    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-c", _PROGRESS_CHILD, *args], stdout=subprocess.DEVNULL, stderr=slave
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(timeout=120) == 0
    return b"".join(chunks).decode("utf-8", "replace")


def test_progress_bar_only_on_a_terminal_and_only_when_asked(tmp_path):
    src = tmp_path / "text.txt"
    src.write_text(corpus("english", 0, 2_000_000), encoding="utf-8")
    shown = _run_with_tty_stderr(str(src), "on")
    assert "counting [" in shown and "MB" in shown
    assert "merging [" in shown and "1,744/1,744 merges" in shown
    assert _run_with_tty_stderr(str(src), "off") == ""
    # Not a terminal: nothing on stderr even with progress=True.
    r = subprocess.run(
        [sys.executable, "-c", _PROGRESS_CHILD, str(src), "on"], capture_output=True, text=True
    )
    assert r.returncode == 0 and r.stderr == ""


def test_a_vocabulary_smaller_than_asked_is_warned_of_and_still_rustbpes() -> None:
    docs = ["hello world hello there"] * 3
    with pytest.warns(UserWarning, match=r"only \d+ of the 9744 merges"):
        enc = ferrotok.train(docs, 10_000, progress=False)
    assert enc._mergeable_ranks == rustbpe_ranks(docs, 10_000, CL100K_PATTERN)
    assert 256 < enc.n_vocab < 10_000
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the vocabulary asked for: no warning
        ferrotok.train(docs, 260, progress=False)


@pytest.mark.parametrize("typo", ["cl100k", "o200k", "gpt-2", "r50k_base.tiktoken"])
def test_a_pattern_that_is_an_unknown_name_is_an_error_not_an_empty_vocabulary(typo: str) -> None:
    with pytest.raises(ValueError, match="not the name of a registered encoding"):
        ferrotok.train(["some text"] * 3, 260, pattern=typo, progress=False)
    # Written as a regex, the same text is taken as one (and matches itself only).
    assert resolve_pattern(f"(?:{typo})") == f"(?:{typo})"
    for name in ["cl100k_base", "o200k_harmony", "gpt2"]:
        assert resolve_pattern(name) == ferrotok.get_encoding(name)._pat_str
