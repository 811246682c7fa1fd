"""SentencePiece `.model` files (`Encoding.from_sentencepiece`, `ferrotok/sp_model.py`) against
`sentencepiece` itself: ids, batches, numpy, BOS and decoding on BPE and Unigram models trained
here in each layout the loader admits (a dummy prefix or none, byte fallback or unknown pieces,
control symbols) and on Mistral's released files (from the `mistral-common` wheel, which
scripts/test.sh installs without its dependencies); the protocol buffer reader against
`protobuf`'s; a refusal naming each thing the loader does not admit; and bad files.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import pickle
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import ferrotok
import ferrotok.hf
import pytest
from ferrotok import sp_model
from hf_support import documents, sample_all

spm = pytest.importorskip("sentencepiece")

EDGE_TEXTS = [
    "",
    " ",
    "  ",
    "Hello world",
    " Hello",
    "  two  spaces  ",
    "x",
    "It's 2021! 東京 🎉 café",
    "line\n\tindented\n\n",
    "        return x  # a comment",
    "\u2581 a meta symbol \u2581\u2581",
    "[INST] hi [/INST] <s> </s> <unk>",
    "ǅungla \u0301 e\u0301 ﬁ ①",
    "\x00\x01 controls \x7f",
    "𝕏 " * 5,
    # User-defined symbols (the "user-defined" layout's; ordinary text to the others): at
    # the start, after a space, side by side, overlapping, inside words.
    "[REF]",
    " [REF] x",
    "<tool>call [REF]x<to ol> [REF][REF]a<tool>",
    "<tool",
    "ab<toolx",
    # Where `remove_extra_whitespaces` and a normalization rule act: runs, ends, a `▁` of the
    # text's own at an end, other whitespace, what NFKC changes.
    "▁",
    " ▁",
    "▁ x",
    "x ▁",
    "abc ▁ ",
    "a▁ ▁b",
    "  lead",
    "trail  ",
    "\n a\n  b \n",
    "x\u00a0\u00a0y \u3000x\u3000 \u2028 z \u2028 ",
    "ｆｕｌｌ　ｗｉｄｔｈ ①② x\r\ny",
    # A char a charsmap maps, then a mark: sentencepiece keeps the mark (HF's Precompiled,
    # mapping the cluster by its prefix, drops it).
    "p('A\u034fB \ufb16\u0333AA\u031d')",
    "\ufb01\u0301 \u2460\u0308 x\u3000\u0301",
]

# Each layout admitted: sentencepiece's trainer options (beyond those every one has).
LAYOUTS: dict[str, dict[str, Any]] = {
    # Llama 2's and Mistral's: a `▁` in front, byte fallback, digits one a piece.
    "llama": {"byte_fallback": True, "split_digits": True},
    # Gemma's: no `▁` in front.
    "no-prefix": {"byte_fallback": True, "add_dummy_prefix": False},
    # Chars left out of the vocabulary are the unknown piece, a run of them one.
    "unknown": {"byte_fallback": False, "character_coverage": 0.98},
    # Mistral's v3 files' kind: symbols matched whole wherever they are (the longest first).
    "user-defined": {"byte_fallback": True, "user_defined_symbols": ["<tool>", "<to", "[REF]"]},
    # sentencepiece's defaults: the `nmt_nfkc` rule, extra whitespace removed.
    "nfkc": {"byte_fallback": True, "normalization_rule_name": "nmt_nfkc",
             "remove_extra_whitespaces": True},
    # Extra whitespace removed without a rule, beside user-defined symbols.
    "extra-whitespace": {"byte_fallback": False, "remove_extra_whitespaces": True,
                         "user_defined_symbols": ["[REF]"]},
    # Unigram as T5's and XLM-R's files have it: sentencepiece's defaults, unknown pieces.
    "unigram": {"model_type": "unigram", "byte_fallback": False, "character_coverage": 0.98,
                "normalization_rule_name": "nmt_nfkc", "remove_extra_whitespaces": True},
    # Unigram with byte fallback, no rule, whitespace kept.
    "unigram-bytes": {"model_type": "unigram", "byte_fallback": True},
}

# Options the loader refuses, each with what its error names.
REFUSED: dict[str, tuple[dict[str, Any], str]] = {
    "char": ({"model_type": "char"}, "CHAR"),
    "unigram-user-defined": (
        {"model_type": "unigram", "user_defined_symbols": ["<tool>"]},
        "user-defined symbols in a Unigram model",
    ),
    "nfkc-user-defined": (
        {"normalization_rule_name": "nmt_nfkc", "user_defined_symbols": ["<tool>"]},
        "user-defined symbols with the normalization rule 'nmt_nfkc'",
    ),
    "spaced-symbol": ({"user_defined_symbols": ["a b"]}, "holding a space"),
    "suffix": ({"treat_whitespace_as_suffix": True}, "treat_whitespace_as_suffix"),
}


@functools.cache
def _workdir() -> Path:
    return Path(tempfile.mkdtemp(prefix="ferrotok-spm-"))


@functools.cache
def trained(name: str) -> str:
    """The path of a model trained here with `sentencepiece` (cached for the session)."""
    options = LAYOUTS[name] if name in LAYOUTS else REFUSED[name][0]
    d = _workdir()
    corpus = d / "train.txt"
    if not corpus.exists():
        lines = [line for t in sample_all(10, 1) for line in t.splitlines() if line.strip()]
        corpus.write_text("\n".join(lines), encoding="utf-8")
    prefix = str(d / name)
    settings: dict[str, Any] = {
        "model_type": "bpe",
        "vocab_size": 2000,
        "character_coverage": 0.9995,
        "normalization_rule_name": "identity",
        "remove_extra_whitespaces": False,
        "control_symbols": ["[INST]", "[/INST]"],
        "allow_whitespace_only_pieces": True,
        "hard_vocab_limit": False,
        "minloglevel": 2,
    }
    settings.update(options)
    spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=prefix, **settings)
    return prefix + ".model"


def mistral_files() -> dict[str, Path]:
    """Mistral's `.model` files in the `mistral-common` wheel, by version (none if absent)."""
    spec = importlib.util.find_spec("mistral_common")
    if spec is None or not spec.submodule_search_locations:
        return {}
    data = Path(next(iter(spec.submodule_search_locations))) / "data"
    return {p.name.rsplit(".", 1)[1]: p for p in sorted(data.glob("*.model.v*"))}


