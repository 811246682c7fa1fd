"""`Encoding.from_hf`: a HuggingFace `tokenizer.json` gives HuggingFace `tokenizers`' ids.

HF `tokenizers` 0.23 is the oracle: every shared byte-level model's reference vectors, a
sample of ~4 KB corpus documents (adversarial ones included) through every encode entry
point, HF's offsets and word ids (`_encode_hf_detail`), pipelines built to reach each
pre-tokenizer behavior and added-token flag, and a refusal naming each component ferrotok
does not implement.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import pickle
import random
from pathlib import Path
from typing import Any

import ferrotok
import numpy as np
import pytest
from ferrotok.hf.export import bytes_to_unicode
from hf_support import LOADED
from oracle import SHARED, corpus_file

# HF tokenizers 0.23 is the oracle (issue 54); PyPI has no 0.23 for Python 3.9, where these
# tests do not run.
Tokenizer = pytest.importorskip("tokenizers", minversion="0.23").Tokenizer

TOKENIZERS = SHARED / "tokenizers"


def path_of(model: str) -> Path:
    return TOKENIZERS / f"{model}.tokenizer.json"


@functools.cache
def ours(model: str) -> ferrotok.Encoding:
    return ferrotok.Encoding.from_hf(path_of(model))


@functools.cache
def config(model: str) -> dict[str, Any]:
    cfg: dict[str, Any] = json.loads(path_of(model).read_text(encoding="utf-8"))
    return cfg


@functools.cache
def theirs(model: str) -> Tokenizer:
    return Tokenizer.from_file(str(path_of(model)))


@functools.cache
def theirs_untrimmed(model: str) -> Tokenizer:
    """HF's tokenizer without its post-processor: offsets as the pipeline gives them."""
    tok = Tokenizer.from_file(str(path_of(model)))
    tok.post_processor = None
    return tok


@functools.cache
def sample_docs() -> tuple[str, ...]:
    docs = []
    for name in ("english.txt", "code.txt", "multilingual.txt"):
        data = corpus_file(name).read_text(encoding="utf-8")
        rnd = random.Random(name)
        for _ in range(3):
            i = rnd.randrange(0, len(data) - 4096)
            docs.append(data[i : i + 4096])
    adversarial = corpus_file("adversarial")
    for p in sorted(adversarial.iterdir()):
        try:
            data = p.read_text(encoding="utf-8")
        except (UnicodeDecodeError, IsADirectoryError):
            continue
        docs.append(data[:4096])
    return tuple(docs)


@pytest.mark.parametrize("model", LOADED)
def test_reference_vectors(model: str) -> None:
    enc = ours(model)
    hf = theirs(model)
    lines = (TOKENIZERS / "vectors" / f"{model}.jsonl").read_text(encoding="utf-8").splitlines()
    assert lines
    for line in lines:
        v = json.loads(line)
        text, ids = v["text"], v["ids"]
        assert enc.encode(text, allowed_special="all") == ids, text
        if not any(s in text for s in enc.special_tokens_set):
            assert enc.encode_ordinary(text) == ids, text
            assert enc.encode(text) == ids, text
        # BOS/EOS as the model's post-processor adds them.
        with_specials = hf.encode(text, add_special_tokens=True).ids
        assert enc.encode(text, allowed_special="all", add_special_tokens=True) == with_specials


@pytest.mark.parametrize("model", LOADED)
def test_corpus_sample_matches_hf(model: str) -> None:
    enc = ours(model)
    hf = theirs(model)
    docs = list(sample_docs())
    want = [e.ids for e in hf.encode_batch(docs, add_special_tokens=False)]
    for doc, ids in zip(docs, want):
        assert enc.encode(doc, allowed_special="all") == ids
    ordinary = [d for d in docs if not any(s in d for s in enc.special_tokens_set)]
    ordinary_want = [w for d, w in zip(docs, want) if d in ordinary]
    assert enc.encode_ordinary_batch(ordinary) == ordinary_want
    assert enc.encode_batch(docs, allowed_special="all") == want
    flat, offsets = enc.encode_batch_to_numpy(docs, allowed_special="all")
    assert flat.tolist() == [i for ids in want for i in ids]
    assert offsets.tolist() == list(np.cumsum([0] + [len(w) for w in want]))
    assert enc.encode_to_numpy(docs[0], allowed_special="all").tolist() == want[0]
    assert enc.count(docs[0], allowed_special="all") == len(want[0])
    with_specials = hf.encode(docs[0], add_special_tokens=True).ids
    assert enc.encode_batch(docs[:1], allowed_special="all", add_special_tokens=True) == [
        with_specials
    ]
    assert (
        enc.encode_to_numpy(docs[0], allowed_special="all", add_special_tokens=True).tolist()
        == with_specials
    )
    # Decoding gives the text back where HF's byte-level decoder does.
    for doc, ids in zip(docs, want):
        text = hf.decode(ids, skip_special_tokens=False)
        assert enc.decode(ids) == text
        if text == doc:
            assert enc.decode(enc.encode(doc, allowed_special="all")) == doc


