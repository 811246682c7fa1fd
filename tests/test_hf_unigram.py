"""Unigram `tokenizer.json` files (SentencePiece's other model: T5, XLM-R, ALBERT, mBART...).

Such a model scores every token; a word's tokens are its best-scoring segmentation, and a
char no token covers is the unknown token (runs of them fused into one piece), or with
`byte_fallback` its bytes' `<0xHH>` tokens. The layout around it is SentencePiece's: `▁` for
each space and in front (`Metaspace`), or HF's other pre-tokenizers. HF `tokenizers` 0.23 is
the oracle. The shared files hold no Unigram model, so the models here are trained in the test
with HF's own trainer over a corpus sample, in the layouts HF's and transformers' converters
write, and checked on corpus documents and on texts aimed at this model's edges (chars no
token covers, runs of them, a literal `▁`, spaces in every position, special tokens' texts).
"""

from __future__ import annotations

import functools
import json
import random
from pathlib import Path
from typing import Any

import ferrotok
import ferrotok.hf
import pytest
from ferrotok.cli import cuts as cli_cuts
from hf_support import sample_all
from test_hf_parity import check_face, check_ids, check_survives, check_transformers_patched, loaded

tokenizers = pytest.importorskip("tokenizers", minversion="0.23")

EDGE_TEXTS = [
    "Hello world",
    " Hello",
    "Hello ",
    "  two  spaces  ",
    " ",
    "",
    "x",
    "\n\t\r\n",
    "literal ▁ and ▁▁x▁y",
    "<unk> <s>x</s>",
    "unknown chars: ☃☃ ꙮ 𠀀𠀁 ☃x☃",
    "emoji 🎉👍🏽 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
    "e\u0301 caf\u00e9 \u212b ﬁ",
    "東京都の天気は晴れです。日本語のテキスト",
    "supercalifragilisticexpialidocious_and_a_very_long_identifier_name",
    "x" * 200,
    "ab " * 40,
]


