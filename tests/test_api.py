"""tiktoken's API, behaviour by behaviour: errors (type and meaning), round trips, offsets,
unstable completions, pickling, threads, and the private attributes real code reads."""

from __future__ import annotations

import gc
import importlib
import os
import pickle
import threading
from typing import Any

import ferrotok
import pytest
import tiktoken
from oracle import ENCODING_NAMES, corpus_file, pair


def test_module_api_matches_tiktoken() -> None:
    assert ferrotok.list_encoding_names() == tiktoken.list_encoding_names()
    # Every method and attribute of tiktoken's Encoding, the private ones included.
    assert set(dir(tiktoken.Encoding)) - set(dir(ferrotok.Encoding)) == set()
    # And every function tiktoken's load and model modules define.
    for module in ["load", "model"]:
        theirs = importlib.import_module(f"tiktoken.{module}")
        ours = importlib.import_module(f"ferrotok.{module}")
        defined = {
            n for n, v in vars(theirs).items() if getattr(v, "__module__", "") == theirs.__name__
        }
        assert defined - set(dir(ours)) == set(), module
    for name in ["get_encoding", "list_encoding_names", "encoding_for_model",
                 "encoding_name_for_model", "Encoding"]:
        assert hasattr(ferrotok, name), name


@pytest.mark.parametrize("name", ENCODING_NAMES)
def test_attributes(name: str) -> None:
    ours, theirs = pair(name)
    assert ours.name == theirs.name
    assert repr(ours) == repr(theirs)
    assert ours.n_vocab == theirs.n_vocab
    assert ours.max_token_value == theirs.max_token_value
    assert ours.eot_token == theirs.eot_token
    assert ours.special_tokens_set == theirs.special_tokens_set
    assert ours._pat_str == theirs._pat_str
    assert ours._special_tokens == theirs._special_tokens
    assert ours._mergeable_ranks == theirs._mergeable_ranks
    for t in (0, 100, ours.eot_token, ours.max_token_value):
        assert ours.is_special_token(t) == theirs.is_special_token(t)


@pytest.mark.parametrize("name", ENCODING_NAMES)
def test_every_token_round_trips(name: str) -> None:
    ours, theirs = pair(name)
    ids = sorted(set(ours._mergeable_ranks.values()) | set(ours._special_tokens.values()))
    assert [ours.decode_single_token_bytes(t) for t in ids] == [
        theirs.decode_single_token_bytes(t) for t in ids
    ]
    for t in ids:
        assert ours.encode_single_token(ours.decode_single_token_bytes(t)) == t
    assert ours.token_byte_values() == theirs.token_byte_values()
    assert ours.decode_bytes(ids) == theirs.decode_bytes(ids)
    assert ours.decode_tokens_bytes(ids[:1000]) == theirs.decode_tokens_bytes(ids[:1000])


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base", "o200k_harmony"])
def test_errors_match_tiktoken(name: str) -> None:
    ours, theirs = pair(name)
    special = sorted(ours.special_tokens_set)[0]
    text = f"hello {special} world"
    with pytest.raises(ValueError) as a:
        ours.encode(text)
    with pytest.raises(ValueError) as b:
        theirs.encode(text)
    assert str(a.value) == str(b.value)
    assert repr(special) in str(a.value) and "allowed_special" in str(a.value)
    with pytest.raises(ValueError):
        ours.encode(text, allowed_special=set(), disallowed_special={special})
    with pytest.raises(ValueError):
        ours.encode_to_numpy(text)
    with pytest.raises(ValueError):
        ours.encode_batch(["fine", text])
    with pytest.raises(ValueError):
        ours.encode_with_unstable(text)
    for bad in (ours.max_token_value + 1, 2**31):
        # The same `KeyError`s, argument and all: decoding a list names the id in a sentence,
        # one token's lookup gives the id as a string.
        calls: list[tuple[str, object]] = [
            ("decode_single_token_bytes", bad),
            ("decode_tokens_bytes", [1, bad]),
            ("decode_with_offsets", [1, bad]),
            ("decode", [1, bad]),
            ("decode_bytes", [bad]),
            ("decode_batch", [[1], [bad]]),
            ("decode_bytes_batch", [[1], [bad]]),
        ]
        for method, arg in calls:
            with pytest.raises(KeyError) as a:
                getattr(ours, method)(arg)
            with pytest.raises(KeyError) as b:
                getattr(theirs, method)(arg)
            assert a.value.args == b.value.args, method
    with pytest.raises(KeyError):
        ours.encode_single_token("definitely not one token at all")
    with pytest.raises(KeyError):
        theirs.encode_single_token("definitely not one token at all")
    with pytest.raises(TypeError):
        ours.encode(b"bytes are not str")  # type: ignore[arg-type]
    with pytest.raises((TypeError, OverflowError)):
        ours.decode([-1])
    with pytest.raises(ValueError):
        ferrotok.get_encoding("no_such_encoding")
    with pytest.raises(ValueError):
        ferrotok.get_encoding(42)  # type: ignore[arg-type]


BATCHES_TO_DECODE: list[Any] = [
    [[1, 2], [3]], [(1, 2), [3]], ([1, 2], [3]), [[1, "a"]], [[1, -1]], [[1, 2**32]],
    [[1, 2**40]], [[1.0]], [[True, 2]], [[200_000]], [[1], None], [[1], "ab"], "ab",
    [[1], [2, 3.5]], [[]], [],
]


@pytest.mark.parametrize("batch", BATCHES_TO_DECODE, ids=repr)
def test_decode_bytes_batch_takes_and_refuses_what_tiktoken_does(batch: Any) -> None:
    # Lists of int lists take a fast path; everything else, and any list with an item that
    # does not fit it, must still give tiktoken's result or its type of error.
    ours, theirs = pair("cl100k_base")

    def outcome(enc: Any) -> Any:
        try:
            return enc.decode_bytes_batch(batch)
        except Exception as e:  # noqa: BLE001 - the type is what is compared
            return type(e)

    assert outcome(ours) == outcome(theirs)


# tiktoken maps a thread pool over the batch, so any iterable of texts works there, a string
# (its characters) included; each maker gives a fresh one for each encoding.
TEXT_BATCHES: dict[str, Any] = {
    "list": lambda: ["hello world", "goodbye"],
    "tuple": lambda: ("hello world", "goodbye"),
    "generator": lambda: (t for t in ["hello world", "goodbye"]),
    "map": lambda: map(str.upper, ["hello world", "goodbye"]),
    "str": lambda: "abc",
    "dict": lambda: {"hello": 1, "world": 2},
    "dict keys": lambda: {"hello": 1}.keys(),
    "set": lambda: {"hello"},
    "list subclass": lambda: type("Texts", (list,), {})(["hello", "world"]),
    "empty generator": lambda: iter(()),
    "bytes": lambda: b"ab",
    "int": lambda: 5,
    "None": lambda: None,
    "list with an int": lambda: ["a", 1],
}