@pytest.mark.parametrize("model", LOADED)
def test_offsets_and_word_ids_match_hf(model: str) -> None:
    enc = ours(model)
    hf = theirs_untrimmed(model)
    texts = list(sample_docs())[:6] + [
        "  Hello   world\n\n  x ",
        "e\u0301te\u0301 \u212b\u00c5 caf\u00e9",
        "ied 4 \u00bd months 12345",
    ]
    for text in texts:
        e = hf.encode(text, add_special_tokens=False)
        ids, offsets, words = enc._encode_hf_detail(text)
        assert ids == e.ids
        assert offsets == e.offsets
        assert words == e.word_ids


def test_special_tokens_as_tiktoken_treats_them() -> None:
    enc = ours("llama-bpe")
    hf = theirs("llama-bpe")
    text = "hi<|begin_of_text|>there"
    with pytest.raises(ValueError, match="disallowed special token"):
        enc.encode(text)
    assert enc.encode(text, allowed_special="all") == hf.encode(text).ids[1:]
    assert 128000 in enc.encode(text, allowed_special={"<|begin_of_text|>"})
    assert 128000 not in enc.encode(text, disallowed_special=())
    assert enc.is_special_token(128000)
    assert enc.decode([128000]) == "<|begin_of_text|>"
    assert enc.name == "llama-bpe"


def test_non_special_added_tokens_are_ordinary_text() -> None:
    # GPT-NeoX's runs of spaces are added tokens cut out before BPE.
    enc = ours("gpt-neox")
    assert enc.encode_ordinary("   Hello") == [50275, 12092]
    assert enc.encode("   Hello") == theirs("gpt-neox").encode("   Hello").ids


@functools.cache
def tiny_gpt2() -> dict[str, Any]:
    """GPT-2's pipeline with its first 3,000 merges only (ids renumbered from 0): a real
    byte-level BPE that loads in milliseconds, for the pipeline-variant tests."""
    cfg = config("gpt-2")
    model = cfg["model"]
    by_id = sorted(model["vocab"].items(), key=lambda kv: kv[1])
    vocab: dict[str, int] = {}
    for token, _ in by_id[:256]:
        vocab[token] = len(vocab)
    merges = model["merges"][:3000]
    for m in merges:
        a, b = m if isinstance(m, list) else m.split(" ", 1)
        vocab.setdefault(a + b, len(vocab))
    vocab.setdefault("<|endoftext|>", len(vocab))
    tiny = copy.deepcopy({k: v for k, v in cfg.items() if k != "model"})
    tiny["model"] = {**{k: v for k, v in model.items()}, "vocab": vocab, "merges": merges}
    tiny["added_tokens"] = [{**t, "id": vocab["<|endoftext|>"]} for t in cfg["added_tokens"]]
    return tiny


def _gpt2_with(**changes: Any) -> str:
    cfg = copy.deepcopy(tiny_gpt2())
    cfg.update(changes)
    return json.dumps(cfg)


def _both(cfg_json: str) -> tuple[ferrotok.Encoding, Tokenizer]:

    return ferrotok.Encoding._from_hf_json(cfg_json, "custom"), Tokenizer.from_str(cfg_json)


VARIANT_TEXTS = [
    "Hello, world!! It's 2024... ok?  \n\n  Tabs\there -- e.g. x=1,234,567.",
    "caf\u00e9 \u212b \ufb01ne \u00bd 42nd 3.14 \u0661\u0662\u0663",
    "  leading and trailing  ",
    "lines  \n  and more \n\n",
    "",
    "a",
]


def _split(pattern: dict[str, str], behavior: str, invert: bool = False) -> dict[str, Any]:
    return {"type": "Split", "pattern": pattern, "behavior": behavior, "invert": invert}


