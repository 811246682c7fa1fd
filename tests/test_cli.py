"""The `ferrotok` command line: in-process through `main([...])`, and once as a real process.

Ids are checked against both `ferrotok.get_encoding(...).encode` and tiktoken; user mistakes
must give exit status 2 and one message on stderr, never a traceback."""

from __future__ import annotations

import argparse
import array
import io
import json
import os
import re
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import ferrotok
import numpy as np
import pytest
from ferrotok import cli, load, registry
from oracle import ENCODINGS_DIR, SHARED, corpus_file, pair

TEXT = "Hello, wörld! 你好 😀\n\tindented  code()\n"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def set_stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


def assert_user_error(status: int, err: str, *fragments: str) -> None:
    assert status == 2, err
    assert err.startswith("ferrotok: error: ") or err.startswith("usage: "), err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err, err


@pytest.fixture
def text_file(tmp_path: Path) -> Path:
    path = tmp_path / "text.txt"
    path.write_bytes(TEXT.encode())
    return path


# ====================
# encode
# ====================


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base", "gpt2"])
def test_encode_argument(capsys: pytest.CaptureFixture[str], encoding: str) -> None:
    ours, theirs = pair(encoding)
    status, out, err = run(capsys, "encode", "--encoding", encoding, TEXT)
    assert (status, err) == (0, "")
    ids = [int(i) for i in out.split()]
    assert ids == ours.encode(TEXT) == theirs.encode(TEXT)
    assert out.endswith("\n") and len(out.splitlines()) == 1


def test_encode_default_encoding_is_cl100k(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "encode", "hello world") == (0, "15339 1917\n", "")


def test_encode_file_json(capsys: pytest.CaptureFixture[str], text_file: Path) -> None:
    status, out, _ = run(capsys, "encode", "--file", str(text_file), "--format", "json")
    assert status == 0
    assert json.loads(out) == pair("cl100k_base")[1].encode(TEXT)