@pytest.mark.parametrize("method", ["encode_batch", "encode_ordinary_batch"])
@pytest.mark.parametrize("batch", list(TEXT_BATCHES))
def test_text_batches_take_any_iterable_like_tiktoken(method: str, batch: str) -> None:
    ours, theirs = pair("cl100k_base")
    make = TEXT_BATCHES[batch]
    expected = _outcome(lambda: getattr(theirs, method)(make()))
    assert _outcome(lambda: getattr(ours, method)(make())) == expected
    # ferrotok's own batch calls take what encode_batch takes, and agree with it.
    counts = expected if isinstance(expected, type) else [len(ids) for ids in expected]
    assert _outcome(lambda: ours.count_batch(make())) == counts
    flat = expected if isinstance(expected, type) else [i for ids in expected for i in ids]
    for to_numpy in (ours.encode_batch_to_numpy, ours.encode_ordinary_batch_to_numpy):
        got = _outcome(lambda: to_numpy(make())[0])  # noqa: B023 - called at once
        assert got == flat


def test_id_batches_take_any_iterable_like_tiktoken() -> None:
    ours, theirs = pair("cl100k_base")
    for make in (lambda: (ids for ids in [[15339, 1917], [19045]]), lambda: {(15339,): 0}):
        for method in ("decode_batch", "decode_bytes_batch"):
            expected = _outcome(lambda: getattr(theirs, method)(make()))  # noqa: B023
            assert _outcome(lambda: getattr(ours, method)(make())) == expected  # noqa: B023


# tiktoken hands num_threads to ThreadPoolExecutor(max_workers=...): None is the pool's
# default, below 1 is a ValueError, a fraction is taken, a string is a TypeError.
@pytest.mark.parametrize("num_threads", [1, 2, 3, 10**30, True, None, 1.5, 0, -1, False, "2"])
def test_num_threads_is_read_as_tiktokens_thread_pool_reads_it(num_threads: Any) -> None:
    ours, theirs = pair("cl100k_base")
    texts = ["hello world " * 300, "goodbye"] * 12  # over 32 KB: the helper threads take part
    ids = [[15339, 1917], [19045]]
    for method, batch in [
        ("encode_batch", texts),
        ("encode_ordinary_batch", texts),
        ("decode_batch", ids),
        ("decode_bytes_batch", ids),
    ]:
        expected = _outcome(lambda: getattr(theirs, method)(batch, num_threads=num_threads))  # noqa: B023
        got = _outcome(lambda: getattr(ours, method)(batch, num_threads=num_threads))  # noqa: B023
        assert got == expected, method
    # ferrotok's own batch calls: tiktoken's error where it has one, else one thread's result.
    error = _outcome(lambda: theirs.encode_batch(texts, num_threads=num_threads))
    for method in ("count_batch", "encode_batch_to_numpy", "encode_ordinary_batch_to_numpy"):
        expected = (
            error
            if isinstance(error, type)
            else _outcome(lambda: getattr(ours, method)(texts, num_threads=1))  # noqa: B023
        )
        got = _outcome(lambda: getattr(ours, method)(texts, num_threads=num_threads))  # noqa: B023
        assert got == expected, method


def test_num_threads_nan_is_a_value_error() -> None:
    # tiktoken's pool never starts a thread for NaN workers and waits forever: not compared.
    ours, _ = pair("cl100k_base")
    with pytest.raises(ValueError):
        ours.encode_batch(["hello"], num_threads=float("nan"))  # type: ignore[arg-type]
    assert ours.encode_batch(["hello"], num_threads=float("inf")) == [[15339]]  # type: ignore[arg-type]


@pytest.mark.parametrize("allowed", [[], None, (), "", "none", ["<|endoftext|>"]], ids=repr)
@pytest.mark.parametrize("text", ["hello", "hi <|endoftext|>"])
def test_allowed_special_that_is_not_a_set_is_tiktokens_type_error(allowed: Any, text: str) -> None:
    ours, theirs = pair("cl100k_base")
    for method, arg in [
        ("encode", text),
        ("encode_to_numpy", text),
        ("encode_with_unstable", text),
        ("encode_batch", [text]),
    ]:
        expected = _outcome(lambda: getattr(theirs, method)(arg, allowed_special=allowed))  # noqa: B023
        assert expected is TypeError
        assert _outcome(lambda: getattr(ours, method)(arg, allowed_special=allowed)) is TypeError  # noqa: B023
    assert _outcome(lambda: ours.count(text, allowed_special=allowed)) is TypeError
    assert _outcome(lambda: ours.count_batch([text], allowed_special=allowed)) is TypeError


