"""`Encoding.to_hf`: HuggingFace `tokenizers` loading the export gives ferrotok's ids.

Held on corpus samples for the seven OpenAI encodings and a vocabulary ferrotok trained, on
texts where Oniguruma and fancy-regex read a pattern differently, and through `transformers`'
`PreTrainedTokenizerFast`. The whole-corpus sweep is the `slow` test at the end.
"""

from __future__ import annotations

import functools
import json
import warnings
from pathlib import Path

import ferrotok
import pytest
from ferrotok.hf.export import bytes_to_unicode, hf_config
from ferrotok.hf.regex import to_oniguruma
from hf_support import ALL_FILES, documents, sample_all
from oracle import ENCODING_NAMES
from test_hf_parity import model_path

# HF tokenizers 0.23 is the oracle (issue 54); PyPI has no 0.23 for Python 3.9, where these
# tests do not run.
tokenizers = pytest.importorskip("tokenizers", minversion="0.23")

# Texts where a translation slip would show: digit runs (cl100k's `\p{N}{1,3}+`), trailing and
# inner whitespace runs (`\s++$`, `$` before a newline), contractions (with the long s that
# case folding maps to s), CRLF, punctuation runs before newlines, special tokens' texts.
EDGE_TEXTS = [
    " 2021",
    "In 2021, 1234567 people paid $1,000,000.",
    "hello   \nworld  \n\n  end  ",
    "trailing spaces   ",
    "a\r\n\r\nb\n\n\n",
    "it's I'M they'll we've you're he'd 'ſ 'S",
    "x = {'a': 1}\n\t\treturn x;;;\n",
    "  leading",
    "\u00a0\u2003 nbsp and em space \u3000",
    "café naïve 東京 Ελληνικά русский عربى हिन्दी 🎉👍🏽",
    "<|endoftext|> between <|endoftext|>",
    "",
    " ",
    "\n",
    "!!!???...\n\n",
]


@functools.cache
def exported(name: str, tmp: str) -> tokenizers.Tokenizer:
    enc = ferrotok.get_encoding(name)
    path = Path(tmp) / f"{name}.json"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # o200k_harmony's alias; tested below
        enc.to_hf(path)
    return tokenizers.Tokenizer.from_file(str(path))


@pytest.fixture(scope="module")
def tmp_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("hf_export"))


def assert_same_ids(enc: ferrotok.Encoding, hf: tokenizers.Tokenizer, texts: list[str]) -> int:
    got = hf.encode_batch(texts, add_special_tokens=False)
    for text, encoding in zip(texts, got):
        want = enc.encode(text, allowed_special="all")
        if encoding.ids != want:
            i = next(
                (i for i, (a, b) in enumerate(zip(encoding.ids, want)) if a != b),
                min(len(want), len(encoding.ids)),
            )
            context = enc.decode(want[max(0, i - 3) : i + 4])
            raise AssertionError(
                f"{enc.name}: HF {encoding.ids[i : i + 4]} != ferrotok {want[i : i + 4]} "
                f"at token {i}, near {context!r}"
            )
    return len(texts)


@pytest.mark.parametrize("name", ENCODING_NAMES)
def test_openai_encodings_round_trip(name: str, tmp_dir: str) -> None:
    enc = ferrotok.get_encoding(name)
    hf = exported(name, tmp_dir)
    texts = EDGE_TEXTS + sample_all(12, 2)
    assert assert_same_ids(enc, hf, texts) == len(texts)
    # Decoding through HF's ByteLevel decoder gives the text back.
    for text in EDGE_TEXTS:
        ids = enc.encode(text, allowed_special="all")
        assert hf.decode(ids, skip_special_tokens=False) == text


def test_cl100k_digits_as_tiktoken_splits_them(tmp_dir: str) -> None:
    # transformers' TikTokenConverter gives 20|21 here: Oniguruma reads `{1,3}+` as a repeat.
    enc = ferrotok.get_encoding("cl100k_base")
    ids = exported("cl100k_base", tmp_dir).encode(" 2021").ids
    assert ids == enc.encode(" 2021")
    assert [enc.decode([i]) for i in ids] == [" ", "202", "1"]


@pytest.mark.parametrize("name", ENCODING_NAMES)
def test_the_export_loads_back_onto_its_patterns_scanner(name: str, tmp_dir: str) -> None:
    # ferrotok reading its own export runs the OpenAI pattern's scanner, not the general
    # path (which read cl100k's export at ~0.6 of cl100k's speed), and gives HF's ids. Were
    # `to_oniguruma` to write another regex, the path below would be `split:general`.
    enc = ferrotok.get_encoding(name)
    hf = exported(name, tmp_dir)
    back = ferrotok.Encoding.from_hf(Path(tmp_dir) / f"{name}.json")
    scanner = next(k for k, p in ferrotok._core.OPENAI_PATTERNS.items() if p == enc._pat_str)
    assert f"split:{scanner}" in back._core_bpe.hf_paths()
    texts = EDGE_TEXTS + sample_all(12, 2)
    assert assert_same_ids(back, hf, texts) == assert_same_ids(enc, hf, texts) == len(texts)


@functools.cache
def trained() -> ferrotok.Encoding:
    training = "".join(documents("english.txt")[:40] + documents("code.txt")[:40])
    return ferrotok.train([training], 1200, special_tokens=["<|bos|>", "<|eos|>"], progress=False)


def test_trained_vocabulary_round_trip(tmp_path: Path) -> None:
    enc = trained()
    path = tmp_path / "tokenizer.json"
    enc.to_hf(tmp_path)  # a directory: tokenizer.json inside it
    hf = tokenizers.Tokenizer.from_file(str(path))
    texts = EDGE_TEXTS + ["<|bos|>hello<|eos|>"] + sample_all(10, 2)
    assert_same_ids(enc, hf, texts)
    assert hf.encode("<|bos|>").ids == [enc.encode_single_token("<|bos|>")]