BYTE_LEVEL_STEP = {
    "type": "ByteLevel",
    "add_prefix_space": False,
    "use_regex": True,
    "trim_offsets": False,
}
PRE_TOKENIZERS: list[dict[str, Any]] = [
    {"type": "ByteLevel", "add_prefix_space": True, "use_regex": True, "trim_offsets": False},
    {"type": "ByteLevel", "add_prefix_space": True, "use_regex": False, "trim_offsets": False},
    *[
        {
            "type": "Sequence",
            "pretokenizers": [_split({"String": " "}, behavior, invert), BYTE_LEVEL_STEP],
        }
        for behavior in [
            "Removed",
            "Isolated",
            "MergedWithPrevious",
            "MergedWithNext",
            "Contiguous",
        ]
        for invert in (False, True)
    ],
    {
        "type": "Sequence",
        "pretokenizers": [_split({"Regex": r"\p{N}{1,3}+"}, "Isolated"), BYTE_LEVEL_STEP],
    },
    {
        "type": "Sequence",
        "pretokenizers": [{"type": "Digits", "individual_digits": True}, BYTE_LEVEL_STEP],
    },
    {
        # Oniguruma's `$` is an end of line.
        "type": "Sequence",
        "pretokenizers": [_split({"Regex": r"\s+$"}, "Isolated"), BYTE_LEVEL_STEP],
    },
    *[
        {
            "type": "Sequence",
            "pretokenizers": [{"type": "Punctuation", "behavior": b}, BYTE_LEVEL_STEP],
        }
        for b in ["Isolated", "Removed", "MergedWithPrevious", "MergedWithNext", "Contiguous"]
    ],
    {
        "type": "Sequence",
        "pretokenizers": [
            BYTE_LEVEL_STEP,
            {"type": "Digits", "individual_digits": False},
            _split({"Regex": "[0-9][0-9]"}, "MergedWithNext"),
            {"type": "Punctuation", "behavior": "Contiguous"},
        ],
    },
    *[
        {
            "type": "Sequence",
            "pretokenizers": [{"type": "CharDelimiterSplit", "delimiter": d}, BYTE_LEVEL_STEP],
        }
        for d in [" ", "e", "\u00e9"]
    ],
    # FixedLength counts chars before ByteLevel, bytes (and the prefix space) after it.
    *[
        {"type": "Sequence", "pretokenizers": steps}
        for steps in [
            [{"type": "FixedLength", "length": 3}, BYTE_LEVEL_STEP],
            [{"type": "WhitespaceSplit"}, {"type": "FixedLength", "length": 2}, BYTE_LEVEL_STEP],
            [
                {**BYTE_LEVEL_STEP, "add_prefix_space": True},
                {"type": "FixedLength", "length": 4},
            ],
            [
                {**BYTE_LEVEL_STEP, "use_regex": False},
                {"type": "FixedLength", "length": 1},
            ],
        ]
    ],
]


@pytest.mark.parametrize("pre", PRE_TOKENIZERS, ids=lambda p: json.dumps(p)[:80])
def test_pre_tokenizer_variants_match_hf(pre: dict[str, Any]) -> None:
    enc, hf = _both(_gpt2_with(pre_tokenizer=pre, post_processor=None))
    for text in VARIANT_TEXTS:
        e = hf.encode(text, add_special_tokens=False)
        assert enc.encode_ordinary(text) == e.ids, text
        ids, offsets, words = enc._encode_hf_detail(text)
        assert (ids, offsets, words) == (e.ids, e.offsets, e.word_ids), text


@pytest.mark.parametrize(
    "normalizer",
    [
        {"type": "NFC"},
        {"type": "NFKC"},
        {"type": "NFD"},
        {"type": "NFKD"},
        {"type": "Lowercase"},
        {"type": "Sequence", "normalizers": [{"type": "NFKD"}, {"type": "Lowercase"}]},
        {"type": "Nmt"},
        {"type": "Sequence", "normalizers": [{"type": "Nmt"}, {"type": "NFKC"}]},
    ],
    ids=lambda n: json.dumps(n),
)
def test_normalizers_match_hf(normalizer: dict[str, Any]) -> None:
    enc, hf = _both(_gpt2_with(normalizer=normalizer, post_processor=None))
    nmt = "\x01a\x08\x0b\x1f b\x7f\x8f\t\r\n\x0c\u1680\u200b\u200f\u2028\u2581\ufeff\ufffd\x00\x9f"
    for text in VARIANT_TEXTS + ["e\u0301\u0323 \u1e0b\u0323 \u0130stanbul \u00df \u2460", nmt]:
        e = hf.encode(text, add_special_tokens=False)
        assert enc.encode_ordinary(text) == e.ids, text
        ids, offsets, words = enc._encode_hf_detail(text)
        assert (ids, offsets, words) == (e.ids, e.offsets, e.word_ids), text