def test_flat_batches_replace_lone_surrogates_as_encode_batch_does() -> None:
    ours, theirs = pair("cl100k_base")
    texts = ["a\ud800b", "\ud83d\ude00 joined", "plain", "\udfff"]
    expected = theirs.encode_batch(texts)
    assert ours.encode_batch(texts) == expected
    assert ours.count_batch(texts) == [len(ids) for ids in expected]
    for ids, offsets in (
        ours.encode_batch_to_numpy(texts),
        ours.encode_ordinary_batch_to_numpy(texts),
    ):
        assert [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == expected


def test_disallowed_special_options() -> None:
    ours, theirs = pair("cl100k_base")
    text = "<|endoftext|> and <|fim_prefix|>"
    cases = [
        {"allowed_special": "all"},
        {"allowed_special": {"<|endoftext|>"}, "disallowed_special": ()},
        {"allowed_special": {"<|endoftext|>", "<|fim_prefix|>"}},
        {"disallowed_special": ()},
        {"allowed_special": {"not a special token"}, "disallowed_special": ()},
    ]
    for kw in cases:
        assert ours.encode(text, **kw) == theirs.encode(text, **kw), kw
        assert ours.encode_to_numpy(text, **kw).tolist() == theirs.encode(text, **kw)
    for kw in [{"allowed_special": {"<|endoftext|>"}}, {"disallowed_special": {"<|fim_prefix|>"}}]:
        with pytest.raises(ValueError):
            ours.encode(text, **kw)
        with pytest.raises(ValueError):
            theirs.encode(text, **kw)


SPECIAL_CHECK_TEXTS = [
    "plain text", "", "<|endoftext|>", "x <|endoftext|>", "<|endoftext|> x", "<|endoftext|",
    "|endoftext|>", "<|endo<|endoftext|>", "a\ud83db <|endoftext|>", "a\ud83db plain",
    "<|fim_prefix|><|fim_middle|>", "<<||>>", "<|endofprompt|>", "<|im_start|>",
]
SPECIAL_CHECK_OPTIONS: list[dict[str, Any]] = [
    {}, {"allowed_special": "all"}, {"disallowed_special": ()},
    {"allowed_special": {"<|endoftext|>"}}, {"disallowed_special": {"<|fim_prefix|>"}},
    {"disallowed_special": {"plain"}},
    {"allowed_special": {"<|endoftext|>"}, "disallowed_special": ()},
    # Nothing allowed, nothing checked: `encode_to_numpy`'s one-call path.
    {"allowed_special": frozenset(), "disallowed_special": []},
]


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base", "o200k_harmony"])
def test_special_text_checks_match_tiktoken(name: str) -> None:
    # The default call skips the regex check when Rust finds no special token's text; every
    # other option takes the general path. Both must give tiktoken's ids or its error.
    ours, theirs = pair(name)

    def outcome(f: Any, *args: Any, **kw: Any) -> Any:
        try:
            r = f(*args, **kw)
        except ValueError as e:
            return ("ValueError", str(e))
        return r.tolist() if hasattr(r, "tolist") else r

    for kw in SPECIAL_CHECK_OPTIONS:
        for text in SPECIAL_CHECK_TEXTS:
            want = outcome(theirs.encode, text, **kw)
            assert outcome(ours.encode, text, **kw) == want, (text, kw)
            # tiktoken's encode_to_numpy, unlike its encode, refuses lone surrogates.
            want_numpy = outcome(theirs.encode_to_numpy, text, **kw)
            assert outcome(ours.encode_to_numpy, text, **kw) == want_numpy, (text, kw)
        want = outcome(theirs.encode_batch, SPECIAL_CHECK_TEXTS, **kw)
        assert outcome(ours.encode_batch, SPECIAL_CHECK_TEXTS, **kw) == want, kw
        plain = [t for t in SPECIAL_CHECK_TEXTS if "plain" not in t]
        assert outcome(ours.encode_batch, plain, **kw) == outcome(theirs.encode_batch, plain, **kw)
    # "all" reaches the core as the word, not as the set of every special token.
    assert ours._core_bpe.encode("<|endoftext|>", "all") == theirs.encode(
        "<|endoftext|>", allowed_special="all"
    )
    with pytest.raises(ValueError, match="allowed_special"):
        ours._core_bpe.encode("x", "some")


@pytest.mark.parametrize("name", ["r50k_base", "cl100k_base", "o200k_base"])
def test_decode_with_offsets(name: str) -> None:
    ours, theirs = pair(name)
    texts = ["hello world", "我非常渴望与人工智能一起工作", "naïve café 🙂 x", "\u0915\u093f a"]
    for text in texts:
        ids = theirs.encode(text)
        assert ours.decode_with_offsets(ids) == theirs.decode_with_offsets(ids)
    broken = [ours.encode_single_token(b"\xf0")]  # a lone lead byte
    with pytest.raises(UnicodeDecodeError):
        ours.decode_with_offsets(broken)
    assert ours.decode(broken) == theirs.decode(broken)
    assert ours.decode(broken, errors="ignore") == theirs.decode(broken, errors="ignore")


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base", "o200k_base"])
def test_encode_with_unstable(name: str) -> None:
    ours, theirs = pair(name)
    for text in ["hello fanta", "hello wor", "the  ", "x\n", "abc 12", "déj", "<|endoftext|>"]:
        a_stable, a_comp = ours.encode_with_unstable(text, allowed_special="all")
        b_stable, b_comp = theirs.encode_with_unstable(text, allowed_special="all")
        assert a_stable == b_stable, text
        assert {tuple(c) for c in a_comp} == {tuple(c) for c in b_comp}, text


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base", "gpt2"])
def test_encode_bytes_round_trips_any_bytes(name: str) -> None:
    ours, theirs = pair(name)
    for b in [b"caf\xc3", b"\xff\xfe", b"ok \xe2\x82", b"\x80abc", b"", b"a b\xf0\x9f\x99"]:
        ids = ours.encode_bytes(b)
        assert ids == theirs._encode_bytes(b)
        assert ours._encode_bytes(b) == ids
        assert ours.decode_bytes(ids) == b


PLUGIN = """
def tiny():
    ranks = {bytes([i]): i for i in range(256)}
    ranks[b"ab"] = 256
    ranks[b"abab"] = 257
    return {"name": "tiny_plugin", "pat_str": r"\\w+|\\s+|[^\\w\\s]+",
            "mergeable_ranks": ranks, "special_tokens": {"<|end|>": 258}}

ENCODING_CONSTRUCTORS = {"tiny_plugin": tiny}
"""

PLUGIN_CHECK = """
import pickle, ferrotok, tiktoken
assert ferrotok.list_encoding_names() == tiktoken.list_encoding_names(), (
    ferrotok.list_encoding_names(), tiktoken.list_encoding_names())
assert "tiny_plugin" in ferrotok.list_encoding_names()
ours, theirs = ferrotok.get_encoding("tiny_plugin"), tiktoken.get_encoding("tiny_plugin")
text = "abab ab, abc <|end|>"
assert ours.encode(text, allowed_special="all") == theirs.encode(text, allowed_special="all")
assert ours.encode(text, allowed_special="all") == [257, 32, 256, 44, 32, 256, 99, 32, 258]
data = pickle.dumps(ours)
assert len(data) < 200  # by name, as a registered encoding
assert pickle.loads(data).encode(text, allowed_special="all") == ours.encode(
    text, allowed_special="all"
)
"""


def _run_with_plugins(tmp_path: Any, plugins: dict[str, str], script: str) -> Any:
    """Runs `script` in a fresh interpreter that finds `plugins` (module name → source) in
    a `tiktoken_ext` namespace directory of its own, ahead of tiktoken's."""
    import subprocess
    import sys

    (tmp_path / "tiktoken_ext").mkdir()
    for name, source in plugins.items():
        (tmp_path / "tiktoken_ext" / f"{name}.py").write_text(source)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), *sys.path]))
    return subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )


def test_encodings_of_tiktoken_plugins_are_found(tmp_path: Any) -> None:
    done = _run_with_plugins(tmp_path, {"a_tiny_plugin": PLUGIN}, PLUGIN_CHECK)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    "plugins",
    [
        {"a_tiny_plugin": PLUGIN, "b_tiny_plugin": PLUGIN},  # a name given twice
        {"no_constructors": "X = 1"},
        {"openai_again": "from tiktoken_ext.openai_public import ENCODING_CONSTRUCTORS"},
    ],
    ids=["duplicate", "no constructors", "an OpenAI name again"],
)
def test_broken_tiktoken_plugins_are_tiktokens_value_error(tmp_path: Any, plugins: Any) -> None:
    script = """
import ferrotok, tiktoken
for module in (tiktoken, ferrotok):
    for _ in range(2):  # raised again, not half-registered
        try:
            module.list_encoding_names()
        except ValueError as e:
            print(type(e).__name__)
"""
    done = _run_with_plugins(tmp_path, plugins, script)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ValueError"] * 4


