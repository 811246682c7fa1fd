"""Issue 56, the Python side of saving and loading: every bad file or path is a clear error
that names what is wrong (and where), never a traceback from deep inside (`OverflowError ...
C long`, `RecursionError`, `TypeError: can't concat`), and nothing is written where the
caller did not ask (no missing directory created, no `x.tiktoken/` turned into a file)."""

from __future__ import annotations

import base64
import json
import os
import re
from pathlib import Path

import ferrotok
import pytest
from ferrotok import load as load_module

PAT = r"\S+|\s+"
BYTES = {bytes([i]): i for i in range(256)}


def _tiny() -> ferrotok.Encoding:
    return ferrotok.Encoding(
        "tiny", pat_str=PAT, mergeable_ranks=BYTES, special_tokens={"<e>": 256}
    )


# ---------------------------------------------------------------- ranks that cannot be


@pytest.mark.parametrize(
    "rank", [str(2**21), str(2**32), str(2**40), "1" + "0" * 30, "9" * 5000], ids=len
)
def test_a_rank_too_large_names_the_file_and_line(tmp_path: Path, rank: str) -> None:
    path = tmp_path / "big.tiktoken"
    ferrotok.dump_tiktoken_bpe(BYTES, str(path))
    line = base64.b64encode(b"ab") + b" " + rank.encode() + b"\n"
    path.write_bytes(path.read_bytes() + line)
    with pytest.raises(ValueError) as info:
        ferrotok.load(path, pat_str=PAT, special_tokens={})
    message = str(info.value)
    assert str(path) in message and "line 257" in message, message
    assert "2097152" in message or "digits" in message, message
    assert len(message) < 400  # a 5,000-digit rank is not echoed whole


def test_the_largest_rank_that_fits_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "edge.tiktoken"
    ferrotok.dump_tiktoken_bpe({**BYTES, b"ab": 2**21 - 1}, str(path))
    enc = ferrotok.load(path, pat_str=PAT, special_tokens={})
    assert enc.encode("ab") == [2**21 - 1]


# ---------------------------------------------------------------- the sidecar


def _saved(tmp_path: Path) -> tuple[Path, Path, dict[str, object]]:
    path = tmp_path / "tiny.tiktoken"
    _tiny().save(path)
    side = tmp_path / "tiny.tiktoken.json"
    return path, side, json.loads(side.read_text())


def test_a_deeply_nested_sidecar_is_a_value_error(tmp_path: Path) -> None:
    path, side, _ = _saved(tmp_path)
    side.write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(ValueError, match="nested") as info:
        ferrotok.load(path)
    assert str(side) in str(info.value)
    side.write_text('{"format": ' + "{" * 100_000 + "}" * 100_000 + "}")
    with pytest.raises(ValueError, match="nested"):
        ferrotok.load(path)


@pytest.mark.parametrize("version", [True, 1.0, "1", None, [1], 2])
def test_a_sidecar_version_must_be_the_int_1(tmp_path: Path, version: object) -> None:
    path, side, meta = _saved(tmp_path)
    side.write_text(json.dumps(dict(meta, version=version)))
    with pytest.raises(ValueError, match="format version") as info:
        ferrotok.load(path)
    assert str(side) in str(info.value)


@pytest.mark.parametrize("n_vocab", [257.0, True, "257"])
def test_a_sidecar_n_vocab_must_be_an_int(tmp_path: Path, n_vocab: object) -> None:
    path, side, meta = _saved(tmp_path)
    side.write_text(json.dumps(dict(meta, n_vocab=n_vocab)))
    with pytest.raises(ValueError, match="n_vocab"):
        ferrotok.load(path)


def test_a_sidecar_that_is_not_utf8_is_a_value_error(tmp_path: Path) -> None:
    path, side, _ = _saved(tmp_path)
    side.write_bytes(b'{"format": "\xff"}')
    with pytest.raises(ValueError, match="not valid JSON") as info:
        ferrotok.load(path)
    assert str(side) in str(info.value)


# ---------------------------------------------------------------- paths