def test_added_token_flags_match_hf() -> None:
    def added(i: int, content: str, **flags: bool) -> dict[str, Any]:
        base = {"single_word": False, "lstrip": False, "rstrip": False}
        base.update({"normalized": False, "special": False})
        base.update(flags)
        return {"id": i, "content": content, **base}

    cfg = json.loads(_gpt2_with(post_processor=None, normalizer={"type": "Lowercase"}))
    # The file's ids are not read: HF numbers added tokens itself (a text in the vocab
    # keeps its id), so these are deliberately off.
    cfg["added_tokens"] += [
        added(9000, "<mask>", lstrip=True, special=True),
        added(9001, "foo", single_word=True, normalized=True),
        added(9002, "BAR", rstrip=True),
        added(9003, "[both]", lstrip=True, rstrip=True),
        added(9004, "Hey", normalized=True),  # normalized: matched as "hey"
        added(9005, "the", special=True),  # in the vocab: keeps the vocab's id
    ]
    enc, hf = _both(json.dumps(cfg))
    texts = [
        "a <mask> b   <mask>",
        "foo food foo_ x-foo foo",
        "BAR   next BARx  BAR",
        "x  [both]  y[both]z",
        "HEY hey Hey",
        "the theme",
    ]
    for text in texts:
        e = hf.encode(text, add_special_tokens=False)
        assert enc.encode(text, allowed_special="all") == e.ids, text
        ids, offsets, words = enc._encode_hf_detail(text)
        assert (ids, offsets, words) == (e.ids, e.offsets, e.word_ids), text
    # With <mask> not allowed its text is ordinary text (HF: encode_special_tokens).
    hf.encode_special_tokens = True
    assert enc.encode("a <mask> b", disallowed_special=()) == hf.encode("a <mask> b").ids


def test_onig_interval_plus_is_a_repeat() -> None:
    # Oniguruma reads `\p{N}{1,3}+` as `(?:\p{N}{1,3})+`: " 2021" keeps 2021 whole.
    pre = {
        "type": "Sequence",
        "pretokenizers": [
            _split({"Regex": r" ?\p{N}{1,3}+|\s+|[^\s\p{N}]+"}, "Isolated"),
            {
                "type": "ByteLevel",
                "add_prefix_space": False,
                "use_regex": False,
                "trim_offsets": False,
            },
        ],
    }
    enc, hf = _both(_gpt2_with(pre_tokenizer=pre, post_processor=None))
    assert enc.encode_ordinary(" 2021") == hf.encode(" 2021").ids


def test_prefix_space_alone_covers_the_first_char() -> None:
    # ByteLevel's add_prefix_space on each piece: HF's `prepend` aligns the space to the
    # piece's first char, so a space token of its own spans that char, not an empty range.
    pre = {
        "type": "Sequence",
        "pretokenizers": [
            {"type": "Digits", "individual_digits": False},
            {"type": "Punctuation", "behavior": "Contiguous"},
            {**BYTE_LEVEL_STEP, "add_prefix_space": True},
        ],
    }
    enc, hf = _both(_gpt2_with(pre_tokenizer=pre, post_processor=None))
    for text in ["\U0001f600\U0001f601", "x.\U0001f600 12\u4e2d", "\u00e9\U0001f600"]:
        e = hf.encode(text, add_special_tokens=False)
        assert enc._encode_hf_detail(text) == (e.ids, e.offsets, e.word_ids), text
    # The case that showed it: a lone space token before an emoji.
    assert hf.encode("\U0001f600", add_special_tokens=False).offsets[0] == (0, 1)