def test_transformers_loads_the_export(tmp_dir: str, tmp_path: Path) -> None:
    transformers = pytest.importorskip("transformers", minversion="5")
    for name in ["cl100k_base", "r50k_base"]:
        enc = ferrotok.get_encoding(name)
        exported(name, tmp_dir)
        tok = transformers.PreTrainedTokenizerFast(
            tokenizer_file=str(Path(tmp_dir) / f"{name}.json")
        )
        texts = EDGE_TEXTS[:10] + sample_all(3, 1)
        got = tok(texts, add_special_tokens=False)["input_ids"]
        assert got == [enc.encode(t, allowed_special="all") for t in texts]


def test_config_shape() -> None:
    enc = ferrotok.get_encoding("r50k_base")
    config = hf_config(enc)
    model = config["model"]
    assert model["type"] == "BPE" and model["ignore_merges"] is True
    # Every token and the special token are in the vocabulary at their ids.
    assert len(model["vocab"]) == enc.n_vocab
    assert model["vocab"]["<|endoftext|>"] == 50256
    assert model["vocab"]["\u0120the"] == enc.encode_single_token(" the")
    # A token's two halves merge into it only if both halves are tokens; every merge listed
    # makes a token of the vocabulary.
    for left, right in model["merges"][:2000]:
        assert left + right in model["vocab"]
    table = bytes_to_unicode()
    assert len(set(table)) == 256 and table[ord(" ")] == "\u0120" and table[ord("a")] == "a"
    json.dumps(config)  # serialisable


def test_harmony_alias_is_dropped_with_a_warning(tmp_path: Path) -> None:
    enc = ferrotok.get_encoding("o200k_harmony")
    with pytest.warns(UserWarning, match="reserved_200018"):
        config = hf_config(enc)
    contents = {t["content"]: t["id"] for t in config["added_tokens"]}
    assert contents["<|endofprompt|>"] == 200018
    assert "<|reserved_200018|>" not in contents
    assert len({t["id"] for t in config["added_tokens"]}) == len(config["added_tokens"])


def test_missing_byte_is_refused() -> None:
    ranks = {bytes([i]): i for i in range(255)}  # no 0xff
    enc = ferrotok.Encoding("partial", pat_str=r"\S+|\s+", mergeable_ranks=ranks, special_tokens={})
    with pytest.raises(ValueError, match="0xff"):
        hf_config(enc)


@pytest.mark.parametrize(
    ("pattern", "translated"),
    [
        (r"\p{N}{1,3}+", r"(?>\p{N}{1,3})"),
        (r" ?\p{L}++", r" ?(?>\p{L}+)"),
        (r"[^\r\n]?+x", r"(?>[^\r\n]?)x"),
        (r"\s+$", r"\s+\z"),
        (r"^a|b", r"\Aa|b"),
        (r"(?P<w>a)", r"(?<w>a)"),
        (r"(?i:'s|'t)", r"(?i:'s|'t)"),
        (r"a*?b+?", r"a*?b+?"),
        (r"[a-z&&[^x]]", r"[a-z&&[^x]]"),
        (r"\w+", r"[\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]+"),
        (r"(?s).", r"(?m)."),
    ],
)
def test_pattern_translation(pattern: str, translated: str) -> None:
    assert to_oniguruma(pattern) == translated


@pytest.mark.parametrize("pattern", [r"\bx", r"(a)\1", r"(?m)^a", r"(?x)a b", r"(?U)a+", r"a)"])
def test_untranslatable_patterns_are_refused(pattern: str) -> None:
    with pytest.raises(ValueError, match="cannot translate"):
        to_oniguruma(pattern)


@pytest.mark.parametrize(
    "pattern",
    [
        ferrotok.get_encoding("cl100k_base")._pat_str,
        ferrotok.get_encoding("o200k_base")._pat_str,
        ferrotok.get_encoding("r50k_base")._pat_str,
    ],
)
def test_translated_patterns_split_as_ferrotok(pattern: str) -> None:
    # The split itself, compared piece by piece with the `regex` module reading the original.
    regex = pytest.importorskip("regex")
    split = tokenizers.pre_tokenizers.Split(
        tokenizers.Regex(to_oniguruma(pattern)), behavior="isolated"
    )
    compiled = regex.compile(pattern)
    for text in EDGE_TEXTS + sample_all(2, 1):
        assert [p for p, _ in split.pre_tokenize_str(text)] == compiled.findall(text)


def test_a_tokenizer_json_is_written_back_as_it_was(tmp_path: Path) -> None:
    source = model_path("llama-bpe")
    enc = ferrotok.Encoding.from_hf(source)
    enc.to_hf(tmp_path / "tokenizer.json")
    assert json.loads((tmp_path / "tokenizer.json").read_text(encoding="utf-8")) == json.loads(
        source.read_text(encoding="utf-8")
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", [*ENCODING_NAMES, "trained"])
def test_whole_corpus_round_trip(name: str, tmp_dir: str) -> None:
    if name == "trained":
        enc = trained()
        enc.to_hf(Path(tmp_dir) / "trained.json")
        hf = tokenizers.Tokenizer.from_file(str(Path(tmp_dir) / "trained.json"))
    else:
        enc = ferrotok.get_encoding(name)
        hf = exported(name, tmp_dir)
    total = 0
    for file in ALL_FILES:
        total += assert_same_ids(enc, hf, list(documents(file)))
    assert total > 20_000