def test_single_piece_and_private_api() -> None:
    ours, theirs = pair("cl100k_base")
    for t in ["helloqqqq", "  !", "a" * 500]:
        assert ours._encode_single_piece(t) == theirs._encode_single_piece(t)
    for t in ["hello world", " \n\n  x <|endoftext|> 123456 don't", "naïve café 🙂 " * 20]:
        assert ours._encode_only_native_bpe(t) == theirs._encode_only_native_bpe(t)
    # The same error, position in the piece included (tiktoken encodes piece by piece).
    for text in ["a\ud800", "hello wor\ud800ld", "x  \udfff!?", "\ud800"]:
        errors = []
        for enc in (ours, theirs):
            with pytest.raises(UnicodeEncodeError) as info:
                enc._encode_only_native_bpe(text)
            errors.append(str(info.value))
        assert errors[0] == errors[1], text


def test_pickling() -> None:
    ours, _ = pair("cl100k_base")
    clone = pickle.loads(pickle.dumps(ours))
    assert clone is not ours and clone.encode("hello world") == ours.encode("hello world")
    # Registered encodings travel by name, custom ones by value.
    assert len(pickle.dumps(ours)) < 200
    custom = ferrotok.Encoding(
        "custom",
        pat_str=ours._pat_str,
        mergeable_ranks=dict(list(ours._mergeable_ranks.items())[:1000]),
        special_tokens={"<|x|>": 1000},
    )
    clone = pickle.loads(pickle.dumps(custom))
    assert clone.name == "custom"
    assert clone.encode("the <|x|>", allowed_special="all") == custom.encode(
        "the <|x|>", allowed_special="all"
    )


def test_the_openai_patterns_have_one_source() -> None:
    """The patterns the OpenAI encodings get are the core's own strings (those its hand-written
    splitters are chosen by), and tiktoken's, byte for byte."""
    from ferrotok import _core, openai_public

    ours = {
        "r50k": openai_public.R50K_PATTERN,
        "cl100k": openai_public.CL100K_PATTERN,
        "o200k": openai_public.O200K_PATTERN,
    }
    assert _core.OPENAI_PATTERNS == ours
    for name, key in [("gpt2", "r50k"), ("r50k_base", "r50k"), ("p50k_base", "r50k"),
                      ("p50k_edit", "r50k"), ("cl100k_base", "cl100k"),
                      ("o200k_base", "o200k"), ("o200k_harmony", "o200k")]:  # fmt: skip
        theirs = pair(name)[1]._pat_str
        assert theirs == ours[key] == ferrotok.get_encoding(name)._pat_str, name


def variant_of(base: str, name: str, special_tokens: dict[str, int]) -> dict:
    """`Encoding` arguments for `base`'s pattern and ranks with other special tokens."""
    _, theirs = pair(base)
    return {
        "name": name,
        "pat_str": theirs._pat_str,
        "mergeable_ranks": theirs._mergeable_ranks,
        "special_tokens": special_tokens,
    }


def test_custom_encoding_like_tiktoken() -> None:
    _, theirs = pair("cl100k_base")
    specials = {**theirs._special_tokens, "<|im_start|>": 100264, "<|im_end|>": 100265}
    kwargs = variant_of("cl100k_base", "cl100k_im", specials)
    ours_c = ferrotok.Encoding(**kwargs)
    theirs_c = tiktoken.Encoding(**kwargs)
    text = "<|im_start|>user\nhi there<|im_end|>"
    assert ours_c.encode(text, allowed_special="all") == theirs_c.encode(
        text, allowed_special="all"
    )
    with pytest.raises(AssertionError):
        ferrotok.Encoding(**kwargs, explicit_n_vocab=5)
    with pytest.raises(ValueError, match="pattern"):
        ferrotok.Encoding("bad", pat_str="(unclosed", mergeable_ranks={b"a": 0},
                          special_tokens={})


# Kimi K2's pattern (its `tokenization_kimi.py`), which ferrotok runs on o200k's scanner with
# Han runs apart (`rust/src/encode/pretok/o200k.rs`).
KIMI_K2_PATTERN = "|".join(
    [
        r"[\p{Han}]+",
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*"
        r"[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+"
        r"[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        r"\p{N}{1,3}",
        r" ?[^\s\p{L}\p{N}]+[\r\n]*",
        r"\s*[\r\n]+",
        r"\s+(?!\S)",
        r"\s+",
    ]
)


# Llama 4's pattern (Meta's `llama4` tiktoken `pat_str`, and its tokenizer.json's Split):
# o200k's with its letter classes by ASCII case, each a look-ahead for a letter and a negated
# ASCII range, which ferrotok runs on o200k's scanner (`rust/src/encode/pretok/o200k.rs`).
LLAMA4_PATTERN = (
    r"[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+"
    r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?"
    r"|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*"
    r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?"
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)


@pytest.mark.parametrize(
    ("pat_str", "texts"),
    [
        pytest.param(
            KIMI_K2_PATTERN,
            ["Kimi\u4e2d\u6587 \u4e2dx a\u3007 \u2e80!\n/x \u3042\u4e2d's \U00020000\u3005",
             "\u5317\u4eac\u5e02 Pascal 2024\u5e74, I'm here.\r\n\t//"],
            id="kimi-k2",
        ),
        pytest.param(
            LLAMA4_PATTERN,
            ["a\u00c9b HTTPServer \u00c9COLE\u00e9cole e\u0301x x'\u017f x'S \u01c5ungla",
             "\u02b0a \u4e2d\u6587!\n/x I'M don'T \u03a3\u03c3\u03c2 2024\u5e74\r\n\t//"],
            id="llama4",
        ),
    ],
)
def test_o200k_variants_give_tiktokens_ids(pat_str: str, texts: list[str]) -> None:
    # Kimi K2 and Llama 4 ship tiktoken files with these patterns; over o200k's ranks, ids as
    # tiktoken's where each parts from o200k's (Kimi K2: Han beside other scripts, the numeral
    # 〇, radicals, `/` after punctuation; Llama 4: letters beyond ASCII in both case runs,
    # marks as punctuation, no `'ſ` contraction) and on corpus text.
    _, o200k = pair("o200k_base")
    kwargs = {"name": "o200k-variant", "pat_str": pat_str,
              "mergeable_ranks": o200k._mergeable_ranks, "special_tokens": {}}
    ours, theirs = ferrotok.Encoding(**kwargs), tiktoken.Encoding(**kwargs)
    texts = list(texts)
    for name in ["english", "code", "multilingual"]:
        with open(corpus_file(f"{name}.txt"), encoding="utf-8") as f:
            texts.append(f.read(200_000))
    for text in texts:
        assert ours.encode_ordinary(text) == theirs.encode_ordinary(text)
    assert ours.encode_ordinary_batch(texts) == theirs.encode_ordinary_batch(texts)


BYTES = {bytes([i]): i for i in range(256)}


