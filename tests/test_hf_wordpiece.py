"""WordPiece `tokenizer.json` files (BERT, BGE): HuggingFace's ids, offsets and decoding.

Such a file cleans, splits CJK ideographs apart, strips accents and lowercases
(`BertNormalizer`), cuts at whitespace and punctuation (`BertPreTokenizer`), and reads each
word greedily, longest token first, `##` before a token that continues a word (`WordPiece`);
a word with a place no token starts is the unknown token. HF `tokenizers` 0.23 is the oracle
(`test_hf_parity.py` runs the shared BGE model through the corpus, vector and hypothesis
checks, `test_hf_face.py` through truncation, padding and pairs). Here: texts aimed at this
family's edges, every combination of the normalizer's flags, other pre-tokenizers, a model
trained with HF's own trainer, decoding (cleanup, a first token that continues a word), and
refusals by name.
"""

from __future__ import annotations

import functools
import itertools
import json
import pickle
from pathlib import Path
from typing import Any

import ferrotok
import ferrotok.hf
import pytest
from hf_support import WORDPIECE, sample_all
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hf_parity import (
    check_face,
    check_ids,
    check_survives,
    check_transformers_patched,
    loaded,
    model_path,
)

tokenizers = pytest.importorskip("tokenizers", minversion="0.23")

# Aimed at this family: case and accents (NFD, then marks removed), CJK ideographs (a space
# each side) beside kana and Hangul (not), controls, NUL and U+FFFD (removed), every kind of
# whitespace (made a space, then a cut), punctuation of every script, words longer than
# `max_input_chars_per_word`, words with a char no token starts (the unknown token), the
# decoder's cleanup (" ." and " n't"), and the special tokens' texts.
EDGE_TEXTS = [
    "Hello World",
    "  two  spaces  ",
    "",
    " ",
    "x",
    "\n\t\r\n",
    "ÄPFEL Straße naïve Ǆemal ﬁne İstanbul ΣΑΣ",
    "e\u0301 \u212b \u1e9b\u0323 a\u0308\u0301",
    "東京都の天気は晴れです。日本語のテキスト",
    "한국어 텍스트 中文 文字 𠀀𠀁 \uf900",
    "ctrl\x00nul\x01soh\x7fdel\x85nel\u200bzwsp\ufeffbom\ufffdrepl\ue000pua",
    "ws\u00a0nbsp\u3000ideo\u2028line\u2009thin\x0bvt\x0cff",
    "Hello, world! It's (really) \"quoted\" — isn't it? ¿Qué? «non» 「引用」",
    "don't do not I'm we've they're he's . , ! ?",
    "unaffable supercalifragilisticexpialidocious",
    "x" * 101,
    "é" * 100 + " " + "é" * 101,
    "emoji 🎉👍🏽 math 𝔘𝔫𝔦 ½ ² ① ١٢٣",
    "[CLS] a [SEP] b [MASK] [UNK] [PAD]",
    "a[MASK]b ##ing ## #",
]


