"""The inputs tiktoken's own tests single out as hard: long runs of one character, trailing
whitespace, CRLF mixes, surrogates, special tokens at the edges, and 1 MB single pieces."""

from __future__ import annotations

import subprocess
import sys
from typing import Any, Callable

import pytest
import tiktoken
from oracle import ENCODING_NAMES, pair

RUN_CHARS = ["0", "a", " ", "\n", "'s", "^"]




def reference(theirs: tiktoken.Encoding, text: str) -> list[int]:
    """tiktoken's ids; where tiktoken's regex engine gives up (o200k on a million spaces:
    "Max stack size exceeded for backtracking"), tiktoken's BPE on the pieces that the
    `regex` module cuts with the same pattern."""
    try:
        return theirs.encode(text, disallowed_special=())
    except ValueError as e:
        assert "regex" in str(e).lower()
        return theirs._encode_only_native_bpe(text)


def assert_same(name: str, text: str) -> None:
    ours, theirs = pair(name)
    expected = reference(theirs, text)
    assert ours.encode(text, disallowed_special=()) == expected, repr(text[:40])
    assert ours.decode(expected) == text


@pytest.mark.parametrize("n", [10_000, 1_000_000])
@pytest.mark.parametrize("char", RUN_CHARS)
@pytest.mark.parametrize("name", ["r50k_base", "cl100k_base", "o200k_base"])
def test_long_runs_of_one_character(name: str, char: str, n: int) -> None:
    run = char * (n // len(char))
    for text in (run, " " + run, run + "\n", " " + run + "\n"):
        assert_same(name, text)


@pytest.mark.parametrize("name", ENCODING_NAMES)
def test_short_runs_and_mixes_on_every_encoding(name: str) -> None:
    for char in RUN_CHARS:
        for n in (1, 2, 3, 7, 64, 129, 1000):
            assert_same(name, char * n)
            assert_same(name, " " + char * n + "\n")
    for text in [
        "hello \r\n world\r\n\r\n",
        "a\r\n\r\n\n\r b",
        "\r\r\n\n\r",
        "line  \n  \n\t\n",
        "ends in spaces   ",
        "ends in tab\t",
        "ends in nbsp\u00a0",
        "   ",
        "\n",
        "",
        "x\u3000\u3000y",
        "I'M HERE, you'RE there, they'Ll go, it's, its'",
        "12345678901 1.5e10 3,14",
    ]:
        assert_same(name, text)


def outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    """What a call gives: its result, or its exception's type and message."""
    try:
        return ("ok", call())
    except Exception as e:  # noqa: BLE001 - the exception is the result compared
        return (type(e).__name__, str(e))


@pytest.mark.parametrize("name", ENCODING_NAMES)
def test_surrogates_are_treated_as_tiktoken_treats_them(name: str) -> None:
    # `encode` and the batches replace lone surrogates; `encode_to_numpy`,
    # `encode_with_unstable` and the single-piece methods raise `UnicodeEncodeError`.
    ours, theirs = pair(name)
    calls: dict[str, Callable[[Any, str], Any]] = {
        "encode": lambda e, t: e.encode(t),
        "encode_ordinary": lambda e, t: e.encode_ordinary(t),
        "encode_batch": lambda e, t: e.encode_batch([t]),
        "encode_ordinary_batch": lambda e, t: e.encode_ordinary_batch([t]),
        "encode_to_numpy": lambda e, t: e.encode_to_numpy(t).tolist(),
        "encode_with_unstable": lambda e, t: sorted(map(tuple, e.encode_with_unstable(t)[1])),
        "encode_single_token": lambda e, t: e.encode_single_token(t),
        "_encode_single_piece": lambda e, t: e._encode_single_piece(t),
    }
    for text in ["\ud83d", "a\ud83db", "\udc00\ud83d", "\ud83d\ude00", "x\ud800\udfffy"]:
        for method, call in calls.items():
            got = outcome(lambda: call(ours, text))  # noqa: B023 - called at once
            assert got == outcome(lambda: call(theirs, text)), (method, text)  # noqa: B023


@pytest.mark.parametrize("name", ENCODING_NAMES)
def test_every_special_token_at_start_and_end(name: str) -> None:
    ours, theirs = pair(name)
    for token in ours.special_tokens_set:
        for text in (token + "hello", "hello" + token, token, token + " " + token, " " + token):
            got = ours.encode(text, allowed_special="all")
            assert got == theirs.encode(text, allowed_special="all")
            # o200k_harmony gives one id to two texts; both decode it to the first.
            assert ours.decode(got) == theirs.decode(got)


def test_one_megabyte_pieces_finish() -> None:
    """A 1 MB single piece must not hang (guarded by a generous subprocess timeout; the
    speed itself is measured in benches/, never asserted here)."""
    code = (
        "import ferrotok, base64, random\n"
        "enc = ferrotok.get_encoding('o200k_base')\n"
        "r = random.Random(1)\n"
        "b64 = base64.b64encode(bytes(r.getrandbits(8) for _ in range(786432))).decode()\n"
        "for t in ['a' * 1_000_000, b64, '\u7684' * 333_333, ' ' * 1_000_000]:\n"
        "    assert enc.decode(enc.encode_ordinary(t)) == t\n"
        "print('ok')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