@pytest.mark.parametrize(
    ("ranks", "specials", "message"),
    [
        ({**BYTES, b"ab": 2**21}, {}, "rank 2097152 is too large"),
        ({**BYTES, b"ab": 2**32 - 1}, {}, "too large"),
        (BYTES, {"<s>": 2**32 - 1}, "id 4294967295 is reserved"),
        ({**BYTES, b"": 256}, {}, "has no bytes"),
        ({**BYTES, b"ab": 7}, {}, "rank 7 is given to more than one token"),
    ],
    ids=["rank 2^21", "rank 2^32-1", "special 2^32-1", "empty token", "one rank twice"],
)
def test_vocabularies_past_ferrotoks_limits_are_a_value_error_that_names_the_limit(
    ranks: dict[bytes, int], specials: dict[str, int], message: str
) -> None:
    # docs/compatibility.md, "Where the two part ways": tiktoken accepts the first four (and
    # panics on the last); ferrotok refuses each up front rather than give a wrong id later.
    with pytest.raises(ValueError, match=message):
        ferrotok.Encoding("x", pat_str=r"\w+|\s+|.", mergeable_ranks=ranks,
                          special_tokens=specials)


def test_vocabularies_just_inside_the_limits_agree_with_tiktoken() -> None:
    kwargs: dict[str, Any] = {
        "name": "y",
        "pat_str": r"\w+|\s+|.",
        "mergeable_ranks": {**BYTES, b"ab": 2**21 - 1},
        "special_tokens": {"<s>": 2**32 - 2},
    }
    ours, theirs = ferrotok.Encoding(**kwargs), tiktoken.Encoding(**kwargs)
    text = "ab cab<s>"
    assert ours.encode(text, allowed_special="all") == theirs.encode(text, allowed_special="all")
    assert ours.decode(ours.encode(text, allowed_special="all")) == text


WORD_BOUNDARY_PATTERNS = [
    r"(?: |a*?\b)+|.",
    r"(?:\W|\w*?\b)+|.",
    r"(?:s*?[^a]*?\b)*+|.",
    r"\w+\b|\B.|\s",
    r"(?i)\bthe\b|\w+|.",
]


