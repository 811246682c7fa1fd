"""BPE over the chars of each pre-token: the layout of HF's quicktour (`BPE(unk_token=...)`
behind `Whitespace`), of the tokenizers people train with `tokenizers` without ByteLevel, and
of the classic BPE with a word suffix (OpenAI's GPT, HerBERT: `</w>`, BERT's normalizer and
pre-tokenizer, the `BPEDecoder`).

HF's BPE model is the same as SentencePiece's (a word's chars, their listed merges, the
unknown token or byte fallback for a char with no token), run on each pre-token; with no
decoder HF joins the tokens' texts with spaces. HF `tokenizers` 0.23 is the oracle, on models
trained here with HF's trainer over a corpus sample in several layouts.
"""

from __future__ import annotations

import copy
import functools
import json
import random
from pathlib import Path
from typing import Any

import ferrotok
import pytest
from hf_support import sample_all
from oracle import SHARED
from test_hf_parity import check_survives, check_transformers_patched
from test_hf_unigram import EDGE_TEXTS, check_all, load

tokenizers = pytest.importorskip("tokenizers", minversion="0.23")

SPECIALS = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]
TOKENIZERS = SHARED / "tokenizers"


@functools.cache
def _trained(
    byte_fallback: bool = False, suffix: str | None = None, prefix: str | None = None
) -> str:
    """HF's quicktour: BPE with `[UNK]`, `Whitespace`, BERT's template; a corpus sample.
    With `suffix`, the classic BPE of OpenAI's GPT and HerBERT: each word's last symbol
    carries it, behind BERT's normalizer and pre-tokenizer, with the `BPEDecoder`. With
    `prefix`, every symbol after a word's first carries it (`##`, as WordPiece's do)."""
    from tokenizers import (
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
        processors,
        trainers,
    )

    affix: dict[str, str] = {} if suffix is None else {"end_of_word_suffix": suffix}
    if prefix is not None:
        affix["continuing_subword_prefix"] = prefix
    tok = Tokenizer(models.BPE(unk_token="[UNK]", byte_fallback=byte_fallback, **affix))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    if suffix is not None:
        tok.normalizer = normalizers.BertNormalizer(lowercase=True)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tok.decoder = decoders.BPEDecoder(suffix=suffix)
    trainer = trainers.BpeTrainer(
        vocab_size=3000, special_tokens=SPECIALS, show_progress=False, **affix
    )
    tok.train_from_iterator(sample_all(8, 1), trainer)
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)],
    )
    return tok.to_str()


def trained(
    byte_fallback: bool = False, suffix: str | None = None, prefix: str | None = None
) -> dict[str, Any]:
    return copy.deepcopy(json.loads(_trained(byte_fallback, suffix, prefix)))


NFD_LOWER = {
    "type": "Sequence",
    "normalizers": [{"type": "NFD"}, {"type": "Lowercase"}, {"type": "StripAccents"}],
}
LAYOUTS: dict[str, dict[str, Any]] = {
    "quicktour": {},
    "quicktour-normalized": {"normalizer": NFD_LOWER},
    "bert-pre-tokenizer": {"pre_tokenizer": {"type": "BertPreTokenizer"}},
    "whitespace-split-digits": {
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "WhitespaceSplit"},
                {"type": "Digits", "individual_digits": True},
            ],
        }
    },
    "fuse-unk": {"model": {"fuse_unk": True}},
    "ignore-merges": {"model": {"ignore_merges": True}},
    "sentencepiece-decoder": {
        "decoder": {
            "type": "Sequence",
            "decoders": [
                {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
                {"type": "ByteFallback"},
                {"type": "Fuse"},
            ],
        }
    },
}


def texts(seed: int) -> list[str]:
    rng = random.Random(seed)
    pool = [*"aZ é,.!'\n\t☃中▁0123", "  ", "[UNK]", "[SEP]", "hello", "ꙮ", "😀", "e\u0301"]
    randoms = ["".join(rng.choice(pool) for _ in range(rng.randrange(12))) for _ in range(200)]
    return EDGE_TEXTS + sample_all(2, 1) + randoms


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_trained_model_in_each_layout(tmp_path: Path, layout: str) -> None:
    cfg = trained()
    for key, value in LAYOUTS[layout].items():
        if key == "model":
            cfg["model"].update(value)
        else:
            cfg[key] = value
    enc, hf, face = load(tmp_path, cfg)
    check_all(enc, hf, face, texts(3))