def check_decoding(enc: ferrotok.Encoding, hf: Any, face: Any, texts: list[str]) -> None:
    """Decoding every text's ids, and the ids from each place on (a window that starts with a
    token continuing a word keeps its `##`), through both faces, as HF decodes them."""
    for text in texts:
        ids = hf.encode(text, add_special_tokens=True).ids
        for start in range(0, len(ids), max(1, len(ids) // 8)):
            window = ids[start:]
            want = hf.decode(window, skip_special_tokens=False)
            assert enc.decode(window) == want, (text, start)
            assert enc.decode_batch([window, ids]) == [want, hf.decode(ids, False)]
            for skip in (True, False):
                got = face.decode(window, skip_special_tokens=skip)
                assert got == hf.decode(window, skip_special_tokens=skip), (text, start)
        if ids:
            decoded, offsets = enc.decode_with_offsets(ids)
            assert decoded == enc.decode(ids)
            # Each token starts where its own text begins in the whole text's decoding.
            for i, o in enumerate(offsets):
                alone = enc.decode(ids[: i + 1])
                assert decoded.startswith(alone), (text, i)
                assert o <= len(alone), (text, i)


def check_all(enc: ferrotok.Encoding, hf: Any, face: Any, texts: list[str]) -> None:
    check_ids(enc, hf, texts, "wordpiece")
    check_face(face, hf, texts, "wordpiece")
    check_decoding(enc, hf, face, texts)


def load(tmp_path: Path, cfg: dict[str, Any], name: str = "tokenizer.json") -> tuple[Any, ...]:
    path = tmp_path / name
    path.write_text(json.dumps(cfg), encoding="utf-8")
    return loaded(str(path))


def bge() -> dict[str, Any]:
    cfg: dict[str, Any] = json.loads(model_path("bert-bge").read_text(encoding="utf-8"))
    return cfg


@pytest.mark.parametrize("name", WORDPIECE)
def test_shared_model_on_edge_texts(name: str) -> None:
    enc, hf, face = loaded(name)
    assert enc._core_bpe.hf_paths() == ["wordpiece", "scan:bert"]
    check_all(enc, hf, face, EDGE_TEXTS)
    # BERT's pair: its own type ids, and the template around each text.
    pairs = list(zip(EDGE_TEXTS, EDGE_TEXTS[::-1]))
    for (a, b), g, w in zip(pairs, face.encode_batch(pairs), hf.encode_batch(pairs)):
        for field in ("ids", "type_ids", "offsets", "word_ids", "sequence_ids"):
            assert getattr(g, field) == getattr(w, field), (a, b, field)


# BertNormalizer's four flags, each both ways (`strip_accents` also unset: it then follows
# `lowercase`).
NORMALIZERS = [
    {
        "type": "BertNormalizer",
        "clean_text": clean,
        "handle_chinese_chars": chinese,
        "strip_accents": strip,
        "lowercase": lower,
    }
    for clean, chinese, strip, lower in itertools.product(
        [True, False], [True, False], [None, True, False], [True, False]
    )
]


@pytest.mark.parametrize("normalizer", NORMALIZERS, ids=lambda n: "-".join(map(str, n.values())))
def test_every_normalizer_setting(tmp_path: Path, normalizer: dict[str, Any]) -> None:
    cfg = bge()
    cfg["normalizer"] = normalizer
    enc, hf, face = load(tmp_path, cfg)
    check_all(enc, hf, face, EDGE_TEXTS + sample_all(1, 0))


@pytest.mark.parametrize(
    "pre_tokenizer",
    [
        None,
        {"type": "WhitespaceSplit"},
        {"type": "Whitespace"},
        {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "Whitespace"},
                {"type": "Digits", "individual_digits": False},
            ],
        },
        {"type": "Sequence", "pretokenizers": [{"type": "BertPreTokenizer"}]},
        {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "WhitespaceSplit"},
                {"type": "Digits", "individual_digits": True},
                {"type": "Punctuation", "behavior": "MergedWithPrevious"},
            ],
        },
    ],
)
def test_other_pre_tokenizers(tmp_path: Path, pre_tokenizer: Any) -> None:
    # Without a pre-tokenizer a whole segment is one word (long ones are the unknown token).
    cfg = bge()
    cfg["pre_tokenizer"] = pre_tokenizer
    cfg["normalizer"] = {"type": "Sequence", "normalizers": [{"type": "NFC"}, cfg["normalizer"]]}
    enc, hf, face = load(tmp_path, cfg)
    check_all(enc, hf, face, EDGE_TEXTS + sample_all(1, 0) + ["2021 1,000 a.b.c 3.14"])