def test_bytes_paths_save_and_load(tmp_path: Path) -> None:
    path = os.fsencode(tmp_path / "b.tiktoken")
    _tiny().save(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.tiktoken", "b.tiktoken.json"]
    assert ferrotok.load(path).encode("hi<e>", allowed_special="all") == [104, 105, 256]
    assert ferrotok.Encoding.load(path).name == "tiny"


@pytest.mark.parametrize("sep", sorted({"/", os.sep}))
def test_a_path_ending_in_a_separator_is_refused(tmp_path: Path, sep: str) -> None:
    path = str(tmp_path / "x.tiktoken") + sep
    with pytest.raises(OSError, match="directory") as info:
        _tiny().save(path)
    assert "x.tiktoken" in str(info.value)
    with pytest.raises(OSError, match="directory"):
        ferrotok.dump_tiktoken_bpe(BYTES, path)
    assert list(tmp_path.iterdir()) == []


def test_save_into_a_missing_directory_is_an_error(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such"
    with pytest.raises(FileNotFoundError) as info:
        _tiny().save(missing / "x.tiktoken")
    assert str(missing) in str(info.value)
    with pytest.raises(FileNotFoundError):
        ferrotok.dump_tiktoken_bpe(BYTES, str(missing / "x.tiktoken"))
    counts = ferrotok.PieceCounts.from_bytes(ferrotok.PieceCounts().to_bytes())
    with pytest.raises(FileNotFoundError):
        counts.save(missing / "c.counts")
    assert list(tmp_path.iterdir()) == []
    # An existing directory is written into as before.
    (tmp_path / "no").mkdir()
    _tiny().save(tmp_path / "no" / "x.tiktoken")
    assert ferrotok.load(tmp_path / "no" / "x.tiktoken").name == "tiny"


def test_the_download_cache_still_makes_its_own_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The cache directory is ferrotok's (tiktoken's) to make; only the user's paths are not.
    source = tmp_path / "small.tiktoken"
    source.write_bytes(b"YQ== 0\nYg== 1\n")
    cache = tmp_path / "cache" / "deeper"
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    monkeypatch.delenv("FERROTOK_DATA_DIR", raising=False)
    monkeypatch.delenv("FERROTOK_OFFLINE", raising=False)
    url = source.as_uri()
    assert load_module.read_file_cached(url) == source.read_bytes()
    assert len(list(cache.iterdir())) == 1


# ---------------------------------------------------------------- the model table


def test_unknown_model_says_ferrotok_get_encoding() -> None:
    with pytest.raises(KeyError) as info:
        ferrotok.encoding_for_model("llama")
    message = str(info.value)
    assert "ferrotok.get_encoding" in message and "tiktoken" not in message
    # The start of tiktoken's message stays, for code that matches on it.
    assert re.search("Could not automatically map llama to a tokeniser", message)


# ---------------------------------------------------------------- the demo


def _demo_dirs(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name.startswith("ferrotok-demo-"))


def test_demo_leaves_no_temporary_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import tempfile

    from ferrotok import demo

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert demo.main(["--vocab-size", "300", "--mb", "0.05", "--no-progress"]) == 0
    assert "saved:" in capsys.readouterr().out
    assert _demo_dirs(tmp_path) == []


@pytest.mark.parametrize("error", [KeyboardInterrupt, OSError])
def test_demo_cleans_up_after_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: type[BaseException]
) -> None:
    import tempfile

    from ferrotok import demo

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    real = ferrotok.Encoding.load

    def failing_load(*args: object, **kwargs: object) -> ferrotok.Encoding:
        assert _demo_dirs(tmp_path)  # the files were saved in a temporary directory
        raise error()

    monkeypatch.setattr(ferrotok.Encoding, "load", staticmethod(failing_load))
    with pytest.raises(error):
        demo.main(["--vocab-size", "300", "--mb", "0.05", "--no-progress"])
    assert _demo_dirs(tmp_path) == []
    monkeypatch.setattr(ferrotok.Encoding, "load", staticmethod(real))


def test_demo_keep_keeps_the_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ferrotok import demo

    keep = tmp_path / "kept"
    assert (
        demo.main(["--vocab-size", "300", "--mb", "0.05", "--no-progress", "--keep", str(keep)])
        == 0
    )
    assert sorted(p.name for p in keep.iterdir()) == [
        "stdlib_demo.tiktoken",
        "stdlib_demo.tiktoken.json",
    ]
    capsys.readouterr()


def test_loader_module_is_still_importable_as_a_module() -> None:
    # (`ferrotok.load` is the module made callable; the fixes above go through it.)
    assert (
        callable(ferrotok.load)
        and load_module.parse_tiktoken_bpe is ferrotok.load.parse_tiktoken_bpe
    )