@functools.cache
def _trained() -> str:
    """A Unigram model trained with HF's trainer on a corpus sample (NFKC, SentencePiece's
    layout by `Metaspace`), its `</s>` template after each text."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    trainer = trainers.UnigramTrainer(
        vocab_size=3000, special_tokens=["<unk>", "<s>", "</s>"], unk_token="<unk>"
    )
    tok.train_from_iterator(sample_all(10, 1), trainer)
    eos = tok.token_to_id("</s>")
    tok.post_processor = tokenizers.processors.TemplateProcessing(
        single="$A </s>", pair="$A </s> $B </s>", special_tokens=[("</s>", eos)]
    )
    return str(tok.to_str())


def trained() -> dict[str, Any]:
    cfg: dict[str, Any] = json.loads(_trained())
    return cfg


SPM_CHAIN = {
    "type": "Sequence",
    "decoders": [
        {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
        {"type": "Fuse"},
        {"type": "Strip", "content": " ", "start": 1, "stop": 0},
    ],
}

FIRST_UNSPLIT = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": False}

# (pre-tokenizer, decoder): the layouts HF writes (Metaspace, each scheme, split or not) and
# others a file may have (no pre-tokenizer, WhitespaceSplit with SentencePiece's decoder).
LAYOUTS = {
    "metaspace": (
        {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True},
        {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True},
    ),
    "first-unsplit": (
        {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": False},
        {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": False},
    ),
    "never": (
        {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "never", "split": True},
        {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "never", "split": True},
    ),
    # T5's files on the Hub: WhitespaceSplit first, then Metaspace on each piece (legacy
    # `add_prefix_space`), and "first" on each piece: only the text's first gets a `▁`.
    "t5-hub": (
        {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "WhitespaceSplit"},
                {"type": "Metaspace", "replacement": "▁", "add_prefix_space": True},
            ],
        },
        {"type": "Metaspace", "replacement": "▁", "add_prefix_space": True},
    ),
    "whitespace-first": (
        {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "WhitespaceSplit"},
                FIRST_UNSPLIT,
            ],
        },
        FIRST_UNSPLIT,
    ),
    # DeBERTa-v2's with split_by_punct, and with "first": pieces that keep their spaces.
    "punctuation-first": (
        {
            "type": "Sequence",
            "pretokenizers": [{"type": "Punctuation", "behavior": "Isolated"}, FIRST_UNSPLIT],
        },
        FIRST_UNSPLIT,
    ),
    "whitespace": ({"type": "WhitespaceSplit"}, SPM_CHAIN),
    "none": (None, SPM_CHAIN),
}


def load(tmp_path: Path, cfg: dict[str, Any]) -> tuple[Any, ...]:
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(cfg), encoding="utf-8")
    return loaded(str(path))


def check_decoding(enc: ferrotok.Encoding, hf: Any, face: Any, texts: list[str]) -> None:
    """Every text's ids, and the ids from places inside them, decoded by both faces as HF
    decodes them (the tiktoken face where HF's text holds no U+FFFD: it reads bytes that are
    no UTF-8 as Python does, HF's ByteFallback one U+FFFD a byte)."""
    for text in texts:
        ids = hf.encode(text).ids
        for start in range(0, len(ids), max(1, len(ids) // 6)):
            window = ids[start:]
            want = hf.decode(window, skip_special_tokens=False)
            if "\ufffd" not in want:
                assert enc.decode(window) == want, (text, start)
            for skip in (True, False):
                got = face.decode(window, skip_special_tokens=skip)
                assert got == hf.decode(window, skip_special_tokens=skip), (text, start)


def check_all(enc: ferrotok.Encoding, hf: Any, face: Any, texts: list[str]) -> None:
    check_ids(enc, hf, texts, "unigram")
    check_face(face, hf, texts, "unigram")
    check_decoding(enc, hf, face, texts)


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_trained_model_in_each_layout(tmp_path: Path, layout: str) -> None:
    cfg = trained()
    cfg["pre_tokenizer"], cfg["decoder"] = LAYOUTS[layout]
    enc, hf, face = load(tmp_path, cfg)
    assert enc._core_bpe.hf_paths() == ["unigram"]
    rng = random.Random(7)
    pool = [*"aZ é ,.!'\n\t☃中▁", "  ", "<unk>", "</s>", "hello", "ꙮ", "😀"]
    randoms = ["".join(rng.choice(pool) for _ in range(rng.randrange(12))) for _ in range(200)]
    check_all(enc, hf, face, EDGE_TEXTS + sample_all(2, 1) + randoms)


CUT_LAYOUTS = {"t5-hub", "whitespace-first", "whitespace"}
# Metaspace alone, cutting at each `▁`: cut just before a newline that the normalizer makes a
# space, the `▁` that starts the next word. (transformers' converters write a `Strip` or put
# `Precompiled` after other steps, which this does not cover: their files are read whole.)
CUT_BEFORE_NEWLINE = {"metaspace", "never"}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_the_command_line_cuts_t5s_and_metaspace_alone_layouts_and_no_other(
    tmp_path: Path, layout: str
) -> None:
    # WhitespaceSplit first (T5's files: then Metaspace on each piece, each with its `▁`,
    # with "first" only the text's first, which a part after the first does not hold), and
    # behind `Precompiled` and a `Replace` of space runs by a space: a part ends at the
    # newline a space became, and the ids of the parts joined are the whole's. Metaspace
    # alone, splitting, behind `Precompiled` (which makes the newline a space): cut before
    # the newline, whose `▁` then starts the part after as it starts the whole's word there;
    # not where the line before ends in what normalizes to a space (`x\u200b`), which the
    # `Replace` joins with the newline's in the whole text. Without a normalizer the newline
    # stays inside a word: read whole.
    from test_cli import assert_parts_encode_as_whole

    cfg = trained()
    cfg["pre_tokenizer"], cfg["decoder"] = LAYOUTS[layout]
    precompiled = json.loads(_converted(False)["spm-legacy"])["normalizer"]["normalizers"][0]
    assert precompiled["type"] == "Precompiled"
    spaces = {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}
    both = {"type": "Sequence", "normalizers": [precompiled, spaces]}
    text = "\n".join(sample_all(3, 4)) + "\nx\u200b\ny\u00a8\nLast line \n"
    for i, normalizer in enumerate([None, precompiled, both]):
        cfg["normalizer"] = normalizer
        (tmp_path / str(i)).mkdir()
        enc, _, _ = load(tmp_path / str(i), cfg)
        before_newline = layout in CUT_BEFORE_NEWLINE and normalizer is not None
        cuts = layout in CUT_LAYOUTS or before_newline
        assert enc._core_bpe.file_cuts_apply() == cuts, (layout, i)
        if cuts:
            assert_parts_encode_as_whole(enc, text, 2048)
        if before_newline:
            # Lines that end in what normalizes to a space, among others, read in small blocks:
            # cuts fall next to them and skip them.
            lines = ["a x\u200b", "b c", "d\u00a8", "e\u2581", "f g h"] * 60
            assert_parts_encode_as_whole(enc, "\n".join(lines) + "\n", 40)
            # The newline of the last cut, past the line that ends in `\u200b`.
            data = "ab\nx\u200b\ny".encode()
            assert enc._core_bpe.last_file_cut(data) == 2
            assert enc._core_bpe.last_file_cut(b"ab\ncd\nef") == 5
            assert cli_cuts.last_cut(b"ab\ncd\nef") == 6  # the rule alone: after it


# Normalizers SentencePiece's converters write (besides `Precompiled`, tested below): `Strip`
# either side or both, regex `Replace`s of runs and ends of spaces, `▁` doubled in front.
NORMALIZERS = [
    [{"type": "Strip", "strip_left": True, "strip_right": True}],
    [{"type": "Strip", "strip_left": True, "strip_right": False}, {"type": "NFKC"}],
    [
        {"type": "Replace", "pattern": {"Regex": "\\A +| +\\z"}, "content": ""},
        {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "},
        {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
        {"type": "Replace", "pattern": {"Regex": "\\A▁"}, "content": "▁▁"},
    ],
    [{"type": "Replace", "pattern": {"Regex": "[0-9]+|é"}, "content": "#"}],
]


@pytest.mark.parametrize("scheme", ["always", "first"])
@pytest.mark.parametrize("steps", NORMALIZERS, ids=["strip", "lstrip-nfkc", "spaces", "digits"])
def test_strip_and_regex_replace(tmp_path: Path, steps: list[dict[str, Any]], scheme: str) -> None:
    # With "first", a text whose front the normalizer takes off starts, to HF, after the
    # original's first byte, and gets no `▁`.
    cfg = trained()
    cfg["normalizer"] = {"type": "Sequence", "normalizers": steps}
    cfg["pre_tokenizer"]["prepend_scheme"] = scheme
    cfg["decoder"]["prepend_scheme"] = scheme
    enc, hf, face = load(tmp_path, cfg)
    texts = EDGE_TEXTS + sample_all(1, 1) + ["  é 12 é  ", " \u3000x\u00a0 ", "ééé", "1 2  3   "]
    check_all(enc, hf, face, texts)


def test_byte_fallback(tmp_path: Path) -> None:
    # The trained vocabulary without its CJK chars and with the 256 byte tokens: a char no
    # token covers is its bytes' tokens, all with its offsets.
    cfg = trained()
    model = cfg["model"]
    model["vocab"] = [p for p in model["vocab"] if not (len(p[0]) == 1 and ord(p[0]) > 0x3000)]
    model["vocab"] += [[f"<0x{b:02X}>", -30.0] for b in range(256)]
    model["byte_fallback"] = True
    replace, fuse, strip = SPM_CHAIN["decoders"]
    fallback = {"type": "ByteFallback"}
    cfg["decoder"] = {"type": "Sequence", "decoders": [replace, fallback, fuse, strip]}
    enc, hf, face = load(tmp_path, cfg)
    texts = EDGE_TEXTS + sample_all(2, 1)
    check_all(enc, hf, face, texts)
    ids = hf.encode("東京", add_special_tokens=False).ids
    assert all(hf.id_to_token(i).startswith("<0x") for i in ids[1:])


def test_unknown_pieces_are_their_text_to_hf(tmp_path: Path) -> None:
    enc, hf, face = load(tmp_path, trained())
    text = "a ☃☃ b ☃"
    want = hf.encode(text)
    unk = hf.token_to_id("<unk>")
    assert want.ids.count(unk) == 2
    assert any("☃☃" in t for t in want.tokens)  # a run of unknown chars is one piece
    got = face.encode(text)
    assert got.tokens == want.tokens and got.offsets == want.offsets
    batch = face.encode_batch([["a", "☃"], ["☃☃"]], is_pretokenized=True)
    for g, w in zip(batch, hf.encode_batch([["a", "☃"], ["☃☃"]], is_pretokenized=True)):
        assert g.tokens == w.tokens and g.word_ids == w.word_ids


def test_tiny_models_ties_repeats_and_a_missing_unknown_token(tmp_path: Path) -> None:
    # Ties between segmentations, a text listed twice (HF maps it to its last id), and no
    # unknown token (a char no token covers then fails, in HF and here).
    pieces = [["<unk>", 0.0], ["a", -1.0], ["b", -1.0], ["ab", -2.0], ["ba", -2.0],
              ["a", -0.5], ["▁", -1.0], ["▁a", -1.5], ["aba", -3.0]]
    cfg = trained()
    cfg["model"] = {"type": "Unigram", "unk_id": 0, "vocab": pieces, "byte_fallback": False}
    cfg["added_tokens"] = []
    cfg["post_processor"] = None
    cfg["normalizer"] = None
    enc, hf, face = load(tmp_path, cfg)
    texts = ["ab", "aba", "abab", "ba b", "a a  b", "bab c", "cc", "", "▁a"]
    check_all(enc, hf, face, texts)
    cfg["model"]["unk_id"] = None
    other = tmp_path / "no-unk"
    other.mkdir()
    enc, hf, face = load(other, cfg)
    assert enc.encode("ab ba") == hf.encode("ab ba").ids
    with pytest.raises(Exception, match="(?i)unk"):
        hf.encode("c")
    with pytest.raises(ValueError, match="unknown token"):
        enc.encode("c")


@functools.cache
def _converted(byte_fallback: bool) -> dict[str, str]:
    """Unigram models trained here with `sentencepiece` itself (its default normalization,
    `nmt_nfkc`: a real `precompiled_charsmap`) and written out by transformers' own
    converters, as the Hub's T5, XLM-R, ALBERT, XLNet, RemBERT and DeBERTa-v2/v3 files were:
    `Precompiled`, `Strip`, a regex `Replace`, `Metaspace` (DeBERTa's in a Sequence, alone or
    after `Punctuation`), and for ALBERT, XLNet and RemBERT `NFKD`, `StripAccents` and
    `Lowercase`. Keyed by converter (and `legacy`)."""
    import importlib
    import tempfile

    spm = pytest.importorskip("sentencepiece")
    pytest.importorskip("google.protobuf")
    pytest.importorskip("transformers", minversion="5")
    convert = importlib.import_module("transformers.convert_slow_tokenizer")
    out: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as d:
        lines = [line for t in sample_all(10, 1) for line in t.splitlines() if line.strip()]
        Path(d, "train.txt").write_text("\n".join(lines), encoding="utf-8")
        prefix = str(Path(d, "m"))
        spm.SentencePieceTrainer.train(
            input=str(Path(d, "train.txt")),
            model_prefix=prefix,
            vocab_size=3000,
            model_type="unigram",
            character_coverage=0.98 if byte_fallback else 0.9995,
            byte_fallback=byte_fallback,
            hard_vocab_limit=False,
            minloglevel=2,
        )

        class Slow:  # what the converters read of a slow tokenizer
            vocab_file = prefix + ".model"
            add_prefix_space = True
            bos_token, eos_token, cls_token, sep_token = "<s>", "</s>", "<s>", "</s>"
            keep_accents, do_lower_case = False, True  # ALBERT's, XLNet's and RemBERT's

            def __init__(self, legacy: bool, split_by_punct: bool = False) -> None:
                self.legacy = legacy
                self.split_by_punct = split_by_punct  # DeBERTa-v2's

            def convert_tokens_to_ids(self, token: str) -> int:
                # The model's own ids; BERT's and XLNet's markers stand in for `<s>`, `</s>`.
                ids = {"<unk>": 0, "<s>": 1, "</s>": 2, "[CLS]": 1, "[SEP]": 2}
                return (ids | {"<cls>": 1, "<sep>": 2}).get(token, 0)

        for name, converter, legacy in [
            ("spm-legacy", convert.SpmConverter, True),
            ("spm", convert.SpmConverter, False),
            ("xlm-r", convert.XLMRobertaConverter, True),
            # `NFKD`, `StripAccents` and `Lowercase` before `Precompiled`.
            ("albert", convert.AlbertConverter, True),
            ("xlnet", convert.XLNetConverter, True),
            ("rembert", convert.RemBertConverter, True),
            # `Metaspace` in a Sequence of its own, or after `Punctuation` (split_by_punct).
            ("deberta-v2", convert.DebertaV2Converter, True),
        ]:
            out[name] = converter(Slow(legacy)).converted().to_str()
        slow = Slow(True, split_by_punct=True)
        out["deberta-v2-punct"] = convert.DebertaV2Converter(slow).converted().to_str()
    return out


# With `byte_fallback` the trained vocabulary holds the 256 byte pieces (and fewer chars), but
# transformers' converters write the model without it (they warn that the fast tokenizer
# cannot fall back): a vocabulary of another shape, read as HF reads it.
@pytest.mark.filterwarnings("ignore:The sentencepiece tokenizer that you are converting")
@pytest.mark.parametrize(
    "name",
    ["spm-legacy", "spm", "xlm-r", "albert", "xlnet", "rembert", "deberta-v2", "deberta-v2-punct"],
)
@pytest.mark.parametrize("byte_fallback", [False, True])
def test_sentencepiece_models_as_transformers_converts_them(
    tmp_path: Path, name: str, byte_fallback: bool
) -> None:
    cfg = json.loads(_converted(byte_fallback)[name])
    kinds = [n["type"] for n in cfg["normalizer"]["normalizers"]]
    assert ("Precompiled" in kinds and "Replace" in kinds) or name.startswith("deberta")
    assert ("StripAccents" in kinds) == (name in ("albert", "xlnet", "rembert"))
    enc, hf, face = load(tmp_path, cfg)
    rng = random.Random(11)
    pool = [*"aZ é ,.!'\n\t☃中▁", "  ", "   ", "ﬁ", "①", "Å", "\u3000", "\u00a0", "\x1e", "™"]
    # Marks of each kind (Mn, Mc, Me), alone, after a letter and first; and `` and ''.
    pool += ["\u0301", "e\u0301", "\u0903", "\u0915\u0903", "\u20dd", "ế", "ñ", "``", "''"]
    randoms = ["".join(rng.choice(pool) for _ in range(rng.randrange(12))) for _ in range(300)]
    check_all(enc, hf, face, EDGE_TEXTS + sample_all(3, 1) + randoms)


def test_transformers_patched_is_identical(tmp_path: Path) -> None:
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "unk_token": "<unk>",
        "eos_token": "</s>",
        "pad_token": "<s>",
        "model_max_length": 64,
    }
    check_transformers_patched(tmp_path, _trained(), config, EDGE_TEXTS[:12])


@pytest.mark.parametrize(
    ("change", "component"),
    [
        (
            lambda c: c.update(pre_tokenizer={"type": "ByteLevel"}),
            "Unigram model behind a ByteLevel",
        ),
        (
            lambda c: c["model"].update(byte_fallback=True),
            "decoder Metaspace for a model with byte_fallback",
        ),
        (lambda c: c.update(decoder={"type": "WordPiece"}), "decoder WordPiece"),
        (lambda c: c["model"].update(vocab=[["a", "high"]]), "not a \\[text, score\\] pair"),
        (lambda c: c["model"].update(unk_id=10**6), "unk_id"),
        (
            lambda c: c.update(
                normalizer={"type": "Replace", "pattern": {"Regex": "x*"}, "content": "y"}
            ),
            "a Replace pattern that can match the empty string",
        ),
        (
            lambda c: c.update(
                normalizer={"type": "Precompiled", "precompiled_charsmap": "AQ"}
            ),
            "precompiled_charsmap",
        ),
    ],
)
def test_unigram_components_are_refused_by_name(change: Any, component: str) -> None:
    cfg = trained()
    change(cfg)
    with pytest.raises(ValueError, match=component):
        ferrotok.Encoding._from_hf_json(json.dumps(cfg), "unigram")


@pytest.mark.parametrize(
    "change",
    [
        lambda c: c["model"].update(vocab=[]),
        lambda c: c["model"].update(vocab=[["", -1.0], ["a", -2.0]]),
        lambda c: c["model"].update(vocab=[["a", 1e308], ["b", -1e308], ["ab", float("nan")]]),
        lambda c: c["model"].update(vocab=[[1, 2.0]]),
        lambda c: c["model"].update(vocab=[["a"]]),
        lambda c: c["model"].update(vocab={"a": 0}),
        lambda c: c["model"].update(unk_id=-1),
        lambda c: c["model"].update(unk_id="0"),
        lambda c: c["model"].update(unk_id=2**40),
        lambda c: c["model"].update(byte_fallback="yes"),
        lambda c: c.update(normalizer={"type": "Precompiled", "precompiled_charsmap": "!!!"}),
        lambda c: c.update(normalizer={"type": "Precompiled", "precompiled_charsmap": ""}),
        lambda c: c.update(normalizer={"type": "Precompiled", "precompiled_charsmap": "/////w=="}),
        lambda c: c.update(normalizer={"type": "Precompiled", "precompiled_charsmap": 5}),
        lambda c: c.update(normalizer={"type": "Strip", "strip_left": "no"}),
        lambda c: c.update(
            normalizer={"type": "Replace", "pattern": {"Regex": "("}, "content": ""}
        ),
        lambda c: c.update(pre_tokenizer={"type": "Sequence", "pretokenizers": 3}),
        lambda c: c.update(decoder={"type": "Metaspace", "prepend_scheme": "sometimes"}),
    ],
)
def test_hostile_unigram_files_raise_value_errors(change: Any) -> None:
    cfg = trained()
    change(cfg)
    check_survives(json.dumps(cfg))


def test_random_precompiled_tables_raise_value_errors_or_work() -> None:
    import base64

    rng = random.Random(5)
    cfg = trained()
    for _ in range(60):
        units = [rng.getrandbits(32) for _ in range(rng.randrange(1, 40))]
        blob = len(units * 4).to_bytes(4, "little") + b"".join(
            u.to_bytes(4, "little") for u in units
        )
        blob += bytes(rng.getrandbits(8) for _ in range(rng.randrange(12)))
        cfg["normalizer"] = {
            "type": "Precompiled",
            "precompiled_charsmap": base64.b64encode(blob).decode(),
        }
        check_survives(json.dumps(cfg))