def texts() -> list[str]:
    return EDGE_TEXTS + sample_all(3, 1)


def check(enc: ferrotok.Encoding, sp: Any, texts: list[str]) -> None:
    want = [sp.encode(t) for t in texts]
    assert [enc.encode_ordinary(t) for t in texts] == want
    assert enc.encode_ordinary_batch(texts) == want
    assert [enc.encode_to_numpy(t).tolist() for t in texts[:5]] == want[:5]
    for t, ids in zip(texts, want):
        assert enc.decode(ids) == sp.decode(ids), t[:40]
        if sp.bos_id() >= 0:
            got = enc.encode(t, disallowed_special=(), add_special_tokens=True)
            assert got == sp.encode(t, add_bos=True)


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_trained_models_give_sentencepieces_ids(name: str) -> None:
    path = trained(name)
    sp = spm.SentencePieceProcessor(model_file=path)
    check(ferrotok.Encoding.from_sentencepiece(path), sp, texts())


@pytest.mark.parametrize("name", ["unigram", "unigram-bytes"])
def test_a_long_text_is_one_unigram_segmentation(name: str) -> None:
    # sentencepiece's Unigram sums scores over the whole text (the sum reset past 100,000):
    # a megabyte is many resets, and any part encoded alone would round otherwise.
    path = trained(name)
    sp = spm.SentencePieceProcessor(model_file=path)
    enc = ferrotok.Encoding.from_sentencepiece(path)
    text = "".join(documents("english.txt")[:250])
    want = sp.encode(text)
    assert len(want) > 100_000
    assert enc.encode_ordinary(text) == want


def test_a_special_tokens_text_is_special_as_tiktoken_treats_it() -> None:
    path = trained("llama")
    enc, sp = ferrotok.get_encoding(path), spm.SentencePieceProcessor(model_file=path)
    assert enc.special_tokens_set == {"<s>", "</s>", "[INST]", "[/INST]"}
    with pytest.raises(ValueError, match=r"\[INST\]"):
        enc.encode("[INST] hi")
    # As ordinary text it is sentencepiece's (which never matches control pieces in text).
    assert enc.encode_ordinary("[INST] hi") == sp.encode("[INST] hi")
    assert enc.encode("[INST] hi", allowed_special="all")[0] == sp.piece_to_id("[INST]")


def test_files_and_directories_load_by_name(tmp_path: Path) -> None:
    path = Path(trained("llama"))
    (tmp_path / "tokenizer.model").write_bytes(path.read_bytes())
    want = spm.SentencePieceProcessor(model_file=str(path)).encode("Hello world")
    for where in [path, str(path), tmp_path, str(tmp_path), tmp_path / "tokenizer.model"]:
        assert ferrotok.get_encoding(where).encode("Hello world") == want
    assert ferrotok.get_encoding(tmp_path).name == tmp_path.name
    assert ferrotok.get_encoding(path).name == "llama"
    # A directory with a tokenizer.json too is read as a tokenizer.json.
    (tmp_path / "tokenizer.json").write_text("{}", encoding="utf-8")
    with pytest.raises(ValueError):
        ferrotok.get_encoding(tmp_path)