@pytest.mark.parametrize("invert", [False, True])
def test_word_class_is_oniguruma_s(invert: bool) -> None:
    # Oniguruma's `\w` lacks the join controls (U+200C/U+200D) the regex crate's has, and
    # standalone (not in a class) holds Latin-1's superscripts and fractions.
    pre = {
        "type": "Sequence",
        "pretokenizers": [
            _split({"Regex": r"\w+|[^\w\s]+"}, "Isolated", invert),
            _split({"Regex": r"\W+"}, "Removed"),
            BYTE_LEVEL_STEP,
        ],
    }
    enc, hf = _both(_gpt2_with(pre_tokenizer=pre, post_processor=None))
    texts = [
        "\U0001f468\u200d\U0001f469\u200d\U0001f467 \u2764\ufe0f",
        "a\u200db a\u200cb x\u00b2 \u00bd! [\u00b9]",
    ]
    for text in texts:
        e = hf.encode(text, add_special_tokens=False)
        assert enc._encode_hf_detail(text) == (e.ids, e.offsets, e.word_ids), text


@pytest.mark.parametrize(
    ("change", "component"),
    [
        (
            {"model": {"type": "WordPiece", "vocab": {}}},
            "WordPiece model behind a ByteLevel or Metaspace pre-tokenizer",
        ),
        ({"model": {"type": "Unigram", "vocab": []}}, "Unigram model behind a ByteLevel"),
        ({"model": {"type": "Mystery"}}, "model Mystery"),
        ({"normalizer": {"type": "ByteLevel"}}, "normalizer ByteLevel"),
        ({"normalizer": {"type": "Replace"}}, "normalizer Replace"),
        # Metaspace makes SentencePiece BPE too (tested in test_hf_sentencepiece.py).
        ({"pre_tokenizer": {"type": "Metaspace"}}, "decoder ByteLevel for SentencePiece BPE"),
        ({"pre_tokenizer": {"type": "UnicodeScripts"}}, "pre-tokenizer UnicodeScripts"),
        ({"decoder": {"type": "WordPiece"}}, "decoder WordPiece"),
        ({"post_processor": {"type": "Mystery"}}, "post-processor Mystery"),
        # No pre-tokenizer makes SentencePiece BPE, whose decoder is not ByteLevel.
        ({"pre_tokenizer": None}, "decoder ByteLevel for SentencePiece BPE"),
        # A pre-tokenizer without ByteLevel makes BPE over chars, whose decoder is not either.
        (
            {"pre_tokenizer": {"type": "Digits", "individual_digits": True}},
            "decoder ByteLevel for SentencePiece BPE",
        ),
    ],
)
def test_unsupported_components_are_refused(change: dict[str, Any], component: str) -> None:
    cfg = json.loads(_gpt2_with(**change))
    with pytest.raises(ValueError, match=component):
        _load(json.dumps(cfg))


@pytest.mark.parametrize(
    ("model_change", "component"),
    [
        ({"dropout": 0.1}, "dropout"),
        ({"byte_fallback": True}, "byte_fallback with a ByteLevel pre-tokenizer"),
        ({"continuing_subword_prefix": "##"}, "continuing_subword_prefix"),
        ({"end_of_word_suffix": "\u2581"}, "end_of_word_suffix outside the byte-level alphabet"),
    ],
)
def test_unsupported_model_options_are_refused(
    model_change: dict[str, Any], component: str
) -> None:
    cfg = json.loads(_gpt2_with())
    cfg["model"].update(model_change)
    with pytest.raises(ValueError, match=component):
        _load(json.dumps(cfg))


def _load(text: str) -> ferrotok.Encoding:

    return ferrotok.Encoding._from_hf_json(text, "custom")


def test_bad_files_raise_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        ferrotok.Encoding.from_hf(tmp_path)  # a directory without tokenizer.json
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match="JSON"):
        ferrotok.Encoding.from_hf(bad)
    with pytest.raises(ValueError, match="not in the vocab"):
        cfg = tiny_gpt2()
        _load(json.dumps({**cfg, "model": {**cfg["model"], "merges": ["zzzq zzzr"]}}))


def test_get_encoding_takes_paths(tmp_path: Path) -> None:
    checkout = tmp_path / "my-model"
    checkout.mkdir()
    os.symlink(path_of("gpt-2"), checkout / "tokenizer.json")
    for where in (str(path_of("gpt-2")), path_of("gpt-2"), str(checkout)):
        enc = ferrotok.get_encoding(where)  # type: ignore[arg-type]
        assert enc.encode("hello world") == [31373, 995]
        assert enc.n_vocab == 50257
    assert ferrotok.get_encoding(str(checkout)).name == "my-model"
    trained = ferrotok.train(["hello world"] * 3, 260, progress=False)
    saved = tmp_path / "mine.tiktoken"
    trained.save(saved)
    assert ferrotok.get_encoding(str(saved)).encode("hello world") == trained.encode("hello world")


