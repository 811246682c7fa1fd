"""WordLevel `tokenizer.json` files: a vocabulary of whole words, as `tokenizers`'
`WordLevelTrainer` makes them (word-level baselines, character-level models, chemistry and
protein vocabularies). Each pre-token is its token, else the unknown token over the whole of
it. HF `tokenizers` 0.23 is the oracle, on models trained here with HF's trainer over a corpus
sample, each behind the pre-tokenizer and normalizer it is tested with, so that most words are
tokens and the rest the unknown token. The same layouts exercise the components such files
use beside it: `CharDelimiterSplit`, `FixedLength` (each a `Split` of its own kind) and the
`Nmt` normalizer, and the decoders WordLevel files carry (none, `Fuse`, `ByteLevel`,
`WordPiece`).
"""

from __future__ import annotations

import functools
import json
import random
from pathlib import Path
from typing import Any

import ferrotok
import pytest
from hf_support import sample_all
from test_cli import assert_parts_encode_as_whole
from test_hf_parity import check_survives, check_transformers_patched
from test_hf_unigram import EDGE_TEXTS, check_all, load

tokenizers = pytest.importorskip("tokenizers", minversion="0.23")

SPECIALS = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]

NMT_NFKC = {"type": "Sequence", "normalizers": [{"type": "Nmt"}, {"type": "NFKC"}]}
BERT = {
    "type": "BertNormalizer",
    "clean_text": True,
    "handle_chinese_chars": True,
    "strip_accents": None,
    "lowercase": True,
}


def _seq(*steps: dict[str, Any]) -> dict[str, Any]:
    return {"type": "Sequence", "pretokenizers": list(steps)}


# Per layout: its normalizer and pre-tokenizer (the model is trained behind them), and the
# decoder.
LAYOUTS: dict[str, tuple[Any, Any, Any]] = {
    "whitespace": (None, {"type": "Whitespace"}, None),
    "whitespace-split": (None, {"type": "WhitespaceSplit"}, None),
    "bert": (
        BERT,
        {"type": "BertPreTokenizer"},
        {"type": "WordPiece", "prefix": "##", "cleanup": True},
    ),
    "nmt-nfkc": (NMT_NFKC, {"type": "Whitespace"}, None),
    "char-delimiter": (None, {"type": "CharDelimiterSplit", "delimiter": " "}, None),
    # Character-level: every char its own piece (Oniguruma's `.` takes no newline, which
    # then stays with nothing: a piece of its own between the matches).
    "chars": (
        None,
        {"type": "Split", "pattern": {"Regex": "."}, "behavior": "Isolated", "invert": False},
        {"type": "Fuse"},
    ),
    "fixed-length": (
        None,
        _seq({"type": "WhitespaceSplit"}, {"type": "FixedLength", "length": 3}),
        None,
    ),
    "fixed-length-alone": (None, {"type": "FixedLength"}, {"type": "Fuse"}),
    "no-pre-tokenizer": (
        None,
        None,
        {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
    ),
    "digits-punctuation": (
        NMT_NFKC,
        _seq(
            {"type": "CharDelimiterSplit", "delimiter": "\u2581"},
            {"type": "WhitespaceSplit"},
            {"type": "Digits", "individual_digits": True},
            {"type": "Punctuation", "behavior": "Isolated"},
        ),
        None,
    ),
}


@functools.cache
def _trained(layout: str) -> str:
    """HF's WordLevel trainer over a corpus sample behind the layout's normalizer and
    pre-tokenizer, with BERT's template."""
    from tokenizers import Tokenizer, models, processors, trainers

    normalizer, pre, decoder = LAYOUTS[layout]
    cfg = json.loads(Tokenizer(models.WordLevel(unk_token="[UNK]")).to_str())
    cfg.update(normalizer=normalizer, pre_tokenizer=pre)
    tok = Tokenizer.from_str(json.dumps(cfg))
    trainer = trainers.WordLevelTrainer(
        vocab_size=4000, special_tokens=SPECIALS, show_progress=False
    )
    tok.train_from_iterator(sample_all(8, 1), trainer)
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)],
    )
    cfg = json.loads(tok.to_str())
    cfg["decoder"] = decoder
    return json.dumps(cfg)


def trained(layout: str) -> dict[str, Any]:
    cfg: dict[str, Any] = json.loads(_trained(layout))
    return cfg


