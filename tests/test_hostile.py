"""Hostile constructions, generated: random vocabularies with long tokens, many and long special
tokens, patterns that backtrack or rescan. Whatever is built: no crash, and either a clear
`ValueError` or the ids tiktoken gives where tiktoken gives ids.

Each test runs a few dozen examples (seconds); the `slow` copies run thousands (a soak run:
`pytest -m slow tests/test_hostile.py`), which is what would find issue 56's rows 1-6 again:
many alternatives, long tokens and special tokens, and runaway patterns are all drawn.
"""

from __future__ import annotations

import os
from typing import Any, Callable

import ferrotok
import pytest
import tiktoken
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

FRAGMENTS = [
    r"\S+",
    r"\s+",
    r"\s+(?!\S)",
    r"\p{L}+",
    r"\p{N}{1,3}",
    r" ?[^\s\p{L}\p{N}]+",
    r"'(?:[sdmt]|ll|ve|re)",
    r"\w+(?=\d)",
    r"(?>a+)b",
    r"a++b",
    r"(a+)+b",
    r"a+b",
    r"(?i:ab)",
    r"[^a]+",
    r"\s*[\r\n]+",
    r"(?<=a)b",
]

ALPHABET = "ab \n9Z<|>é中"

FAST = settings(
    max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True
)
# A soak run's length: FERROTOK_SOAK_EXAMPLES examples (2,000 unless set).
SOAK = settings(
    max_examples=int(os.environ.get("FERROTOK_SOAK_EXAMPLES", "2000")),
    deadline=None,
    suppress_health_check=list(HealthCheck),
)


@st.composite
def vocabularies(draw: Any) -> dict[bytes, int]:
    """All 256 bytes, short tokens from a small alphabet (so they merge), and some long
    ones: runs of a short chunk, up to 60 KB."""
    ranks = {bytes([i]): i for i in range(256)}
    words = draw(st.lists(st.text(ALPHABET, min_size=2, max_size=8), max_size=120))
    for w in words:
        ranks.setdefault(w.encode(), len(ranks))
    for chunk, times in draw(
        st.lists(
            st.tuples(st.text(ALPHABET, min_size=1, max_size=3), st.integers(1, 20_000)), max_size=3
        )
    ):
        ranks.setdefault((chunk * times).encode(), len(ranks))
    return ranks


@st.composite
def special_sets(draw: Any, first_id: int) -> dict[str, int]:
    """Special tokens `<|...|>` of which none begins another (where one does, tiktoken's
    choice follows its hash map: a documented difference), some long, sometimes thousands."""
    n = draw(st.sampled_from([0, 1, 3, 2000]))
    long = draw(st.integers(0, 100_000))
    tokens = [f"<|s{i}|>" for i in range(n)]
    if long:
        tokens.append("<|" + "Z" * long + "|>")
    return {t: first_id + i for i, t in enumerate(tokens)}


patterns = st.one_of(
    st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=4).map(
        lambda p: "|".join(p + [r"\S|\s"])
    ),
    st.sampled_from([2, 64, 65, 500, 3000]).map(
        lambda n: "|".join(f"w{i}x" for i in range(n)) + r"|\S+|\s+"
    ),
)


def check(
    ranks: dict[bytes, int], specials: dict[str, int], pattern: str, texts: list[str]
) -> None:
    try:
        ours = ferrotok.Encoding(
            "h", pat_str=pattern, mergeable_ranks=ranks, special_tokens=specials
        )
    except ValueError:
        return  # refused, with a message (tiktoken may refuse it too)
    try:
        theirs = tiktoken.Encoding(
            "h", pat_str=pattern, mergeable_ranks=ranks, special_tokens=specials
        )
    except ValueError:
        theirs = None
    some_special = next(iter(specials), "")
    for text in texts + [text + some_special + text for text in texts[:1]]:
        for call in (
            lambda e, t: e.encode_ordinary(t),
            lambda e, t: e.encode(t, allowed_special="all"),
        ):
            got = attempt(call, ours, text)
            if isinstance(got, BaseException):
                assert isinstance(got, ValueError), repr(got)
                continue
            assert ours.decode(got) == text
            if theirs is not None:
                want = attempt(call, theirs, text)
                if not isinstance(want, BaseException):
                    assert got == want, (pattern[:80], text[:40])


def attempt(
    call: Callable[[Any, str], list[int]], enc: Any, text: str
) -> list[int] | BaseException:
    try:
        return call(enc, text)
    except Exception as e:  # tiktoken's regex gives up with a PanicException or ValueError
        return e


texts = st.lists(st.text(ALPHABET, max_size=300), min_size=1, max_size=3)


def run_hostile(data: Any) -> None:
    ranks = data.draw(vocabularies())
    specials = data.draw(special_sets(len(ranks) + 10))
    pattern = data.draw(patterns)
    check(ranks, specials, pattern, data.draw(texts))


@FAST
@given(st.data())
def test_hostile_constructions(data: Any) -> None:
    run_hostile(data)


@pytest.mark.slow
@SOAK
@given(st.data())
def test_hostile_constructions_soak(data: Any) -> None:
    run_hostile(data)


def test_the_drawn_cases_reach_the_rows() -> None:
    """The strategies can draw each kind of row 1-6 input (so a soak run can meet them)."""
    assert any("(?>a+)b" in f for f in FRAGMENTS) and any("(?=" in f for f in FRAGMENTS)
    big = "|".join(f"w{i}x" for i in range(20_000)) + r"|\S+|\s+"
    ours = ferrotok.Encoding(
        "h", pat_str=big, mergeable_ranks={bytes([i]): i for i in range(256)}, special_tokens={}
    )
    assert ours.encode("w19999x") == list(b"w19999x")