def test_pickle_round_trip() -> None:
    enc = ours("qwen2")
    again = pickle.loads(pickle.dumps(enc))
    text = sample_docs()[0]
    assert again.encode_ordinary(text) == enc.encode_ordinary(text)
    assert again._hf_config == enc._hf_config


def test_fast_paths_are_taken() -> None:
    # Llama 3 and Tekken: tiktoken's rule provably gives HF's merges (engine), and Llama 3's
    # pattern runs on cl100k's scanner.
    assert ours("llama-bpe")._core_bpe.hf_paths() == ["vocab_lookup", "engine", "split:llama3"]
    assert ours("tekken_240911")._core_bpe.hf_paths() == ["vocab_lookup", "engine", "split:tekken"]
    # Qwen2's pattern runs on cl100k's scanner too (numbers cut into digits).
    assert "split:qwen2" in ours("qwen2")._core_bpe.hf_paths()
    # Vocabularies HF trained list one merge per token: where it is the one tiktoken's rule
    # on the token's bytes ends in (every shared one), the engine serves them too, those
    # lacking bytes (Falcon, StarCoder2) included.
    for model in ("gpt-2", "qwen2", "deepseek-llm", "gpt-neox", "falcon", "starcoder"):
        assert "engine" in ours(model)._core_bpe.hf_paths(), model


def test_a_listed_merge_the_engine_would_not_make_keeps_a_model_off_it() -> None:
    # GPT-2 with one token's merge replaced by another split of it into two tokens: the
    # engine's rule still ends in the old split, so HF's merging serves the model, and words
    # holding the token keep HF's ids.
    cfg = copy.deepcopy(config("gpt-2"))
    model = cfg["model"]
    vocab: dict[str, int] = model["vocab"]
    for i, line in enumerate(model["merges"]):
        a, b = line.split(" ", 1) if isinstance(line, str) else line
        t = a + b
        other = next(
            (k for k in range(1, len(t)) if k != len(a) and t[:k] in vocab and t[k:] in vocab),
            None,
        )
        if len(t) >= 5 and t.startswith("\u0120") and other is not None:
            new = [t[:other], t[other:]]
            model["merges"][i] = " ".join(new) if isinstance(line, str) else new
            break
    else:
        raise AssertionError("no GPT-2 token with a second split")
    text = json.dumps(cfg)
    enc = ferrotok.Encoding._from_hf_json(text, "gpt-2, one merge replaced")
    assert "engine" not in enc._core_bpe.hf_paths()
    hf = Tokenizer.from_str(text)
    word = t[1:]
    texts = [f" {word}", f"a {word} b", f" {word}{word} {word}s", *sample_docs()[:4]]
    for s in texts:
        assert enc.encode_ordinary(s) == hf.encode(s, add_special_tokens=False).ids
    assert ours("gpt-2").encode_ordinary(texts[0]) != enc.encode_ordinary(texts[0])


def test_an_engine_model_missing_a_byte_drops_it_as_hf() -> None:
    # Llama 3's vocabulary without the byte 0xF1 and every token and merge holding it (as
    # StarCoder2's and Falcon's lack bytes): HF's BPE drops such a byte. The engine has no
    # rule for it: a word holding one is merged HF's way, the others on the engine.
    cfg = copy.deepcopy(config("llama-bpe"))
    gone = bytes_to_unicode()[0xF1]
    model = cfg["model"]
    kept = [t for t, _ in sorted(model["vocab"].items(), key=lambda kv: kv[1]) if gone not in t]
    model["vocab"] = {t: i for i, t in enumerate(kept)}
    model["merges"] = [
        m for m in model["merges"] if gone not in (m if isinstance(m, str) else "".join(m))
    ]
    cfg["added_tokens"] = []
    text = json.dumps(cfg)
    enc = ferrotok.Encoding._from_hf_json(text, "llama-bpe without 0xF1")
    assert "engine" in enc._core_bpe.hf_paths()
    hf = Tokenizer.from_str(text)
    for t in ["\U00040000::", "a\U00040000:: b", "x \U00040000\U00040000!! 12", *sample_docs()[:4]]:
        assert enc.encode_ordinary(t) == hf.encode(t, add_special_tokens=False).ids