def texts(seed: int) -> list[str]:
    rng = random.Random(seed)
    pool = [*"aZ é,.!'\n\t\r☃中0123\x07\x1f\u200b\u2028\ufeff\ufffd\u2581", "  ", "[UNK]"]
    pool += ["[SEP]", "hello", "the", "ꙮ", "😀", "e\u0301", "\x7f", "\u1680", "ﬁ", "①"]
    randoms = ["".join(rng.choice(pool) for _ in range(rng.randrange(14))) for _ in range(200)]
    return EDGE_TEXTS + sample_all(2, 1) + randoms


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_trained_model_in_each_layout(tmp_path: Path, layout: str) -> None:
    cfg = trained(layout)
    enc, hf, face = load(tmp_path, cfg)
    check_all(enc, hf, face, texts(11))
    # The vocabulary answers many words (a model where every word was unknown would pass
    # the comparison while testing little); with no pre-tokenizer a text is one word.
    ids = hf.encode(" ".join(sample_all(1, 1)), add_special_tokens=False).ids
    known = sum(i != hf.token_to_id("[UNK]") for i in ids)
    assert known > len(ids) / 3 or LAYOUTS[layout][1] is None, layout


@pytest.mark.parametrize("lstrip", [False, True])
def test_a_normalized_added_token_keeps_the_models_text_where_the_model_gives_it(
    tmp_path: Path, lstrip: bool
) -> None:
    # `[UNK]` as a normalized added token under Lowercase: where it matches, HF's token is
    # its normalized content, `[unk]`; where the model gives its id (an unknown word), the
    # model's own text, `[UNK]`.
    cfg = trained("whitespace")
    cfg["normalizer"] = {"type": "Lowercase"}
    for token in cfg["added_tokens"]:
        if token["content"] == "[UNK]":
            token.update(normalized=True, lstrip=lstrip)
    enc, hf, face = load(tmp_path, cfg)
    check_all(enc, hf, face, ["a [UNK] ꙮ b", "ꙮ[UNK]ꙮ", " [UNK] ", *texts(23)])
    want = ["[unk]", "[UNK]"]
    assert face.encode("[UNK] ꙮ").tokens[1:3] == hf.encode("[UNK] ꙮ").tokens[1:3] == want


def test_nmt_removes_controls_and_makes_spaces_as_hf(tmp_path: Path) -> None:
    # Every char Nmt removes or makes a space, alone and between words, through the offsets
    # of the HF face (a removed char widens the kept char before it).
    cfg = trained("nmt-nfkc")
    enc, hf, face = load(tmp_path, cfg)
    touched = [chr(c) for c in [*range(0x01, 0x09), 0x0B, *range(0x0E, 0x20), 0x7F, 0x8F, 0x9F]]
    touched += [chr(c) for c in [0x09, 0x0A, 0x0C, 0x0D, 0x1680, *range(0x200B, 0x2010)]]
    touched += ["\u2028", "\u2029", "\u2581", "\ufeff", "\ufffd", "\x00"]
    cases = [f"the{c}cat {c}{c}and{c}" for c in touched] + ["".join(touched), touched[0] + "x"]
    check_all(enc, hf, face, cases)
    assert enc.encode("the\x07cat") == enc.encode("thecat")
    assert enc.encode("the\u200bcat") == enc.encode("the cat")


def test_decoders(tmp_path: Path) -> None:
    # No decoder: HF joins the tokens' texts with spaces; Fuse: as they are.
    (tmp_path / "joined").mkdir()
    enc, hf, face = load(tmp_path / "joined", trained("whitespace"))
    ids = hf.encode("Hello, world!", add_special_tokens=False).ids
    assert enc.decode(ids) == hf.decode(ids) == face.decode(ids)
    assert " , " in hf.decode(ids)
    (tmp_path / "fused").mkdir()
    enc, hf, face = load(tmp_path / "fused", trained("chars"))
    ids = hf.encode("Hello, world!", add_special_tokens=False).ids
    assert enc.decode(ids) == hf.decode(ids) == face.decode(ids) == "Hello, world!"


def test_the_command_line_reads_whitespace_first_layouts_in_parts(tmp_path: Path) -> None:
    # Each word alone, behind a pre-tokenizer that cuts at whitespace first (BERT's,
    # `Whitespace`): a cut after a newline keeps the ids. A char a piece (`Split` on `.`,
    # which keeps the newline a piece of its own) is read whole: no argument for it yet.
    for layout in ["bert", "whitespace", "whitespace-split", "nmt-nfkc", "fixed-length"]:
        (tmp_path / layout).mkdir()
        enc, _, _ = load(tmp_path / layout, trained(layout))
        assert enc._core_bpe.file_cuts_apply(), layout
        text = "\n".join(sample_all(3, 2)) + "\nLast line\n"
        assert_parts_encode_as_whole(enc, text, 4096)
    (tmp_path / "chars").mkdir()
    enc, _, _ = load(tmp_path / "chars", trained("chars"))
    assert not enc._core_bpe.file_cuts_apply()