@pytest.mark.parametrize("ignore_merges", [False, True])
def test_word_suffix_and_its_decoder(tmp_path: Path, ignore_merges: bool) -> None:
    # OpenAI GPT's and HerBERT's layout: `</w>` on each word's last symbol (so a word whose
    # last char has no such token ends in the unknown token), and the BPEDecoder, which
    # makes it a space but after the last token.
    cfg = trained(suffix="</w>")
    cfg["model"]["ignore_merges"] = ignore_merges
    enc, hf, face = load(tmp_path, cfg)
    check_all(enc, hf, face, texts(7))
    assert hf.encode("hello world").tokens[1:-1] == face.encode("hello world").tokens[1:-1]
    assert any(t.endswith("</w>") for t in hf.encode("hello world").tokens)
    ids = hf.encode("hello world", add_special_tokens=False).ids
    assert enc.decode(ids) == hf.decode(ids) == "hello world"
    text, offsets = enc.decode_with_offsets(ids)
    assert text == "hello world" and offsets[0] == 0 and offsets == sorted(offsets)


@pytest.mark.parametrize(
    ("suffix", "decoder"),
    [(None, None), (None, "WordPiece"), ("</w>", "BPEDecoder")],
)
def test_continuing_subword_prefix(tmp_path: Path, suffix: str | None, decoder: str | None) -> None:
    # BPE trained with a prefix: every symbol after a word's first is looked up with `##` in
    # front, and a merge makes `a` + `b` less its prefix. Decoded by HF's join, by the
    # WordPiece decoder (which takes the `##` off) or, with a suffix too, the BPEDecoder.
    cfg = trained(suffix=suffix, prefix="##")
    if decoder == "WordPiece":
        cfg["decoder"] = {"type": "WordPiece", "prefix": "##", "cleanup": True}
    enc, hf, face = load(tmp_path, cfg)
    check_all(enc, hf, face, texts(13))
    tokens = hf.encode("supercalifragilistic words", add_special_tokens=False).tokens
    assert any(t.startswith("##") for t in tokens), tokens
    if decoder == "WordPiece":
        ids = hf.encode("Hello, world!", add_special_tokens=False).ids
        assert enc.decode(ids) == hf.decode(ids) == "Hello, world!"


@pytest.mark.parametrize(("suffix", "prefix"), [(None, None), (None, "##"), ("</w>", None)])
def test_a_char_without_a_token_is_dropped_as_hf_drops_it(
    tmp_path: Path, suffix: str | None, prefix: str | None
) -> None:
    # No unknown token: HF drops a char with no token from its word without counting it, so
    # the tokens after it sit early by its length (their offsets). With an affix a token's
    # text is not what it stands for (`##A` for `A`): lengths that summed to the word's by
    # chance (`##A` over `\u0301A`) once placed it after the dropped char.
    cfg = trained(suffix=suffix, prefix=prefix)
    cfg["model"]["unk_token"] = None
    cfg["normalizer"] = cfg["pre_tokenizer"] = None
    enc, hf, face = load(tmp_path, cfg)
    dropped = ["\u0301A", "\x07 a", "ab\u0301cd", "\u0301\u0301x y\u0301", "ꙮab ꙮ"]
    check_all(enc, hf, face, dropped + texts(17))
    assert face.encode("\u0301a", add_special_tokens=False).offsets == [(0, 1)]


@pytest.mark.parametrize("suffix", ["\u2581", "d"])
def test_word_suffix_on_a_whole_segment(tmp_path: Path, suffix: str) -> None:
    # Without a pre-tokenizer the segment is the word: its last char alone carries the suffix
    # (Llama 2's vocabulary, whose tokens seldom end in one: the unknown token, or a merge).
    cfg = json.loads((TOKENIZERS / "llama-spm.tokenizer.json").read_text(encoding="utf-8"))
    cfg["model"].update(end_of_word_suffix=suffix, byte_fallback=False)
    enc, hf, face = load(tmp_path, cfg)
    check_all(enc, hf, face, EDGE_TEXTS + sample_all(1, 1))


