"""`ferrotok.model`: tiktoken 0.14's model tables and lookup, name by name."""

from __future__ import annotations

import ferrotok
import pytest
import tiktoken
import tiktoken.model
from ferrotok import model
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import pair

ALL_NAMES = sorted(tiktoken.model.MODEL_TO_ENCODING)
ALL_PREFIXES = list(tiktoken.model.MODEL_PREFIX_TO_ENCODING)


def test_tables_equal_tiktokens_in_content_and_order() -> None:
    # Order matters for prefixes: the first match wins.
    assert list(model.MODEL_PREFIX_TO_ENCODING.items()) == list(
        tiktoken.model.MODEL_PREFIX_TO_ENCODING.items()
    )
    assert list(model.MODEL_TO_ENCODING.items()) == list(tiktoken.model.MODEL_TO_ENCODING.items())


def test_every_table_encoding_is_registered() -> None:
    names = set(model.MODEL_TO_ENCODING.values()) | set(model.MODEL_PREFIX_TO_ENCODING.values())
    assert names <= set(ferrotok.list_encoding_names())


@pytest.mark.parametrize("name", ALL_NAMES)
def test_every_model_name(name: str) -> None:
    assert model.encoding_name_for_model(name) == tiktoken.encoding_name_for_model(name)


@pytest.mark.parametrize("prefix", ALL_PREFIXES)
@pytest.mark.parametrize("suffix", ["", "2024-05-13", "x", "-mini", ":org::id"])
def test_every_prefix(prefix: str, suffix: str) -> None:
    name = prefix + suffix
    try:
        expected = tiktoken.encoding_name_for_model(name)
    except KeyError:
        with pytest.raises(KeyError):
            model.encoding_name_for_model(name)
        return
    assert model.encoding_name_for_model(name) == expected


@pytest.mark.parametrize(
    ("name", "encoding"),
    [
        ("gpt-4o-mini", "o200k_base"),  # prefix "gpt-4o-"
        ("gpt-4-turbo", "cl100k_base"),
        ("gpt-4.1-nano", "o200k_base"),
        ("ft:gpt-4o-mini:org::abc", "o200k_base"),  # "ft:gpt-4o" is tried before "ft:gpt-4"
        ("ft:gpt-4-0613:org::abc", "cl100k_base"),
        ("gpt-5", "o200k_base"),  # exact
        ("gpt-5-nano", "o200k_base"),  # prefix "gpt-5" (no dash)
        ("gpt-oss-120b", "o200k_harmony"),
        ("text-davinci-edit-001", "p50k_edit"),
        ("gpt2", "gpt2"),
    ],
)
def test_lookup_order(name: str, encoding: str) -> None:
    assert model.encoding_name_for_model(name) == encoding
    assert tiktoken.encoding_name_for_model(name) == encoding


@pytest.mark.parametrize("name", ["", "llama", "gpt4", "GPT-4", "o2", "davinci-003", " gpt-4"])
def test_unknown_models_raise_the_same_key_error(name: str) -> None:
    with pytest.raises(KeyError) as ours:
        model.encoding_name_for_model(name)
    with pytest.raises(KeyError) as theirs:
        tiktoken.encoding_name_for_model(name)
    # tiktoken's message, naming ferrotok's function instead of tiktoken's (issue 56).
    ferrotoks = str(theirs.value).replace("tiktoken.get_encoding", "ferrotok.get_encoding")
    assert str(ours.value) == ferrotoks
    assert "ferrotok.get_encoding" in str(ours.value)
    assert ours.value.__cause__ is None and ours.value.__suppress_context__
    with pytest.raises(KeyError):
        model.encoding_for_model(name)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from([*ALL_PREFIXES, *ALL_NAMES, "-", "o", "4", ":", "gpt", "ft:", "x"]),
        min_size=1,
        max_size=3,
    ).map("".join)
)
def test_same_answer_as_tiktoken_for_made_up_names(name: str) -> None:
    try:
        expected: object = tiktoken.encoding_name_for_model(name)
    except KeyError as e:
        expected = ("KeyError", str(e).replace("tiktoken.get_encoding", "ferrotok.get_encoding"))
    try:
        got: object = model.encoding_name_for_model(name)
    except KeyError as e:
        got = ("KeyError", str(e))
    assert got == expected


@pytest.mark.parametrize("name", ["gpt-4", "gpt-4o-2024-08-06"])
def test_encoding_for_model(name: str) -> None:
    enc = ferrotok.encoding_for_model(name)
    encoding_name = tiktoken.encoding_name_for_model(name)
    assert enc is ferrotok.get_encoding(encoding_name)  # the shared, registered encoding
    ours, theirs = pair(encoding_name)
    text = "Hello, world! 1234 ünïcödé 😀"
    assert enc.encode(text) == tiktoken.encoding_for_model(name).encode(text) == theirs.encode(text)


def test_package_exports() -> None:
    assert ferrotok.encoding_for_model is model.encoding_for_model
    assert ferrotok.encoding_name_for_model is model.encoding_name_for_model
    assert {"encoding_for_model", "encoding_name_for_model"} <= set(ferrotok.__all__)