def test_a_normalizer_that_hides_the_newline_from_the_pre_tokenizer_is_read_whole(
    tmp_path: Path,
) -> None:
    # Nmt makes the newline a space, which a Replace then makes "_": WhitespaceSplit no
    # longer cuts there, so "a\nb" is one word, and its parts would be two.
    cfg = trained("whitespace-split")
    steps = [{"type": "Nmt"}, {"type": "Replace", "pattern": {"String": " "}, "content": "_"}]
    cfg["normalizer"] = {"type": "Sequence", "normalizers": steps}
    cfg["model"]["vocab"]["a_b"] = len(cfg["model"]["vocab"])
    enc, hf, _ = load(tmp_path, cfg)
    assert not enc._core_bpe.file_cuts_apply()
    whole = hf.encode("a\nb", add_special_tokens=False).ids
    assert whole == [cfg["model"]["vocab"]["a_b"]] == enc.encode("a\nb")
    assert enc.encode("a\n") + enc.encode("b") != whole


def test_a_missing_unknown_token_fails_only_the_words_that_need_it(tmp_path: Path) -> None:
    cfg = trained("whitespace")
    cfg["model"]["unk_token"] = "<nothing>"
    enc, hf, face = load(tmp_path, cfg)
    assert enc.encode("the") == hf.encode("the", add_special_tokens=False).ids
    with pytest.raises(Exception, match="Missing"):
        hf.encode("ꙮꙮ")
    with pytest.raises(ValueError, match="MissingUnkToken"):
        enc.encode("ꙮꙮ")
    with pytest.raises(ValueError, match="MissingUnkToken"):
        face.encode("ꙮꙮ")


def test_transformers_patched_is_identical(tmp_path: Path) -> None:
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        **{f"{k}_token": f"[{k.upper()}]" for k in ("unk", "cls", "sep", "pad", "mask")},
        "model_max_length": 64,
    }
    check_transformers_patched(tmp_path, _trained("whitespace"), config, EDGE_TEXTS[:12])


@pytest.mark.parametrize(
    ("change", "component"),
    [
        (
            {"pre_tokenizer": {"type": "ByteLevel"}},
            "WordLevel model behind a ByteLevel or Metaspace pre-tokenizer",
        ),
        (
            {"pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581"}},
            "WordLevel model behind a ByteLevel or Metaspace pre-tokenizer",
        ),
        ({"decoder": {"type": "CTC"}}, "decoder CTC for a WordLevel model"),
        ({"pre_tokenizer": {"type": "FixedLength", "length": 0}}, "FixedLength of length 0"),
        ({"pre_tokenizer": {"type": "UnicodeScripts"}}, "pre-tokenizer UnicodeScripts"),
        ({"normalizer": {"type": "ByteLevel"}}, "normalizer ByteLevel"),
    ],
)
def test_components_are_refused_by_name(change: dict[str, Any], component: str) -> None:
    cfg = trained("whitespace")
    cfg.update(change)
    with pytest.raises(ValueError, match=component):
        ferrotok.Encoding._from_hf_json(json.dumps(cfg), "custom")


@pytest.mark.parametrize(
    "change",
    [
        {"pre_tokenizer": {"type": "CharDelimiterSplit", "delimiter": "ab"}},
        {"pre_tokenizer": {"type": "CharDelimiterSplit", "delimiter": ""}},
        {"pre_tokenizer": {"type": "CharDelimiterSplit"}},
        {"pre_tokenizer": {"type": "FixedLength", "length": -1}},
        {"pre_tokenizer": {"type": "FixedLength", "length": "5"}},
        {"model": {"type": "WordLevel", "vocab": {"a": -1}, "unk_token": "a"}},
        {"model": {"type": "WordLevel", "vocab": ["a"], "unk_token": "a"}},
        {"model": {"type": "WordLevel", "vocab": {"a": 0}, "unk_token": 3}},
        {"model": {"type": "WordLevel", "vocab": {"a": 0}, "unk_token": None}},
        {"model": {"type": "WordLevel", "vocab": {"a": 0}}},
    ],
)
def test_hostile_files_raise_value_errors(change: dict[str, Any]) -> None:
    cfg = trained("whitespace")
    cfg.update(change)
    with pytest.raises(ValueError):
        ferrotok.Encoding._from_hf_json(json.dumps(cfg), "custom")
    check_survives(json.dumps(cfg))