def _conflict_patterns(model: str) -> list[str]:
    """The words where tiktoken's rule and HF's pair merges would differ on an engine model
    if both pairs of parts making one token t could stand side by side: a token t with
    splits (t[:k1], t[k1:]) and (t[:k2], t[k2:]) into listed merges, HF ranking the k2 one
    first, t[k1:] == t[:k2], followed by t[k2:]. `choose_paths` argues that they never do
    (every pair making t at a time has one split)."""
    model_cfg = config(model)["model"]
    vocab: dict[str, int] = model_cfg["vocab"]
    rank = {
        (tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m)): i
        for i, m in enumerate(model_cfg["merges"])
    }
    enc = ours(model)
    out = []
    for t in vocab:
        splits = {k: rank[(t[:k], t[k:])] for k in range(1, len(t)) if (t[:k], t[k:]) in rank}
        for k1, r1 in splits.items():
            k2 = len(t) - k1
            if k2 != k1 and splits.get(k2, r1) < r1 and t[k1:] == t[:k2]:
                raw = enc.decode_single_token_bytes(vocab[t]) + enc.decode_single_token_bytes(
                    vocab[t[k2:]]
                )
                out.append(raw.decode("utf-8", errors="replace"))
    return out


@pytest.mark.parametrize("model", ["llama-bpe", "tekken_240911"])
def test_engine_models_merge_conflict_words_as_hf(model: str) -> None:
    # The engine serves these models on every word, these included: the words where a
    # tie between two splits of one token could matter, were it ever met.
    patterns = _conflict_patterns(model)
    assert len(patterns) > 100
    texts = []
    for p in patterns:
        texts += [p, "x" + p, p + "y", f"foo {p} bar", p + p]
    got = ours(model).encode_ordinary_batch(texts)
    want = [e.ids for e in theirs(model).encode_batch(texts, add_special_tokens=False)]
    assert got == want


@pytest.mark.parametrize("model", ["qwen2", "tekken_240911", "gpt-2"])
def test_build_tables_builds_the_pipelines_own_tables(model: str) -> None:
    # A fresh instance: the cached one may have built them by encoding.
    enc = ferrotok.Encoding.from_hf(path_of(model))
    before = dict(enc._core_bpe.tables_built())
    assert not any(before.values()), before
    enc.build_tables()
    after = dict(enc._core_bpe.tables_built())
    assert after.keys() == before.keys() and all(after.values()), after
    # The pipeline's own: cut tables and whole-token answers.
    assert "hf whole tokens" in after
    text = sample_docs()[-1]
    assert enc.encode_ordinary(text) == theirs(model).encode(text, add_special_tokens=False).ids


def test_build_tables_builds_the_dfa_of_a_split_on_the_general_path(tmp_path: Path) -> None:
    # Tekken's pattern with digits in pairs: no scanner of ferrotok's knows it.
    config = json.loads(path_of("tekken_240911").read_text(encoding="utf-8"))
    split = config["pre_tokenizer"]["pretokenizers"][0]
    split["pattern"]["Regex"] = split["pattern"]["Regex"].replace(r"|\p{N}|", r"|\p{N}{1,2}|")
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    enc = ferrotok.Encoding.from_hf(path)
    assert "split:general" in enc._core_bpe.hf_paths()
    assert not dict(enc._core_bpe.tables_built())["hf split dfa"]
    enc.build_tables()
    assert dict(enc._core_bpe.tables_built())["hf split dfa"]
    text = sample_docs()[-1] + " 12345 \u0661\u0662\u0663"
    want = Tokenizer.from_file(str(path)).encode(text, add_special_tokens=False).ids
    assert enc.encode_ordinary(text) == want


def test_cli_takes_a_tokenizer_json() -> None:
    import subprocess
    import sys

    run = subprocess.run(
        [sys.executable, "-m", "ferrotok", "encode", "-e", str(path_of("gpt-2"))],
        input=b"hello world",
        capture_output=True,
        check=True,
    )
    assert run.stdout.split() == [b"31373", b"995"]


def test_save_refuses_a_tokenizer_json_model(tmp_path: Path) -> None:
    # A .tiktoken file would keep tiktoken's merge rule and drop the pipeline: refused, and
    # nothing is written.
    with pytest.raises(ValueError, match="tokenizer.json"):
        ours("gpt-2").save(tmp_path / "gpt2.tiktoken")
    assert list(tmp_path.iterdir()) == []