def test_whitespace_pre_tokenizer_reads_every_char_as_hf(tmp_path: Path) -> None:
    # HF's `Whitespace` is the regex crate's `\w+|[^\w\s]+`: each char is a word char, a
    # space or neither. "a{c}a" is one word, two or three, as HF reads c: the offsets tell.
    cfg = bge()
    cfg["pre_tokenizer"] = {"type": "Whitespace"}
    cfg["normalizer"] = None
    enc, hf, face = load(tmp_path, cfg)
    chars = [chr(c) for c in range(0, 0x110000, 5) if not 0xD800 <= c < 0xE000]
    for start in range(0, len(chars), 20_000):
        text = " ".join(f"a{c}a" for c in chars[start : start + 20_000])
        assert face.encode(text).offsets == hf.encode(text).offsets, start
        assert enc.encode_ordinary(text) == hf.encode(text, add_special_tokens=False).ids


def test_word_length_bound_and_decoder_without_cleanup(tmp_path: Path) -> None:
    cfg = bge()
    cfg["model"]["max_input_chars_per_word"] = 5
    cfg["decoder"]["cleanup"] = False
    enc, hf, face = load(tmp_path, cfg)
    check_all(enc, hf, face, EDGE_TEXTS + ["abcde abcdef ééééé éééééé"])
    assert enc.encode("abcdef") == [hf.token_to_id("[UNK]")]


def test_a_missing_unknown_token_fails_only_the_words_that_need_it(tmp_path: Path) -> None:
    cfg = bge()
    cfg["model"]["unk_token"] = "<nope>"
    enc, hf, face = load(tmp_path, cfg)
    assert enc.encode("hello world") == hf.encode("hello world", add_special_tokens=False).ids
    with pytest.raises(Exception, match="Missing .* token"):
        hf.encode("\U0001d518")
    with pytest.raises(ValueError, match="unknown token"):
        enc.encode("\U0001d518")
    with pytest.raises(ValueError, match="unknown token"):
        face.encode("\U0001d518")


