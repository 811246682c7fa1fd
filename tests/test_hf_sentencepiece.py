"""SentencePiece BPE `tokenizer.json` files (Llama 2, Mistral 7B): HuggingFace's ids and offsets.

Such a file has no pre-tokenizer: its normalizers put `▁` in front of each text and for each
space, and the BPE model merges chars, falling back to `<0xHH>` byte tokens (or the unknown
token) for a char it lacks. HF `tokenizers` 0.23 is the oracle, as for the byte-level models
(`test_hf_parity.py` runs the shared SentencePiece models through the same corpus, vector and
hypothesis checks). Here: texts aimed at this family's edges, on the shared models and on
models trained here with HF's own trainer (byte fallback or an unknown token, fused or not,
merges that span a `▁` so no cut is taken), the decoders' chain, and refusals by name.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import pickle
from pathlib import Path
from typing import Any

import ferrotok
import ferrotok.hf
import pytest
from hf_support import SENTENCEPIECE, documents, sample_all
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hf_parity import check_face, check_ids, loaded, model_path

tokenizers = pytest.importorskip("tokenizers", minversion="0.23")

# Aimed at this family: the dummy prefix and spaces (leading, trailing, runs, alone), chars
# the vocabulary lacks (byte fallback: emoji, rare CJK, controls), a literal `▁` and a byte
# token's text, special tokens inside a text (each part gets its own `▁`), and words longer
# than the piece cache holds (a line of CJK has no spaces: it is cut between chars instead).
EDGE_TEXTS = [
    "Hello world",
    " Hello",
    "Hello ",
    "  two  spaces  ",
    " ",
    "   ",
    "",
    "x",
    "\n",
    "tab\tand\nnew lines\r\n",
    "emoji 🎉👍🏽 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
    "\x00\x01\x7f control",
    "literal ▁ and ▁▁x▁y",
    "<0x41> <0xZZ> <0x0A>",
    "<s>starts",
    "a<s>b </s> c <unk>",
    "e\u0301 caf\u00e9 \u212b",
    "東京都の天気は晴れです。日本語のテキストにはスペースがありません。",
    "鿕鿔鿓鿒 ꙮ 𠀀𠀁",
    "supercalifragilisticexpialidocious_and_a_very_long_identifier_name",
    "x" * 300,
    "ab " * 50,
]


def check_all(
    enc: ferrotok.Encoding, hf: Any, face: ferrotok.hf.Tokenizer, texts: list[str]
) -> None:
    check_ids(enc, hf, texts, "sentencepiece")
    check_face(face, hf, texts, "sentencepiece")
    for text in texts:
        ids = hf.encode(text, add_special_tokens=False).ids
        for skip in (True, False):
            assert face.decode(ids, skip) == hf.decode(ids, skip_special_tokens=skip), text
        assert enc.decode(ids) == hf.decode(ids, skip_special_tokens=False), text


@pytest.mark.parametrize("name", SENTENCEPIECE)
def test_shared_models_on_edge_texts(name: str) -> None:
    enc, hf, face = loaded(name)
    # Every shared model is cut into words at `▁` (no token holds another char before one),
    # straight from the raw text.
    assert enc._core_bpe.hf_paths() == ["cut_at_meta", "raw_words"]
    check_all(enc, hf, face, EDGE_TEXTS)
    # A lone byte token, and one of an incomplete UTF-8 sequence, decoded as HF decodes them.
    start = hf.token_to_id("<0xE4>")
    for ids in ([start], [start, start + 1], hf.encode("🎉").ids[:2]):
        assert face.decode(ids) == hf.decode(ids)


@pytest.mark.parametrize("name", SENTENCEPIECE)
def test_corpus_vectors_of_sentencepiece(name: str) -> None:
    # 4,300 corpus texts with `sentencepiece`'s own ids (MANIFEST.md): every one.
    enc, _, _ = loaded(name)
    path = model_path(name).parent / "vectors" / f"{name}.corpus.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    assert len(rows) > 4000
    for row in rows:
        assert enc.encode(row["text"], allowed_special="all") == row["ids"], row["text"][:80]


@pytest.mark.parametrize("name", SENTENCEPIECE)
def test_long_indented_words_met_again(name: str) -> None:
    # A word of over 32 bytes that starts with `▁`s (spaces and literal `▁`s alike, as the
    # normalizers make them one) is cached under a key of 0xFF, its count of `▁`s and the
    # rest, where that fits in 32 bytes: met again, it gives what it gave at first, through
    # both faces, whatever its count of `▁`s (the last word's rest does not fit).
    hf = tokenizers.Tokenizer.from_file(str(model_path(name)))
    enc = ferrotok.Encoding.from_hf(model_path(name))
    face = ferrotok.hf.Tokenizer(enc)
    texts = []
    for n in (8, 10, 11, 12, 20, 27, 31, 32, 33):
        words = ("return", "x", "print(a)", "東京", "self.assertEqual(a,", "🎉", "y" * 31)
        for word in words:
            texts += ["def f():\n" + " " * n + word, "x\n" + "▁" * n + word + " y"]
    for _ in range(2):
        check_all(enc, hf, face, texts)


@pytest.mark.parametrize("name", SENTENCEPIECE)
def test_build_tables_builds_the_models_own_tables(name: str) -> None:
    # A fresh instance: the shared one may have built them by encoding.
    enc = ferrotok.Encoding.from_hf(model_path(name))
    before = dict(enc._core_bpe.tables_built())
    assert {"spm char pairs", "spm whole tokens"} <= before.keys(), before
    assert not any(before.values()), before
    enc.build_tables()
    after = dict(enc._core_bpe.tables_built())
    assert after.keys() == before.keys() and all(after.values()), after
    hf = tokenizers.Tokenizer.from_file(str(model_path(name)))
    check_all(enc, hf, ferrotok.hf.Tokenizer(enc), EDGE_TEXTS + sample_all(3, 1))


def test_without_a_dummy_prefix(tmp_path: Path) -> None:
    # Gemma's layout on Llama 2's vocabulary: spaces made `▁` but none put in front, and a
    # decoder without `Strip`. The words then come from the normalized copy (not the raw text).
    cfg = json.loads(model_path("llama-spm").read_text(encoding="utf-8"))
    cfg["normalizer"] = {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}
    cfg["decoder"]["decoders"] = cfg["decoder"]["decoders"][:3]
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(cfg), encoding="utf-8")
    enc, hf, face = loaded(str(path))
    assert enc._core_bpe.hf_paths() == ["cut_at_meta"]
    check_all(enc, hf, face, EDGE_TEXTS + sample_all(2, 1))
    assert enc.decode(enc.encode(" Hello world")) == " Hello world"


# Metaspace layouts over Llama 2's vocabulary: (prepend_scheme, split, Strip in the decoder,
# an NFKC normalizer before it). The first is what transformers' LlamaConverter writes without
# `legacy`; with a normalizer the words come from Metaspace's copy, not the raw text.
METASPACE = [
    ("first", False, True, False),
    ("always", True, True, False),
    ("never", False, False, False),
    ("first", True, True, True),
]


@pytest.mark.parametrize(("scheme", "split", "strip", "nfkc"), METASPACE)
def test_metaspace_pre_tokenizer(
    tmp_path: Path, scheme: str, split: bool, strip: bool, nfkc: bool
) -> None:
    cfg = json.loads(model_path("llama-spm").read_text(encoding="utf-8"))
    cfg["normalizer"] = {"type": "NFKC"} if nfkc else None
    cfg["pre_tokenizer"] = {
        "type": "Metaspace",
        "replacement": "\u2581",
        "prepend_scheme": scheme,
        "split": split,
    }
    if not strip:
        cfg["decoder"]["decoders"] = cfg["decoder"]["decoders"][:3]
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(cfg), encoding="utf-8")
    enc, hf, face = loaded(str(path))
    want_paths = (
        ["cut_at_meta"] + (["split_all"] if split else []) + ([] if nfkc else ["raw_words"])
    )
    assert enc._core_bpe.hf_paths() == want_paths
    # Texts after a special token (`first` puts no `▁` there) and starting with a space (no
    # `▁` in front of one: HF's layout, not sentencepiece's).
    texts = EDGE_TEXTS + sample_all(2, 1) + ["<s> x", "a</s>b", " lead", "  x</s> y"]
    check_all(enc, hf, face, texts)
    words = ["Hello", " world", "x", "  "]
    for add in (True, False):
        got = face.encode(words, is_pretokenized=True, add_special_tokens=add)
        want = hf.encode(words, is_pretokenized=True, add_special_tokens=add)
        assert (got.ids, got.offsets, got.word_ids) == (want.ids, want.offsets, want.word_ids)


def test_a_byte_tokens_text_stays_text(tmp_path: Path) -> None:
    # Words met raw are looked up by their decoded bytes, where the one-char word "\x01"
    # (whose char has no token) is its byte token's bytes; that must not teach the model that
    # the word "<0x01>" is that token. A normalized special added token makes
    # `allowed_special="all"` take the normalized path, which reads what the raw one learnt.
    cfg = json.loads(model_path("llama-spm").read_text(encoding="utf-8"))
    cfg["normalizer"] = None
    cfg["pre_tokenizer"] = {
        "type": "Metaspace",
        "replacement": "\u2581",
        "prepend_scheme": "never",
        "split": False,
    }
    cfg["decoder"]["decoders"] = cfg["decoder"]["decoders"][:3]
    size = len(cfg["model"]["vocab"])
    cfg["added_tokens"].append(
        {
            "id": size,
            "content": "[X]",
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": True,
            "special": True,
        }
    )
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(cfg), encoding="utf-8")
    enc, hf, _ = loaded(str(path))
    for text in ["\x01", "<0x01>", "\x01[X]<0x01>"]:
        want = hf.encode(text, add_special_tokens=False).ids
        assert (
            enc.encode_ordinary(text.replace("[X]", ""))
            == hf.encode(text.replace("[X]", ""), add_special_tokens=False).ids
        )
        assert enc.encode(text, allowed_special="all") == want, text


def test_tiktoken_face_decodes_without_the_dummy_prefix() -> None:
    enc, hf, _ = loaded("llama-spm")
    text = "Hello world, it's 2021!"
    ids = enc.encode(text)
    assert hf.decode(ids) == text
    assert enc.decode(ids) == text
    assert enc.decode_bytes(ids) == text.encode()
    assert enc.decode_batch([ids, ids[1:]]) == [text, hf.decode(ids[1:])]
    assert enc.decode_bytes_batch([ids]) == [text.encode()]
    # Offsets in the stripped text, non-ASCII text too: each token starts where the text of
    # the tokens before it ends (no token here starts inside a char).
    for t in [text, "café au lait", "日本語 x", "  two  spaces"]:
        t_ids = enc.encode(t)
        decoded, offsets = enc.decode_with_offsets(t_ids)
        assert decoded == t
        assert offsets == [len(enc.decode(t_ids[:i])) for i in range(len(t_ids))], t
    # A token's own bytes keep its space; a byte token is its byte; "A" keeps its char token.
    assert enc.decode_single_token_bytes(ids[0]) == b" Hello"
    assert enc.decode_single_token_bytes(hf.token_to_id("<0x0A>")) == b"\n"
    assert enc.encode_single_token(b"A") == hf.token_to_id("A")
    # A text starting with spaces keeps all but the one the normalizer put in front.
    assert enc.decode(enc.encode("  x")) == "  x"
    assert enc.decode(enc.encode(text, add_special_tokens=True)) == "<s> " + text
    # Ids whose bytes another id holds (`<0x41>` is `A`) decode, but are no special tokens:
    # a text that spells none of the file's special tokens takes `encode`'s one-pass route.
    assert not enc._core_bpe.holds_special_text([text, "A e ."])
    assert enc._core_bpe.holds_special_text(["x</s>"])
    assert enc.decode([hf.token_to_id("<0x41>")]) == "A"
    # A copy made by pickle (worker processes) decodes the same way.
    assert pickle.loads(pickle.dumps(enc)).decode(ids) == text


# ---- models trained here with HF's trainer ----


def _sentencepiece_file(directory: str, kind: str) -> str:
    """A SentencePiece-style BPE trained by HF's BpeTrainer on English and code.

    `kind`: "fallback" (byte fallback, fused unknown), "unk_fused" and "unk_unfused" (no byte
    fallback: the unknown token for a char the vocabulary lacks; "unk_fused" also has added
    tokens matched in the normalized text, so its words come from the normalized copy), "whole"
    (trained with no pre-tokenizer at all, so merges span `▁`: no cut is safe, each segment
    merges whole)."""
    from tokenizers import (
        AddedToken,
        Tokenizer,
        models,
        normalizers,
        pre_tokenizers,
        trainers,
    )

    tok = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=kind != "unk_unfused"))
    tok.normalizer = normalizers.Sequence(
        [normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")]
    )
    if kind != "whole":
        # Words cut before each `▁` while training, as sentencepiece trains: no merge spans
        # a `▁` after another char.
        tok.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="never", split=True)
    trainer = trainers.BpeTrainer(
        vocab_size=700,
        special_tokens=["<unk>", "<s>", "</s>"],
        limit_alphabet=90,
        show_progress=False,
    )
    training = [d for f in ["english.txt", "code.txt"] for d in documents(f)[:30]]
    tok.train_from_iterator(training, trainer=trainer)
    if kind == "unk_fused":
        tok.add_tokens([AddedToken("world", normalized=True), AddedToken(" the", normalized=True)])
    cfg = json.loads(tok.to_str())
    cfg["pre_tokenizer"] = None
    steps: list[dict[str, Any]] = [
        {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
        {"type": "Fuse"},
        {"type": "Strip", "content": " ", "start": 1, "stop": 0},
    ]
    if kind in ("fallback", "whole"):
        vocab = cfg["model"]["vocab"]
        for b in range(256):
            vocab.setdefault(f"<0x{b:02X}>", len(vocab))
        cfg["model"]["byte_fallback"] = True
        steps.insert(1, {"type": "ByteFallback"})
    cfg["decoder"] = {"type": "Sequence", "decoders": steps}
    path = os.path.join(directory, f"spm-{kind}.json")
    Path(path).write_text(json.dumps(cfg), encoding="utf-8")
    return path


KINDS = ["fallback", "unk_fused", "unk_unfused", "whole"]


@pytest.fixture(scope="module")
def trained_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("hf_sentencepiece"))


@functools.cache
def _trained(directory: str, kind: str) -> tuple[ferrotok.Encoding, Any, ferrotok.hf.Tokenizer]:
    return loaded(_sentencepiece_file(directory, kind))


def _text() -> st.SearchStrategy[str]:
    pieces = st.one_of(
        st.sampled_from(EDGE_TEXTS[:17] + [" ", "  ", "▁", "the", " the", "ing", "日本", "🎉"]),
        st.text(max_size=4),
    )
    return st.lists(pieces, max_size=10).map("".join)


@pytest.mark.parametrize("kind", KINDS)
def test_trained_sentencepiece_models(kind: str, trained_dir: str) -> None:
    enc, hf, face = _trained(trained_dir, kind)
    paths = enc._core_bpe.hf_paths()
    if kind == "whole":
        tokens = hf.get_vocab()
        assert any("\u2581" in t.lstrip("\u2581") for t in tokens), "no merge spans a ▁"
        assert "cut_at_meta" not in paths
    else:
        assert paths == ["cut_at_meta", "raw_words"]
    check_all(enc, hf, face, EDGE_TEXTS + sample_all(2, 1))

    @settings(
        max_examples=60,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(_text())
    def check(text: str) -> None:
        want = hf.encode(text, add_special_tokens=False)
        assert enc.encode(text, allowed_special="all") == want.ids
        got = face.encode(text)
        full = hf.encode(text)
        assert (got.ids, got.offsets, got.word_ids, got.tokens) == (
            full.ids,
            full.offsets,
            full.word_ids,
            full.tokens,
        )
        assert face.decode(want.ids) == hf.decode(want.ids)

    check()


# ---- refusals ----


def _tiny() -> dict[str, Any]:
    """A few-token SentencePiece BPE file (for refusals: it loads in microseconds)."""
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, "\u2581": 3, "a": 4, "b": 5, "\u2581a": 6}
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    return {
        "version": "1.0",
        "added_tokens": [
            {
                "id": i,
                "content": t,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": True,
            }
            for i, t in enumerate(["<unk>", "<s>", "</s>"])
        ],
        "normalizer": {
            "type": "Sequence",
            "normalizers": [
                {"type": "Prepend", "prepend": "\u2581"},
                {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"},
            ],
        },
        "pre_tokenizer": None,
        "post_processor": None,
        "decoder": {
            "type": "Sequence",
            "decoders": [
                {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
                {"type": "ByteFallback"},
                {"type": "Fuse"},
                {"type": "Strip", "content": " ", "start": 1, "stop": 0},
            ],
        },
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": "<unk>",
            "fuse_unk": True,
            "byte_fallback": True,
            "ignore_merges": False,
            "vocab": vocab,
            "merges": [["\u2581", "a"]],
        },
    }


def test_tiny_model_loads_and_matches_hf() -> None:
    text = json.dumps(_tiny())
    enc = ferrotok.Encoding._from_hf_json(text, "tiny")
    hf = tokenizers.Tokenizer.from_str(text)
    for t in ["a ab ba", "xyz é", " a", ""]:
        assert enc.encode(t) == hf.encode(t, add_special_tokens=False).ids


def test_an_empty_normalized_split_takes_no_word() -> None:
    # `Strip` leaves nothing of the whitespace between two special tokens: HF drops that
    # split, which then takes no word index, and the words after it keep HF's numbers.
    cfg = json.loads(model_path("llama-spm").read_text(encoding="utf-8"))
    cfg["normalizer"] = {"type": "Strip", "strip_left": True, "strip_right": True}
    text = json.dumps(cfg)
    hf = tokenizers.Tokenizer.from_str(text)
    face = ferrotok.hf.Tokenizer.from_str(text)
    texts = ["<s>\t</s>x y", "\t<s>ab", "a<s> </s>\n", "<s></s>", " "]
    check_face(face, hf, texts, "llama-spm with Strip")
    assert hf.encode("<s>\t</s>x", add_special_tokens=False).word_ids == [0, 1, 2]


def test_without_a_decoder_the_tokens_are_joined_with_spaces() -> None:
    # HF's BPE with neither a pre-tokenizer nor a decoder (a model trained with `tokenizers`
    # without setting them): HF decodes by joining the tokens' texts with spaces, byte
    # tokens' `<0xHH>` texts among them.
    shared = json.loads(model_path("llama-spm").read_text(encoding="utf-8"))
    for cfg in [copy.deepcopy(_tiny()), shared]:
        cfg["decoder"] = None
        text = json.dumps(cfg)
        enc = ferrotok.Encoding._from_hf_json(text, "joined")
        hf = tokenizers.Tokenizer.from_str(text)
        face = ferrotok.hf.Tokenizer.from_str(text)
        for t in ["a ab ba", "Hello world\n", " x \u00e9 \U0001f600", ""]:
            ids = hf.encode(t, add_special_tokens=False).ids
            assert enc.encode(t) == ids
            assert enc.decode(ids) == hf.decode(ids) == face.decode(ids), t
    assert "<0x" in hf.decode(hf.encode("\U0001f600").ids)


def _decoders(*steps: dict[str, Any]) -> dict[str, Any]:
    return {"decoder": {"type": "Sequence", "decoders": list(steps)}}


_REPLACE = {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "}


@pytest.mark.parametrize(
    ("change", "component"),
    [
        ({"decoder": {"type": "Metaspace"}}, "decoder Metaspace for SentencePiece BPE"),
        (_decoders(_REPLACE, {"type": "Fuse"}), "without ByteFallback"),
        (_decoders({"type": "ByteFallback"}), r"without Replace\('▁', ' '\)"),
        (
            _decoders(
                _REPLACE,
                {"type": "ByteFallback"},
                {"type": "Strip", "content": " ", "start": 1, "stop": 0},
            ),
            "Strip other than of leading spaces after Fuse",
        ),
        (_decoders(_REPLACE, {"type": "ByteFallback"}, {"type": "CTC"}), "decoder CTC"),
        (
            {"normalizer": {"type": "Replace", "pattern": {"Regex": " *"}, "content": "x"}},
            "a Replace pattern that can match the empty string",
        ),
        (
            {"pre_tokenizer": {"type": "Metaspace", "replacement": "_"}},
            'Metaspace with replacement "_"',
        ),
        (
            {
                "pre_tokenizer": {
                    "type": "Sequence",
                    "pretokenizers": [{"type": "Metaspace"}, {"type": "WhitespaceSplit"}],
                }
            },
            "pre-tokenizer Metaspace",
        ),
        (
            {"model": {**_tiny()["model"], "continuing_subword_prefix": "##"}},
            "continuing_subword_prefix",
        ),
    ],
)
def test_sentencepiece_components_are_refused_by_name(
    change: dict[str, Any], component: str
) -> None:
    cfg = copy.deepcopy(_tiny())
    cfg.update(change)
    with pytest.raises(ValueError, match=component):
        ferrotok.Encoding._from_hf_json(json.dumps(cfg), "tiny")