def test_byte_fallback(tmp_path: Path) -> None:
    # Chars the sample never showed are their bytes' `<0xHH>` tokens where the vocabulary has
    # them (the trainer adds none), else the unknown token: HF's rule either way.
    cfg = trained(byte_fallback=True)
    vocab = cfg["model"]["vocab"]
    for b in range(0x80, 0x100):
        vocab.setdefault(f"<0x{b:02X}>", len(vocab))
    enc, hf, face = load(tmp_path, cfg)
    check_all(enc, hf, face, texts(5) + ["ꙮ☃ 𠀀", "\u0f00x"])
    assert any(t.startswith("<0x") for t in hf.encode("ꙮ").tokens)


def test_decoding_joins_tokens_with_spaces(tmp_path: Path) -> None:
    enc, hf, face = load(tmp_path, trained())
    ids = hf.encode("Hello, world!").ids
    assert hf.decode(ids) == face.decode(ids)
    assert enc.decode(hf.encode("Hello, world!", add_special_tokens=False).ids) == hf.decode(
        ids
    )
    assert " , " in hf.decode(ids)  # HF's join: the decoder does not round-trip


@pytest.mark.parametrize("suffix", [None, "</w>"])
def test_transformers_patched_is_identical(tmp_path: Path, suffix: str | None) -> None:
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        **{f"{k}_token": f"[{k.upper()}]" for k in ("unk", "cls", "sep", "pad", "mask")},
        "model_max_length": 64,
    }
    check_transformers_patched(tmp_path, _trained(suffix=suffix), config, EDGE_TEXTS[:12])


@pytest.mark.parametrize(
    ("change", "component"),
    [
        (
            lambda c: c.update(decoder={"type": "BPEDecoder", "suffix": ""}),
            "decoder BPEDecoder with an empty suffix",
        ),
        (lambda c: c.update(decoder={"type": "CTC"}), "decoder CTC"),
        # HF falls back to the bytes of the last char and the suffix: no model has both.
        (
            lambda c: c["model"].update(end_of_word_suffix="</w>", byte_fallback=True),
            "end_of_word_suffix with byte_fallback",
        ),
        (
            lambda c: c.update(model={**trained(prefix="##")["model"], "byte_fallback": True}),
            "continuing_subword_prefix with byte_fallback",
        ),
        # HF makes a merge's token of `a` and `b` less the prefix's length: `b` shorter
        # than it makes HF panic.
        (
            lambda c: c["model"].update(continuing_subword_prefix="###"),
            "shorter than the continuing_subword_prefix",
        ),
    ],
)
def test_char_bpe_components_are_refused_by_name(change: Any, component: str) -> None:
    cfg = trained()
    change(cfg)
    with pytest.raises(ValueError, match=component):
        ferrotok.Encoding._from_hf_json(json.dumps(cfg), "char-bpe")


@pytest.mark.parametrize(
    "change",
    [
        lambda c: c["model"].update(end_of_word_suffix=5),
        lambda c: c["model"].update(end_of_word_suffix="x" * 5000),
        lambda c: c["model"].update(end_of_word_suffix="e"),
        lambda c: c["model"].update(continuing_subword_prefix="x" * 5000),
        lambda c: c["model"].update(continuing_subword_prefix="\u00e9"),
        lambda c: c["model"].update(vocab={"</w>": 0}, merges=[]),
        lambda c: c["model"].update(vocab={"": 0, "[UNK]": 1}, merges=[]),
        lambda c: c["model"].update(unk_token=None),
        lambda c: c.update(decoder={"type": "BPEDecoder", "suffix": 7}),
        lambda c: c.update(decoder={"type": "BPEDecoder", "suffix": "e"}),
        lambda c: c.update(decoder={"type": "BPEDecoder"}),
        lambda c: c.update(pre_tokenizer={"type": "Sequence", "pretokenizers": []}),
        lambda c: c.update(
            pre_tokenizer={"type": "Sequence", "pretokenizers": [{"type": "Metaspace"}] * 3}
        ),
        lambda c: c.update(
            pre_tokenizer={
                "type": "Sequence",
                "pretokenizers": [{"type": "Whitespace"}, {"type": "Metaspace"}],
            }
        ),
    ],
)
def test_hostile_char_bpe_files_raise_value_errors(change: Any) -> None:
    for suffix in (None, "</w>"):
        cfg = trained(suffix=suffix)
        change(cfg)
        check_survives(json.dumps(cfg))
