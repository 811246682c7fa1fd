"""Parity where CJK pieces are cut: text glued together from the vocabularies' own CJK tokens.

ferrotok cuts a long CJK piece at the boundaries no token spans and encodes the parts on their
own (`rust/src/encode/bpe/char_cuts.rs`). Text made of the chars of multi-char tokens, in
random order, puts boundaries that tokens span beside boundaries that none does. Parts that
spell a token BPE cannot reach (a part is BPE proper, where a piece is its token if it is one)
are drawn too where a vocabulary has such tokens; cl100k and o200k have no CJK ones, so the
Rust tests of `encode/bpe/char_cuts.rs` cover that case with a vocabulary made for it."""

from __future__ import annotations

import functools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle import pair

NAMES = ["cl100k_base", "o200k_base"]


def is_cjk(c: str) -> bool:
    """Kana, CJK ideographs, Hangul: three-byte chars from U+1000 up, the ones cut."""
    o = ord(c)
    return 0x3040 <= o <= 0x30FF or 0x4E00 <= o <= 0x9FFF or 0xAC00 <= o <= 0xD7A3


def merge_rank_bpe(ranks: dict[bytes, int], piece: bytes) -> list[int]:
    """BPE by the definition (lowest-rank adjacent pair first, leftmost on ties), with no
    whole-token shortcut: for telling which tokens BPE reaches."""
    parts = [bytes([b]) for b in piece]
    while len(parts) > 1:
        best = min(
            ((ranks[parts[i] + parts[i + 1]], i) for i in range(len(parts) - 1)
             if parts[i] + parts[i + 1] in ranks),
            default=None,
        )
        if best is None:
            break
        i = best[1]
        parts[i : i + 2] = [parts[i] + parts[i + 1]]
    return [ranks[p] for p in parts]


@functools.cache
def material(name: str) -> tuple[list[str], list[str], list[str]]:
    """The encoding's tokens that are one CJK char, those of several, and those of the latter
    that BPE does not reach from their bytes."""
    ranks = pair(name)[1]._mergeable_ranks
    singles, runs = [], []
    for token in ranks:
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if text and all(is_cjk(c) for c in text):
            (singles if len(text) == 1 else runs).append(text)
    unreachable = [t for t in runs if merge_rank_bpe(ranks, t.encode()) != [ranks[t.encode()]]]
    return sorted(singles), sorted(runs), sorted(unreachable)


@st.composite
def cjk_text(draw: st.DrawFn) -> tuple[str, str]:
    name = draw(st.sampled_from(NAMES))
    singles, runs, unreachable = material(name)
    bits = st.one_of(
        st.sampled_from(runs),
        st.sampled_from(runs),
        st.sampled_from(singles),
        st.sampled_from(unreachable or runs),
        # Chars no token is made of, and what ends or starts a piece.
        st.sampled_from(["\u9fa0", "\u3402", "\ud7a0", " ", "、", "。", "「", "a", "1", "\n"]),
    )
    return name, "".join(draw(st.lists(bits, min_size=1, max_size=30)))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cjk_text())
def test_cut_pieces_give_tiktokens_ids(case: tuple[str, str]) -> None:
    name, text = case
    ours, theirs = pair(name)
    ids = theirs.encode_ordinary(text)
    assert ours.encode_ordinary(text) == ids
    assert ours.decode(ids) == text


def test_there_is_material_to_cut() -> None:
    for name in NAMES:
        singles, runs, _ = material(name)
        assert len(singles) > 500 and len(runs) > 200, name
