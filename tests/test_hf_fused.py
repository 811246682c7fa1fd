"""Fused pre-tokenizer scanners (DeepSeek LLM, Falcon, StarCoder): HuggingFace's ids and offsets.

DeepSeek LLM's, Falcon's and StarCoder's pre-tokenizer Sequences run as one scanner each
(`rust/src/pipeline/scanners/`), recognised only on exactly those steps. Oracle: HF
`tokenizers` 0.23 on the same file, on hypothesis-generated text biased to the classes the
scanners test: line ends and whitespace runs (at line and text ends), U+3000, fullwidth and
curly punctuation, CJK and Hangul (and the range edges of DeepSeek's classes), letters
inside and outside DeepSeek's letter class, digits with non-ASCII numerics (`½ ² ١ ①`), and
chars whose UTF-8 holds bytes that are numeric after ByteLevel (`β` is CE B2: `²`).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import ferrotok
import ferrotok.hf
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle import ENCODINGS_DIR, SHARED

tokenizers = pytest.importorskip("tokenizers", minversion="0.23")

TOKENIZERS_DIR = Path(
    os.environ.get(
        "FERROTOK_TOKENIZERS_DIR",
        SHARED / "tokenizers"
        if (SHARED / "tokenizers").is_dir()
        else ENCODINGS_DIR.parent / "tokenizers",
    )
)

FUSED = {
    "deepseek-llm": "scan:deepseek-llm",
    "falcon": "scan:falcon",
    "starcoder": "scan:starcoder",
}


@functools.cache
def loaded(name: str) -> tuple[ferrotok.Encoding, Any, ferrotok.hf.Tokenizer]:
    path = TOKENIZERS_DIR / f"{name}.tokenizer.json"
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing (set FERROTOK_SHARED_DIR)")
    enc = ferrotok.Encoding.from_hf(path)
    return enc, tokenizers.Tokenizer.from_file(str(path)), ferrotok.hf.Tokenizer(enc)


_FRAGMENTS = [
    # line ends and whitespace runs (DeepSeek's `\s+$` is an end-of-line anchor)
    "\n",
    "\r",
    "\r\n",
    "\n\n",
    " ",
    "  ",
    "   ",
    "\t",
    " \n",
    "  \r\n ",
    "\u00a0",
    "\u2003",
    "\u2028",
    "\u0085",
    "\u3000",
    "\u3000\u3000",
    # punctuation: ASCII, fullwidth, curly quotes, ideographic
    "!",
    "...",
    ",",
    "'s",
    "don't",
    "(x)",
    "$",
    "~",
    "-",
    "！",
    "，",
    "（）",
    "：",
    "～",
    "\uff5f",
    "\u2018",
    "\u201c",
    "\u201f",
    "\u2020",
    "\u3001",
    "\u3002",
    "\u3003",
    "«»",
    "¿",
    "—",
    "…",
    # letters in and out of DeepSeek's class, cased, marks
    "hello",
    "Hello",
    "WORLD",
    "café",
    "µ",
    "ß",
    "ǅ",
    "Ω",
    "Ａｂｃ",
    "ﬁ",
    "e\u0301",
    "Ελληνικά",
    "русский",
    "עברית",
    "عربى",
    "हिन्दी",
    "ไทย",
    "𐐀",
    # CJK, Hangul, and the edges of DeepSeek's CJK class
    "中文",
    "你好",
    "一",
    "龥",
    "\u9fa6",
    "\u0800",
    "\u07ff",
    "한국어",
    "가",
    "\ud7a3",
    "\ud7ff",
    "カタカナ",
    "ー",
    # digits, non-ASCII numerics, and chars with numeric byte-level bytes (B2 B3 B9 BC-BE)
    "0",
    "7",
    "12",
    "123",
    "1234",
    "1234567",
    "3.14",
    "1,000",
    "½",
    "¼¾",
    "²",
    "³",
    "¹",
    "١٢٣",
    "①",
    "〇",
    "Ⅻ",
    "β",
    "Ľ",
    "ɽ",
    "ʲ",
    "Ϲ",
    "ⲽ",
    "😀",
]


def _printable(b: int) -> bool:
    return 0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or 0xAE <= b <= 0xFF


def _byte_char(b: int) -> str:
    """GPT-2's byte-level char for byte `b` (HF's `bytes_char`): itself if printable, else
    the next char from U+0100 on, in byte order."""
    if _printable(b):
        return chr(b)
    return chr(256 + sum(1 for x in range(b) if not _printable(x)))


@functools.cache
def missing_bytes(name: str) -> frozenset[int]:
    """Bytes the model's vocabulary has no token for (StarCoder lacks 0xF1, for one)."""
    vocab = loaded(name)[1].get_vocab()
    return frozenset(b for b in range(256) if _byte_char(b) not in vocab)


def biased_text() -> st.SearchStrategy[str]:
    pieces = st.one_of(
        st.sampled_from(_FRAGMENTS),
        st.text(max_size=3),
        st.characters(min_codepoint=0x80, max_codepoint=0x10FFFF).map(str),
    )
    return st.lists(pieces, max_size=16).map("".join)


@pytest.mark.parametrize("name", sorted(FUSED))
def test_fused_path_is_taken(name: str) -> None:
    enc, _, _ = loaded(name)
    assert FUSED[name] in enc._core_bpe.hf_paths()


@pytest.mark.parametrize("name", sorted(FUSED))
def test_fused_ids_and_offsets_equal_hf(name: str) -> None:
    enc, hf, face = loaded(name)

    @settings(
        max_examples=300,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(biased_text())
    def check(text: str) -> None:
        want = hf.encode(text, add_special_tokens=False)
        assert enc.encode_ordinary(text) == want.ids, text
        assert enc.encode_to_numpy(text, disallowed_special=()).tolist() == want.ids
        got = face.encode(text, add_special_tokens=False)
        assert got.ids == want.ids, text
        # Known, outside the scanners (the generic path gives the same): where BPE drops a
        # byte the vocabulary lacks (no unk token), the offsets after it differ from HF's.
        if not missing_bytes(name).intersection(text.encode()):
            assert got.offsets == want.offsets, text

    check()


@pytest.mark.parametrize("name", sorted(FUSED))
def test_fused_edge_texts_equal_hf(name: str) -> None:
    enc, hf, face = loaded(name)
    texts = ["", "\n", "\r\n", " ", "  \n  ", "x  ", "\u3000", "12345 ½²", "中文，한국어。"]
    texts += ["".join(_FRAGMENTS), " ".join(_FRAGMENTS), "\n".join(_FRAGMENTS)]
    for text in texts:
        want = hf.encode(text, add_special_tokens=False)
        assert enc.encode_ordinary(text) == want.ids, repr(text)
        got = face.encode(text, add_special_tokens=False)
        assert got.offsets == want.offsets, repr(text)