def test_encode_stdin_keeps_bytes_exactly(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = "line one\r\nline two\n\n"  # no newline translation, trailing newlines kept
    set_stdin(monkeypatch, text.encode())
    status, out, _ = run(capsys, "encode", "-m", "gpt-4o")
    assert status == 0
    assert [int(i) for i in out.split()] == pair("o200k_base")[1].encode(text)


def test_encode_npy_to_file_and_stdout(
    capsysbinary: pytest.CaptureFixture[bytes], tmp_path: Path
) -> None:
    expected = ferrotok.get_encoding("cl100k_base").encode(TEXT)
    path = tmp_path / "ids.npy"
    assert cli.main(["encode", "--format", "npy", "-o", str(path), TEXT]) == 0
    array = np.load(path)
    assert array.dtype == np.uint32 and array.tolist() == expected
    capsysbinary.readouterr()
    assert cli.main(["encode", "--format", "npy", TEXT]) == 0
    out = capsysbinary.readouterr().out
    assert out == path.read_bytes()
    assert np.load(io.BytesIO(out)).tolist() == expected


def test_encode_empty_npy(tmp_path: Path) -> None:
    path = tmp_path / "ids.npy"
    assert cli.main(["encode", "--format", "npy", "-o", str(path), ""]) == 0
    array = np.load(path)
    assert array.dtype == np.uint32 and array.shape == (0,)


@pytest.mark.parametrize("source", ["TEXT", "--file"])
def test_encode_special_tokens(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, source: str
) -> None:
    text = "a<|endoftext|>b<|fim_prefix|>"
    path = tmp_path / "special.txt"
    path.write_text(text, encoding="utf-8")
    given = [text] if source == "TEXT" else ["-f", str(path)]
    status, out, err = run(capsys, "encode", *given)
    assert_user_error(status, err, "'<|endoftext|>'", "--allow-special")
    assert out == ""
    status, out, _ = run(capsys, "encode", "--allow-special", *given)
    assert status == 0
    ids = [int(i) for i in out.split()]
    assert ids == pair("cl100k_base")[1].encode(text, allowed_special="all")
    assert 100257 in ids and 100258 in ids


# ====================
# decode
# ====================


def test_decode_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    ids = ferrotok.get_encoding("cl100k_base").encode(TEXT)
    status, out, err = run(capsys, "decode", *map(str, ids))
    assert (status, out, err) == (0, TEXT, "")


def test_decode_stdin_whitespace_and_json(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ours, theirs = pair("o200k_base")
    ids = theirs.encode(TEXT)
    set_stdin(monkeypatch, ("\n".join(map(str, ids)) + "\n").encode())
    assert run(capsys, "decode", "-e", "o200k_base") == (0, TEXT, "")
    set_stdin(monkeypatch, json.dumps(ids).encode())
    assert run(capsys, "decode", "-e", "o200k_base") == (0, TEXT, "")


def test_decode_file_formats(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    ids = ferrotok.get_encoding("cl100k_base").encode(TEXT)
    (tmp_path / "ids.txt").write_text(", ".join(map(str, ids)))
    assert run(capsys, "decode", "-f", str(tmp_path / "ids.txt")) == (0, TEXT, "")
    # A byte-order mark before the ids (as some Windows editors save UTF-8) is skipped.
    (tmp_path / "bom.txt").write_bytes(b"\xef\xbb\xbf" + " ".join(map(str, ids)).encode())
    assert run(capsys, "decode", "-f", str(tmp_path / "bom.txt")) == (0, TEXT, "")
    np.save(tmp_path / "ids.npy", np.array(ids, dtype=np.uint32))
    assert run(capsys, "decode", "-f", str(tmp_path / "ids.npy")) == (0, TEXT, "")
    np.save(tmp_path / "big.npy", np.array(ids, dtype=">i8"))  # other widths and byte order
    assert run(capsys, "decode", "-f", str(tmp_path / "big.npy")) == (0, TEXT, "")


def test_decode_bad_npy(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    np.save(tmp_path / "floats.npy", np.array([1.5, 2.0]))
    status, _, err = run(capsys, "decode", "-f", str(tmp_path / "floats.npy"))
    assert_user_error(status, err, "floats.npy: not a 1-D integer .npy array", "'<f8'")
    np.save(tmp_path / "neg.npy", np.array([5, -1], dtype=np.int32))
    status, _, err = run(capsys, "decode", "-f", str(tmp_path / "neg.npy"))
    assert_user_error(status, err, "neg.npy: -1 is not a token id")
    good = (tmp_path / "floats.npy").read_bytes()
    (tmp_path / "cut.npy").write_bytes(good[:-3])
    status, _, err = run(capsys, "decode", "-f", str(tmp_path / "cut.npy"))
    assert_user_error(status, err, "cut.npy: not a 1-D integer .npy array")


@pytest.mark.parametrize(
    ("values", "dtype", "fragment"),
    [
        ([5, 6, -1], np.int32, "bad.npy: -1 is not a token id"),
        ([5, 2**40], np.int64, "token id 1099511627776 is out of range for cl100k_base"),
        ([5, 10**6], np.uint32, "token id 1000000 is out of range for cl100k_base"),
        ([5, 100261], np.uint32, "token id 100261 is not in cl100k_base's vocabulary"),
        ([5, 2**64 - 1], np.uint64, "token id 18446744073709551615 is out of range"),
    ],
)
def test_decode_bad_npy_ids(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    values: list[int],
    dtype: type,
    fragment: str,
) -> None:
    np.save(tmp_path / "bad.npy", np.array(values, dtype=dtype))
    status, out, err = run(capsys, "decode", "-f", str(tmp_path / "bad.npy"))
    assert_user_error(status, err, fragment)
    assert out == ""


def test_decode_text_of_ids_in_blocks(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli.decode, "_ID_TEXT_BLOCK", 10)
    text = corpus_file("english.txt").read_text(encoding="utf-8")[:5000]
    ids = pair("cl100k_base")[1].encode(text)
    separators = [" ", "\n", ", ", ",", "\t", "  "]
    listed = "".join(f"{i}{separators[n % len(separators)]}" for n, i in enumerate(ids))
    path = tmp_path / "ids.txt"
    path.write_text(listed)
    assert run(capsys, "decode", "-f", str(path)) == (0, text, "")
    blocks = [block for block, _ in cli.decode._id_text_blocks(listed, 0, len(listed))]
    assert "".join(blocks) == listed and len(blocks) > len(listed) // 20  # parsed in parts
    # A JSON list is the same ids between brackets, parsed in parts too.
    path.write_text(" " + json.dumps(ids) + "\n")
    parse = cli.decode._parse_ids
    monkeypatch.setattr(cli.decode, "_parse_ids", lambda *a, **k: pytest.fail("not in parts"))
    assert run(capsys, "decode", "-f", str(path)) == (0, text, "")
    monkeypatch.setattr(cli.decode, "_parse_ids", parse)
    # Separators the quick path leaves to the checked one (Unicode spaces), in some blocks.
    path.write_text(listed.replace("\t", "\u2028", 50))
    assert run(capsys, "decode", "-f", str(path)) == (0, text, "")
    # A bad id in a later block is still named.
    too_far = str(pair("cl100k_base")[1].max_token_value + 1)  # fits in 4 bytes
    for bad, fragment in [
        ("99999999999", "out of range"),
        (too_far, f"token id {too_far} is out of range"),
        ("x1", "'x1' is not a token id"),
    ]:
        path.write_text(listed + bad + " 5")
        status, out, err = run(capsys, "decode", "-f", str(path))
        assert_user_error(status, err, fragment)
        assert out == ""


def test_ids_written_as_python_joins_them() -> None:
    """`format_ids` (Rust) gives `sep.join(map(str, ids))`, from a list or a 4-byte array."""
    from array import array

    from ferrotok._core import format_ids
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=300, deadline=None, derandomize=True)
    @given(
        st.lists(st.integers(0, 2**32 - 1) | st.integers(0, 300)),
        st.sampled_from([" ", ", ", "\n", ""]),
    )
    def check(ids: list[int], sep: str) -> None:
        expected = sep.join(map(str, ids)).encode()
        assert format_ids(ids, sep) == expected
        assert format_ids(array("I", ids), sep) == expected

    check()
    with pytest.raises(OverflowError):
        format_ids([1, 2**32], " ")


def test_text_of_ids_quick_path_reads_only_plain_text_in_range() -> None:
    """The Rust reader takes ASCII digits and separators with every id at most `max_id`, and
    leaves everything else (None) to `_parse_ids`."""
    from array import array

    from ferrotok._core import parse_id_text

    def read(text: str, max_id: int) -> list[int] | None:
        packed = parse_id_text(text, max_id)
        return None if packed is None else array("I", packed).tolist()

    assert read("15339 1917,\n0\r\n\t7\x0b8\x0c9, 007", 100276) == [15339, 1917, 0, 7, 8, 9, 7]
    assert read("", 5) == [] and read(" ,\n", 5) == []
    assert read("4294967295", 2**32 - 1) == [2**32 - 1]
    assert read("5 10", 10) == [5, 10]
    for text in ["5 11", "4294967296", "1\u20282", "1\xa02", "1\x1c2", "[1]", "-1", "1.0", "x"]:
        assert read(text, 10) is None, text


def test_text_of_ids_parses_as_the_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """Parsed in blocks, on the quick path (ASCII digits and separators) or the checked one,
    from a `str` or ASCII `bytes`, text of ids gives what `_parse_ids` gives for the whole
    text."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    enc = ferrotok.get_encoding("cl100k_base")
    separators = st.sampled_from(
        [" ", ",", ", ", "\n", "\r\n", "\t", "\x0b", "\x0c", "\x1c", "\u2028", "\xa0"]
    )
    ids = st.integers(0, enc.max_token_value).map(str) | st.sampled_from(["007", "0"])

    runs = st.lists(separators, min_size=1, max_size=3)

    @settings(max_examples=300, deadline=None, derandomize=True)
    @given(st.lists(st.tuples(ids, runs)), st.integers(1, 9))
    def check(items: list[tuple[str, list[str]]], block: int) -> None:
        text = "".join(i + "".join(seps) for i, seps in items)
        monkeypatch.setattr(cli.decode, "_ID_TEXT_BLOCK", block)
        expected = cli.decode._parse_ids([text], "<test>")
        assert list(cli.decode._text_ids(text, "<test>", enc)) == expected
        if text.isascii():  # a file of ASCII is parsed from its bytes
            assert list(cli.decode._text_ids(text.encode(), "<test>", enc)) == expected
            blocks = cli.decode._id_text_blocks(text.encode(), 0, len(text))
            assert "".join(block for block, _ in blocks) == text

    check()


def test_a_json_list_of_ids_is_read_as_json_loads_reads_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A JSON list is read in blocks cut after commas; whatever the cuts, it gives the ids
    `json.loads` gives, and an error exactly where `json.loads` fails (or finds a non-id)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    enc = ferrotok.get_encoding("cl100k_base")
    ids = st.integers(0, enc.max_token_value).map(str) | st.sampled_from(["007", "0", "-1"])
    spaces = st.sampled_from(["", " ", "\n", "\r\n", "\t", "  ", "\x0b"])
    commas = st.sampled_from([",", ",", ",", ",", "", ",,"])  # mostly right

    @settings(max_examples=400, deadline=None, derandomize=True)
    @given(
        st.lists(st.tuples(spaces, ids, spaces, commas), max_size=12),
        st.sampled_from(["", ",", " "]),
        st.integers(1, 9),
    )
    def check(items: list[tuple[str, str, str, str]], end: str, block: int) -> None:
        last = len(items) - 1
        body = "".join(a + i + b + (c if n < last else "") for n, (a, i, b, c) in enumerate(items))
        text = "[" + body + end + "]"
        monkeypatch.setattr(cli.decode, "_ID_TEXT_BLOCK", block)
        try:
            expected = json.loads(text)
        except ValueError:
            expected = None
        if expected is not None and any(not 0 <= i <= enc.max_token_value for i in expected):
            expected = None  # JSON, but not ids of this encoding
        for data in (text, text.encode()):
            if expected is None:
                with pytest.raises(cli.CLIError):
                    cli.decode._text_ids(data, "<test>", enc)
            else:
                assert list(cli.decode._text_ids(data, "<test>", enc)) == expected, text

    check()


def test_text_of_ids_as_bytes_finds_json_as_str_does() -> None:
    """A JSON list after leading spaces is found in ASCII bytes as in a `str`, and text that
    is neither JSON nor ids fails the same way from both."""
    enc = ferrotok.get_encoding("cl100k_base")
    for text in ["[1, 2]", " \n\t[3,4]", "\x1c\x1d [5]", "7 8", "  \x0b9"]:
        expected = list(cli.decode._text_ids(text, "<t>", enc))
        assert list(cli.decode._text_ids(text.encode(), "<t>", enc)) == expected
    for bad in ["\x1c[1", "[1, 2", "1 [2]", "{1}"]:
        with pytest.raises(cli.CLIError) as from_str:
            cli.decode._text_ids(bad, "<t>", enc)
        with pytest.raises(cli.CLIError) as from_bytes:
            cli.decode._text_ids(bad.encode(), "<t>", enc)
        assert str(from_bytes.value) == str(from_str.value)


def test_encode_decode_round_trip_through_files(
    capsysbinary: pytest.CaptureFixture[bytes], tmp_path: Path, text_file: Path
) -> None:
    for fmt in ["list", "json", "npy"]:
        out = tmp_path / f"ids.{fmt}"
        assert cli.main(["encode", "-f", str(text_file), "--format", fmt, "-o", str(out)]) == 0
        capsysbinary.readouterr()
        assert cli.main(["decode", "-f", str(out)]) == 0
        assert capsysbinary.readouterr().out == text_file.read_bytes()


def test_decode_writes_exact_bytes(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    enc = ferrotok.get_encoding("cl100k_base")
    first = enc.encode("😀")[:1]  # part of a character: not valid UTF-8 on its own
    assert cli.main(["decode", *map(str, first)]) == 0
    assert capsysbinary.readouterr().out == enc.decode_bytes(first)


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["abc"], "'abc' is not a token id"),
        (["1", "-5"], "'-5' is not a token id"),
        (["1.5"], "'1.5' is not a token id"),
        (["100261"], "token id 100261 is not in cl100k_base's vocabulary"),
        (["99999999999"], "token id 99999999999 is out of range for cl100k_base"),
    ],
)
def test_decode_bad_ids(capsys: pytest.CaptureFixture[str], args: list[str], fragment: str) -> None:
    status, out, err = run(capsys, "decode", *args)
    assert_user_error(status, err, fragment)
    assert out == ""


def test_decode_bad_json(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for data, fragment in [
        (b"[1, 2", "not a JSON list"),
        (b'[1, "x"]', """'"x"' is not a token id"""),
        (b"[1, true]", "'true' is not a token id"),
        (b"[[1, 2]]", "'[1' is not a token id"),
        (b"[1, 2.0]", "'2.0' is not a token id"),
        # Ids, but not as JSON writes them: refused as json.loads would refuse them.
        (b"[15339,,1917]", "not a JSON list of ids"),
        (b"[15339 1917]", "not a JSON list of ids"),
        (b"[,15339]", "not a JSON list of ids"),
        (b"[15339,]", "not a JSON list of ids"),
        (b"[007]", "not a JSON list of ids"),
    ]:
        set_stdin(monkeypatch, data)
        status, _, err = run(capsys, "decode")
        assert_user_error(status, err, "<stdin>", fragment)


# ====================
# count
# ====================


def test_count_like_wc(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    theirs = pair("cl100k_base")[1]
    texts = {"a.txt": TEXT * 20, "b.txt": "short", "c.txt": ""}
    for name, text in texts.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    paths = [str(tmp_path / name) for name in texts]
    status, out, err = run(capsys, "count", *paths)
    assert (status, err) == (0, "")
    counts = [len(theirs.encode(t)) for t in texts.values()]
    rows = [line.split(maxsplit=1) for line in out.splitlines()]
    assert rows == [[str(n), p] for n, p in zip(counts, paths)] + [[str(sum(counts)), "total"]]
    widths = {len(line) - len(line.lstrip()) + len(line.split()[0]) for line in out.splitlines()}
    assert len(widths) == 1  # right-aligned counts, as wc does
    # One file: no total line.
    assert run(capsys, "count", paths[1]) == (0, f"{counts[1]} {paths[1]}\n", "")


def test_count_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    set_stdin(monkeypatch, TEXT.encode())
    expected = len(pair("o200k_base")[1].encode(TEXT))
    assert run(capsys, "count", "--encoding", "o200k_base") == (0, f"{expected}\n", "")


def test_count_reports_bad_files_and_counts_the_rest(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    good = tmp_path / "good.txt"
    good.write_text("hello world")
    missing = tmp_path / "missing.txt"
    status, out, err = run(capsys, "count", str(missing), str(good))
    assert_user_error(status, err, f"{missing}: no such file")
    assert out == f"2 {good}\n2 total\n"


@pytest.mark.parametrize("batch", [1, 700, 1 << 20])
def test_count_of_many_files_in_batches_keeps_each_file_apart(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    batch: int,
) -> None:
    """Parts of several files share batches and threads, and each file still gets its own
    count or its own error, in the order given."""
    monkeypatch.setattr(cli.inputs, "BLOCK", 200)
    monkeypatch.setattr(cli.count, "_COUNT_BATCH", batch)
    monkeypatch.setattr(cli.threads, "part_threads", lambda: 2)
    theirs = pair("cl100k_base")[1]
    long = "First line\nsecond line, é\n" * 60
    files: dict[str, bytes | None] = {
        "a.txt": long.encode(),
        "small.txt": b"hello world",
        "missing.txt": None,
        "bad.txt": long.encode()[:900] + b"\xff" + long.encode()[900:],
        "special.txt": (long + "<|endoftext|>").encode(),
        "empty.txt": b"",
        "b.txt": (long * 2).encode(),
    }
    for name, data in files.items():
        if data is not None:
            (tmp_path / name).write_bytes(data)
    paths = [str(tmp_path / name) for name in files]
    status, out, err = run(capsys, "count", *paths)
    good = [(n, d) for n, d in files.items() if n in ("a.txt", "small.txt", "empty.txt", "b.txt")]
    counts = [len(theirs.encode(d.decode())) for _, d in good if d is not None]
    rows = [line.split() for line in out.splitlines()]
    expected = [[str(c), str(tmp_path / n)] for c, (n, _) in zip(counts, good)]
    assert rows == expected + [[str(sum(counts)), "total"]]
    assert status == 2
    # "ferrotok: error: PATH: what is wrong", one line a bad file, in the order given.
    errors = [line.split(": ", 3) for line in err.splitlines()]
    bad = ["missing.txt", "bad.txt", "special.txt"]
    assert [(e[0], e[1], e[2]) for e in errors] == [
        ("ferrotok", "error", str(tmp_path / n)) for n in bad
    ]
    assert errors[0][3] == "no such file"
    assert errors[1][3] == "not UTF-8 text (byte 0xff at offset 900)"
    assert errors[2][3].startswith("the text contains the special token '<|endoftext|>'")


def test_count_special_tokens(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "doc.txt"
    path.write_text("one<|endoftext|>two")
    status, _, err = run(capsys, "count", str(path))
    assert_user_error(status, err, "'<|endoftext|>'", "--allow-special")
    assert run(capsys, "count", "--allow-special", str(path)) == (0, f"3 {path}\n", "")


# The fragments a block cut could get wrong: newlines alone and in "\r\n", whitespace
# before and after them (NEL, U+2028, \x1c, which Python and the patterns class differently),
# letters, digits, contractions, punctuation with the "/" o200k takes after newlines, CJK,
# combining marks and emoji (a block may end inside their UTF-8 bytes).
CUT_FRAGMENTS = [
    "\n", "\n", "\n\n", "\r\n", " ", "  ", "\t", "\x85", "\u2028", "\x1c", "\u3000",
    "a", "Hello", "x", "7", "123456", "'s", "'LL", ".", "!", "/", "//", ",", "(", "é", "中文",
    "\u0301", "😀", "٣", "_", "<|endoftext|>", "{", "}", "[", '"', ":", "<", "#", "-",
]  # fmt: skip


def _parts(enc: ferrotok.Encoding, data: bytes, block: int) -> list[str]:
    """The parts `data` is read in, each decoded on its own (a cut never splits a char),
    checked to start where the one before ended."""
    old = cli.inputs.BLOCK
    cli.inputs.BLOCK = block
    try:
        parts = list(cli.inputs.file_parts(enc, io.BytesIO(data), len(data), "reading"))
    finally:
        cli.inputs.BLOCK = old
    starts = [offset for offset, _ in parts]
    assert starts == [sum(len(part) for _, part in parts[:i]) for i in range(len(parts))]
    return [part.decode("utf-8") for _, part in parts]


def parts_ids(enc: ferrotok.Encoding, parts: list[str]) -> list[int]:
    """The ids of `parts`, special tokens allowed, each part encoded as the command line
    encodes it: a part after the first continues the text (a SentencePiece pipeline puts its
    `▁` in front of the first alone)."""
    ids = array.array("I")
    for i, part in enumerate(parts):
        ids.frombytes(enc._core_bpe.encode_utf8_to_bytes(part.encode(), True, i > 0))
    return ids.tolist()


def assert_parts_encode_as_whole(enc: ferrotok.Encoding, text: str, block: int) -> None:
    parts = _parts(enc, text.encode(), block)
    assert "".join(parts) == text
    assert parts_ids(enc, parts) == enc.encode(text, allowed_special="all")
    counts = sum(
        enc._core_bpe.count_utf8(part.encode(), True, i > 0) for i, part in enumerate(parts)
    )
    assert counts == enc.count(text, allowed_special="all")


def test_a_cut_is_found_in_bytes_as_in_text() -> None:
    """`_last_cut` reads the chars either side of a "\\n" from the UTF-8 bytes: any char but
    a space or "/" after it, any char but a space before it, and none that is cut short."""
    cases = {
        "a\n中": 2, "é\nb": 3, "中\n٣x": 4, "x\n\u0301": 2, "\u3000\nb": 0, " \nb": 0,
        "\x1c\nb": 0, "a\n.": 2, "a\n\nb": 0, "😀\nZ": 5, "a\nb\nc": 4, "}\n{": 2,
        "a\n/": 0, ".\n/b": 0, "a\n\x1c": 0, "a\n\u2028": 0, "a\n ": 0,
    }  # fmt: skip
    for text, cut in cases.items():
        assert cli.cuts.last_cut(text.encode()) == cut, text
    assert cli.cuts.last_cut("a\n中".encode()[:-1] + b" ") == 0  # the char after is cut short
    assert cli.cuts.last_cut(b"\xa9\nb") == 0  # nor is a stray byte before it a char


@pytest.mark.parametrize("name", ["r50k_base", "cl100k_base", "o200k_base"])
def test_every_pair_of_fragments_about_a_newline_cuts_as_tiktoken_encodes(name: str) -> None:
    """Each fragment, a "\\n", each fragment (so ".\\n/", " \\na", "\\r\\nb", ...), read a byte
    at a time, so that it is cut wherever the rule allows: the parts' ids joined are
    tiktoken's ids of the whole, for every pair."""
    ours, theirs = pair(name)
    assert_fragment_pairs_cut_as(ours, lambda t: theirs.encode(t, allowed_special="all"))


def assert_fragment_pairs_cut_as(
    enc: ferrotok.Encoding, whole: Callable[[str], list[int]], extra: frozenset[str] = frozenset()
) -> None:
    """Each fragment, a "\\n", each fragment, read a byte at a time and cut wherever the rule
    allows: `enc`'s ids of the parts joined are `whole(text)`, and the rule did cut."""
    fragments = sorted(set(CUT_FRAGMENTS) | {"\r", "x\r", ".", "!?", "/x", "\u00a0"} | extra)
    cuts = 0
    for a in fragments:
        for b in fragments:
            for text in (a + "\n" + b, "q" + a + "\n" + b + "q"):
                parts = _parts(enc, text.encode(), 1)
                cuts += len(parts) - 1
                assert parts_ids(enc, parts) == whole(text), (text, parts)
    assert cuts > len(fragments) ** 2 // 2  # the rule did cut, in many of the pairs


@pytest.mark.parametrize("name", ["r50k_base", "p50k_base", "cl100k_base", "o200k_base"])
def test_reading_in_blocks_encodes_as_the_whole(name: str) -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    enc = ferrotok.get_encoding(name)
    assert cli.cuts.can_cut(enc)

    @settings(max_examples=300, deadline=None, derandomize=True)
    @given(st.lists(st.sampled_from(CUT_FRAGMENTS), max_size=60), st.integers(1, 24))
    def check(parts: list[str], block: int) -> None:
        assert_parts_encode_as_whole(enc, "".join(parts), block)

    check()
    for corpus in ("english", "code", "multilingual"):
        text = corpus_file(f"{corpus}.txt").read_text(encoding="utf-8")[:300_000]
        # The man pages of multilingual.txt indent every line: no cut, read as one part.
        assert len(_parts(enc, text.encode(), 4096)) > (5 if corpus != "multilingual" else 0)
        assert_parts_encode_as_whole(enc, text, 4096)
    # JSON Lines: every line starts with "{", and is a cut all the same.
    lines = corpus_file("english.txt").read_text(encoding="utf-8").split("\n")[:2000]
    jsonl = "".join(json.dumps({"text": line}) + "\n" for line in lines)
    assert len(_parts(enc, jsonl.encode(), 4096)) > 20
    assert_parts_encode_as_whole(enc, jsonl, 4096)


# The shared tokenizer.json models whose pipelines the core admits for the cut rule
# (byte-level BPE on a scanned pattern or a fused scanner, NFC at most; WordPiece behind
# BERT's normalizer and pre-tokenizer; SentencePiece BPE whose newline is in no merge; no
# added token with a newline or lstrip): all of them.
CUT_MODELS = ["bert-bge", "deepseek-llm", "falcon", "gpt-2", "gpt-neox", "llama-bpe",
              "llama-spm", "mistral-v1-spm", "qwen2", "starcoder", "tekken_240911"]
HF_MODELS = sorted(p.name.removesuffix(".tokenizer.json")
                   for p in (SHARED / "tokenizers").glob("*.tokenizer.json"))


def hf_json(model: str, edit: Callable[[dict[str, Any]], None] | None = None) -> str:
    """The shared `tokenizer.json` of `model`, as `edit` changes its config."""
    text = (SHARED / "tokenizers" / f"{model}.tokenizer.json").read_text(encoding="utf-8")
    if edit is not None:
        config = json.loads(text)
        edit(config)
        text = json.dumps(config)
    return text


def hf_encoding(
    model: str, edit: Callable[[dict[str, Any]], None] | None = None
) -> ferrotok.Encoding:
    return ferrotok.Encoding._from_hf_json(hf_json(model, edit), model)


@pytest.mark.parametrize("model", HF_MODELS)
def test_tokenizer_json_pipelines_are_read_in_parts_where_the_rule_holds(model: str) -> None:
    assert cli.cuts.can_cut(hf_encoding(model)) == (model in CUT_MODELS)


@pytest.mark.parametrize("model", CUT_MODELS)
def test_every_pair_of_fragments_about_a_newline_cuts_as_the_pipeline_encodes(model: str) -> None:
    """As for the OpenAI encodings above: each fragment, a "\\n", each fragment, cut
    wherever the rule allows; the parts' ids joined are the whole's, for every pair; and so
    on corpus text read in 4 KB blocks."""
    enc = hf_encoding(model)
    assert_fragment_pairs_cut_as(
        enc, lambda t: enc.encode(t, allowed_special="all"), frozenset({"\uff0f"})
    )
    for corpus in ("english", "code"):
        text = corpus_file(f"{corpus}.txt").read_text(encoding="utf-8")[:200_000]
        assert len(_parts(enc, text.encode(), 4096)) > 5
        assert_parts_encode_as_whole(enc, text, 4096)


@pytest.mark.parametrize("name", ["deepseek-v3", "kimi-k2", "llama4", "tekken-gguf"])
def test_fragment_pairs_cut_as_hf_encodes_in_models_not_shared(name: str) -> None:
    """The same for families of `test_hf_unseen` on a scanner of their own (DeepSeek V3's
    fused scanner; Kimi K2's, Llama 4's and Tekken's with Llama 4's letter classes on
    o200k's), against HF's ids of the whole text, with fragments of their number and
    Han/kana groups and of letters whose case class Llama 4's classes read apart from
    o200k's."""
    from test_hf_unseen import family

    enc, _, hf_tok, _ = family(name)
    assert cli.cuts.can_cut(enc)
    assert_fragment_pairs_cut_as(
        enc,
        lambda t: list(hf_tok.encode(t, add_special_tokens=False).ids),
        frozenset({"\uff0f", "1234", "日本語", "ひらがな", "'s", "\u0661\u0662", "\u00c9",
                   "e\u0301", "'\u017f"}),
    )


def _metaspace(scheme: str, split: bool) -> Callable[[dict[str, Any]], None]:
    """Llama 2's file in the layout transformers' `LlamaConverter` writes without `legacy`:
    no normalizer, `Metaspace` with `scheme` puts the `▁`s in."""

    def edit(config: dict[str, Any]) -> None:
        config["normalizer"] = None
        config["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581",
                                   "prepend_scheme": scheme, "split": split}

    return edit


@pytest.mark.parametrize("layout", ["normalizers", "first", "always", "always-split"])
def test_sentencepiece_parts_after_the_first_continue_the_text_as_hf_encodes_it(
    layout: str,
) -> None:
    """A part after a file's first gets no `▁` in front, in each of SentencePiece BPE's
    layouts (its normalizers, or Metaspace's schemes, splitting or not): each fragment, a
    "\\n", each fragment, cut wherever the rule allows, gives HF's ids of the whole text,
    special tokens among the fragments."""
    import tokenizers

    edit = None if layout == "normalizers" else _metaspace(*{
        "first": ("first", False), "always": ("always", False),
        "always-split": ("always", True)}[layout])
    enc = hf_encoding("llama-spm", edit)
    hf = tokenizers.Tokenizer.from_str(hf_json("llama-spm", edit))
    assert cli.cuts.can_cut(enc)
    assert_fragment_pairs_cut_as(
        enc,
        lambda t: list(hf.encode(t, add_special_tokens=False).ids),
        frozenset({"<s>", "\u2581", "\u2581x", "x\u2581", "日本語"}),
    )


def test_pipelines_the_rule_does_not_hold_for_are_read_whole() -> None:
    """An added token with lstrip takes the newline before it, so a part starting with it
    would encode otherwise; NFKC turns "\uff0f" into the "/" Tekken's punctuation runs take
    after a newline; an added token with a space, matched on BertNormalizer's text, takes
    the space a newline became; a SentencePiece model that merges the newline, or makes it
    the unknown token fused with its neighbours, joins it to the char after it. None of these
    pipelines is cut."""
    def lstrip_token(config: dict[str, Any]) -> None:
        config["added_tokens"].append({"id": 5, "content": "XYZ", "single_word": False,
                                       "lstrip": True, "rstrip": False, "normalized": False,
                                       "special": False})

    def nfkc(config: dict[str, Any]) -> None:
        config["normalizer"] = {"type": "NFKC"}

    def spaced_token(config: dict[str, Any]) -> None:
        # Matched on BertNormalizer's text, where the newline became a space.
        config["added_tokens"].append({"id": 30522, "content": "ab cd", "single_word": False,
                                       "lstrip": False, "rstrip": False, "normalized": True,
                                       "special": False})

    def no_byte_fallback(config: dict[str, Any]) -> None:
        # The newline is then the unknown token, which `fuse_unk` joins to the one after it.
        config["model"]["byte_fallback"] = False

    def newline_merged(config: dict[str, Any]) -> None:
        # A merge of the newline's byte token with the char after it.
        config["model"]["vocab"]["<0x0A>b"] = len(config["model"]["vocab"])
        config["model"]["merges"].append(["<0x0A>", "b"])

    def without_prepend(edit: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
        def edit_and_drop(config: dict[str, Any]) -> None:
            edit(config)
            steps = config["normalizer"]["normalizers"]
            config["normalizer"]["normalizers"] = [n for n in steps if n["type"] != "Prepend"]

        return edit_and_drop

    for model, edit, text in [("llama-bpe", lstrip_token, "a\nXYZ"),
                              ("tekken_240911", nfkc, "a.\n\uff0fb"),
                              ("bert-bge", spaced_token, "ab\ncd"),
                              ("llama-spm", no_byte_fallback, "a\n\U0010ffff"),
                              ("mistral-v1-spm", newline_merged, "a\nb")]:
        enc = hf_encoding(model, edit)
        assert not cli.cuts.can_cut(enc)
        cut = cli.cuts.last_cut(text.encode())
        assert cut > 0
        head, tail = text.encode()[:cut].decode(), text.encode()[cut:].decode()
        # A SentencePiece part after the first would go without the `▁` in front.
        tail_enc = hf_encoding(model, without_prepend(edit)) if model.endswith("-spm") else enc
        assert enc.encode_ordinary(head) + tail_enc.encode_ordinary(tail) != enc.encode_ordinary(
            text
        )
        with pytest.raises(ValueError, match="does not encode a text in parts"):
            enc._core_bpe.encode_utf8_to_bytes(tail.encode(), True, True)


def _parts_read_in_blocks(monkeypatch: pytest.MonkeyPatch, block: int) -> list[int]:
    """Makes the CLI read files in blocks of `block` bytes; the list returned fills with the
    length of each part handed to the core."""
    calls: list[int] = []
    in_core = cli.inputs.in_core
    monkeypatch.setattr(
        cli.inputs,
        "in_core",
        lambda c, e, n, a, part: calls.append(len(part[1])) or in_core(c, e, n, a, part),
    )
    monkeypatch.setattr(cli.inputs, "BLOCK", block)
    return calls


def test_counting_in_blocks_is_cut_and_names_bad_bytes_where_they_are(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    enc = ferrotok.get_encoding("cl100k_base")
    text = "First line\nsecond line, é\n" * 500
    calls = _parts_read_in_blocks(monkeypatch, 1000)
    path = tmp_path / "doc.txt"
    path.write_bytes(text.encode())
    assert run(capsys, "count", str(path)) == (0, f"{enc.count(text)} {path}\n", "")
    assert len(calls) >= 10 and sum(calls) == len(text.encode())  # counted in parts, all of it
    # A bad byte past the first block, and a character cut short at the end of the file.
    bad = text.encode()[:5001] + b"\xff" + text.encode()[5001:]
    path.write_bytes(bad)
    status, _, err = run(capsys, "count", str(path))
    assert_user_error(status, err, "not UTF-8 text (byte 0xff at offset 5001)")
    path.write_bytes(text.encode() + "é".encode()[:1])
    status, _, err = run(capsys, "count", str(path))
    assert_user_error(status, err, f"(byte 0xc3 at offset {len(text.encode())})")
    # A special token in a later block is found and named, or counted when allowed.
    path.write_text(text + "end <|endoftext|>", encoding="utf-8")
    status, _, err = run(capsys, "count", str(path))
    assert_user_error(status, err, "'<|endoftext|>'")
    expected = enc.count(text + "end <|endoftext|>", allowed_special="all")
    assert run(capsys, "count", "--allow-special", str(path)) == (0, f"{expected} {path}\n", "")


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_parts_on_threads_keep_the_order_of_a_loop(
    monkeypatch: pytest.MonkeyPatch, threads: int
) -> None:
    """`_map_parts` gives results in the parts' order however the threads finish, and the
    error a plain loop would meet first: a part's before a later read error."""
    import random
    import time

    monkeypatch.setattr(cli.threads, "part_threads", lambda: threads)
    parts = [str(i) for i in range(40)]
    delays = random.Random(5).choices([0, 0.001, 0.003], k=len(parts))

    def slow_int(part: str) -> int:
        time.sleep(delays[int(part)])
        if part == "bad":
            raise ValueError(part)
        return int(part)

    assert list(cli.threads.map_parts(slow_int, parts)) == list(range(40))
    assert list(cli.threads.map_parts(slow_int, [])) == []

    def then_unreadable(items: list[str]) -> Iterator[str]:
        yield from items
        raise cli.CLIError("unreadable")

    with pytest.raises(cli.CLIError, match="unreadable"):
        list(cli.threads.map_parts(slow_int, then_unreadable(parts[:5])))
    with pytest.raises(ValueError, match="bad"):  # the part before the read error comes first
        list(cli.threads.map_parts(slow_int, then_unreadable(parts[:3] + ["bad"])))
    with pytest.raises(ValueError, match="bad"):
        list(cli.threads.map_parts(slow_int, parts[:3] + ["bad"] + parts[3:]))


def _parse_output(out: bytes, fmt: str) -> list[int]:
    if fmt == "npy":
        array = np.load(io.BytesIO(out))
        assert array.dtype == np.uint32
        return [int(i) for i in array.tolist()]
    if fmt == "json":
        assert out == (json.dumps(json.loads(out)) + "\n").encode()  # "[1, 2]\n", one line
        return [int(i) for i in json.loads(out)]
    assert out.endswith(b"\n") and b"  " not in out and not out.startswith(b" ")
    return [int(i) for i in out.split()]


@pytest.mark.parametrize("fmt", ["list", "json", "npy"])
def test_encoding_a_file_in_blocks(
    capsysbinary: pytest.CaptureFixture[bytes],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fmt: str,
) -> None:
    ours, theirs = pair("o200k_base")
    text = corpus_file("english.txt").read_text(encoding="utf-8")[:60_000]
    path = tmp_path / "doc.txt"
    path.write_bytes(text.encode())
    calls = _parts_read_in_blocks(monkeypatch, 4096)
    monkeypatch.setattr(cli.arrays, "IDS_PER_CHUNK", 7)  # the output written in many pieces
    assert cli.main(["encode", "-e", "o200k_base", "-f", str(path), "--format", fmt]) == 0
    out = capsysbinary.readouterr().out
    assert _parse_output(out, fmt) == ours.encode(text) == theirs.encode(text)
    assert len(calls) >= 10 and sum(calls) == len(text.encode())  # encoded in parts, all
    written = tmp_path / f"ids.{fmt}"
    argv = ["encode", "-e", "o200k_base", "-f", str(path), "--format", fmt, "-o", str(written)]
    assert cli.main(argv) == 0
    assert written.read_bytes() == out
    # Empty input, and input of fewer ids than a piece of output.
    for small in ("", "hi"):
        path.write_text(small, encoding="utf-8")
        assert cli.main(["encode", "-e", "o200k_base", "-f", str(path), "--format", fmt]) == 0
        assert _parse_output(capsysbinary.readouterr().out, fmt) == theirs.encode(small)


def test_encoding_a_file_in_blocks_writes_nothing_when_a_later_block_fails(
    capsysbinary: pytest.CaptureFixture[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli.inputs, "BLOCK", 1000)
    text = "First line\nsecond line, é\n" * 500
    path = tmp_path / "doc.txt"
    kept = tmp_path / "ids.npy"
    kept.write_bytes(b"the user's old file")
    bad_byte = text.encode()[:5001] + b"\xff" + text.encode()[5001:]
    special = (text + "end <|endoftext|>").encode()
    for data, message in ((bad_byte, b"byte 0xff at offset 5001"), (special, b"<|endoftext|>")):
        path.write_bytes(data)
        for target in (["-o", str(kept)], []):
            status = cli.main(["encode", "-f", str(path), "--format", "npy", *target])
            captured = capsysbinary.readouterr()
            assert status == 2 and message in captured.err and captured.out == b""
            assert kept.read_bytes() == b"the user's old file"
    assert sorted(tmp_path.iterdir()) == [path, kept]  # no temporary file left behind
    assert cli.main(["encode", "--allow-special", "-f", str(path), "-o", str(kept)]) == 0
    expected = pair("cl100k_base")[1].encode(special.decode(), allowed_special="all")
    assert [int(i) for i in kept.read_text().split()] == expected


class TerminalStderr(io.StringIO):
    def isatty(self) -> bool:
        return True


def progress_lines(err: TerminalStderr) -> list[list[str]]:
    """Each line of stderr as the updates drawn on it (each after a carriage return)."""
    return [line.split("\r")[1:] for line in err.getvalue().split("\n")]


def test_progress_on_a_terminal(
    capsysbinary: pytest.CaptureFixture[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for module, name, value in [
        (cli.inputs, "BLOCK", 1000), (cli.inputs, "PROGRESS_MIN_BYTES", 1),
        (cli.arrays, "IDS_PER_CHUNK", 100), (cli.arrays, "_PROGRESS_MIN_IDS", 1),
        (cli.decode, "_ID_TEXT_BLOCK", 1000), (cli.count, "_COUNT_BATCH", 1000),
    ]:  # fmt: skip
        monkeypatch.setattr(module, name, value)
    text = "First line\nsecond line, é\n" * 500
    path, ids = tmp_path / "doc.txt", tmp_path / "ids.txt"
    path.write_text(text, encoding="utf-8")

    def run_on_terminal(*argv: str) -> tuple[int, list[list[str]]]:
        err = TerminalStderr()
        monkeypatch.setattr(sys, "stderr", err)
        status = cli.main(list(argv))
        messages.append(err.getvalue())
        return status, progress_lines(err)

    messages: list[str] = []

    status, lines = run_on_terminal("encode", "-f", str(path), "-o", str(ids))
    assert status == 0 and len(lines) == 3 and lines[2] == []
    for verb, name, updates in [("encoding", path, lines[0]), ("writing", ids, lines[1])]:
        percents = [int(u.removeprefix(f"{verb} {name}: ").removesuffix("%")) for u in updates]
        assert len(percents) >= 5 and percents == sorted(set(percents)) and percents[-1] == 100
    status, lines = run_on_terminal("decode", "-f", str(ids))
    assert status == 0 and capsysbinary.readouterr().out == text.encode()
    assert len(lines) == 2 and lines[0][-1] == f"reading {ids}: 100%" and len(lines[0]) >= 5
    # An error part-way starts its own line, after the progress line.
    path.write_bytes(text.encode()[:5001] + b"\xff" + text.encode()[5001:])
    status, lines = run_on_terminal("count", str(path))
    assert status == 2 and 0 < int(lines[0][-1].split(": ")[1].removesuffix("%")) < 100
    assert lines[1] == [] and len(lines) == 3  # "ferrotok: error: ..." then the final newline
    assert messages[-1].split("\n")[1].startswith(f"ferrotok: error: {path}: not UTF-8")
    # No terminal: no progress.
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert cli.main(["encode", "-f", str(ids), "-o", str(tmp_path / "again.txt")]) == 0
    assert sys.stderr.getvalue() == ""


def test_kimi_k2s_pattern_is_cut_as_tiktoken_encodes_it() -> None:
    """A plain encoding on one of the other scanners the rule holds for (Kimi K2's pattern,
    on o200k's scanner, over o200k's ranks): cut, each pair of fragments about a newline
    gives tiktoken's ids of the whole."""
    import tiktoken
    from test_api import KIMI_K2_PATTERN

    kwargs = {"name": "kimi", "pat_str": KIMI_K2_PATTERN,
              "mergeable_ranks": pair("o200k_base")[1]._mergeable_ranks, "special_tokens": {}}
    enc, theirs = ferrotok.Encoding(**kwargs), tiktoken.Encoding(**kwargs)
    assert cli.cuts.can_cut(enc)
    assert_fragment_pairs_cut_as(
        enc, lambda t: theirs.encode(t, allowed_special="all"), frozenset({"日本語", "1234"})
    )


def test_a_custom_pattern_reads_the_file_whole() -> None:
    enc = ferrotok.train(["some text here"] * 3, 260, pattern=r"\S+|\s+", progress=False)
    assert not cli.cuts.can_cut(enc)  # no proof of where its pieces end: never cut
    text = "a\nb\nc d\n" * 300
    assert _parts(enc, text.encode(), 16) == [text]


# ====================
# show
# ====================


def test_show_plain_marks_every_boundary(capsys: pytest.CaptureFixture[str]) -> None:
    text = "Hello world, this is a test.\nSecond line"
    tokens = pair("cl100k_base")[1].decode_tokens_bytes(pair("cl100k_base")[1].encode(text))
    status, out, err = run(capsys, "show", "--no-color", text)
    assert (status, err) == (0, "")
    assert "\x1b" not in out
    assert out == "|".join(t.decode().replace("\n", "\\n\n") for t in tokens) + "\n"
    assert out.count("|") == len(tokens) - 1


def test_show_plain_is_the_default_when_not_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "show", "hello world")
    assert (status, out) == (0, "hello| world\n")


def test_show_plain_escapes_what_would_be_ambiguous_or_invisible(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, out, _ = run(capsys, "show", "--no-color", "a|b\\c\x1b[2J\r\n")
    assert status == 0
    assert "\x1b" not in out and "\r" not in out  # no raw control characters reach a terminal
    assert "\\|" in out and "\\\\" in out and "\\x1b" in out and "\\r" in out


def test_show_partial_characters_as_bytes(capsys: pytest.CaptureFixture[str]) -> None:
    enc = ferrotok.get_encoding("cl100k_base")
    tokens = enc.decode_tokens_bytes(enc.encode("😀"))
    assert len(tokens) > 1  # the emoji is split between tokens
    status, out, _ = run(capsys, "show", "--no-color", "😀")
    assert status == 0
    expected = "|".join("".join(f"\\x{b:02x}" for b in t) for t in tokens) + "\n"
    assert out == expected


def test_show_color(capsys: pytest.CaptureFixture[str]) -> None:
    text = "Hello world, again\nand again"
    enc = ferrotok.get_encoding("cl100k_base")
    status, out, _ = run(capsys, "show", "--color", "always", text)
    assert status == 0
    backgrounds = re.findall(r"\x1b\[48;5;(\d+)m", out)
    assert len(backgrounds) >= len(enc.encode(text))
    assert len(set(backgrounds)) > 1  # alternating colours
    plain = re.sub(r"\x1b\[[0-9;]*m", "", out)
    assert plain == text.replace("\n", "\\n\n") + "\n"
    # The colour is reset before each line break (no colour bleeding to the line's end).
    assert all(line.endswith("\x1b[0m") for line in out.splitlines())


def test_show_ids(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "show", "--ids", "hello world\n")
    assert status == 0
    assert [line.split(maxsplit=1) for line in out.splitlines()] == [
        ["15339", "hello"],
        ["1917", "world"],  # the leading space is kept, split() drops it here
        ["198", "\\n"],
    ]
    assert out.splitlines()[1] == "  1917   world"  # ids as wide as cl100k's last (100276)


def test_show_a_file_in_parts_as_it_shows_it_whole(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = corpus_file("code.txt").read_text(encoding="utf-8")[:60_000]
    path = tmp_path / "code.txt"
    path.write_text(text, encoding="utf-8")
    for mode in (["--no-color"], ["--color", "always"], ["--ids"]):
        whole = run(capsys, "show", *mode, "-f", str(path))
        assert whole[0] == 0 and whole[1]
        monkeypatch.setattr(cli.inputs, "BLOCK", 4096)  # many parts, on several threads
        assert len(list(cli.inputs.input_parts(pair("cl100k_base")[0], str(path), "x"))) > 5
        assert run(capsys, "show", *mode, "-f", str(path)) == whole, mode
        monkeypatch.undo()


# ====================
# Errors: exit status 2, a message, no traceback
# ====================


def test_unknown_encoding(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "encode", "--encoding", "nope_base", "x")
    assert_user_error(status, err, "unknown encoding 'nope_base'", "cl100k_base", "o200k_base")


def test_unknown_model(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "count", "--model", "llama-3")
    assert_user_error(status, err, "unknown model 'llama-3'")


@pytest.mark.parametrize("command", ["encode", "show", "count"])
def test_file_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str) -> None:
    flag = [] if command == "count" else ["--file"]
    status, _, err = run(capsys, command, *flag, str(tmp_path / "missing.txt"))
    assert_user_error(status, err, "missing.txt: no such file")
    status, _, err = run(capsys, command, *flag, str(tmp_path))
    assert_user_error(status, err, f"{tmp_path}: is a directory")
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("café".encode("latin-1"))
    status, _, err = run(capsys, command, *flag, str(latin1))
    assert_user_error(status, err, f"{latin1}: not UTF-8", "0xe9", "offset 3")


def test_unreadable_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "secret.txt"
    path.write_text("x")

    def denied(file: str, mode: str = "r") -> io.BufferedReader:
        raise PermissionError(13, "Permission denied", file)

    # chmod 0 would not stop root, so the permission error is simulated.
    monkeypatch.setattr(cli.inputs, "open", denied, raising=False)
    status, _, err = run(capsys, "encode", "-f", str(path))
    assert_user_error(status, err, "secret.txt: cannot read (Permission denied)")


def test_text_and_file_together(capsys: pytest.CaptureFixture[str], text_file: Path) -> None:
    status, _, err = run(capsys, "encode", "hi", "--file", str(text_file))
    assert_user_error(status, err, "not both")


def test_text_argument_that_is_not_utf8(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "encode", "caf\udce9")  # how Python passes argv byte 0xe9
    assert_user_error(status, err, "not valid UTF-8")


def test_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys)
    assert_user_error(status, err, "required: COMMAND")
    status, _, err = run(capsys, "encode", "--format", "xml", "x")
    assert_user_error(status, err, "invalid choice: 'xml'")
    status, out, _ = run(capsys, "--help")
    assert status == 0 and "encode" in out and "FERROTOK_DATA_DIR" in out
    status, out, _ = run(capsys, "--version")
    assert (status, out) == (0, f"ferrotok {ferrotok.__version__}\n")


@pytest.fixture
def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No encoding loaded yet, no local files, and downloads fail like a machine offline."""
    monkeypatch.setattr(registry, "ENCODINGS", {})
    (tmp_path / "data").mkdir()
    (tmp_path / "cache").mkdir()
    monkeypatch.setenv("FERROTOK_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "cache"))

    def no_network(url: str) -> bytes:
        raise load.DownloadError(f"could not download {url}: [Errno -3] name resolution failed")

    monkeypatch.setattr(load, "_download", no_network)


@pytest.mark.usefixtures("offline")
def test_missing_encoding_files_offline(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "encode", "-e", "r50k_base", "hello")
    assert_user_error(status, err, "could not load encoding 'r50k_base'", "FERROTOK_DATA_DIR")
    assert "r50k_base.tiktoken" in err and out == ""


@pytest.mark.usefixtures("offline")
def test_corrupt_encoding_file(capsys: pytest.CaptureFixture[str]) -> None:
    bad = Path(os.environ["FERROTOK_DATA_DIR"]) / "r50k_base.tiktoken"
    bad.write_bytes(b"YQ== 0\n")
    status, _, err = run(capsys, "count", "-e", "r50k_base")
    assert_user_error(status, err, str(bad), "sha256")


def test_encodings_command(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "encodings")
    assert status == 0 and out.split() == ferrotok.list_encoding_names()


# ====================
# The parser: subcommands plug in
# ====================


def test_another_subcommand_plugs_in_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    def register_sample(subparsers: argparse._SubParsersAction) -> None:
        p = subparsers.add_parser("sample", help="a plug-in subcommand")
        p.add_argument("--vocab-size", type=int, required=True)
        cli.add_encoding_arguments(p)

        def run_sample(args: argparse.Namespace) -> int:
            if args.vocab_size < 256:
                raise cli.CLIError("--vocab-size must be at least 256")
            print(f"sampling {args.vocab_size}")
            return 0

        p.set_defaults(func=run_sample)

    parser = cli.build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert subparsers.dest == "command" and subparsers.required
    # The real `train` subcommand is registered this way already.
    assert "train" in subparsers.choices
    register_sample(subparsers)  # the one line
    args = parser.parse_args(["sample", "--vocab-size", "1000"])
    assert args.command == "sample" and args.func(args) == 0
    assert capsys.readouterr().out == "sampling 1000\n"
    with pytest.raises(cli.CLIError):
        args.func(parser.parse_args(["sample", "--vocab-size", "5"]))


def test_every_subcommand_returns_an_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["encode", "x"], ["decode", "87"], ["show", "x"], ["encodings"]):
        assert cli.main(argv) == 0
    assert cli.main(["count", os.devnull]) == 0


# ====================
# A real process
# ====================


def _run_module(*argv: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    # The child imports the same ferrotok as this process (not whatever the install points at).
    package_root = str(Path(ferrotok.__file__).resolve().parent.parent)
    python_path = os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))
    env = {
        **os.environ,
        "FERROTOK_DATA_DIR": str(ENCODINGS_DIR),
        "FERROTOK_OFFLINE": "1",  # never the network, even if something is missing
        "PYTHONPATH": python_path,
    }
    return subprocess.run(
        [sys.executable, "-m", "ferrotok", *argv],
        input=stdin,
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )


def test_python_dash_m(tmp_path: Path) -> None:
    ours, theirs = pair("cl100k_base")
    done = _run_module("encode", TEXT)
    assert (done.returncode, done.stderr) == (0, b"")
    assert [int(i) for i in done.stdout.split()] == ours.encode(TEXT) == theirs.encode(TEXT)
    # Piped through decode: the bytes come back exactly.
    back = _run_module("decode", stdin=done.stdout)
    assert (back.returncode, back.stdout) == (0, TEXT.encode())
    # A user mistake: status 2, one message, no traceback.
    bad = _run_module("count", str(tmp_path / "missing.txt"))
    assert bad.returncode == 2 and bad.stdout == b""
    assert bad.stderr.decode() == f"ferrotok: error: {tmp_path / 'missing.txt'}: no such file\n"


def test_an_empty_encoding_name_is_an_unknown_encoding(capsys: pytest.CaptureFixture[str]) -> None:
    # `-e "$ENC"` with ENC unset must not quietly mean the default encoding.
    status, out, err = run(capsys, "encode", "-e", "", "hi")
    assert_user_error(status, err, "unknown encoding ''")
    assert out == ""


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_a_full_disk_is_a_message_not_a_traceback() -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "ferrotok", "encode", "hello world"],
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "No space left on device" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs symbolic links and named pipes")
def test_output_through_a_link_or_into_a_pipe_keeps_what_is_there(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # A link: the file it names gets the ids and keeps its permissions; the link stays.
    target = tmp_path / "ids.txt"
    target.write_text("old")
    target.chmod(0o600)
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    status, _, err = run(capsys, "encode", "-o", str(link), "hello world")
    assert status == 0, err
    assert link.is_symlink() and target.read_text().split() == ["15339", "1917"]
    assert target.stat().st_mode & 0o777 == 0o600
    # A named pipe is written to, not replaced by a file.
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    status, _, err = run(capsys, "encode", "-o", str(fifo), "hello world")
    assert status == 0, err
    assert reader.communicate(timeout=60)[0].split() == [b"15339", b"1917"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    # A directory is an error that names it.
    status, _, err = run(capsys, "encode", "-o", str(tmp_path), "hello world")
    assert_user_error(status, err, str(tmp_path), "is a directory")


def test_ctrl_c_gives_exit_130_and_says_so(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(args: argparse.Namespace) -> int:
        raise KeyboardInterrupt

    parser = cli.build_parser()
    real_parse = parser.parse_args

    def parse(argv: list[str]) -> argparse.Namespace:
        args = real_parse(argv)
        args.func = interrupted  # Ctrl-C while the command runs
        return args

    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    monkeypatch.setattr(parser, "parse_args", parse)
    status, out, err = run(capsys, "count", "hello")
    assert (status, out, err) == (130, "", "ferrotok: interrupted\n")
