"""Parity with tiktoken 0.14 on real text: the documents of the shared corpus and every
adversarial file, on all seven OpenAI encodings, through every encode entry point.

The default run checks a sixth of the corpus's documents, a different sixth for each encoding
and corpus file (the full sweep was a third of the suite's time, and CI runs the suite under
three Pythons); `-m slow` checks every document.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from oracle import CORPUS_DIR, ENCODING_NAMES, corpus_file, fresh_encoding, pair

CORPORA = ["english.txt", "code.txt", "multilingual.txt"]
ADVERSARIAL = sorted(p.name for p in (CORPUS_DIR / "adversarial").glob("*.txt"))
DOC_BYTES = 64 * 1024  # documents are cut at line boundaries, about this size
GROUP = 256  # documents compared per batch call (bounds memory)
SAMPLE = 6  # the default run checks every SAMPLE-th document




def documents(path) -> list[str]:
    """The file cut into documents of about DOC_BYTES at line ends (every byte is kept)."""
    text = path.read_text(encoding="utf-8")
    docs, start = [], 0
    while start < len(text):
        end = text.find("\n", start + DOC_BYTES)
        end = len(text) if end == -1 else end + 1
        docs.append(text[start:end])
        start = end
    assert "".join(docs) == text
    return docs


def test_adversarial_corpus_is_present():
    assert len(ADVERSARIAL) >= 7, f"adversarial files missing in {CORPUS_DIR}"


def sampled(docs: list[str], name: str, corpus: str) -> list[str]:
    """Every SAMPLE-th document, from an offset fixed by the encoding and the corpus file."""
    return docs[zlib.crc32(f"{name}/{corpus}".encode()) % SAMPLE :: SAMPLE]


@pytest.mark.parametrize("corpus", CORPORA)
@pytest.mark.parametrize("name", ENCODING_NAMES)
def test_corpus_parity(name: str, corpus: str) -> None:
    docs = documents(corpus_file(corpus))
    picked = sampled(docs, name, corpus)
    assert 0 < len(picked) <= len(docs) // SAMPLE + 1
    check_parity(name, picked)


@pytest.mark.slow
@pytest.mark.parametrize("corpus", CORPORA)
@pytest.mark.parametrize("name", ENCODING_NAMES)
def test_corpus_parity_every_document(name: str, corpus: str) -> None:
    check_parity(name, documents(corpus_file(corpus)))


def check_parity(name: str, docs: list[str]) -> None:
    ours, theirs = pair(name)
    for i in range(0, len(docs), GROUP):
        group = docs[i : i + GROUP]
        expected = theirs.encode_ordinary_batch(group)
        assert ours.encode_ordinary_batch(group) == expected
        for doc, exp in zip(group, expected):
            assert ours.encode_ordinary(doc) == exp
            arr = ours.encode_to_numpy(doc, disallowed_special=())
            assert arr.dtype == np.uint32 and arr.tolist() == exp
        # `encode` checks for special-token text first: same outcome as tiktoken's.
        try:
            expected_special = theirs.encode_batch(group)
        except ValueError:
            with pytest.raises(ValueError):
                ours.encode_batch(group)
        else:
            assert ours.encode_batch(group) == expected_special
            assert [ours.encode(d) for d in group] == expected_special


@pytest.mark.parametrize("name", ["r50k_base", "cl100k_base", "o200k_base"])
def test_parity_before_and_after_the_backtrack_tables_are_built(name: str) -> None:
    # A fresh encoding encodes long pieces by the scan and the heap until they add up to
    # 128 KiB (then the backtracking tables are built): both sides of that must give
    # tiktoken's ids. The first 40,000 chars of the three corpora hold ~47 KB of such pieces
    # (~45 KB of them Japanese); the next 200,000 chars of the multilingual text (392 KB,
    # ~289 KB in such pieces) cross the threshold.
    ours, theirs = fresh_encoding(name), pair(name)[1]
    for corpus in CORPORA:
        text = corpus_file(corpus).read_text(encoding="utf-8")[:40_000]
        assert ours.encode_ordinary(text) == theirs.encode_ordinary(text), corpus
    more = corpus_file("multilingual.txt").read_text(encoding="utf-8")[40_000:240_000]
    docs = [more[i : i + 4000] for i in range(0, len(more), 4000)]
    assert [ours.encode_ordinary(d) for d in docs] == theirs.encode_ordinary_batch(docs)


@pytest.mark.parametrize("fname", ADVERSARIAL)
@pytest.mark.parametrize("name", ENCODING_NAMES)
def test_adversarial_parity(name: str, fname: str) -> None:
    ours, theirs = pair(name)
    text = (CORPUS_DIR / "adversarial" / fname).read_text(encoding="utf-8")
    expected = theirs.encode_ordinary(text)
    assert ours.encode_ordinary(text) == expected
    assert ours.encode(text, allowed_special="all") == theirs.encode(text, allowed_special="all")
    assert ours.encode_to_numpy(text).tolist() == expected
    assert ours.decode(expected) == text


@pytest.mark.parametrize("name", ENCODING_NAMES)
def test_text_full_of_special_tokens(name: str) -> None:
    ours, theirs = pair(name)
    specials = sorted(ours.special_tokens_set)
    assert specials == sorted(theirs.special_tokens_set)
    sample = corpus_file("english.txt").read_text(encoding="utf-8")[:20000]
    words = sample.split(" ")
    # A special token between most words, glued to neighbours and in runs.
    parts = []
    for i, w in enumerate(words):
        parts.append(w)
        parts.append(specials[i % len(specials)] * (1 + i % 3) if i % 4 else " ")
    text = "".join(parts)
    for allowed in ("all", set(specials[::2])):
        disallowed = () if allowed != "all" else "all"
        assert ours.encode(text, allowed_special=allowed, disallowed_special=disallowed) == (
            theirs.encode(text, allowed_special=allowed, disallowed_special=disallowed)
        )
    assert ours.encode_batch([text, text[::-1]], allowed_special="all") == theirs.encode_batch(
        [text, text[::-1]], allowed_special="all"
    )
    for token in specials:
        for t in (token, token + "x", "x" + token, " " + token + "\n", token + token):
            assert ours.encode(t, allowed_special="all") == theirs.encode(t, allowed_special="all")
            assert ours.encode(t, disallowed_special=()) == theirs.encode(
                t, disallowed_special=()
            )