@pytest.mark.parametrize(
    ("name", "why"),
    [
        # HF would score user-defined symbols in the model; sentencepiece matches them first.
        ("user-defined", "user-defined"),
        # HF's Unigram sums scores in f64 a word at a time, sentencepiece's in f32 over the
        # text: near-ties part them.
        ("unigram", "Unigram"),
    ],
)
def test_a_model_no_tokenizer_json_holds_is_read_by_the_face(
    tmp_path: Path, name: str, why: str
) -> None:
    # No tokenizer.json would give these ids, so there is no export, and nothing through the
    # face that would write one back (add_tokens); the face itself encodes as sentencepiece.
    path = trained(name)
    enc = ferrotok.Encoding.from_sentencepiece(path)
    sp = spm.SentencePieceProcessor(model_file=path)
    with pytest.raises(ValueError, match=why):
        enc.to_hf(str(tmp_path / "tokenizer.json"))
    assert not (tmp_path / "tokenizer.json").exists()
    face = ferrotok.hf.Tokenizer.from_encoding(enc)
    with pytest.raises(NotImplementedError, match=why):
        face.add_tokens(["<new>"])
    for t in texts():
        if not any(s in t for s in enc.special_tokens_set):
            e = face.encode(t)
            assert e.ids == sp.encode(t, add_bos=True)
            assert e.tokens == ["<s>", *sp.encode(t, out_type=str)]