@functools.cache
def _trained() -> str:
    """A WordPiece model trained here with HF's trainer on a corpus sample, with `@@` as its
    continuing-subword prefix, cased, and a few added tokens (one not special)."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.WordPiece(unk_token="<unk>", continuing_subword_prefix="@@"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=False)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece(prefix="@@")
    trainer = trainers.WordPieceTrainer(
        vocab_size=3000,
        special_tokens=["<unk>", "<cls>", "<sep>"],
        continuing_subword_prefix="@@",
    )
    tok.train_from_iterator(sample_all(8, 1), trainer)
    tok.add_tokens(["hello world"])
    return str(tok.to_str())


def test_a_model_trained_with_hfs_trainer(tmp_path: Path) -> None:
    enc, hf, face = load(tmp_path, json.loads(_trained()))
    assert hf.get_vocab_size() > 2000
    texts = EDGE_TEXTS + sample_all(3, 1) + ["say hello world twice: hello world", "@@x y@@"]
    check_all(enc, hf, face, texts)


@given(
    st.lists(
        st.sampled_from(
            [*"aAéÉ .,!?'#-\n\t", "\u0301", "\x00", "\u3000", "中", "文", "ß", "İ", "Σ", "##"]
            + ["un", "##able", "aff", "[MASK]", "[UNK]", "don", "'t", "do not", "hello"]
        ),
        max_size=24,
    ).map("".join)
)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_hypothesis_wordpiece_edges(text: str) -> None:
    enc, hf, face = loaded("bert-bge")
    check_ids(enc, hf, [text], "wordpiece")
    check_face(face, hf, [text], "wordpiece")
    ids = hf.encode(text, add_special_tokens=False).ids
    assert enc.decode(ids) == hf.decode(ids, skip_special_tokens=False)
    assert face.decode(ids) == hf.decode(ids)


def test_decoding_keeps_a_first_tokens_prefix() -> None:
    enc, hf, face = loaded("bert-bge")
    ids = hf.encode("unaffable", add_special_tokens=False).ids
    assert len(ids) > 1 and hf.id_to_token(ids[1]).startswith("##")
    for window in (ids[1:], ids[1:2], [ids[1], ids[0]]):
        want = hf.decode(window)
        assert want.startswith("##")
        assert enc.decode(window) == face.decode(window) == want
        assert enc.decode_bytes(window) == want.encode()
        text, offsets = enc.decode_with_offsets(window)
        assert text == want and offsets[0] == 0
        if len(window) > 1:
            assert offsets[1] == len(hf.decode(window[:1]))


def test_pickled_encoding_decodes_the_same() -> None:
    enc, hf, _ = loaded("bert-bge")
    copy = pickle.loads(pickle.dumps(enc))
    ids = hf.encode("unaffable, isn't it?").ids
    for window in (ids, ids[2:]):
        assert copy.decode(window) == enc.decode(window) == hf.decode(window, False)


def test_transformers_patched_is_identical(tmp_path: Path) -> None:
    config = {
        "tokenizer_class": "BertTokenizer",
        "do_lower_case": True,
        "model_max_length": 512,
        **{k: f"[{k[:-6].upper()}]" for k in ("cls_token", "sep_token", "pad_token")},
        "unk_token": "[UNK]",
        "mask_token": "[MASK]",
    }
    texts = EDGE_TEXTS[:8] + EDGE_TEXTS[12:16]
    text = model_path("bert-bge").read_text(encoding="utf-8")
    check_transformers_patched(tmp_path, text, config, texts)


@pytest.mark.parametrize(
    ("change", "component"),
    [
        (lambda c: c.update(decoder={"type": "ByteLevel"}), "decoder ByteLevel for a WordPiece"),
        (lambda c: c.update(decoder=None), "decoder none for a WordPiece"),
        (
            lambda c: c.update(pre_tokenizer={"type": "Metaspace", "replacement": "▁"}),
            "WordPiece model behind a ByteLevel or Metaspace",
        ),
        (
            lambda c: c.update(pre_tokenizer={"type": "ByteLevel"}),
            "WordPiece model behind a ByteLevel or Metaspace",
        ),
        (
            lambda c: c.update(pre_tokenizer={"type": "UnicodeScripts"}),
            "pre-tokenizer UnicodeScripts",
        ),
        (
            lambda c: c.update(normalizer={"type": "BertNormalizer", "lowercase": "yes"}),
            "BertNormalizer: `lowercase` is not a bool",
        ),
    ],
)
def test_wordpiece_components_are_refused_by_name(change: Any, component: str) -> None:
    cfg = bge()
    change(cfg)
    with pytest.raises(ValueError, match=component):
        ferrotok.Encoding._from_hf_json(json.dumps(cfg), "bert")


@pytest.mark.parametrize(
    "change",
    [
        lambda c: c["model"].update(vocab={}),
        lambda c: c["model"].update(vocab={"a": -1}),
        lambda c: c["model"].update(vocab={"a": 2**40}),
        lambda c: c["model"].update(vocab={"a": "x", "[UNK]": 0}),
        lambda c: c["model"].update(vocab=[["a", 0]]),
        lambda c: c["model"].update(vocab={"": 0, "##": 1, "[UNK]": 2}),
        lambda c: c["model"].update(unk_token=5),
        lambda c: c["model"].update(continuing_subword_prefix=""),
        lambda c: c["model"].update(max_input_chars_per_word=-1),
        lambda c: c["model"].update(max_input_chars_per_word=0),
        lambda c: c["model"].update(max_input_chars_per_word=10**30),
        lambda c: c.update(decoder={"type": "WordPiece", "prefix": 3}),
        lambda c: c.update(normalizer={"type": "BertNormalizer", "strip_accents": "x"}),
    ],
)
def test_hostile_wordpiece_files_raise_value_errors(change: Any) -> None:
    cfg = bge()
    change(cfg)
    check_survives(json.dumps(cfg))