@pytest.mark.parametrize("pattern", WORD_BOUNDARY_PATTERNS)
def test_patterns_with_word_boundaries_split_as_tiktokens_engine_does(pattern: str) -> None:
    # fancy-regex runs `\b` on its backtracking VM, where a lazy repetition can end on an
    # empty iteration: `(?: |a*?\b)+` on " aa" matches " " and "a" there, " aa" in the
    # automaton ferrotok's general path used to run it on (and in fancy-regex 0.20).
    ranks = {**BYTES, b"aa": 256, b" a": 257, b" aa": 258, b"ss": 259, b"the": 260}
    ours = ferrotok.Encoding("w", pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    theirs = tiktoken.Encoding("w", pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    texts = [" aa", " aa aa", "  aa", " aa.", " aaaa aa", "\nss", "\n\nss", " ss", " ab",
             "The theme, the end.", "a aa  aaa\n\nss é", "x" * 50]
    compared = 0
    for text in texts:
        try:
            want = theirs.encode_ordinary(text)
        except BaseException as e:  # noqa: BLE001 - tiktoken panics on an empty match
            assert "PanicException" in type(e).__name__
            continue
        assert ours.encode_ordinary(text) == want, repr(text)
        compared += 1
    assert compared >= 3


@pytest.mark.parametrize("empty_matching", [r"a*", r"a*|(?=b)", r"(?:x\d)*"])
def test_a_pattern_that_matches_the_empty_string_gives_its_empty_pieces_no_tokens(
    empty_matching: str,
) -> None:
    # tiktoken panics on an empty piece; ferrotok encodes it as nothing, so the ids are
    # those of the pattern's non-empty matches: tiktoken's with the same pattern minus its
    # empty matches (`+` for `*`, the look-ahead dropped).
    non_empty = {r"a*": r"a+", r"a*|(?=b)": r"a+", r"(?:x\d)*": r"(?:x\d)+"}[empty_matching]
    ranks = {**BYTES, b"aa": 256, b"x1": 257, b"x1x1": 258}
    specials = {"<s>": 300}
    ours = ferrotok.Encoding("e", pat_str=empty_matching, mergeable_ranks=ranks,
                             special_tokens=specials)
    theirs = tiktoken.Encoding("t", pat_str=non_empty, mergeable_ranks=ranks,
                               special_tokens=specials)
    texts = ["aab ba", "", "b", "x1x1x2 aaaa<s>ab", "baaab" * 50, "éaa\nx1"]
    for text in texts:
        want = theirs.encode(text, allowed_special="all")
        assert ours.encode(text, allowed_special="all") == want, repr(text)
        assert ours.encode_ordinary(text) == theirs.encode_ordinary(text), repr(text)
        assert ours.encode_to_numpy(text, allowed_special="all").tolist() == want
        assert ours.count(text, allowed_special="all") == len(want)
        # The last piece may be an empty one (no unstable tail) where `non_empty`'s is not.
        stable, _ = ours.encode_with_unstable(text, allowed_special="all")
        assert want[: len(stable)] == stable
        assert ours._encode_bytes(text.encode() + b"\xff") == theirs._encode_bytes(
            text.encode() + b"\xff")
    many = texts * 400  # enough text for the batch to run on the helper threads
    assert ours.encode_batch(many, num_threads=2, allowed_special="all") == [
        theirs.encode(t, allowed_special="all") for t in many
    ]


def test_shared_across_threads() -> None:
    ours, theirs = pair("o200k_base")
    texts = [f"thread text {i} " * (i + 1) for i in range(64)]
    expected = [theirs.encode(t) for t in texts]
    results: dict[int, list[list[int]]] = {}

    def work(k: int) -> None:
        results[k] = [ours.encode(t) for t in texts]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r == expected for r in results.values()) and len(results) == 8
    assert ours.encode_batch(texts, num_threads=4) == expected
    assert ours.encode_ordinary_batch(texts, num_threads=1) == expected
    assert ours.decode_batch(expected) == texts
    assert ours.decode_bytes_batch(expected) == [t.encode() for t in texts]


# The first list of ids a process makes looks up how its interpreter lays out an int, with an
# `import sys`. Here an import hook (as lazy-import tools install) lets go of the GIL in that
# import, and a second thread asks for ids meanwhile. With a plain `OnceLock` around the
# look-up, the second thread waited for it while holding the GIL the first one needed: both
# hung (`rust/src/py/ints.rs`).
FIRST_LISTS_ON_TWO_THREADS = """
import builtins, threading, time, ferrotok
enc = ferrotok.get_encoding("cl100k_base")
entered, real_import = threading.Event(), builtins.__import__

def slow_import(name, *args, **kwargs):
    if name == "sys" and not entered.is_set():
        entered.set()
        time.sleep(0.5)  # lets go of the GIL
    return real_import(name, *args, **kwargs)

builtins.__import__ = slow_import
text, results = "hello world, hello again", {}
threads = [threading.Thread(target=lambda k=k: results.update({k: enc.encode(text)}))
           for k in range(2)]
threads[0].start()
assert entered.wait(30), "the first list of ids did not look the layout up with an import"
threads[1].start()
for t in threads:
    t.join()
builtins.__import__ = real_import
print(results[0] == results[1] == enc.encode(text) != [])
"""


def test_first_lists_of_ids_on_two_threads_while_an_import_lets_go_of_the_gil() -> None:
    import subprocess
    import sys

    try:
        done = subprocess.run([sys.executable, "-c", FIRST_LISTS_ON_TWO_THREADS],
                              capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("two threads making their first lists of ids hung")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True"]


def test_ferrotok_extensions_agree_with_encode() -> None:
    ours, _ = pair("o200k_base")
    texts = ["hello world", "", "<|endoftext|> x", "naïve café 🙂" * 50, "a" * 5000]
    kw = {"allowed_special": "all"}
    expected = [ours.encode(t, **kw) for t in texts]
    assert ours.count_batch(texts, **kw) == [len(e) for e in expected]
    assert [ours.count(t, **kw) for t in texts] == [len(e) for e in expected]
    ids, offsets = ours.encode_batch_to_numpy(texts, **kw)
    assert offsets.tolist()[0] == 0 and len(offsets) == len(texts) + 1
    assert [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == expected
    ids, offsets = ours.encode_ordinary_batch_to_numpy(texts, num_threads=1)
    assert ids.tolist() == [i for t in texts for i in ours.encode_ordinary(t)]
    with pytest.raises(ValueError):
        ours.count("<|endoftext|>")
    with pytest.raises(ValueError):
        ours.encode_batch_to_numpy(["<|endoftext|>"])


def test_registered_encodings_build_ranks_lazily_and_equal_the_file() -> None:
    for name in ["r50k_base", "cl100k_base"]:
        ours, theirs = pair(name)
        assert ours._mergeable_ranks == theirs._mergeable_ranks
        assert list(ours._mergeable_ranks.values())[:5] == [0, 1, 2, 3, 4]


def test_special_tokens_with_huge_ids_like_tiktoken() -> None:
    kwargs = variant_of("r50k_base", "far", {"<|far|>": 3_000_000_000, "<|endoftext|>": 50256})
    ours_far, theirs_far = ferrotok.Encoding(**kwargs), tiktoken.Encoding(**kwargs)
    text = "a<|far|>b<|endoftext|>"
    ids = ours_far.encode(text, allowed_special="all")
    assert ids == theirs_far.encode(text, allowed_special="all")
    assert ours_far.decode(ids) == text
    assert ours_far.n_vocab == theirs_far.n_vocab
    assert ours_far.decode_single_token_bytes(3_000_000_000) == b"<|far|>"


def test_lists_whose_largest_id_sits_at_the_edges_of_the_shared_ints() -> None:
    # A list whose ids are all below 2**18 is filled in one loop after the shared int objects
    # up to its largest id are made; others are filled id by id, with fresh ints from 2**21
    # up. Each edge, as a list's largest id, must still give the right ints.
    edges = {"<|a|>": 2**18 - 1, "<|b|>": 2**18, "<|c|>": 2**21 - 1, "<|d|>": 2**21}
    kwargs = variant_of("r50k_base", "edges", {**edges, "<|endoftext|>": 50256})
    ours, theirs = ferrotok.Encoding(**kwargs), tiktoken.Encoding(**kwargs)
    for name, top in edges.items():
        text = f"ids 0 and 255 and 50255: 日本語{name}!"
        want = theirs.encode(text, allowed_special="all")
        got = ours.encode(text, allowed_special="all")
        assert got == want and max(got) == top
        assert [i + 0 for i in got] == [int(str(i)) for i in got] == want
        assert ours.encode_batch([text] * 3, allowed_special="all", num_threads=2) == [want] * 3


def test_returned_ids_are_plain_ints_that_outlive_their_encoding() -> None:
    # encode hands out shared int objects that ferrotok lays out itself and never frees: they
    # must behave as ordinary ints, and stay valid after their Encoding and every list holding
    # them are gone (a reference-count slip would crash or corrupt here).
    _, theirs = pair("cl100k_base")
    kwargs = variant_of("cl100k_base", "short_lived", {"<|endoftext|>": 100257})
    text = "Hello, wörld! 0 1 255 256 ids: 日本語 " * 50 + "<|endoftext|>"
    want = theirs.encode(text, allowed_special="all")
    enc = ferrotok.Encoding(**kwargs)
    ids = enc.encode(text, allowed_special="all")
    batch = enc.encode_batch([text, text[::-1]], allowed_special="all", num_threads=2)
    del enc
    gc.collect()
    assert ids == want and batch[0] == want
    assert all(type(i) is int for i in ids + batch[1])
    assert [int(str(i)) for i in ids] == [i + 0 for i in ids] == [0 - (0 - i) for i in ids] == want
    assert {i: None for i in ids}.keys() == set(want)
    assert [i.bit_length() for i in ids] == [w.bit_length() for w in want]
    assert pickle.loads(pickle.dumps(ids)) == want
    assert ids.count(100257) == 1 and ids.count(0) == want.count(0)
    for _ in range(3):
        del ids, batch
        gc.collect()
        ids = ferrotok.Encoding(**kwargs).encode(text, allowed_special="all")
        batch = [ids[:], list(reversed(ids))]
    assert ids == want and batch[1][::-1] == want


def test_batches_from_many_threads_share_the_helpers() -> None:
    # Every 2-thread batch shares one pool of helper threads; batches from several Python
    # threads at once queue for it and must all finish, each with its own right answer.
    ours, theirs = pair("cl100k_base")
    # Over 32 KB in all, so that 2-thread batches do use the helpers.
    texts = [f"batch {i}: " + "word " * (i % 160) + "😀 " * (i % 7) for i in range(200)]
    assert sum(len(t.encode()) for t in texts) > 64_000
    expected = [theirs.encode_ordinary(t) for t in texts]
    flat = [i for e in expected for i in e]
    failures: list[str] = []

    def work(k: int) -> None:
        for _ in range(5):
            mine = texts[k:] + texts[:k]
            want = expected[k:] + expected[:k]
            if ours.encode_ordinary_batch(mine, num_threads=2) != want:
                failures.append(f"lists {k}")
            if ours.count_batch(mine, num_threads=2) != [len(w) for w in want]:
                failures.append(f"counts {k}")
            if ours.encode_ordinary_batch_to_numpy(texts, num_threads=2)[0].tolist() != flat:
                failures.append(f"flat {k}")
            if ours.decode_batch(want, num_threads=2) != mine:
                failures.append(f"decode {k}")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a batch never finished"
    assert failures == []


def _batch_in_child(texts: list[str], out: Any) -> None:
    enc = ferrotok.get_encoding("cl100k_base")
    out.put(enc.encode_ordinary_batch(texts, num_threads=2))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork start method needs os.fork")
# From 3.12 Python warns on any fork of a process with threads; forking is the point here.
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_batch_in_a_forked_child_after_the_parent_batched() -> None:
    # A forked child (DataLoader workers on Linux) inherits the parent's helper pool but
    # not its threads; its batches must start their own helpers instead of waiting forever.
    import multiprocessing

    ours, theirs = pair("cl100k_base")
    texts = [f"forked {i} " * (10 * i + 1) for i in range(40)]  # ~90 KB: helpers are used
    assert sum(map(len, texts)) > 64_000
    expected = [theirs.encode_ordinary(t) for t in texts]
    assert ours.encode_ordinary_batch(texts, num_threads=2) == expected  # parent's pool
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_batch_in_child, args=(texts, out))
    child.start()
    try:
        got = out.get(timeout=60)
    finally:
        child.join(timeout=10)
        if child.is_alive():
            child.kill()
    assert got == expected
    assert child.exitcode == 0


@pytest.mark.parametrize("num_threads", [1, 2])
def test_batch_error_is_the_first_failing_texts(num_threads: int) -> None:
    # Batches encode on Rust threads and finish out of order; the error must still be the
    # one a sequential loop meets first, and nothing is returned half-done.
    ranks = {bytes([b]): b for b in range(256) if b not in b"qz"}
    enc = ferrotok.Encoding("no_q_z", pat_str=r"\S+|\s+", mergeable_ranks=ranks, special_tokens={})
    texts = ["fine", "q" * 20_000, "also fine", "z"] * 4
    for batch_call in (
        enc.encode_ordinary_batch,
        enc.encode_batch,
        enc.encode_batch_to_numpy,
        enc.encode_ordinary_batch_to_numpy,
        enc.count_batch,
    ):
        with pytest.raises(ValueError, match="0x71"):
            batch_call(texts, num_threads=num_threads)
    ok = ["fine", "also fine", "a b" * 3_000] * 50
    want = [enc.encode_ordinary(t) for t in ok]
    assert enc.encode_ordinary_batch(ok, num_threads=num_threads) == want
    ids, offsets = enc.encode_ordinary_batch_to_numpy(ok, num_threads=num_threads)
    assert [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == want
    assert enc.count_batch(ok, num_threads=num_threads) == [len(w) for w in want]
    # The first bad id list decides the error, whichever thread decodes it.
    bad = [want[0], [300], want[1], [301]] * 4
    with pytest.raises(KeyError, match="300"):
        enc.decode_bytes_batch(bad, num_threads=num_threads)
    assert enc.decode_bytes_batch(want, num_threads=num_threads) == [t.encode() for t in ok]


def _outcome(f: Any, *args: Any) -> Any:
    """`f(*args)`, or the type of what it raised (the type is compared); numpy arrays, alone
    or in a flat batch's `(ids, offsets)`, as lists."""
    try:
        result = f(*args)
    except BaseException as e:  # noqa: BLE001
        return type(e)
    if isinstance(result, tuple):
        return tuple(part.tolist() if hasattr(part, "tolist") else part for part in result)
    return result.tolist() if hasattr(result, "tolist") else result


def _decode_outcome(enc: Any, tokens: Any) -> bytes | type[BaseException]:
    """`enc.decode_bytes(tokens)`, or the type of what it raised."""
    return _outcome(enc.decode_bytes, tokens)


def _ferrotok_ids(recipe: str) -> list:
    """Id lists whose items are the int objects ferrotok's encode returns, alone or mixed with
    ints made elsewhere and with items that are not ids."""
    o200k = ferrotok.get_encoding("o200k_base")
    ours = ferrotok.get_encoding("cl100k_base")
    text = "hello world, 你好世界 — ünïcödé"
    ids = ours.encode(text)
    return {
        "encoded": ids,
        "reversed": ids[::-1],
        "mixed": ids + [15339, 0] + ids + [int("1917")],
        "special": ours.encode("<|endoftext|>", allowed_special="all") + ids,
        "bad item after": ids + ["a"],
        "negative after": ids + [-1],
        # o200k's ids, made by ferrotok too, are partly past cl100k's vocabulary.
        "other encoding": o200k.encode(text + " tokenization"),
        "sliced and repeated": (ids * 3)[1::2],
    }[recipe]


@pytest.mark.parametrize(
    "recipe",
    [
        "encoded",
        "reversed",
        "mixed",
        "special",
        "bad item after",
        "negative after",
        "other encoding",
        "sliced and repeated",
    ],
)
def test_decode_bytes_of_ferrotok_made_ids_matches_tiktoken(recipe: str) -> None:
    # ferrotok's ids are shared int objects that decode reads from their address alone; any
    # list holding them, however mixed, must decode (or fail) as tiktoken does.
    ours, theirs = pair("cl100k_base")
    tokens = _ferrotok_ids(recipe)
    assert all(type(t) in (int, str) for t in tokens)
    got = _decode_outcome(ours, tokens)
    assert got == _decode_outcome(theirs, tokens)
    if recipe == "encoded":
        assert got == "hello world, 你好世界 — ünïcödé".encode()


class IntSubclass(int):
    """An int that is not exactly `int`: readers must take the general path for it."""


@pytest.mark.parametrize(
    "tokens",
    [
        [15339, 1917],
        (15339, 1917),
        [True, 15339],
        [],
        [100257, 15339],
        [-1],
        [2**40],
        ["a"],
        [1.5],
        [10**6],
        [15339, 10**6],
        [10**6, "a"],
        [15339] * 70_000 + [10**6],
        [15339] * 70_000 + ["a"],
        # Ints are read straight from CPython's int objects: zero, one digit, the 30-bit digit
        # boundary, two digits whose low digit alone is a real id, negatives, subclasses.
        [0, 15339, 0],
        [2**30 - 1],
        [2**30],
        [2**30 + 15339],
        [2**32 + 15339],
        [2**60 + 15339],
        [-15339],
        [15339, -(2**30)],
        [IntSubclass(15339), 1917],
        [15339] * 70_000 + [2**32 + 15339],
    ],
    ids=repr,
)
def test_decode_bytes_results_and_errors_match_tiktoken(tokens: list) -> None:
    # decode_bytes reads plain-int lists straight from the list (and decodes short ones with
    # the GIL held); anything unusual must still give tiktoken's bytes or tiktoken's error type.
    ours, theirs = pair("cl100k_base")
    assert _decode_outcome(ours, tokens) == _decode_outcome(theirs, tokens)


def _long_ids(recipe: str) -> list:
    """Lists of 65,536 ids or more, which `decode_bytes` reads and decodes in pieces on
    several threads, with what must make it give up on that and fail as tiktoken does,
    placed in the first, a middle or the last piece."""
    ours, theirs = pair("cl100k_base")
    text = "hello world, 你好世界 — ünïcödé 🎉 \n"
    ids = theirs.encode(text * 8_000)  # ints made by tiktoken, each its own object
    assert len(ids) > 2 * 65_536
    mid = len(ids) // 2
    return {
        "tiktoken's ints": ids,
        "ferrotok's ints": ours.encode(text * 8_000),
        "both, interleaved": [t for two in zip(ids, ours.encode(text * 8_000)) for t in two],
        "special ids": ids[:mid] + [100257, 100276] + ids[mid:],
        "unknown id first": [10**6] + ids,
        "unknown id in the middle": ids[:mid] + [100256] + ids[mid:],
        "unknown id last": ids + [10**6],
        "unknown id first, str last": [10**6] + ids + ["a"],
        "unknown id first, negative last": [10**6] + ids + [-1],
        "two-digit int in the middle": ids[:mid] + [2**30 + 15339] + ids[mid:],
        "id past u32 in the middle": ids[:mid] + [2**32 + 15339] + ids[mid:],
        "bool in the middle": ids[:mid] + [True] + ids[mid:],
        "subclass last": ids + [IntSubclass(15339)],
        "exactly 65,536": ids[:65_536],
    }[recipe]


LONG_ID_RECIPES = (
    "tiktoken's ints", "ferrotok's ints", "both, interleaved", "special ids", "unknown id first",
    "unknown id in the middle", "unknown id last", "unknown id first, str last",
    "unknown id first, negative last", "two-digit int in the middle", "id past u32 in the middle",
    "bool in the middle", "subclass last", "exactly 65,536",
)


@pytest.mark.parametrize("recipe", LONG_ID_RECIPES)
def test_decode_bytes_of_long_lists_matches_tiktoken(recipe: str) -> None:
    # A long list is read and decoded in pieces by this thread and helpers; whatever the list
    # holds, the bytes or the type of error must be tiktoken's (which reads every item before
    # it looks any up: a bad item anywhere wins over an unknown id before it).
    ours, theirs = pair("cl100k_base")
    tokens = _long_ids(recipe)
    got = _decode_outcome(ours, tokens)
    assert got == _decode_outcome(theirs, tokens)
    if recipe in ("tiktoken's ints", "ferrotok's ints"):
        assert got == ("hello world, 你好世界 — ünïcödé 🎉 \n" * 8_000).encode()


@pytest.mark.parametrize("where", ["first", "middle", "last", "none"])
def test_decode_bytes_of_long_arrays_matches_tiktoken(where: str) -> None:
    # Long arrays are decoded in pieces on several threads, once read from their buffer.
    import numpy as np

    ours, theirs = pair("o200k_base")
    text = "The quick brown fox — 速い茶色の狐 — jumps. "
    ids = theirs.encode(text * 10_000)
    at = {"first": 0, "middle": len(ids) // 2, "last": len(ids), "none": None}[where]
    if at is not None:
        ids.insert(at, 10**7)
    array = np.array(ids, dtype=np.uint32)
    got = _decode_outcome(ours, array)
    assert got == _decode_outcome(theirs, ids)
    if at is None:
        assert got == (text * 10_000).encode()


def _id_arrays() -> dict[str, Any]:
    """Arrays of ids (and of things that are not ids) that decoding reads from their buffer,
    and look-alikes that it must leave to the general path."""
    import array

    import numpy as np

    ids = ferrotok.get_encoding("cl100k_base").encode("hello world, 你好世界 — ünïcödé")
    a = np.array(ids, dtype=np.uint32)
    unaligned = np.frombuffer(b"\0" + a.tobytes(), dtype=np.uint32, offset=1)
    assert not unaligned.flags.aligned

    class Sub(np.ndarray):
        pass

    arrays: dict[str, Any] = {
        f"numpy {t}": a.astype(t) for t in ("u1", "u2", "u4", "u8", "i1", "i2", "i4", "i8")
    }
    arrays.update({
        "numpy big-endian": a.astype(">u4"),
        "numpy little-endian i8": a.astype("<i8"),
        "numpy strided": np.repeat(a, 2)[::2],
        "numpy reversed": a[::-1],
        "numpy unaligned": unaligned,
        "numpy empty": np.array([], dtype=np.uint32),
        "numpy 2-D": a.reshape(1, -1),
        "numpy 0-D": np.array(15339),
        "numpy float": a.astype(float),
        "numpy bool": np.array([True, False]),
        "numpy negative": np.array([15339, -1]),
        "numpy past u32": np.array([15339, 2**32], dtype=np.uint64),
        "numpy unknown id": np.array([15339, 10**6], dtype=np.uint32),
        "numpy masked": np.ma.array(a, mask=[i == 1 for i in range(len(a))]),
        "numpy subclass": a.view(Sub),
        "array I": array.array("I", ids),
        "array q": array.array("q", ids),
        "array negative": array.array("i", [15339, -5]),
        "array double": array.array("d", [15339.0]),
        "memoryview": memoryview(array.array("I", ids)),
        "memoryview 2-D": memoryview(a.tobytes()).cast("I", [1, len(a)]),
        "memoryview of bytes": memoryview(b"hi"),
        "bytes": b"hello",
    })
    return arrays


# The arrays above that hold every id unchanged (narrower types wrap them).
WHOLE_ID_ARRAYS = (
    "numpy u4", "numpy u8", "numpy i4", "numpy i8", "numpy big-endian", "numpy little-endian i8",
    "numpy strided", "numpy unaligned", "array I", "array q", "memoryview",
)


@pytest.mark.parametrize("kind", list(_id_arrays()))
def test_decode_of_arrays_matches_tiktoken(kind: str) -> None:
    # A one-dimensional integer array is read from its buffer; everything else takes the
    # general path. Either way the bytes, or the type of error, must be tiktoken's.
    ours, theirs = pair("cl100k_base")
    tokens = _id_arrays()[kind]
    got = _decode_outcome(ours, tokens)
    assert got == _decode_outcome(theirs, tokens)
    if kind in WHOLE_ID_ARRAYS:
        assert got == "hello world, 你好世界 — ünïcödé".encode()
    batch = [tokens, [15339]]
    assert _outcome(ours.decode_bytes_batch, batch) == _outcome(theirs.decode_bytes_batch, batch)


def test_decode_of_the_flat_batch_slices() -> None:
    # What a pipeline does with `encode_ordinary_batch_to_numpy`: decode each text's slice.
    ours, _ = pair("o200k_base")
    texts = ["hello world", "", "你好世界 🎉", "a" * 5000]
    ids, offsets = ours.encode_ordinary_batch_to_numpy(texts)
    got = [ours.decode(ids[offsets[i]:offsets[i + 1]]) for i in range(len(texts))]
    assert got == texts