def test_the_hf_export_and_face_give_sentencepieces_ids(tmp_path: Path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    path = trained("llama")
    enc = ferrotok.Encoding.from_sentencepiece(path)
    sp = spm.SentencePieceProcessor(model_file=path)
    enc.to_hf(str(tmp_path / "tokenizer.json"))
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    face = ferrotok.hf.Tokenizer.from_encoding(enc)
    for t in texts():
        assert hf.encode(t).ids == face.encode(t).ids
        # HF matches special tokens in text, as `encode(allowed_special="all")` does here.
        if not any(s in t for s in enc.special_tokens_set):
            assert face.encode(t).ids == sp.encode(t, add_bos=True)
        else:
            want = enc.encode(t, allowed_special="all", add_special_tokens=True)
            assert face.encode(t).ids == want


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_what_the_loader_does_not_admit_is_refused_by_name(name: str) -> None:
    with pytest.raises(ValueError, match=REFUSED[name][1]):
        ferrotok.Encoding.from_sentencepiece(trained(name))


def test_the_reader_reads_what_protobuf_reads() -> None:
    pb = pytest.importorskip("sentencepiece.sentencepiece_model_pb2")
    for name in [*LAYOUTS, *REFUSED]:
        data = Path(trained(name)).read_bytes()
        want = pb.ModelProto()
        want.ParseFromString(data)
        got = sp_model.ModelFile(data)
        assert got.pieces == [(p.piece, p.score, p.type) for p in want.pieces]
        t, n = want.trainer_spec, want.normalizer_spec
        assert (got.model_type, got.byte_fallback, got.treat_whitespace_as_suffix) == (
            t.model_type,
            t.byte_fallback,
            t.treat_whitespace_as_suffix,
        )
        assert (got.bos_id, got.eos_id, got.unk_surface) == (t.bos_id, t.eos_id, t.unk_surface)
        assert (got.normalizer_name, got.charsmap) == (n.name, n.precompiled_charsmap)
        assert (got.add_dummy_prefix, got.remove_extra_whitespaces, got.escape_whitespaces) == (
            n.add_dummy_prefix,
            n.remove_extra_whitespaces,
            n.escape_whitespaces,
        )


def test_bad_files_are_a_value_error(tmp_path: Path) -> None:
    data = Path(trained("llama")).read_bytes()
    rng = random.Random(7)
    bad = [b"", b"\xff" * 12, b"\x0a\x05ab", data[: len(data) // 2], b"\x08\x01" * 3]
    for model in [data, Path(trained("unigram")).read_bytes()]:
        for _ in range(200):  # the file with a byte changed somewhere, or cut short
            b = bytearray(model[: rng.randrange(1, 4000)])
            b[rng.randrange(len(b))] = rng.randrange(256)
            bad.append(bytes(b))
        for _ in range(20):  # whole, with a score made NaN, infinite or huge
            b = bytearray(model)
            at = model.find(b"\x15", rng.randrange(len(model) // 2))  # a score's key
            if at >= 0:
                b[at + 1 : at + 5] = rng.choice([b"\x00\x00\xc0\x7f", b"\x00\x00\x80\xff",
                                                 b"\xff\xff\x7f\x7f"])
            bad.append(bytes(b))
    for i, b in enumerate(bad):
        p = tmp_path / f"{i}.model"
        p.write_bytes(b)
        try:
            enc = ferrotok.Encoding.from_sentencepiece(p)
        except ValueError:
            continue  # refused, with a message; anything else fails the test
        enc.encode_ordinary("Hello world \u00e9\u4e2d")  # loaded: it encodes
    with pytest.raises(ValueError, match="not a SentencePiece model"):
        sp_model.ModelFile(b"\xff" * 12)
    with pytest.raises(FileNotFoundError):
        ferrotok.Encoding.from_sentencepiece(tmp_path / "missing.model")


@pytest.mark.parametrize(
    "tail",
    [
        b"\x0a\x09\x0a\x01a\x10\xff\xff\xff\xff\x0f",  # a piece whose score is a varint
        b"\x1a\x06\x08\x80\x80\x80\x80\x10",  # a normalizer's name as a 2**32 varint
        b"\x12\x03\xe0\x02\x01",  # the trainer's unknown surface (44) as a number
        b"\x0a\x06\x0a\x01a\x1a\x01a",  # a piece's type as bytes
    ],
)
def test_a_field_of_another_wire_type_is_refused(tmp_path: Path, tail: bytes) -> None:
    # Appended messages merge into the file's own (protobuf's rule), so each tail changes one
    # field; a number read where bytes belong (or the reverse) must be refused, not crash.
    (tmp_path / "x.model").write_bytes(Path(trained("unigram")).read_bytes() + tail)
    with pytest.raises(ValueError, match="wire type"):
        ferrotok.Encoding.from_sentencepiece(tmp_path / "x.model")


@pytest.mark.parametrize("score", [float("nan"), float("-inf")])
def test_a_score_that_is_no_number_is_refused(tmp_path: Path, score: float) -> None:
    pb = pytest.importorskip("sentencepiece.sentencepiece_model_pb2")
    m = pb.ModelProto()
    m.ParseFromString(Path(trained("unigram")).read_bytes())
    m.pieces[100].score = score
    (tmp_path / "x.model").write_bytes(m.SerializeToString())
    with pytest.raises(ValueError, match=f"the score {score}"):
        ferrotok.Encoding.from_sentencepiece(tmp_path / "x.model")


def test_mistrals_files() -> None:
    files = mistral_files()
    if not files:
        pytest.skip("mistral-common is not installed (scripts/test.sh installs it)")
    some = texts() + sample_all(8, 2)
    for version in ("v1", "v2"):
        path = str(files[version])
        check(ferrotok.get_encoding(path), spm.SentencePieceProcessor(model_file=path), some)
    # v3 and later have user-defined symbols ([REF], [REFERENCE_DOC_n]).
    marked = [f"{t[:60]}[REF]{t[60:90]} [REFERENCE_DOC_3]{t[90:]}" for t in some[-6:]]
    for version in ("v3", "v7"):
        path = str(files[version])
        check(ferrotok.get_encoding(path), spm.SentencePieceProcessor(model_file=path),
              some + marked)
    assert json.loads(ferrotok.get_encoding(str(files["v1"]))._hf_json or "{}")["model"][
        "byte_fallback"
    ]


def test_the_command_line_reads_a_model_file(tmp_path: Path) -> None:
    path = trained("user-defined")
    sp = spm.SentencePieceProcessor(model_file=path)
    text = "Hello [REF] world\n<tool> second line\n"
    (tmp_path / "in.txt").write_text(text, encoding="utf-8")
    run = [sys.executable, "-m", "ferrotok"]
    out = subprocess.run([*run, "encode", "-e", path, text], capture_output=True, text=True,
                         check=True).stdout
    assert [int(i) for i in out.split()] == sp.encode(text)
    out = subprocess.run([*run, "count", "-e", path, str(tmp_path / "in.txt")],
                         capture_output=True, text=True, check=True).stdout
    assert out.split()[0] == str(len(sp.encode(text)))


def test_a_pickled_encoding_decodes_as_sentencepiece_still() -> None:
    # sentencepiece's decoding of leading spaces is the loader's, not the file's: it goes
    # with the encoding to other processes.
    path = trained("extra-whitespace")
    enc = pickle.loads(pickle.dumps(ferrotok.Encoding.from_sentencepiece(path)))
    sp = spm.SentencePieceProcessor(model_file=path)
    for t in ["\u2581 a meta symbol \u2581\u2581", "\u2581\u2581 x", " \u2581  y"]:
        assert enc.decode(sp.encode(t)) == sp.decode(sp.encode(t))
        assert enc.encode_ordinary(t) == sp.encode(t)
